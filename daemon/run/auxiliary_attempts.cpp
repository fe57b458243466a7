// The attempts that record no run of their own (AttemptMode): a golden
// volume's preparation, on behalf of the run that first needs it
// (golden_volume_phase.h), and the hello probe's (run_hello_probe). Each
// runs a part of RunAttempt's phases (run_attempt.cpp).
#include "daemon/run/run_attempt.h"

namespace ds {

RunAttempt RunAttempt::golden_preparation(const std::string& vm, const std::string& volume) const {
    RunRecord run = run_;
    run.volume_name = volume;
    run.console_log = hypervisor_->console_location(vm);
    RunAttempt attempt(env_, run, boot_timeout_s_, run_timeout_s_, cancelled_);
    attempt.mode_ = AttemptMode::kGoldenPreparation;
    attempt.vm_name_ = vm;
    attempt.hypervisor_ = hypervisor_;
    attempt.accel_ = accel_;
    attempt.accel_enforced_ = accel_enforced_;
    attempt.accel_reason_ = accel_reason_;
    attempt.host_name_ = host_name_;
    return attempt;
}

Result<double> RunAttempt::execute_golden_preparation() {
    const Status outcome = run_guarded(
        [&]() -> Status {
            DS_TRY(provision());
            DS_TRY(boot());
            return job();
        },
        run_.id);
    keep_volume_ = outcome.ok();
    Status finished = run_guarded([this] { return teardown(); }, run_.id);
    // Sealed once its guest is gone: nothing writes to it any more.
    if (outcome.ok() && finished.ok()) finished = storage_->seal_golden(run_.volume_name);
    if (outcome.ok() && !finished.ok() && volume_) (void)storage_->remove_golden(run_.volume_name);
    if (outcome.ok()) hypervisor_->discard_console(vm_name_);
    const Status& failed = outcome.ok() ? finished : outcome;
    if (!failed.ok()) {
        return make_error(failed.error().code, "preparing the golden volume " + run_.volume_name +
                                                   " (guest " + vm_name_ +
                                                   "): " + failed.error().message);
    }
    return preparation_s_;
}

RunAttempt RunAttempt::hello_only(const RunEnvironment& env, const std::string& name,
                                  const StorageConfig& config, int boot_timeout_s,
                                  const std::atomic<bool>& cancelled) {
    RunRecord run;
    run.config = config;
    RunAttempt attempt(env, run, boot_timeout_s, boot_timeout_s, cancelled);
    attempt.mode_ = AttemptMode::kHelloOnly;
    attempt.vm_name_ = name;
    attempt.run_.volume_name = name;
    return attempt;
}

RunRecord RunAttempt::execute_hello_only() {
    Status outcome = run_guarded([this] { return place(); }, run_.id);
    run_.console_log = hypervisor_ ? hypervisor_->console_location(vm_name_) : "";
    if (outcome.ok()) {
        outcome = run_guarded(
            [&]() -> Status {
                DS_TRY(timed(RunPhase::kProvision, &RunAttempt::provision));
                return timed(RunPhase::kBoot, &RunAttempt::boot);
            },
            run_.id);
    }
    tear_down_and_settle(outcome);
    return run_;
}

}  // namespace ds
