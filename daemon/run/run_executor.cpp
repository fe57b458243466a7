#include "daemon/run/run_executor.h"

#include "daemon/run/run_attempt.h"

namespace ds {
namespace {

// `reason` without the "; console log: PATH" a failed run's reason names
// (boot_failure, job_failure), the console tail after it kept.
std::string without_console_location(const std::string& reason) {
    const std::size_t location = reason.find("; console log: ");
    if (location == std::string::npos) return reason;
    const std::size_t tail = reason.find('\n', location);
    return reason.substr(0, location) + (tail == std::string::npos ? "" : reason.substr(tail));
}

}  // namespace

Result<double> run_hello_probe(const RunEnvironment& environment, const HelloProbe& probe) {
    if (environment.hypervisor == nullptr || environment.storage == nullptr) {
        return make_error(errc::kInternal, "a hello probe needs a hypervisor and a storage");
    }
    Hypervisor& hypervisor = *environment.hypervisor;
    (void)hypervisor.destroy_vm(probe.name);
    (void)environment.storage->remove_volume(probe.name);
    StorageConfig config;
    config.disk_size_bytes = probe.disk_size_bytes;
    const std::atomic<bool> never_cancelled{false};
    RunAttempt attempt = RunAttempt::hello_only(environment, probe.name, config,
                                                probe.boot_timeout_s, never_cancelled);
    const RunRecord run = attempt.execute_hello_only();
    // Nothing of a probe stays, not even the console of one that failed: its
    // reason quotes the console's end instead of naming the log.
    hypervisor.discard_console(probe.name);
    if (run.status != RunStatus::kSucceeded) {
        return make_error(errc::kUnavailable, without_console_location(run.failure_reason));
    }
    if (run.accel != to_string(environment.accel)) {
        return make_error(errc::kUnavailable, "the guest ran with " + run.accel + ", not " +
                                                  std::string(to_string(environment.accel)));
    }
    return run.timings.value("boot_s", 0.0);
}

std::string_view to_string(RunPhase phase) {
    switch (phase) {
        case RunPhase::kProvision:
            return "provision";
        case RunPhase::kBoot:
            return "boot";
        case RunPhase::kJob:
            return "job";
        case RunPhase::kVerify:
            return "verify";
        case RunPhase::kDurability:
            return "durability";
        case RunPhase::kTeardown:
            return "teardown";
        case RunPhase::kRecord:
            return "record";
    }
    return "?";
}

RunRecord RunExecutor::execute(const RunRecord& planned, int boot_timeout_s, int run_timeout_s,
                               const std::atomic<bool>& cancelled) {
    // A slot kept for a run that never placed (its config is unreadable, or
    // a bug threw before place()) is freed however the attempt ends.
    struct HoldRelease {
        HostPool* hosts;
        std::int64_t run_id;
        ~HoldRelease() {
            if (hosts != nullptr) hosts->release_hold(run_id);
        }
    } hold_release{env_.hosts, planned.id};
    return RunAttempt(env_, planned, boot_timeout_s, run_timeout_s, cancelled).execute();
}

bool RunExecutor::hold_host(const RunRecord& run) {
    if (env_.hosts == nullptr || is_host_baseline_run(run)) return true;
    const SweepPlacement placement =
        env_.placement ? env_.placement(run.sweep_id) : SweepPlacement{};
    return env_.hosts->hold(placement_request(run, placement));
}

}  // namespace ds
