// The guest agent's session with the host (docs/agent-protocol.md):
//   hello -> job -> progress... -> result | error -> (shutdown | EOF | 30 s)
// It tunes the data disk's block layer, formats it, mounts it, runs the
// post-format steps and the workload (dispatched by kind through
// workload_kinds.h), reads back what the guest sees, and reports. Every outside effect goes
// through Channel, ds::ProcessRunner and GuestSystem so the whole flow runs in
// unit tests with fakes; powering off is the caller's business (init.h).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/clock.h"
#include "common/process.h"
#include "common/result.h"
#include "common/settings.h"
#include "guestagent/agent_job.h"
#include "guestagent/block_tuning.h"
#include "guestagent/channel.h"
#include "guestagent/discovery.h"
#include "guestagent/guest_system.h"
#include "guestagent/workload.h"

namespace ds::agent {

// What this agent can do ("hello"): the workload kinds (fio, io,
// mariadb-atis, sysbench-oltp), "block" (it applies job.block) and the file
// system types it can create.
std::vector<std::string> agent_capabilities();

struct AgentOptions {
    SystemRoots roots;
    std::string mount_point = "/mnt/disksweep";
    // A writable directory on tmpfs for the workload's scratch files (a fio
    // job file, MariaDB's socket and config); created if missing.
    std::string scratch_dir = "/run/disksweep";
    // Block device to use instead of looking up protocol::kDataDiskSerial
    // (e.g. "/dev/loop3" in tests). Its readback comes from
    // roots.sysfs/block/<basename>.
    std::string data_device;
    // How long to wait for the host's job after hello, for the data disk to
    // appear (SCSI scanning is asynchronous), and for shutdown after the
    // result.
    std::chrono::milliseconds job_wait = std::chrono::minutes(5);
    std::chrono::milliseconds device_wait = std::chrono::seconds(30);
    std::chrono::milliseconds shutdown_wait = std::chrono::seconds(30);
    // Bound on each command other than the workload (modprobe, mkfs,
    // post-format, readback).
    std::chrono::milliseconds command_timeout = std::chrono::minutes(10);
    // Interval of bench progress messages.
    std::chrono::milliseconds progress_interval = std::chrono::seconds(1);
    // Whether the host's messages reach the agent after the job (a stream):
    // only then does hello announce "trim" (protocol::kTrimCapability), for
    // the agent can then stop before its trim and wait for the host. The
    // one-shot agent reads its job file once, so it cannot.
    bool host_answers_after_job = true;
};

// How the session ended, for the caller's log and exit status.
enum class SessionEnd {
    kResultSent,     // the job ran and its result was delivered
    kErrorSent,      // the job failed and the error was delivered
    kShutdownEarly,  // the host sent shutdown instead of a job
};

class Agent {
  public:
    // Every wait, retry and timing of the session is decided on `clock`
    // (the workload's too); `channel` must take its deadlines on the same
    // clock (channel.h).
    Agent(Channel& channel, ProcessRunner& runner, GuestSystem& system, AgentOptions options,
          const Clock& clock = real_clock());

    // Runs one session. An Error means the channel itself failed (nothing
    // more can be reported); a failing job is SessionEnd::kErrorSent.
    Result<SessionEnd> run_session();

  private:
    struct PhaseFailure {
        std::string phase;
        std::string message;
        std::string code;  // error.code: "timeout", "no_space" or "" (none)
    };
    using JobOutcome = std::variant<Json, PhaseFailure>;
    // What differs between the "result" messages of a run, a preparation and
    // a check (docs/agent-protocol.md); result_message adds the rest.
    struct ResultBody {
        Json timings;
        Json output;
        Json metrics = Json::object();
        Json readback = Json::object();
    };

    Status send(std::string_view type, const Json& payload);
    void send_progress(std::string_view phase, const std::string& message, double elapsed_s,
                       std::optional<double> fraction = std::nullopt);
    // `ack` {run_id, id}: record `id` of a ledger workload is acknowledged.
    void send_ack(const std::string& run_id, long long id);
    Json hello_payload();
    JobOutcome run_job(const AgentJob& job);
    JobOutcome check_crash_image(const AgentJob& job);
    // job.check_disks: each disk checked in turn, one report each.
    JobOutcome check_crash_images(const AgentJob& job);
    // The report on the disk with `serial`; a disk not found by `found_by`
    // or not checkable is a report saying so, never an Error.
    Json check_disk_by_serial(const AgentJob& job, const std::string& serial,
                              Clock::time_point found_by);
    WorkloadContext crash_check_context(const AgentJob& job);
    // The one envelope of every job's "result": `body` with the job's run_id
    // and the versions of the kernel, fio and the agent.
    Json result_message(const AgentJob& job, ResultBody body) const;
    // A check job's result around `output`, timed from `start`.
    Json check_result(const AgentJob& job, Clock::time_point start, Json output);
    // The phases of run_job that are more than one call. `tune_start` is
    // the start of the tune phase, the origin of its progress times.
    Status tune_block_layer(const AgentJob& job, const std::string& device_name,
                            Clock::time_point tune_start);
    Status mount_data_disk(const AgentJob& job, const std::string& device_path);
    // job.trim: sync, trim_ready, the host's trim, remove the workload's
    // files, fstrim; what it removed and trimmed (or the trim's error) goes
    // into `readback`.
    Status trim_after_workload(const AgentJob& job, Json& readback);
    // job.mark: sync, mark_ready, then wait for the host's mark.
    Status mark_measured_window(const AgentJob& job);
    // Waits for the host's answer of type `expected` to `sent`; anything
    // else is errc::kProtocol.
    Status await_host(std::string_view expected, std::string_view sent);
    // A failed workload as a "bench" failure, with error.code "timeout" or
    // "no_space" when the error says so.
    static PhaseFailure bench_failure(const Error& error);
    // Sends the job's result or error; an Error when the channel failed.
    Result<SessionEnd> report_outcome(const AgentJob& job, JobOutcome outcome);
    Result<std::string> locate_data_disk();
    // The block device (e.g. "vdc") whose serial is `serial`, looked for
    // until `deadline` (a disk may still be appearing); `what` names it in
    // the error.
    Result<std::string> locate_disk(std::string_view serial, std::string_view what,
                                    Clock::time_point deadline);
    Status format(const AgentJob& job, const std::string& device_path);
    // A prepared disk must hold the job's file system type (blkid): an
    // errc::kSettingsMismatch naming both otherwise.
    Status check_prepared_filesystem(const AgentJob& job, const std::string& device_path);
    // The format phase of a job: mkfs, or the check of a prepared disk.
    Status format_or_check(const AgentJob& job, const std::string& device_path);
    // The result of a job.dataset "prepare": no metrics, its timings with
    // the preparation as prepare_s.
    Json preparation_result(const AgentJob& job, Json timings, WorkloadOutput output);
    Status run_post_format_steps(const AgentJob& job);
    Result<WorkloadOutput> run_workload(const AgentJob& job);
    // btrfs profiles and the mount point's attributes, added to `readback`
    // (left out, with a log line, when the command fails).
    void read_back_filesystem(const AgentJob& job, Json& readback);
    // ok when nothing is mounted (any more); else why it stays mounted.
    Status unmount_if_mounted();
    void await_shutdown();

    Channel& channel_;
    ProcessRunner& runner_;
    GuestSystem& system_;
    AgentOptions options_;
    const Clock& clock_;
    std::string kernel_;
    std::string fio_version_;
    bool mounted_ = false;
};

}  // namespace ds::agent
