#include "daemon/durability/replay_tool.h"

#include <charconv>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string_view>

#include "common/result.h"
#include "common/settings.h"
#include "daemon/durability/crash_states.h"
#include "daemon/durability/log_writes.h"
#include "daemon/durability/replay.h"

namespace ds::durability {

namespace {

constexpr int kUsageError = 2;

constexpr std::string_view kUsage =
    "usage: disksweep-replay list LOG\n"
    "       disksweep-replay flush LOG BASE OUT ENTRY [--size-limit BYTES]\n"
    "       disksweep-replay state LOG BASE OUT K --cache MODE --seed S --crash-points N\n"
    "                        [--from BYTES] [--to BYTES] [--no-volatile-cache] [--mark BYTES]\n"
    "                        [--host-writeback FILE] [--size-limit "
    "BYTES]\n";

// The --options each form takes, as data: name -> whether it takes a value.
const std::map<std::string, bool, std::less<>> kOptions = {
    {"--size-limit", true},         {"--cache", true}, {"--seed", true},
    {"--crash-points", true},       {"--from", true},  {"--to", true},
    {"--no-volatile-cache", false}, {"--mark", true},  {"--host-writeback", true}};

struct Command {
    std::vector<std::string> words;              // the form and its operands
    std::map<std::string, std::string> options;  // "--cache" -> "unsafe"
};

Result<Command> split_command(const std::vector<std::string>& args) {
    Command command;
    for (std::size_t i = 0; i < args.size(); ++i) {
        if (!args[i].starts_with("--")) {
            command.words.push_back(args[i]);
            continue;
        }
        const auto option = kOptions.find(args[i]);
        if (option == kOptions.end())
            return make_error(errc::kInvalidArgument, "unknown option " + args[i]);
        if (option->second && i + 1 == args.size())
            return make_error(errc::kInvalidArgument, args[i] + " needs a value");
        const std::string& name = args[i];
        command.options[name] = option->second ? args[++i] : "";
    }
    return command;
}

Result<std::uint64_t> number(std::string_view text, std::string_view what) {
    std::uint64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size())
        return make_error(
            errc::kInvalidArgument,
            std::string(what) + " must be a whole number, not '" + std::string(text) + "'");
    return value;
}

Result<std::uint64_t> option_number(const Command& command, const std::string& name,
                                    std::optional<std::uint64_t> fallback) {
    const auto found = command.options.find(name);
    if (found != command.options.end()) return number(found->second, name);
    if (fallback) return *fallback;
    return make_error(errc::kInvalidArgument, name + " is required");
}

Result<std::uint64_t> size_limit(const Command& command, const std::string& base) {
    std::error_code error;
    const std::uint64_t base_size = std::filesystem::file_size(base, error);
    if (error)
        return make_error(errc::kIo, "cannot read the size of " + base + ": " + error.message());
    return option_number(command, "--size-limit", base_size);
}

int list(const std::string& log_path, std::ostream& out, std::ostream& err) {
    auto log = read_log(log_path);
    if (!log.ok()) {
        err << "disksweep-replay: " << log.error().message << "\n";
        return 1;
    }
    std::size_t flushes = 0;
    for (const LogEntry& entry : log->entries) flushes += entry.is_flush() ? 1 : 0;
    out << log_path << ": " << log->entries.size() << " entries, " << flushes
        << " flushes, sector size " << log->sector_size << ", " << log->file_size << " bytes\n";
    for (std::size_t i = 0; i < log->entries.size(); ++i) {
        if (log->entries[i].is_flush())
            out << "flush entry " << i << " ends at byte " << log->entries[i].end_offset << "\n";
    }
    return 0;
}

// A run's applied_settings.durability.host_writeback, saved to a file:
// its window and its log clock.
struct HostWritebackRecord {
    double window_s = 0;
    LogClock clock{std::vector<LogSample>{}};
};
Result<HostWritebackRecord> read_host_writeback_record(const std::string& path) {
    const auto problem = [&path](const std::string& what) {
        return make_error(errc::kInvalidArgument,
                          "--host-writeback " + path + ": " + what +
                              " (expected a run's applied_settings.durability.host_writeback)");
    };
    std::ifstream in(path);
    if (!in.is_open()) return problem("cannot open it");
    const Json record = Json::parse(in, nullptr, false);
    if (!record.is_object()) return problem("not a JSON object");
    const Json& window = json_read::field(record, "window_s");
    if (!window.is_number() || window.get<double>() < 0) return problem("no window_s");
    auto clock = LogClock::from_json(json_read::field(record, "clock"));
    if (!clock.ok()) return problem(clock.error().message);
    return HostWritebackRecord{window.get<double>(), std::move(clock.value())};
}

// The entries a form applies: [0, ENTRY] for `flush`, crash state K's for `state`.
Result<std::vector<std::size_t>> entries_to_apply(const Command& command, const LogIndex& log) {
    DS_ASSIGN_OR_RETURN(const std::uint64_t which, number(command.words[4], command.words[0]));
    if (command.words[0] == "flush") {
        if (which >= log.entries.size() || !log.entries[which].is_flush())
            return make_error(errc::kInvalidArgument, "entry " + command.words[4] +
                                                          " is not a FLUSH entry of the log "
                                                          "(disksweep-replay list shows them)");
        return first_entries(which + 1);
    }
    CacheMode cache = CacheMode::kNone;
    const auto mode = command.options.find("--cache");
    if (mode == command.options.end() || !parse_enum(mode->second, cache))
        return make_error(errc::kInvalidArgument,
                          "--cache must name a cache mode (none, writeback, writethrough, "
                          "directsync, unsafe)");
    CrashModelOptions options;
    DS_ASSIGN_OR_RETURN(options.seed, option_number(command, "--seed", std::nullopt));
    DS_ASSIGN_OR_RETURN(options.max_crash_points,
                        option_number(command, "--crash-points", std::nullopt));
    DS_ASSIGN_OR_RETURN(options.from_log_offset, option_number(command, "--from", 0));
    DS_ASSIGN_OR_RETURN(options.to_log_offset, option_number(command, "--to", 0));
    options.volatile_cache = !command.options.contains("--no-volatile-cache");
    DS_ASSIGN_OR_RETURN(options.mark_log_offset, option_number(command, "--mark", 0));
    std::optional<LogClock> clock;
    if (const auto file = command.options.find("--host-writeback"); file != command.options.end()) {
        DS_ASSIGN_OR_RETURN(const HostWritebackRecord record,
                            read_host_writeback_record(file->second));
        clock.emplace(record.clock);
        options.clock = &*clock;
        options.writeback_window_s = record.window_s;
    }
    const std::vector<CrashState> states = crash_states(log, cache, options);
    if (which >= states.size())
        return make_error(errc::kInvalidArgument, "the log has " + std::to_string(states.size()) +
                                                      " crash states under these options, no " +
                                                      command.words[4]);
    return states[which].applied;
}

int build(const Command& command, std::ostream& out, std::ostream& err) {
    const std::string& log_path = command.words[1];
    const std::string& base = command.words[2];
    const std::string& target = command.words[3];
    auto built = [&]() -> Result<CopyMethod> {
        DS_ASSIGN_OR_RETURN(const LogIndex log, read_log(log_path));
        DS_ASSIGN_OR_RETURN(const auto applied, entries_to_apply(command, log));
        DS_ASSIGN_OR_RETURN(const std::uint64_t limit, size_limit(command, base));
        return build_crash_image(base, log, log_path, applied, target, limit);
    }();
    if (!built.ok()) {
        err << "disksweep-replay: " << built.error().message << "\n";
        return built.error().code == errc::kInvalidArgument ? kUsageError : 1;
    }
    out << target << ": " << command.words[0] << " " << command.words[4] << " of " << log_path
        << " on " << base << " (" << to_string(built.value()) << ")\n";
    return 0;
}

}  // namespace

int replay_tool_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
    auto command = split_command(args);
    const std::string form = command.ok() && !command->words.empty() ? command->words.front() : "";
    const std::size_t operands = form == "list" ? 2 : form == "flush" || form == "state" ? 5 : 0;
    if (!command.ok() || operands == 0 || command->words.size() != operands) {
        if (!command.ok()) err << "disksweep-replay: " << command.error().message << "\n";
        err << kUsage;
        return kUsageError;
    }
    if (form == "list") return list(command->words[1], out, err);
    return build(*command, out, err);
}

}  // namespace ds::durability
