// The fio workload kind's guard table, and checks against it.
#include "common/fio_options.h"

#include <algorithm>
#include <array>

#include "common/text.h"

namespace ds {
namespace {

// Reasons shared by several rows.
constexpr std::string_view kWritesFiles =
    "writes a file at a path of its own choosing, which can be outside the filesystem under test "
    "(and the agent does not collect it)";
constexpr std::string_view kCgroup =
    "puts the job in a cgroup of the guest with its own I/O weight: a setting outside the "
    "recorded configuration";
constexpr std::string_view kRunsCommand = "runs a command in the guest";
constexpr std::string_view kOtherRun =
    "a fio command-line option, not a job option: it makes fio do something other than run the "
    "job and print JSON";
constexpr std::string_view kAgentLogs =
    "the agent has fio write per-job per-second bandwidth and IOPS logs to its scratch directory "
    "and adds them to the report";
constexpr std::string_view kChangesLogs =
    "it changes the per-second logs the agent reads (their file names, values or time base)";
constexpr std::string_view kNetwork =
    "a fio command-line option, not a job option: it makes fio a network server or client";

// Engines that do their I/O (or file operations) on the job's files in
// `directory`, the mount point of the filesystem under test. null does no
// I/O at all: it cannot leave the filesystem, and measures fio's own ceiling
// (the io kind has the same baseline). Every other engine is refused: they
// reach devices (sg, io_uring_cmd, mtd, dev-dax, pmemblk, libpmem, xnvme,
// spdk), the network or remote storage (net, netsplice, rdma, rbd, rados,
// gfapi, nbd, http, nfs, libhdfs, dfs), run programs or load code (exec,
// external:PATH), do no storage I/O (cpuio), or move extents to a donor file
// named by path (e4defrag).
constexpr std::array<std::string_view, 16> kAllowedEngines = {
    "sync", "psync",  "vsync",  "pvsync",    "pvsync2",    "libaio",   "io_uring",   "posixaio",
    "mmap", "splice", "falloc", "ftruncate", "filecreate", "filestat", "filedelete", "null"};

const std::vector<FioOptionGuard>& guard_table() {
    static const std::vector<FioOptionGuard> table = {
        // The agent's: it names the job after the workload, runs it in the
        // mount point, reads fio's JSON from its standard output and its
        // per-second logs from its scratch directory (common/fio_logs.h).
        {"name", FioOptionRule::kAgentOwned,
         "the agent names the job after the workload (in a job file, sections may name jobs)"},
        {"directory", FioOptionRule::kAgentOwned,
         "the agent runs the job in the mount point of the filesystem under test"},
        {"output", FioOptionRule::kAgentOwned, "the agent reads fio's report from its output"},
        {"output-format", FioOptionRule::kAgentOwned,
         "the agent reads fio's report as JSON (json+, with latency histograms)"},
        {"write_bw_log", FioOptionRule::kAgentOwned, kAgentLogs},
        {"write_iops_log", FioOptionRule::kAgentOwned, kAgentLogs},
        {"log_avg_msec", FioOptionRule::kAgentOwned, kAgentLogs},
        // What the agent's logs depend on.
        {"per_job_logs", FioOptionRule::kRefused, kChangesLogs},
        {"log_max_value", FioOptionRule::kRefused, kChangesLogs},
        {"log_store_compressed", FioOptionRule::kRefused, kChangesLogs},
        {"log_unix_epoch", FioOptionRule::kRefused, kChangesLogs},
        {"log_alternate_epoch", FioOptionRule::kRefused, kChangesLogs},
        {"bwavgtime", FioOptionRule::kRefused, kChangesLogs},
        {"iopsavgtime", FioOptionRule::kRefused, kChangesLogs},
        // Where the I/O goes.
        {"filename", FioOptionRule::kRefused,
         "fio would do its I/O on that file or device instead of the filesystem under test"},
        {"filename_format", FioOptionRule::kRefused,
         "it names the job's files and can place them outside the filesystem under test (an "
         "absolute path, '..')"},
        {"opendir", FioOptionRule::kRefused,
         "it adds every file below another directory, anywhere in the guest, to the job"},
        {"read_iolog", FioOptionRule::kRefused,
         "it replays an I/O log, whose entries name the files or devices to do I/O on"},
        {"replay_redirect", FioOptionRule::kRefused, "it redirects replayed I/O to another device"},
        {"ioengine",
         FioOptionRule::kAllowedValues,
         "only engines that do their I/O on the job's files below the mount point",
         {kAllowedEngines.begin(), kAllowedEngines.end()}},
        {"mem",
         FioOptionRule::kAllowedValues,
         "with ':PATH' fio maps its I/O buffers from that file, creating or overwriting it "
         "wherever it is",
         {"malloc", "shm", "shmhuge", "mmap", "mmaphuge", "mmapshared"}},
        {"iomem",
         FioOptionRule::kAllowedValues,
         "another name of mem",
         {"malloc", "shm", "shmhuge", "mmap", "mmaphuge", "mmapshared"}},
        // Commands.
        {"exec_prerun", FioOptionRule::kRefused, kRunsCommand},
        {"exec_postrun", FioOptionRule::kRefused, kRunsCommand},
        {"program", FioOptionRule::kRefused, "the exec engine's command (the engine is refused)"},
        {"arguments", FioOptionRule::kRefused, "the exec engine's command (the engine is refused)"},
        {"trigger", FioOptionRule::kRefused, kRunsCommand},
        {"trigger-file", FioOptionRule::kRefused, "it arms a trigger, which runs a command"},
        {"trigger-timeout", FioOptionRule::kRefused, "it arms a trigger, which runs a command"},
        {"trigger-remote", FioOptionRule::kRefused, kRunsCommand},
        // Settings the configuration records.
        {"ioscheduler", FioOptionRule::kRefused,
         "it switches the disk's I/O scheduler, which the configuration's `scheduler` axis sets "
         "and records"},
        {"cgroup", FioOptionRule::kRefused, kCgroup},
        {"cgroup_weight", FioOptionRule::kRefused, kCgroup},
        {"cgroup_nodelete", FioOptionRule::kRefused, kCgroup},
        {"profile", FioOptionRule::kRefused,
         "it runs a built-in benchmark with devices and directories of its own"},
        // Files written at a path of the option's choosing.
        {"write_iolog", FioOptionRule::kRefused, kWritesFiles},
        {"merge_blktrace_file", FioOptionRule::kRefused, kWritesFiles},
        {"write_lat_log", FioOptionRule::kRefused, kWritesFiles},
        {"write_hist_log", FioOptionRule::kRefused, kWritesFiles},
        {"bandwidth-log", FioOptionRule::kRefused, kWritesFiles},
        {"aux-path", FioOptionRule::kRefused, kWritesFiles},
        {"inflate-log", FioOptionRule::kRefused, kOtherRun},
        // The rest of fio's command line (fio --help): they configure fio's
        // process, not the job.
        {"server", FioOptionRule::kRefused, kNetwork},
        {"client", FioOptionRule::kRefused, kNetwork},
        {"daemonize", FioOptionRule::kRefused, kNetwork},
        {"remote-config", FioOptionRule::kRefused, kNetwork},
        {"minimal", FioOptionRule::kRefused,
         "it changes fio's output, which the agent reads as JSON"},
        {"append-terse", FioOptionRule::kRefused,
         "it changes fio's output, which the agent reads as JSON"},
        {"terse-version", FioOptionRule::kRefused,
         "it changes fio's output, which the agent reads as JSON"},
        {"parse-only", FioOptionRule::kRefused, kOtherRun},
        {"merge-blktrace-only", FioOptionRule::kRefused, kOtherRun},
        {"version", FioOptionRule::kRefused, kOtherRun},
        {"help", FioOptionRule::kRefused, kOtherRun},
        {"cmdhelp", FioOptionRule::kRefused, kOtherRun},
        {"enghelp", FioOptionRule::kRefused, kOtherRun},
        {"showcmd", FioOptionRule::kRefused, kOtherRun},
        {"cpuclock-test", FioOptionRule::kRefused, kOtherRun},
        {"crctest", FioOptionRule::kRefused, kOtherRun},
        {"section", FioOptionRule::kRefused, kOtherRun},
        {"readonly", FioOptionRule::kRefused, kOtherRun},
        {"debug", FioOptionRule::kRefused, kOtherRun},
        {"eta", FioOptionRule::kRefused, kOtherRun},
        {"eta-newline", FioOptionRule::kRefused, kOtherRun},
        {"eta-interval", FioOptionRule::kRefused, kOtherRun},
        {"status-interval", FioOptionRule::kRefused, kOtherRun},
        {"alloc-size", FioOptionRule::kRefused, kOtherRun},
        {"warnings-fatal", FioOptionRule::kRefused, kOtherRun},
        {"max-jobs", FioOptionRule::kRefused, kOtherRun},
        {"idle-prof", FioOptionRule::kRefused, kOtherRun},
    };
    return table;
}

// Whole fio 3.33 option names that begin a guarded name: on the command line
// getopt_long takes them exactly, so they are not abbreviations of it
// (direct / directory; ba, blockalign's alias / bandwidth-log). Found by
// comparing `fio --cmdhelp=all`, `fio --help` and the allowed engines'
// options with the table.
constexpr std::array<std::string_view, 2> kWholeNamesBeginningGuarded = {"direct", "ba"};

// fio's names compared as the table spells them: lower case, '-' as '_'.
std::string comparable(std::string_view name) {
    std::string out = ascii_lower(name);
    std::replace(out.begin(), out.end(), '-', '_');
    return out;
}

bool is_whole_option_beginning_guarded(const std::string& name) {
    return std::find(kWholeNamesBeginningGuarded.begin(), kWholeNamesBeginningGuarded.end(),
                     name) != kWholeNamesBeginningGuarded.end();
}

// The guard `name` hits at `place`, and whether it hit as an abbreviation.
struct Hit {
    const FioOptionGuard* guard = nullptr;
    bool abbreviation = false;
};

Hit find_guard(std::string_view name, FioOptionPlace place) {
    const std::string wanted = comparable(name);
    Hit hit;
    for (const auto& guard : guard_table()) {
        const std::string guarded = comparable(guard.name);
        if (guarded == wanted) return Hit{&guard, false};
        if (place == FioOptionPlace::kCommandLine && hit.guard == nullptr && !wanted.empty() &&
            guarded.starts_with(wanted) && !is_whole_option_beginning_guarded(wanted)) {
            hit = Hit{&guard, true};
        }
    }
    return hit;
}

std::string in_quotes(std::string_view text) {
    return "'" + std::string(text) + "'";
}

// A job's name is part of its files' names: "<name>.<job>.<file>" in directory.
std::optional<std::string> job_name_problem(std::string_view name) {
    if (name.find_first_of("/$") == std::string_view::npos) return std::nullopt;
    return "job name " + in_quotes(name) +
           " contains '/' or '$': fio names the job's files after it, which could then lie "
           "outside the filesystem under test";
}

// "line N sets 'x', which ..." or "line N: job name ...".
Error job_file_error(int line, const std::string& problem) {
    const std::string separator = problem.starts_with("sets ") ? " " : ": ";
    return make_error(errc::kInvalidArgument, "line " + std::to_string(line) + separator + problem);
}

// One line of a job file: its problem, or nullopt.
std::optional<std::string> job_file_line_problem(std::string_view line) {
    line = trim_whitespace(line);
    if (line.empty() || line.front() == ';' || line.front() == '#') return std::nullopt;
    if (line.front() == '[') {
        const std::size_t end = line.find(']');
        return job_name_problem(line.substr(1, end == std::string_view::npos ? end : end - 1));
    }
    if (line.starts_with("include ") || line.starts_with("include\t") || line == "include")
        return std::string("'include' is refused: the included job file would not be checked");
    const std::size_t equals = line.find('=');
    const std::string_view name = trim_whitespace(line.substr(0, equals));
    const std::string_view value = equals == std::string_view::npos
                                       ? std::string_view()
                                       : trim_whitespace(line.substr(equals + 1));
    if (comparable(name) == "name") return job_name_problem(value);
    const Hit hit = find_guard(name, FioOptionPlace::kJobFile);
    if (hit.guard != nullptr && hit.guard->rule == FioOptionRule::kAgentOwned)
        return "sets " + in_quotes(name) +
               ", which the agent sets: " + std::string(hit.guard->reason);
    if (auto refusal = fio_option_refusal(name, value, FioOptionPlace::kJobFile))
        return "sets " + in_quotes(name) + ", which " + *refusal;
    return std::nullopt;
}

}  // namespace

std::span<const FioOptionGuard> fio_option_guards() {
    return guard_table();
}

std::span<const std::string_view> fio_allowed_engines() {
    return kAllowedEngines;
}

std::optional<std::string> fio_option_refusal(std::string_view name, std::string_view value,
                                              FioOptionPlace place) {
    const Hit hit = find_guard(name, place);
    if (hit.guard == nullptr) return std::nullopt;
    const FioOptionGuard& guard = *hit.guard;
    if (hit.abbreviation) {
        return "is refused: fio takes it as an abbreviation of " + in_quotes(guard.name) +
               ", which " +
               (guard.rule == FioOptionRule::kAllowedValues
                    ? "must be written in full"
                    : "is guarded: " + std::string(guard.reason));
    }
    switch (guard.rule) {
        case FioOptionRule::kAgentOwned:
            return "is set by the agent and cannot be overridden: " + std::string(guard.reason);
        case FioOptionRule::kRefused:
            return "is refused: " + std::string(guard.reason);
        case FioOptionRule::kAllowedValues: {
            const auto& allowed = guard.allowed_values;
            if (std::find(allowed.begin(), allowed.end(), value) != allowed.end())
                return std::nullopt;
            return "is refused with value " + in_quotes(value) + ": " + std::string(guard.reason) +
                   "; allowed: " + join(allowed, ", ");
        }
    }
    return std::nullopt;
}

std::optional<std::string> fio_value_text(const Json& value) {
    if (value.is_string()) return value.get<std::string>();
    if (value.is_boolean()) return value.get<bool>() ? "1" : "0";
    if (value.is_number()) return value.dump();
    return std::nullopt;
}

Status check_fio_job_file(std::string_view text) {
    int number = 1;
    while (!text.empty()) {
        const std::size_t end = text.find('\n');
        if (auto problem = job_file_line_problem(text.substr(0, end)))
            return job_file_error(number, *problem);
        if (end == std::string_view::npos) break;
        text.remove_prefix(end + 1);
        ++number;
    }
    return ok_status();
}

}  // namespace ds
