// One attempt at one run (run_executor.h), internal to daemon/run/:
// RunAttempt keeps the phase sequence and the run's state, and calls the
// phases that have objects of their own: golden volumes
// (golden_volume_phase.h), the trim (trim_phase.h), verify (verify_phase.h)
// and durability (durability_phase.h). A stored run's attempt is in
// run_attempt.cpp, the others' in auxiliary_attempts.cpp; the executor's
// entry points are in run_executor.cpp.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "daemon/run/ack_ledger.h"
#include "daemon/run/agent_session.h"
#include "daemon/run/durability_phase.h"
#include "daemon/run/guest_identity.h"
#include "daemon/run/guest_messages.h"
#include "daemon/run/run_executor.h"
#include "daemon/run/trim_phase.h"

namespace ds {

// `body` behind the last-resort boundary: an exception escaping it is a bug;
// it fails only this run ("internal error (bug): ...") and the caller still
// tears down. Logged, since nobody expects it.
Status run_guarded(const std::function<Status()>& body, std::int64_t run_id);
// Whether `run` is a host baseline (no guest: ds::is_host_baseline).
bool is_host_baseline_run(const RunRecord& run);
// Where the run may go and the round it belongs to (HostPool).
PlacementRequest placement_request(const RunRecord& run, const SweepPlacement& placement);

// What an attempt is for.
enum class AttemptMode {
    kRun,        // a stored run
    kHelloOnly,  // no job, no store: provision, boot, teardown (run_hello_probe)
    // A run's golden volume (RunEnvironment::goldens): provision, boot, the
    // job with dataset "prepare", teardown keeping the volume. On the run's
    // host slot and under its id (progress, the guest's handle), untimed.
    kGoldenPreparation,
};

// One attempt at one run: its state, and one method per phase. Methods
// return the phase's outcome; execute() sequences them.
class RunAttempt {
  public:
    RunAttempt(const RunEnvironment& env, const RunRecord& planned, int boot_timeout_s,
               int run_timeout_s, const std::atomic<bool>& cancelled)
        : env_(env),
          run_(planned),
          boot_timeout_s_(boot_timeout_s),
          run_timeout_s_(run_timeout_s),
          cancelled_(cancelled) {}

    // The attempt of a hello-only job (run_hello_probe): `name` for the guest
    // and the volume, `config` for its disk; nothing is stored.
    static RunAttempt hello_only(const RunEnvironment& env, const std::string& name,
                                 const StorageConfig& config, int boot_timeout_s,
                                 const std::atomic<bool>& cancelled);

    RunRecord execute();
    // Phases provision, boot (to the hello) and teardown; the run's status
    // and failure reason say how it went.
    RunRecord execute_hello_only();

  private:
    // The attempt that prepares this run's golden volume `volume` in a guest
    // `vm` on this run's host.
    RunAttempt golden_preparation(const std::string& vm, const std::string& volume) const;
    // Provision, boot, job, teardown, seal: what a fresh run would spend on
    // what the golden now holds (GoldenVolume::prepare_s), or why it failed
    // (nothing of it is left then).
    Result<double> execute_golden_preparation();
    // Whether this run's volume is a clone of a golden volume.
    bool uses_golden() const;
    // The golden volume (prepared when first needed), cloned
    // (golden_volume_phase.h); applied_["dataset"].
    Status provision_from_golden();
    // Marks the run running in the store. False when it must not start
    // (cancelled while queued, or the store failed); run_ then says why.
    bool start();
    // Leases a slot of a host for the run's guest (RunEnvironment::hosts),
    // waiting while every eligible host is busy; without a pool the
    // environment's hypervisor runs it. Host baselines need no host.
    Status place();
    Status prepare();
    Status provision();
    Status boot();
    // Stages image_ on the leased host (staged_image_), once per attempt.
    Status stage_guest_image();
    // Records where the guest will be (VmRequest::record_handle) in the store.
    Status record_vm_handle(const Json& handle);
    // The started guest's acceleration and versions, as it runs.
    Status read_running_guest();
    Status job();
    // The fields of the job (docs/agent-protocol.md) that every job of the
    // run's guests holds: run_id, filesystem and workload.
    Json job_fields() const;
    // The job as sent: job_fields() and what the run asks of the guest;
    // sets up trim_. An Error when the guest's agent cannot do it.
    Result<Json> job_request(int timeout_s);
    // Waits for the guest's `ready_type` (trim_ready, mark_ready) until
    // `deadline`, failing as job() does after `wait_s`; checks its run id,
    // does `at_ready` (the host's measurement or mark) and lets the guest go
    // on with `answer`.
    Status handshake(std::string_view ready_type, std::string_view answer,
                     const std::function<Status()>& at_ready, Deadline deadline,
                     const std::function<void(const guest::Progress&)>& on_progress, int wait_s);
    // The job of a host baseline: fio on the raw volume, from the host.
    Status host_job();
    // The hypervisor's settings again, once the guest has done its I/O:
    // QEMU 8.2 and later (block/file-posix.c, raw_co_prw; QEMU 7.2 at open,
    // raw_open_common) set up a disk's Linux AIO or io_uring context in the
    // thread of its first request, so only now does the QEMU process show
    // the engine in use. Replaces the reading at boot; when it fails, that
    // one stands (applied_settings.hypervisor_read says which).
    void read_applied_settings_after_io();
    // For a kind that acknowledges records: the ledger its acks go to.
    void listen_for_acks();
    // After verify: the guest stopped, the crash states built and checked in
    // checker guests (durability_phase.h), applied_["durability"].
    Status measure_durability();
    // The checker guests of this run: as its guest was booted.
    CheckerGuests checker_guests() const;
    // Destroys the run's guest (by its handle once recorded); true when gone.
    Status stop_guest();
    // The result's count against the acks, and the ledger into applied_.
    Status settle_acks();
    // The settings in force and the checks by effect (verify_phase.h).
    Status verify();
    Status teardown();
    // Turns the outcome into the run's status and failure reason.
    void settle(const Status& outcome, const std::string& teardown_problems);
    // Tears down (always, guarded) and settles with both outcomes.
    void tear_down_and_settle(const Status& outcome);
    Status record();

