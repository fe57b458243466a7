#include "guestagent/block_tuning.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/text.h"

namespace ds::agent {
namespace {

namespace fs = std::filesystem;

Error bad_field(const std::string& field, const std::string& what) {
    return make_error(errc::kInvalidArgument, "job.block." + field + ": " + what);
}

Result<long long> integer_field(const Json& value, const std::string& field, long long minimum) {
    if (!value.is_number_integer()) {
        return bad_field(
            field, "is " + value.dump() + ", expected an integer >= " + std::to_string(minimum));
    }
    const long long number = value.get<long long>();
    if (number < minimum) {
        return bad_field(field, "is " + std::to_string(number) +
                                    ", expected an integer >= " + std::to_string(minimum));
    }
    return number;
}

bool is_plain_name(const std::string& name) {
    return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
    });
}

std::string read_text(const fs::path& path) {
    std::ifstream in(path);
    std::ostringstream content;
    content << in.rdbuf();
    return content.str();
}

}  // namespace

Result<BlockTuning> parse_block_tuning(const Json* block) {
    BlockTuning tuning;
    if (block == nullptr || block->is_null()) return tuning;
    if (!block->is_object()) {
        return make_error(errc::kInvalidArgument, std::string("job.block: is a ") +
                                                      block->type_name() + ", expected an object");
    }
    for (const auto& [key, value] : block->items()) {
        if (key == "scheduler") {
            if (!value.is_string() || !is_plain_name(value.get<std::string>())) {
                return bad_field(key, "is " + value.dump() +
                                          ", expected a scheduler name such as \"mq-deadline\"");
            }
            tuning.scheduler = value.get<std::string>();
        } else if (key == "read_ahead_kb") {
            auto number = integer_field(value, key, 0);
            if (!number) return number.error();
            tuning.read_ahead_kb = *number;
        } else if (key == "nr_requests") {
            auto number = integer_field(value, key, 1);
            if (!number) return number.error();
            tuning.nr_requests = *number;
        } else {
            return bad_field(key,
                             "unknown block setting; known: scheduler, read_ahead_kb, "
                             "nr_requests");
        }
    }
    return tuning;
}

std::string_view scheduler_module(std::string_view scheduler) {
    struct SchedulerModule {
        std::string_view scheduler;
        std::string_view module;
    };
    static constexpr std::array<SchedulerModule, 3> kModules = {{
        {"bfq", "bfq"},
        {"kyber", "kyber-iosched"},
        {"mq-deadline", "mq-deadline"},
    }};
    for (const auto& entry : kModules) {
        if (entry.scheduler == scheduler) return entry.module;
    }
    return {};
}

Status apply_block_tuning(const BlockTuning& tuning, const std::string& device_name,
                          const SystemRoots& roots, GuestSystem& system, ProcessRunner& runner,
                          std::chrono::milliseconds command_timeout,
                          const std::function<void(const std::string&)>& note) {
    const fs::path queue = fs::path(roots.sysfs) / "block" / device_name / "queue";
    if (tuning.scheduler) {
        const std::string& wanted = *tuning.scheduler;
        const std::string path = (queue / "scheduler").string();
        SchedulerList list = parse_scheduler_list(read_text(path));
        std::string modprobe_note;
        const bool offered =
            std::find(list.offered.begin(), list.offered.end(), wanted) != list.offered.end();
        if (!offered && !scheduler_module(wanted).empty()) {
            const std::vector<std::string> argv = {"modprobe",
                                                   std::string(scheduler_module(wanted))};
            note(describe_command(argv) + " (" + path + " offers: " + join(list.offered, " ") +
                 ")");
            if (auto loaded = run_checked(runner, argv, command_timeout); !loaded) {
                modprobe_note = "; " + loaded.error().message;
            }
            list = parse_scheduler_list(read_text(path));
        }
        note("scheduler " + wanted + " -> " + path);
        if (auto written = system.write_attribute(path, wanted); !written) {
            return make_error(errc::kIo, written.error().message + " (offered: " +
                                             join(list.offered, " ") + ")" + modprobe_note);
        }
    }
    const auto write_number = [&](const char* attribute, long long value) -> Status {
        const std::string path = (queue / attribute).string();
        note(std::string(attribute) + " " + std::to_string(value) + " -> " + path);
        return system.write_attribute(path, std::to_string(value));
    };
    if (tuning.read_ahead_kb) DS_TRY(write_number("read_ahead_kb", *tuning.read_ahead_kb));
    if (tuning.nr_requests) DS_TRY(write_number("nr_requests", *tuning.nr_requests));
    return ok_status();
}

}  // namespace ds::agent
