#include "daemon/run/host_cpu.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <array>
#include <charconv>
#include <cmath>
#include <fstream>
#include <iterator>
#include <sstream>
#include <variant>

namespace ds {
namespace {

std::optional<std::string> file_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The counters of a diskstats line after major, minor and name, by position
// (Documentation/admin-guide/iostats.rst).
constexpr std::array<std::pair<int, const char*>, 8> kDiskstatsFields = {{
    {0, "reads"},
    {2, "read_sectors"},
    {3, "read_ms"},
    {4, "writes"},
    {6, "write_sectors"},
    {7, "write_ms"},
    {9, "io_ms"},
    {10, "weighted_io_ms"},
}};

// The device whose I/O a disk source's I/O becomes on this host, as
// major:minor; nullopt for a source with none here.
std::optional<dev_t> backing_device(const DiskSource& source) {
    struct stat status {};
    if (const auto* file = std::get_if<FileDisk>(&source)) {
        if (::stat(file->path.c_str(), &status) != 0) return std::nullopt;
        return status.st_dev;
    }
    if (const auto* block = std::get_if<BlockDisk>(&source)) {
        if (::stat(block->path.c_str(), &status) != 0 || !S_ISBLK(status.st_mode))
            return std::nullopt;
        return status.st_rdev;
    }
    return std::nullopt;
}

std::optional<double> number_in(const Json& record, const char* key) {
    const auto found = record.is_object() ? record.find(key) : record.end();
    if (found == record.end() || !found->is_number()) return std::nullopt;
    return found->get<double>();
}

// The data disk's I/Os in a disk_counters change: every operation QEMU
// counted (reads, writes, flushes, discards).
double data_disk_ios(const Json& disk_counters) {
    double ios = 0;
    for (const char* key :
         {"rd_operations", "wr_operations", "flush_operations", "discard_operations"}) {
        ios += number_in(disk_counters, key).value_or(0);
    }
    return ios;
}

// `cpu_seconds` per I/O in µs, or nullopt without CPU figure or I/O.
std::optional<double> per_io_us(std::optional<double> cpu_seconds, double ios) {
    if (!cpu_seconds || !(ios > 0) || !std::isfinite(*cpu_seconds)) return std::nullopt;
    return *cpu_seconds * 1e6 / ios;
}

}  // namespace

std::optional<Json> parse_diskstats(std::string_view text, unsigned major, unsigned minor) {
    std::istringstream lines{std::string(text)};
    std::string line;
    while (std::getline(lines, line)) {
        std::istringstream words(line);
        unsigned line_major = 0;
        unsigned line_minor = 0;
        std::string name;
        if (!(words >> line_major >> line_minor >> name)) continue;
        if (line_major != major || line_minor != minor) continue;
        std::vector<double> counters;
        for (double value = 0; words >> value;) counters.push_back(value);
        if (counters.size() < 11) return std::nullopt;
        Json record{{"device", name}};
        for (const auto& [position, key] : kDiskstatsFields) record[key] = counters[position];
        return record;
    }
    return std::nullopt;
}

std::optional<Json> parse_pressure(std::string_view text) {
    Json record = Json::object();
    std::istringstream lines{std::string(text)};
    std::string line;
    while (std::getline(lines, line)) {
        std::istringstream words(line);
        std::string kind;
        words >> kind;
        if (kind != "some" && kind != "full") continue;
        for (std::string word; words >> word;) {
            if (!word.starts_with("total=")) continue;
            double total = 0;
            const std::string_view digits = std::string_view(word).substr(6);
            const auto [end, error] =
                std::from_chars(digits.data(), digits.data() + digits.size(), total);
            if (error == std::errc() && end == digits.data() + digits.size())
                record[kind + "_us"] = total;
        }
    }
    if (!record.contains("some_us")) return std::nullopt;
    return record;
}

Json read_host_io_counters(const DiskSource& source, const std::string& proc_root) {
    Json counters = Json::object();
    if (const std::optional<dev_t> device = backing_device(source)) {
        const std::optional<std::string> diskstats = file_text(proc_root + "/diskstats");
        const std::optional<Json> line =
            diskstats ? parse_diskstats(*diskstats, major(*device), minor(*device)) : std::nullopt;
        if (line) {
            for (const auto& [key, value] : line->items()) {
                if (value.is_number()) counters["disk_" + key] = value;
            }
            counters["backing_device"] = line->at("device").get<std::string>() + " (" +
                                         std::to_string(major(*device)) + ":" +
                                         std::to_string(minor(*device)) + ")";
        }
    }
    for (const char* resource : {"io", "cpu"}) {
        const std::optional<std::string> text = file_text(proc_root + "/pressure/" + resource);
        const std::optional<Json> pressure = text ? parse_pressure(*text) : std::nullopt;
        if (!pressure) continue;
        for (const auto& [key, value] : pressure->items())
            counters["psi_" + std::string(resource) + "_" + key] = value;
    }
    return counters;
}

Json numeric_delta(const Json& before, const Json& after) {
    Json delta = Json::object();
    for (const auto& [key, value] : after.items()) {
        const auto old = before.find(key);
        if (value.is_number() && old != before.end() && old->is_number())
            delta[key] = value.get<double>() - old->get<double>();
    }
    return delta;
}

// The change of `part` between the readings, with `kept` members as at the end.
Json part_delta(const Json& before, const Json& after, const char* part,
                std::initializer_list<const char*> kept) {
    const auto old = before.find(part);
    const auto now = after.find(part);
    if (old == before.end() || now == after.end()) return Json();
    Json delta = numeric_delta(*old, *now);
    for (const char* key : kept) {
        if (now->contains(key)) delta[key] = (*now)[key];
    }
    return delta;
}

Json cpu_cost_record(const Json& before, const Json& after, const Json& guest_cpu,
                     const Json& disk_counters) {
    Json record{{"window", "job"}};
    const double ios = data_disk_ios(disk_counters);
    if (disk_counters.is_object() && !disk_counters.empty()) record["ios"] = ios;
    for (const Json* reading : {&before, &after}) {
        if (reading->contains("not_measured")) record["not_measured"] = (*reading)["not_measured"];
    }
    if (Json qemu = part_delta(before, after, "qemu", {"vcpu_threads", "iothreads"});
        !qemu.is_null())
        record["qemu"] = std::move(qemu);
    if (Json host = part_delta(before, after, "host", {"backing_device"}); !host.is_null())
        record["host_counters"] = std::move(host);
    if (guest_cpu.is_object() && !guest_cpu.empty()) record["guest"] = guest_cpu;
    return record;
}

std::optional<double> guest_busy_seconds(const Json& guest_cpu) {
    if (!guest_cpu.is_object() || guest_cpu.empty()) return std::nullopt;
    double busy = 0;
    for (const char* state : {"user_s", "nice_s", "system_s", "irq_s", "softirq_s"}) {
        const std::optional<double> seconds = number_in(guest_cpu, state);
        if (!seconds) return std::nullopt;
        busy += *seconds;
    }
    return busy;
}

std::map<std::string, double> cpu_per_io_metrics(const Json& emulator_cpu, const Json& guest_cpu,
                                                 const Json& disk_counters) {
    const double ios = data_disk_ios(disk_counters);
    std::map<std::string, double> metrics;
    const auto put = [&](const std::string& name, std::optional<double> cpu_seconds) {
        if (const std::optional<double> value = per_io_us(cpu_seconds, ios)) metrics[name] = *value;
    };
    put("host_cpu_us_per_io", number_in(emulator_cpu, "total_s"));
    for (const char* role : {"vcpu", "iothread", "main_loop", "other"}) {
        put("host_" + std::string(role) + "_cpu_us_per_io",
            number_in(emulator_cpu, (std::string(role) + "_s").c_str()));
    }
    put("guest_cpu_us_per_io", guest_busy_seconds(guest_cpu));
    return metrics;
}

}  // namespace ds
