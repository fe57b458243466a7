#include "guestagent/cpu_stat.h"

#include <fstream>
#include <iterator>
#include <sstream>

namespace ds::agent {
namespace {

constexpr std::array<const char*, 8> kStateKeys = {"user_s",   "nice_s", "system_s",  "idle_s",
                                                   "iowait_s", "irq_s",  "softirq_s", "steal_s"};

}  // namespace

std::optional<CpuTicks> parse_proc_stat_cpu(std::string_view text) {
    std::istringstream lines{std::string(text)};
    std::string line;
    while (std::getline(lines, line)) {
        std::istringstream words(line);
        std::string name;
        if (!(words >> name) || name != "cpu") continue;
        CpuTicks ticks{};
        for (std::uint64_t& counter : ticks) {
            if (!(words >> counter)) return std::nullopt;
        }
        return ticks;
    }
    return std::nullopt;
}

Json cpu_seconds_between(const CpuTicks& before, const CpuTicks& after, long ticks_per_second) {
    Json seconds = Json::object();
    for (std::size_t i = 0; i < kStateKeys.size(); ++i) {
        const std::uint64_t ticks = after[i] > before[i] ? after[i] - before[i] : 0;
        seconds[kStateKeys[i]] = static_cast<double>(ticks) / static_cast<double>(ticks_per_second);
    }
    return seconds;
}

std::optional<CpuTicks> read_cpu_ticks(const std::string& proc_root) {
    std::ifstream in(proc_root + "/stat", std::ios::binary);
    if (!in) return std::nullopt;
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return parse_proc_stat_cpu(text);
}

}  // namespace ds::agent