    // Runs a phase with its timing ("PHASE_s") and the observer's calls.
    Status timed(RunPhase phase, Status (RunAttempt::*body)());
    void notify(const std::function<void(RunObserver&)>& call);
    Error boot_failure(const Error& error);
    Error job_failure(const Error& error, int wait_s);
    void publish_progress(const guest::Progress& progress);
    // To the sweep's event stream; hello-only attempts have none.
    void publish(const api::SweepEvent& event);
    void read_disk_counters(Json& into);
    // The QEMU threads' CPU times and the host's counters now (host_cpu.h).
    Json sample_host_cpu();
    // applied_["cpu_cost"] and the *_cpu_us_per_io metrics of the job's window.
    void record_cpu_cost(const Json& cpu_after);
    // The run's image: its sweep's [guest] suite and its workload's variant.
    ImageChoice image_choice() const;

    const RunEnvironment& env_;
    RunRecord run_;
    const int boot_timeout_s_;
    const int run_timeout_s_;
    const std::atomic<bool>& cancelled_;
    const Clock::time_point started_ = env_.clock->now();

    std::string vm_name_;
    std::optional<StorageConfig> config_;
    std::optional<Workload> workload_;
    GuestImage image_;
    // What the guest reported about itself against image_'s manifest,
    // loaded by prepare().
    GuestIdentity identity_;
    // image_ as the leased host sees it (Hypervisor::stage_image) while a
    // guest of this attempt may use it; released by teardown.
    std::optional<GuestImage> staged_image_;
    StorageBackend* storage_ = nullptr;  // the configuration's own, from the registry
    std::optional<Volume> volume_;
    std::optional<AgentSession> session_;
    // The acknowledgements of a workload that sends them (WorkloadKind::
    // acknowledges), set up by job().
    std::optional<AckLedger> acks_;
    // A durability run's phase (workload `durability`), set up by provision().
    std::optional<DurabilityPhase> durability_;
    // The guest's trim and its check (not for a golden's preparation), set up
    // by job().
    std::optional<TrimPhase> trim_;
    Json timings_ = Json::object();
    Json versions_ = Json::object();
    Json applied_ = Json::object();
    Json counters_before_;
    Json cpu_before_;  // sample_host_cpu() as the job was sent
    guest::ResultMessage result_;
    bool agent_trims_ = false;     // hello announced "trim": the job asks for it
    bool agent_datasets_ = false;  // hello announced "dataset": golden volumes work
    bool agent_marks_ = false;     // hello announced "mark": a durability run's window
    bool timed_out_ = false;       // the workload's time limit or the result deadline passed
    bool host_baseline_ = false;   // no guest: provision, host_job, teardown, record
    AttemptMode mode_ = AttemptMode::kRun;
    bool keep_volume_ = false;  // teardown leaves the volume (a prepared golden)
    double preparation_s_ = 0;  // kGoldenPreparation: what the guest spent preparing
    // Where the guest runs: the leased host's hypervisor, or the
    // environment's; null for host baselines and while not placed.
    Hypervisor* hypervisor_ = nullptr;
    std::optional<HostLease> lease_;
    // The guest's handle once start_vm recorded it; teardown destroys by it.
    std::optional<Json> vm_handle_;
    Accel accel_ = Accel::kTcg;
    bool accel_enforced_ = false;  // the guest must run with accel_ (Host::accel_enforced)
    std::string accel_reason_;     // why the host runs accel_
    std::string host_name_;
    SweepPlacement placement_;
};

}  // namespace ds
