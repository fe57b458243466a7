#include "guestagent/workload_kinds.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>

#include "common/clock.h"
#include "common/fio_job.h"
#include "common/fio_logs.h"
#include "common/workload_kind.h"
#include "guestagent/io_job.h"
#include "guestagent/io_options.h"
#include "guestagent/ledger_workload.h"
#include "guestagent/log.h"

namespace ds::agent {
namespace {

using namespace std::chrono_literals;

// How often a runner looks at its child (a real wait on it): progress and
// the time limit, which is decided on the context's Clock. The agent
// forwards progress to the host at its own pace (AgentOptions).
constexpr auto kPollInterval = 100ms;
// A bound when the context carries none: a week, the job's own maximum.
constexpr std::chrono::seconds kNoTimeLimit = std::chrono::hours(24 * 7);

constexpr std::string_view kNoSpaceText = "No space left on device";

// fio's per-second logs: ctx.scratch_dir/fio-logs/ds_{iops,bw}.N.log.
constexpr std::string_view kFioLogDir = "fio-logs";
constexpr std::string_view kFioLogName = "ds";

// "12.3" for messages.
std::string format_seconds(double seconds) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f", seconds);
    return text;
}

std::chrono::seconds time_limit_of(const WorkloadContext& ctx) {
    return ctx.time_limit > std::chrono::seconds(0) ? ctx.time_limit : kNoTimeLimit;
}

void report(WorkloadContext& ctx, const std::string& message, double elapsed,
            std::optional<double> fraction) {
    if (ctx.progress) ctx.progress(message, elapsed, fraction);
}

std::optional<double> fraction_of(double elapsed, std::optional<double> planned_s) {
    if (!planned_s) return std::nullopt;
    return std::min(1.0, elapsed / *planned_s);
}

// Waits for `running`, reporting "`what` running" every kPollInterval; once
// the time limit has passed, calls `on_time_limit` (once) and keeps waiting.
template <class T>
T wait_reporting(std::future<T>& running, WorkloadContext& ctx, Clock::time_point start,
                 std::optional<double> planned_s, const std::string& what,
                 const std::function<void()>& on_time_limit) {
    bool limit_hit = false;
    while (running.wait_for(kPollInterval) != std::future_status::ready) {
        const double elapsed = seconds_since_rounded_to_ms(start, *ctx.clock);
        report(ctx, what + " running", elapsed, fraction_of(elapsed, planned_s));
        if (!limit_hit && ctx.clock->now() - start >= time_limit_of(ctx)) {
            limit_hit = true;
            on_time_limit();
        }
    }
    return running.get();
}

Json io_params_for(const Workload& workload, const std::string& work_dir) {
    Json params = workload.params;
    params["directory"] = work_dir;
    params["name"] = workload.name;
    return params;
}

// The job file of params.job_file, written to ctx.scratch_dir/NAME.fio; ""
// when the workload has none.
Result<std::string> write_fio_job_file(const Workload& workload, const WorkloadContext& ctx) {
    const auto job_file = workload.params.find(kFioJobFileKey);
    if (job_file == workload.params.end() || !job_file->is_string()) return std::string();
    const std::string path =
        (std::filesystem::path(ctx.scratch_dir) / (workload.name + ".fio")).string();
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << job_file->get<std::string>();
    out.close();
    if (!out) return make_error(errc::kIo, "cannot write the fio job file " + path);
    return path;
}

// The prefix of fio's per-second logs, in a directory emptied first: a log
// an earlier run left would be read as this run's.
Result<std::string> prepare_fio_log_prefix(const WorkloadContext& ctx) {
    const auto dir = std::filesystem::path(ctx.scratch_dir) / kFioLogDir;
    std::error_code error;
    std::filesystem::remove_all(dir, error);
    if (!error) std::filesystem::create_directories(dir, error);
    if (error) {
        return make_error(errc::kIo, "cannot prepare the directory for fio's per-second logs " +
                                         dir.string() + ": " + error.message());
    }
    return (dir / kFioLogName).string();
}

// Adds fio's per-second logs to its report (common/fio_logs.h) and removes
// them. Missing or garbled logs cost the run its time series, never the
// run: the agent's log says what was left out.
void add_per_second_samples(Json& fio_json, const std::string& log_prefix) {
    const FioLogAttachment attached =
        attach_fio_samples(fio_json, read_fio_thread_logs(log_prefix));
    if (attached.skipped_lines > 0) {
        log_line("fio's per-second logs: skipped " + std::to_string(attached.skipped_lines) +
                 " unreadable lines");
    }
    if (!attached.not_attached.empty()) {
        log_line("fio's per-second samples are not in the report: " + attached.not_attached);
    }
    std::error_code error;
    std::filesystem::remove_all(std::filesystem::path(log_prefix).parent_path(), error);
}

}  // namespace

Status check_fio_params(const Workload& workload) {
    auto argv = build_fio_command(workload.name, workload.params, FioDirectory{"/"}, "/job.fio");
    if (!argv) return argv.error();
    return ok_status();
}

