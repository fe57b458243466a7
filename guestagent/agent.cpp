#include "guestagent/agent.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "common/clock.h"
#include "common/protocol.h"
#include "common/text.h"
#include "common/version.h"
#include "common/workload_output.h"
#include "guestagent/cpu_stat.h"
#include "guestagent/crash_check.h"
#include "guestagent/log.h"
#include "guestagent/workload_kinds.h"

namespace ds::agent {
namespace {

using namespace std::chrono_literals;

constexpr auto kFioVersionTimeout = 10s;
constexpr auto kDevicePollInterval = 200ms;
constexpr auto kUnmountPatience = 30s;
constexpr auto kUnmountRetryInterval = 200ms;
constexpr std::string_view kNoSpaceText = "No space left on device";

// Phases named in "error" messages (docs/agent-protocol.md).
constexpr std::string_view kPhaseJob = "job";
constexpr std::string_view kPhaseDisk = "disk";
constexpr std::string_view kPhaseTune = "tune";
constexpr std::string_view kPhaseFormat = "format";
constexpr std::string_view kPhaseMount = "mount";
constexpr std::string_view kPhasePostFormat = "post_format";
constexpr std::string_view kPhaseBench = "bench";
constexpr std::string_view kPhaseTrim = "trim";
constexpr std::string_view kPhaseResult = "result";
constexpr std::string_view kPhaseCheck = "check";
// The hello capability of an agent that can check a crash image
// (job.check, guestagent/crash_check.h).
constexpr std::string_view kCheckCapability = "check";

// error.code values (docs/agent-protocol.md): why a workload ended early.
constexpr std::string_view kCodeTimeout = "timeout";
constexpr std::string_view kCodeNoSpace = "no_space";

// The flag that makes mkfs.TYPE overwrite an existing file system without
// asking (the data disk may hold one from an image or an earlier run).
std::string_view mkfs_force_flag(std::string_view fs_type) {
    return fs_type == "ext4" ? "-F" : "-f";
}

// How long each phase of a job took, in seconds: result.timings.
struct PhaseTimings {
    double tune_s = 0;
    double format_s = 0;
    double mount_s = 0;
    double post_format_s = 0;
    double bench_s = 0;
};

Json timings_json(const PhaseTimings& timings) {
    return {{"tune_s", timings.tune_s},
            {"format_s", timings.format_s},
            {"mount_s", timings.mount_s},
            {"post_format_s", timings.post_format_s},
            {"bench_s", timings.bench_s}};
}

}  // namespace

std::vector<std::string> agent_capabilities() {
    std::vector<std::string> capabilities;
    for (const auto& kind : workload_kind_table()) capabilities.emplace_back(kind.kind);
    capabilities.emplace_back("block");
    capabilities.emplace_back(kCheckCapability);
    for (const auto type : filesystem_types()) capabilities.emplace_back(type);
    capabilities.emplace_back(protocol::kDatasetCapability);
    return capabilities;
}

Agent::Agent(Channel& channel, ProcessRunner& runner, GuestSystem& system, AgentOptions options,
             const Clock& clock)
    : channel_(channel),
      runner_(runner),
      system_(system),
      options_(std::move(options)),
      clock_(clock) {}

Status Agent::send(std::string_view type, const Json& payload) {
    const std::string line = protocol::encode(type, payload);
    if (line.size() > protocol::kMaxMessageBytes) {
        return make_error(errc::kProtocol, std::string(type) + " message of " +
                                               std::to_string(line.size()) +
                                               " bytes exceeds the protocol limit of " +
                                               std::to_string(protocol::kMaxMessageBytes));
    }
    return channel_.write(line);
}

void Agent::send_progress(std::string_view phase, const std::string& message, double elapsed_s,
                          std::optional<double> fraction) {
    Json payload = {{"phase", phase}, {"message", message}, {"elapsed_s", elapsed_s}};
    if (fraction) payload["fraction"] = std::clamp(*fraction, 0.0, 1.0);
    // Progress is advisory: a failed write shows up again on the result.
    if (auto status = send(protocol::kProgress, payload); !status) {
        log_line("cannot send progress: " + status.error().message);
    }
}

void Agent::send_ack(const std::string& run_id, long long id) {
    // A lost ack is seen by the host (the result's count exceeds the acks
    // it got), which fails the run: no need to stop the workload here.
    if (auto status = send(protocol::kAck, Json{{"run_id", run_id}, {"id", id}}); !status) {
        log_line("cannot send ack " + std::to_string(id) + ": " + status.error().message);
    }
}

Json Agent::hello_payload() {
    std::vector<std::string> capabilities = agent_capabilities();
    if (options_.host_answers_after_job) {
        capabilities.emplace_back(protocol::kTrimCapability);
        capabilities.emplace_back(protocol::kMarkCapability);
    }
    Json hello{{"agent_version", std::string(disksweep_version())},
               {"protocol", protocol::kVersion},
               {"kernel", kernel_},
               {"fio_version", fio_version_},
               {"capabilities", std::move(capabilities)}};
    // The image's release, which the host checks against the image's
    // manifest (daemon/run/image_manifest.h). Left out when unreadable.
    if (const std::optional<OsRelease> os = read_os_release(options_.roots.os_release)) {
        hello["os"] = {{"id", os->id}, {"version_id", os->version_id}, {"codename", os->codename}};
    }
    return hello;
}

Result<SessionEnd> Agent::run_session() {
    kernel_ = system_.kernel_release();
    auto fio = runner_.run({"fio", "--version"}, kFioVersionTimeout);
    fio_version_ = fio.ok() && fio->exit_code == 0 ? trim_trailing(fio->stdout_text) : "";
    if (fio_version_.empty()) log_line("fio --version failed; is fio installed?");

    if (auto status = send(protocol::kHello, hello_payload()); !status) {
        return make_error(status.error().code, "sending hello: " + status.error().message);
    }
    log_line("hello sent (kernel " + kernel_ + ", " + fio_version_ + "), waiting for a job");

    auto report_job_error = [this](const Json& run_id, const std::string& message) {
        log_line("job rejected: " + message);
        (void)send(protocol::kError,
                   {{"run_id", run_id}, {"phase", kPhaseJob}, {"message", message}});
        await_shutdown();
        return SessionEnd::kErrorSent;
    };

    auto line = channel_.read_line(clock_.now() + options_.job_wait);
    if (!line) {
        // An oversized line leaves the channel writable: say what was wrong.
        if (line.error().code == errc::kProtocol) {
            return report_job_error(nullptr, line.error().message);
        }
        return make_error(line.error().code, "waiting for a job: " + line.error().message);
    }
    auto message = protocol::decode(*line);
    if (!message) return report_job_error(nullptr, message.error().message);
    const std::string type = (*message)["type"];
    if (type == protocol::kShutdown) {
        log_line("shutdown before any job");
        return SessionEnd::kShutdownEarly;
    }
    const Json run_id = message->contains("run_id") && (*message)["run_id"].is_string()
                            ? (*message)["run_id"]
                            : Json(nullptr);
    if (type != protocol::kJob) {
        return report_job_error(run_id, "expected a job message, got '" + type + "'");
    }
    auto job = parse_job(*message);
    if (!job) return report_job_error(run_id, job.error().message);

    log_line("job " + job->run_id + ": " + job->filesystem.type + " / " + job->workload.name);
    JobOutcome outcome = run_job(*job);
    const Status unmounted = unmount_if_mounted();
    system_.sync();
    // A golden volume must be clean: every clone mounts what it holds.
    if (!unmounted && job->dataset == DatasetMode::kPrepareOnly &&
        std::holds_alternative<Json>(outcome)) {
        outcome = PhaseFailure{
            std::string(kPhaseMount),
            "cannot unmount the prepared golden volume: " + unmounted.error().message, ""};
    }

    auto end = report_outcome(*job, std::move(outcome));
    if (!end) return end.error();
    await_shutdown();
    return end;
}

// Sends the job's result, or its error (a result the protocol refuses
// becomes a "result" phase error). An Error when the channel failed.
Result<SessionEnd> Agent::report_outcome(const AgentJob& job, JobOutcome outcome) {
    if (auto* result = std::get_if<Json>(&outcome)) {
        if (auto status = send(protocol::kResult, *result); !status) {
            if (status.error().code != errc::kProtocol) return status.error();
            outcome = PhaseFailure{std::string(kPhaseResult), status.error().message, ""};
        }
    }
    if (auto* failure = std::get_if<PhaseFailure>(&outcome)) {
        log_line("job " + job.run_id + " failed in " + failure->phase + ": " + failure->message);
        Json error = {
            {"run_id", job.run_id}, {"phase", failure->phase}, {"message", failure->message}};
        if (!failure->code.empty()) error["code"] = failure->code;
        DS_TRY(send(protocol::kError, error));
        return SessionEnd::kErrorSent;
    }
    log_line("job " + job.run_id + ": result sent");
    return SessionEnd::kResultSent;
}

Agent::JobOutcome Agent::check_crash_image(const AgentJob& job) {
    if (!job.check_disks.empty()) return check_crash_images(job);
    auto device_name = locate_data_disk();
    if (!device_name) return PhaseFailure{std::string(kPhaseDisk), device_name.error().message, ""};
    const std::string device_path = options_.data_device.empty()
                                        ? options_.roots.dev + "/" + *device_name
                                        : options_.data_device;
    if (auto made = system_.make_directories(options_.scratch_dir); !made) {
        return PhaseFailure{std::string(kPhaseCheck), made.error().message, ""};
    }
    send_progress(kPhaseCheck, "checking the crash image on " + device_path, 0);
    const auto start = clock_.now();
    WorkloadContext context = crash_check_context(job);
    auto report = check_crash_state(
        CrashCheckRequest{device_path, job.filesystem.type, options_.mount_point, job.workload},
        system_, context);
    if (!report) return PhaseFailure{std::string(kPhaseCheck), report.error().message, ""};
    return check_result(job, start, std::move(*report));
}

Agent::JobOutcome Agent::check_crash_images(const AgentJob& job) {
    if (auto made = system_.make_directories(options_.scratch_dir); !made) {
        return PhaseFailure{std::string(kPhaseCheck), made.error().message, ""};
    }
    const auto start = clock_.now();
    // The disks were all attached at boot: one wait for the lot, so missing
    // ones cost device_wait once, not once each.
    const auto found_by = start + options_.device_wait;
    const std::size_t count = job.check_disks.size();
    Json states = Json::array();
    for (std::size_t i = 0; i < count; ++i) {
        send_progress(kPhaseCheck,
                      "checking crash image " + std::to_string(i + 1) + " of " +
                          std::to_string(count) + " (serial " + job.check_disks[i] + ")",
                      seconds_since_rounded_to_ms(start, clock_),
                      static_cast<double>(i) / static_cast<double>(count));
        states.push_back(check_disk_by_serial(job, job.check_disks[i], found_by));
    }
    return check_result(job, start, Json{{"states", std::move(states)}});
}

Json Agent::check_disk_by_serial(const AgentJob& job, const std::string& serial,
                                 Clock::time_point found_by) {
    // One report per disk, whatever happens to it: a disk that cannot be
    // checked must not hide the others' results.
    const auto unchecked = [&](const Error& error) {
        Json report = {{"mounted", false},
                       {"mount_error", "crash image " + serial + " not checked: " + error.message}};
        bound_report(report);
        return report;
    };
    auto name = locate_disk(serial, "crash image", found_by);
    if (!name) return unchecked(name.error());
    // Each disk on a mount point of its own: one that stays mounted cannot
    // hide the next one.
    WorkloadContext context = crash_check_context(job);
    auto report =
        check_crash_state(CrashCheckRequest{options_.roots.dev + "/" + *name, job.filesystem.type,
                                            options_.mount_point + "/" + serial, job.workload},
                          system_, context);
    if (!report) return unchecked(report.error());
    return std::move(*report);
}

WorkloadContext Agent::crash_check_context(const AgentJob& job) {
    return WorkloadContext{runner_,
                           options_.mount_point,
                           options_.scratch_dir,
                           std::chrono::seconds(job.timeout_s),
                           {},
                           &clock_,
                           {},
                           DatasetMode::kFresh};
}

Json Agent::result_message(const AgentJob& job, ResultBody body) const {
    return Json{{"run_id", job.run_id},
                {"timings", std::move(body.timings)},
                {"output", std::move(body.output)},
                {"metrics", std::move(body.metrics)},
                {"readback", std::move(body.readback)},
                {"versions",
                 {{"kernel", kernel_},
                  {"fio", fio_version_},
                  {"agent", std::string(disksweep_version())}}}};
}

Json Agent::check_result(const AgentJob& job, Clock::time_point start, Json output) {
    return result_message(job,
                          {.timings = {{"bench_s", seconds_since_rounded_to_ms(start, clock_)}},
                           .output = std::move(output)});
}

Agent::JobOutcome Agent::run_job(const AgentJob& job) {
    const auto fail = [](std::string_view phase, const Error& error) {
        return PhaseFailure{std::string(phase), error.message, ""};
    };
    if (job.check) return check_crash_image(job);
    // The guest's CPU over the whole job, the window the host's figures cover.
    const std::optional<CpuTicks> cpu_before = read_cpu_ticks(options_.roots.proc);

    auto device_name = locate_data_disk();
    if (!device_name) return fail(kPhaseDisk, device_name.error());
    const std::string device_path = options_.data_device.empty()
                                        ? options_.roots.dev + "/" + *device_name
                                        : options_.data_device;
    PhaseTimings timings;

    const auto tune_start = clock_.now();
    if (auto status = tune_block_layer(job, *device_name, tune_start); !status) {
        return fail(kPhaseTune, status.error());
    }
    timings.tune_s = seconds_since_rounded_to_ms(tune_start, clock_);

    const auto format_start = clock_.now();
    if (auto status = format_or_check(job, device_path); !status) {
        return fail(kPhaseFormat, status.error());
    }
    timings.format_s = seconds_since_rounded_to_ms(format_start, clock_);

    const auto mount_start = clock_.now();
    if (auto status = mount_data_disk(job, device_path); !status) {
        return fail(kPhaseMount, status.error());
    }
    timings.mount_s = seconds_since_rounded_to_ms(mount_start, clock_);

    const auto post_format_start = clock_.now();
    // A prepared disk had its steps done with the golden volume (nocow's +C
    // stays on the directory: the readback shows it).
    if (job.dataset != DatasetMode::kPrepared) {
        if (auto status = run_post_format_steps(job); !status) {
            return fail(kPhasePostFormat, status.error());
        }
    }
    timings.post_format_s = seconds_since_rounded_to_ms(post_format_start, clock_);

    const auto bench_start = clock_.now();
    auto workload_output = run_workload(job);
    if (!workload_output) return bench_failure(workload_output.error());
    timings.bench_s = seconds_since_rounded_to_ms(bench_start, clock_);
    if (job.dataset == DatasetMode::kPrepareOnly) {
        return preparation_result(job, timings_json(timings), std::move(*workload_output));
    }
    auto metrics = metrics_from_workload_output(job.workload.kind, workload_output->output);
    if (!metrics) return fail(kPhaseBench, metrics.error());

    // Read back while still mounted: /proc/mounts shows the options in force.
    Json readback = read_disk_readback(options_.roots, *device_name, options_.mount_point);
    read_back_filesystem(job, readback);
    if (workload_output->readback.is_object()) readback.update(workload_output->readback);
    if (job.trim) {
        if (auto status = trim_after_workload(job, readback); !status) {
            return fail(kPhaseTrim, status.error());
        }
    }

    Json metrics_json = Json::object();
    for (const auto& [key, value] : *metrics) metrics_json[key] = value;
    Json result = result_message(job, {.timings = timings_json(timings),
                                       .output = std::move(workload_output->output),
                                       .metrics = std::move(metrics_json),
                                       .readback = std::move(readback)});
    const std::optional<CpuTicks> cpu_after = read_cpu_ticks(options_.roots.proc);
    if (cpu_before && cpu_after) {
        result["guest_cpu"] = cpu_seconds_between(*cpu_before, *cpu_after, ::sysconf(_SC_CLK_TCK));
    }
    return result;
}

Json Agent::preparation_result(const AgentJob& job, Json timings, WorkloadOutput output) {
    timings["prepare_s"] = timings["bench_s"];
    timings.erase("bench_s");
    return result_message(job, {.timings = std::move(timings), .output = std::move(output.output)});
}

Status Agent::await_host(std::string_view expected, std::string_view sent) {
    DS_ASSIGN_OR_RETURN(auto line, channel_.read_line(clock_.now() + options_.job_wait));
    DS_ASSIGN_OR_RETURN(auto message, protocol::decode(line));
    const std::string type = message["type"];
    if (type != expected) {
        return make_error(errc::kProtocol, "expected '" + std::string(expected) + "' after " +
                                               std::string(sent) + ", got '" + type + "'");
    }
    return ok_status();
}

Status Agent::mark_measured_window(const AgentJob& job) {
    // Everything before the workload's first measured write (the file
    // system, the post-format steps, the workload's setup) goes to the disk
    // now, so the host can make it durable and mark the log after it.
    system_.sync();
    DS_TRY(send(protocol::kMarkReady, {{"run_id", job.run_id}}));
    return await_host(protocol::kMark, protocol::kMarkReady);
}

Status Agent::trim_after_workload(const AgentJob& job, Json& readback) {
    // What the workload wrote must be on the disk before the host measures.
    system_.sync();
    DS_TRY(send(protocol::kTrimReady, {{"run_id", job.run_id}}));
    DS_TRY(await_host(protocol::kTrim, protocol::kTrimReady));
    send_progress(kPhaseTrim, "removing the workload's files, then fstrim " + options_.mount_point,
                  0);
    DS_ASSIGN_OR_RETURN(auto removed, system_.remove_contents(options_.mount_point));
    system_.sync();
    readback["trim_removed_bytes"] = removed;
    // A file system or disk that cannot trim is not the agent's failure: the
    // host sees the storage not drop and says whether that was expected.
    auto trimmed = system_.trim(options_.mount_point);
    if (trimmed) {
        readback["trimmed_bytes"] = *trimmed;
    } else {
        readback["trim_error"] = trimmed.error().message;
        log_line("trim: " + trimmed.error().message);
    }
    system_.sync();
    return ok_status();
}

Status Agent::tune_block_layer(const AgentJob& job, const std::string& device_name,
                               Clock::time_point tune_start) {
    if (job.block.empty()) return ok_status();
    const auto note = [this, tune_start](const std::string& line) {
        send_progress(kPhaseTune, line, seconds_since_rounded_to_ms(tune_start, clock_));
    };
    return apply_block_tuning(job.block, device_name, options_.roots, system_, runner_,
                              options_.command_timeout, note);
}

Status Agent::mount_data_disk(const AgentJob& job, const std::string& device_path) {
    send_progress(
        kPhaseMount,
        "mounting " + device_path + " at " + options_.mount_point +
            (job.filesystem.mount_options.empty() ? "" : " with " + job.filesystem.mount_options),
        0);
    DS_TRY(system_.make_directories(options_.mount_point));
    DS_TRY(system_.mount(device_path, options_.mount_point, job.filesystem.type,
                         job.filesystem.mount_options));
    mounted_ = true;
    return ok_status();
}

Agent::PhaseFailure Agent::bench_failure(const Error& error) {
    PhaseFailure failure{std::string(kPhaseBench), error.message, ""};
    if (error.code == errc::kTimeout) {
        failure.code = kCodeTimeout;
    } else if (error.message.find(kNoSpaceText) != std::string::npos ||
               error.message.find("ENOSPC") != std::string::npos) {
        failure.code = kCodeNoSpace;
        if (error.message.find(kNoSpaceText) == std::string::npos) {
            failure.message += " (" + std::string(kNoSpaceText) + ")";
        }
    }
    return failure;
}

Result<std::string> Agent::locate_data_disk() {
    if (!options_.data_device.empty()) {
        std::error_code error;
        if (!std::filesystem::exists(options_.data_device, error)) {
            return make_error(errc::kNotFound,
                              "data device " + options_.data_device + " does not exist");
        }
        const auto resolved = std::filesystem::canonical(options_.data_device, error);
        return (error ? std::filesystem::path(options_.data_device) : resolved).filename().string();
    }
    return locate_disk(protocol::kDataDiskSerial, "data disk", clock_.now() + options_.device_wait);
}

Result<std::string> Agent::locate_disk(std::string_view serial, std::string_view what,
                                       Clock::time_point deadline) {
    // The disk may still be appearing (asynchronous SCSI scan, devtmpfs).
    for (;;) {
        auto name = find_disk_by_serial(options_.roots, serial);
        std::error_code error;
        if (name.ok() && std::filesystem::exists(options_.roots.dev + "/" + *name, error)) {
            return name;
        }
        if (clock_.now() >= deadline) {
            if (!name.ok()) return name.error();
            return make_error(errc::kNotFound, std::string(what) + " " + *name +
                                                   " has no device node " + options_.roots.dev +
                                                   "/" + *name);
        }
        clock_.sleep_for(kDevicePollInterval);
    }
}

Status Agent::format_or_check(const AgentJob& job, const std::string& device_path) {
    if (job.dataset == DatasetMode::kPrepared) return check_prepared_filesystem(job, device_path);
    return format(job, device_path);
}

Status Agent::check_prepared_filesystem(const AgentJob& job, const std::string& device_path) {
    const std::string& wanted = job.filesystem.type;
    send_progress(kPhaseFormat,
                  "prepared dataset: checking that " + device_path + " holds " + wanted, 0);
    // -p: probe the device itself, not blkid's cache. Exit 2: nothing found.
    auto probed = runner_.run({"blkid", "-p", "-o", "value", "-s", "TYPE", device_path},
                              options_.command_timeout);
    if (!probed) return probed.error();
    if (probed->exit_code != 0 && probed->exit_code != 2) {
        return make_error(errc::kAgent, "blkid -p " + device_path + " failed (exit " +
                                            std::to_string(probed->exit_code) +
                                            "): " + probed->stderr_text);
    }
    const std::string found = trim_trailing(probed->stdout_text);
    if (found == wanted) return ok_status();
    return make_error(errc::kSettingsMismatch,
                      "the prepared dataset's disk " + device_path + " holds " +
                          (found.empty() ? "no file system" : "a " + found + " file system") +
                          ", not the configured " + wanted);
}

Status Agent::format(const AgentJob& job, const std::string& device_path) {
    const std::string& type = job.filesystem.type;
    if (!filesystem_registered(options_.roots, type)) {
        send_progress(kPhaseFormat, "loading the " + type + " module", 0);
        auto loaded = run_checked(runner_, {"modprobe", type}, options_.command_timeout);
        // A failed modprobe only matters if the kernel still lacks the type.
        if (!loaded && !filesystem_registered(options_.roots, type)) return loaded.error();
    }
    std::vector<std::string> argv = {"mkfs." + type, std::string(mkfs_force_flag(type))};
    argv.insert(argv.end(), job.filesystem.mkfs_options.begin(), job.filesystem.mkfs_options.end());
    argv.push_back(device_path);
    send_progress(kPhaseFormat, describe_command(argv), 0);
    return run_checked(runner_, argv, options_.command_timeout);
}

Status Agent::run_post_format_steps(const AgentJob& job) {
    const auto start = clock_.now();
    for (const auto& step : job.filesystem.post_format) {
        const PostFormatCommand* command = find_post_format_command(step);
        if (command == nullptr) {  // parse_job already refused it
            return make_error(errc::kInvalidArgument, "unknown post-format step '" + step + "'");
        }
        std::vector<std::string> argv(command->argv_before_mount_point.begin(),
                                      command->argv_before_mount_point.end());
        argv.push_back(options_.mount_point);
        // Progress phases are format|mount|bench: a step is part of formatting.
        send_progress(kPhaseFormat, "post-format step " + step + ": " + describe_command(argv),
                      seconds_since_rounded_to_ms(start, clock_));
        DS_TRY(run_checked(runner_, argv, options_.command_timeout));
    }
    return ok_status();
}

Result<WorkloadOutput> Agent::run_workload(const AgentJob& job) {
    const WorkloadKindEntry* entry = find_workload_kind_entry(job.workload.kind);
    if (entry == nullptr) {  // parse_job already refused it
        return make_error(errc::kInvalidArgument,
                          "unknown workload kind '" + job.workload.kind + "'");
    }
    DS_TRY(system_.make_directories(options_.scratch_dir));
    // Runners report whenever they like; the host gets a repeated message at
    // most once per progress_interval, a new one (a new step, the end) at once.
    auto last_sent = clock_.now() - options_.progress_interval;
    std::string last_message;
    WorkloadContext context{
        runner_,
        options_.mount_point,
        options_.scratch_dir,
        std::chrono::seconds(job.timeout_s),
        [&](const std::string& message, double elapsed_s, std::optional<double> fraction) {
            const auto now = clock_.now();
            if (message == last_message && now - last_sent < options_.progress_interval &&
                fraction != 1.0) {
                return;
            }
            last_sent = now;
            last_message = message;
            send_progress(kPhaseBench, message, elapsed_s, fraction);
        },
        &clock_,
        [&](long long id) { send_ack(job.run_id, id); },
        job.dataset};
    if (job.mark) context.begin_measurement = [&] { return mark_measured_window(job); };
    log_line("running " + job.workload.kind + " workload " + job.workload.name + " in " +
             options_.mount_point + " (time limit " + std::to_string(job.timeout_s) + " s)");
    return entry->run(job.workload, context);
}

void Agent::read_back_filesystem(const AgentJob& job, Json& readback) {
    const auto run = [this](const std::vector<std::string>& argv) -> std::optional<std::string> {
        auto output = runner_.run(argv, options_.command_timeout);
        if (output && output->exit_code == 0) return output->stdout_text;
        log_line("readback: " + describe_command(argv) +
                 " failed: " + (output ? output->stderr_text : output.error().message));
        return std::nullopt;
    };
    if (job.filesystem.type == "btrfs") {
        if (auto text = run({"btrfs", "filesystem", "df", options_.mount_point})) {
            if (auto profiles = parse_btrfs_df_profiles(*text)) {
                readback["btrfs"] = to_json(*profiles);
            } else {
                log_line("readback: " + profiles.error().message);
            }
        }
    }
    if (auto text = run({"lsattr", "-d", options_.mount_point})) {
        if (auto flags = parse_lsattr_flags(*text)) {
            readback["work_dir_attributes"] = *flags;
            readback["nocow"] = flags->find('C') != std::string::npos;
        } else {
            log_line("readback: " + flags.error().message);
        }
    }
}

Status Agent::unmount_if_mounted() {
    if (!mounted_) return ok_status();
    mounted_ = false;
    // A workload stopped at its time limit may leave processes behind (fio's
    // job processes survive the kill of fio's process group), or ones still
    // finishing in-flight I/O after SIGKILL: the file system stays busy until
    // they are gone.
    const auto deadline = clock_.now() + kUnmountPatience;
    bool killed_users = false;
    for (;;) {
        auto status = system_.unmount(options_.mount_point);
        if (status) return ok_status();
        if (!killed_users) {
            // What the stopped workload left running (fio's setsid'ed job
            // processes) holds the file system: stop it.
            killed_users = true;
            for (const auto& process : system_.kill_processes_using(options_.mount_point)) {
                log_line("killed " + process + ", which kept " + options_.mount_point + " busy");
            }
        }
        if (clock_.now() >= deadline) {
            log_line("cannot unmount the data disk: " + status.error().message);
            return status.error();
        }
        clock_.sleep_for(kUnmountRetryInterval);
    }
}

void Agent::await_shutdown() {
    const auto deadline = clock_.now() + options_.shutdown_wait;
    for (;;) {
        auto line = channel_.read_line(deadline);
        if (!line) {
            log_line("no shutdown message (" + line.error().message + "); stopping anyway");
            return;
        }
        auto message = protocol::decode(*line);
        if (message && (*message)["type"] == protocol::kShutdown) {
            log_line("shutdown requested by the host");
            return;
        }
        log_line("ignoring message while waiting for shutdown: " +
                 (message ? (*message)["type"].get<std::string>() : message.error().message));
    }
}

}  // namespace ds::agent