Result<WorkloadOutput> run_fio_workload(const Workload& workload, WorkloadContext& ctx) {
    auto job_file_path = write_fio_job_file(workload, ctx);
    if (!job_file_path) return job_file_path.error();
    auto log_prefix = prepare_fio_log_prefix(ctx);
    if (!log_prefix) return log_prefix.error();
    auto argv = build_fio_command(workload.name, workload.params, FioDirectory{ctx.work_dir},
                                  *job_file_path, *log_prefix);
    if (!argv) return argv.error();
    // After "fio --output-format=json --name=NAME" (or "--directory=DIR"
    // before a job file, where it is global): only lay the files out. A
    // prepared disk needs nothing: fio keeps files of the size it wants.
    if (ctx.dataset == DatasetMode::kPrepareOnly)
        argv->insert(argv->begin() + 3, "--create_only=1");
    const auto planned_s = planned_fio_seconds(workload.params);
    const auto limit = time_limit_of(ctx);
    const auto start = ctx.clock->now();
    report(ctx, describe_command(*argv), 0, planned_s ? std::optional<double>(0.0) : std::nullopt);

    // fio runs on its own thread so this one can report progress meanwhile;
    // the runner kills it at the time limit.
    ProcessRunner& runner = ctx.runner;
    auto running = std::async(std::launch::async, [&runner, &argv, limit] {
        return runner.run(*argv, std::chrono::duration_cast<std::chrono::milliseconds>(limit));
    });
    Result<ProcessOutput> output = make_error(errc::kInternal, "fio runner threw");
    try {
        output = wait_reporting(running, ctx, start, planned_s, "fio", [] {});
    } catch (const std::exception& e) {
        return make_error(errc::kInternal, std::string("running fio: ") + e.what());
    }
    if (!output) return output.error();
    if (output->timed_out) {
        return make_error(errc::kTimeout,
                          "fio was stopped after " +
                              format_seconds(seconds_since_rounded_to_ms(start, *ctx.clock)) +
                              " s: it exceeded the workload's time limit of " +
                              std::to_string(limit.count()) + " s and was killed");
    }
    if (output->exit_code != 0) {
        const std::string message =
            describe_fio_failure(*argv, output->stderr_text, output->exit_code, output->signal);
        return make_error(
            message.find(kNoSpaceText) != std::string::npos ? errc::kIo : errc::kAgent, message);
    }
    auto json = parse_fio_stdout(output->stdout_text);
    if (!json) return json.error();
    if (auto failed = fio_job_error(*json)) {
        return make_error(
            failed->find(kNoSpaceText) != std::string::npos ? errc::kIo : errc::kAgent, *failed);
    }
    add_per_second_samples(*json, *log_prefix);
    report(ctx, "fio finished", seconds_since_rounded_to_ms(start, *ctx.clock),
           planned_s ? std::optional<double>(1.0) : std::nullopt);
    WorkloadOutput result;
    result.output = std::move(*json);
    return result;
}

Status check_io_params(const Workload& workload) {
    if (!workload.params.is_object()) {
        return make_error(errc::kInvalidArgument, std::string("workload params is a ") +
                                                      workload.params.type_name() +
                                                      ", expected an object");
    }
    // As the spec parser checks it (common/io_options.h): the options the
    // agent owns are refused here, before it adds its own.
    auto given = resolve_io_options(workload.params, IoOptionSetter::kWorkload);
    if (!given) return given.error();
    auto parsed = io::parse_job_options(io_params_for(workload, "/"));
    if (!parsed) return parsed.error();
    return ok_status();
}

Result<WorkloadOutput> run_io_workload(const Workload& workload, WorkloadContext& ctx) {
    DS_TRY(check_io_params(workload));
    const Json params = io_params_for(workload, ctx.work_dir);
    const auto planned_s = planned_fio_seconds(params);
    const auto limit = time_limit_of(ctx);
    const auto start = ctx.clock->now();
    report(ctx, "io job " + workload.name + " in " + ctx.work_dir, 0,
           planned_s ? std::optional<double>(0.0) : std::nullopt);

    std::atomic<bool> stop{false};
    bool stopped_at_limit = false;
    auto running =
        std::async(std::launch::async, [&params, &stop] { return io::run_io_job(params, &stop); });
    Result<Json> report_json = make_error(errc::kInternal, "io engine threw");
    try {
        report_json = wait_reporting(running, ctx, start, planned_s, "io job", [&] {
            stopped_at_limit = true;
            stop = true;
        });
    } catch (const std::exception& e) {
        return make_error(errc::kInternal, std::string("running the io engine: ") + e.what());
    }
    if (!report_json) {
        if (stopped_at_limit && report_json.error().code == errc::kCancelled) {
            return make_error(errc::kTimeout,
                              "io job " + workload.name + " was stopped after " +
                                  format_seconds(seconds_since_rounded_to_ms(start, *ctx.clock)) +
                                  " s: it exceeded the workload's time limit of " +
                                  std::to_string(limit.count()) + " s");
        }
        return report_json.error();
    }
    report(ctx, "io job finished", seconds_since_rounded_to_ms(start, *ctx.clock),
           planned_s ? std::optional<double>(1.0) : std::nullopt);
    WorkloadOutput result;
    result.output = std::move(*report_json);
    return result;
}

std::span<const WorkloadKindEntry> workload_kind_table() {
    static constexpr std::array<WorkloadKindEntry, 6> kKinds = {{
        {"fio", &check_fio_params, &run_fio_workload},
        {"io", &check_io_params, &run_io_workload},
        {"mariadb-atis",
         [](const Workload& workload) { return check_mariadb_atis_params(workload.params); },
         &run_mariadb_atis},
        {"sysbench-oltp",
         [](const Workload& workload) { return check_sysbench_oltp_params(workload.params); },
         &run_sysbench_oltp},
        {"ledger", [](const Workload& workload) { return check_ledger_params(workload.params); },
         &run_ledger},
        {"pgbench", [](const Workload& workload) { return check_pgbench_params(workload.params); },
         &run_pgbench},
    }};
    return kKinds;
}

const WorkloadKindEntry* find_workload_kind_entry(std::string_view kind) {
    for (const auto& entry : workload_kind_table()) {
        if (entry.kind == kind) return &entry;
    }
    return nullptr;
}

}  // namespace ds::agent
