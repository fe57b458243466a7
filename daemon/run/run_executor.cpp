#include "daemon/run/run_executor.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <iostream>
#include <optional>
#include <thread>

#include "common/clock.h"
#include "common/json_fields.h"
#include "common/text.h"
#include "common/version.h"
#include "common/workload_kind.h"
#include "common/workload_output.h"
#include "daemon/run/ack_ledger.h"
#include "daemon/run/agent_session.h"
#include "daemon/run/discard_effect.h"
#include "daemon/run/durability_trial.h"
#include "daemon/run/guest_messages.h"
#include "daemon/run/host_cpu.h"
#include "daemon/run/host_fio.h"
#include "daemon/run/image_manifest.h"
#include "daemon/run/settings_verify.h"
#include "daemon/run/throttle_effect.h"

namespace ds {

namespace {

// How much of the guest console a boot failure quotes.
constexpr std::size_t kConsoleTailBytes = 600;

// Whether the guest is gone. The hypervisor may notice a dead QEMU a moment
// after its channel closed, so this waits up to two seconds for that.
bool guest_stopped(Hypervisor& hypervisor, const std::string& vm_name) {
    for (int attempt = 0; attempt < 20; ++attempt) {
        auto running = hypervisor.is_running(vm_name);
        if (running.ok() && !running.value()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
}

// `body` behind the last-resort boundary: an exception escaping it is a bug;
// it fails only this run ("internal error (bug): ...") and the caller still
// tears down. Logged, since nobody expects it.
Status run_guarded(const std::function<Status()>& body, std::int64_t run_id) {
    std::string what;
    try {
        return body();
    } catch (const std::exception& error) {
        what = error.what();
    } catch (...) {
        what = "an exception that is not a std::exception";
    }
    std::cerr << "disksweepd: BUG: run " << run_id << " threw: " << what << std::endl;
    return make_error(errc::kInternal, "internal error (bug): " + what);
}

bool is_host_baseline_run(const RunRecord& run) {
    return run.config.value("hypervisor", "") == kHostBaselineHypervisor;
}

// Where the run may go and the round it belongs to (HostPool).
Result<PlacementRequest> placement_request(const RunRecord& run, const SweepPlacement& placement) {
    DS_ASSIGN_OR_RETURN(auto config, storage_config_from_json(run.config));
    PlacementRequest request{config, placement.hosts, run.sweep_id, run.repetition, run.id};
    request.needs_local_files = run.workload.contains("durability");
    return request;
}

// Whose fault a run's failure is, for its host's backoff (HostPool). The
// host's: a failure before the workload started (provisioning, boot, the
// agent's connection and hello) unless it refuses the run's own settings,
// and anywhere a hypervisor error, an unavailable service or lost I/O (a
// host that died mid-run). Not the host's: the workload's own failure or
// time limit and a verification mismatch (the host ran the run). A
// cancelled or interrupted run says nothing of its host.
HostVerdict host_verdict(const Status& outcome, bool workload_started) {
    if (outcome.ok()) return HostVerdict::kWorked;
    const std::string& code = outcome.error().code;
    if (code == errc::kCancelled) return HostVerdict::kUnjudged;
    if (code == errc::kHypervisor || code == errc::kUnavailable || code == errc::kIo)
        return HostVerdict::kFault;
    const bool refuses_settings = code == errc::kInvalidArgument || code == errc::kInvalidSpec ||
                                  code == errc::kUnsupported || code == errc::kSettingsMismatch ||
                                  code == errc::kNotConfigured;
    return !workload_started && !refuses_settings ? HostVerdict::kFault : HostVerdict::kWorked;
}

// A configuration in a few words for people watching runs: "ext4 none
// scsi-single" (filesystem, cache, bus), "host baseline" for a run without
// a guest.
std::string config_label(const Json& config) {
    const auto filesystem = config.find("filesystem");
    if (filesystem == config.end()) return "host baseline";
    return filesystem_shorthand(*filesystem) + " cache=" + config.value("cache", "?") +
           " bus=" + config.value("bus", "?");
}

// `reason` without the "; console log: PATH" a failed run's reason names
// (boot_failure, job_failure), the console tail after it kept.
std::string without_console_location(const std::string& reason) {
    const std::size_t location = reason.find("; console log: ");
    if (location == std::string::npos) return reason;
    const std::size_t tail = reason.find('\n', location);
    return reason.substr(0, location) + (tail == std::string::npos ? "" : reason.substr(tail));
}

// The job's `filesystem` (docs/agent-protocol.md).
Json filesystem_json(const StorageConfig& config) {
    return Json{{"type", config.filesystem.type},
                {"mkfs_options", config.filesystem.mkfs_options},
                {"mount_options", config.filesystem.mount_options},
                {"post_format", config.filesystem.post_format}};
}

// Crash images one checker guest checks: its data disk and the extra disks.
constexpr std::size_t kMaxCheckImages = protocol::kMaxCheckDisks;

// A crash image's checker gives each image this long (MariaDB's crash
// recovery under TCG included), and its guest this long to say hello.
constexpr int kCheckSecondsPerImage = 120;

// The disk settings of a checker guest: the run's file system, on virtio-blk
// (one PCI device per image); the images are throwaway copies, so no cache
// mode of theirs matters and unsafe is the fastest.
StorageConfig checker_config(const StorageConfig& run_config) {
    StorageConfig config;
    config.filesystem = run_config.filesystem;
    config.disk_size_bytes = run_config.disk_size_bytes;
    config.image_format = run_config.image_format;
    config.bus = Bus::kVirtioBlk;
    config.cache = CacheMode::kUnsafe;
    return config;
}

// `source` (a file volume) with its file at `path`: a crash image is the
// volume file's copy, in the volume's own format.
DiskSource at_path(DiskSource source, const std::string& path) {
    if (auto* file = std::get_if<FileDisk>(&source)) file->path = path;
    return source;
}

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
    // The golden volume (prepared when first needed), cloned; applied_["dataset"].
    Status provision_from_golden();
    Result<GoldenVolume> prepare_golden(const std::string& vm, const std::string& volume);
    // After a preparation's result: its seconds, from the guest's timings.
    Status take_preparation_timings();
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
    // Waits for the guest's trim_ready (until `deadline`, failing as job()
    // does after `wait_s`), checks its run id, measures the volume's
    // allocation and tells the guest to trim.
    Status measure_before_trim(Deadline deadline,
                               const std::function<void(const guest::Progress&)>& on_progress,
                               int wait_s);
    // Waits for the guest's `ready_type` (trim_ready, mark_ready) until
    // `deadline`, failing as job() does after `wait_s`; checks its run id.
    Status await_ready(std::string_view ready_type, Deadline deadline,
                       const std::function<void(const guest::Progress&)>& on_progress, int wait_s);
    // A durability run: waits for the guest's mark_ready as for trim_ready,
    // makes the guest's setup durable and marks the log (DurabilityTrial::
    // mark), then tells the guest to begin its measured window.
    Status mark_measured_window(Deadline deadline,
                                const std::function<void(const guest::Progress&)>& on_progress,
                                int wait_s);
    // After the result: applied_settings.discard_effect, discard_mismatch_.
    void judge_trim();
    // applied_settings.throttle_effect (throttle_effect.h); the limits its
    // measurement does not bear out are appended to `mismatches`.
    void judge_throttle(std::vector<std::string>& mismatches);
    // The means of this run's unthrottled twin (same sweep, workload and
    // host), when one has succeeded.
    std::optional<ThrottleRates> unthrottled_reference();
    // The checks by effect that could not be made (discard's trim, a
    // throttle limit's rate), as settings not checked: reported, never
    // hidden (docs/verification.md).
    void add_effects_not_checked(std::vector<NotChecked>& not_checked) const;
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
    // A durability run: the pre-run copy and the empty write log (trial_).
    Status start_durability_trial();
    // After verify: the guest stopped, the crash states built and checked in
    // checker guests, applied_["durability"].
    Status measure_durability();
    // One checker guest on `images` (crash images, in state order): each
    // one's report.
    Result<std::vector<CrashCheck>> check_crash_images(const std::vector<std::string>& images);
    // Destroys the run's guest (by its handle once recorded); true when gone.
    Status stop_guest();
    // The result's count against the acks, and the ledger into applied_.
    Status settle_acks();
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
    void publish(Json event);
    void read_disk_counters(Json& into);
    // The QEMU threads' CPU times and the host's counters now (host_cpu.h).
    Json sample_host_cpu();
    // applied_["cpu_cost"] and the *_cpu_us_per_io metrics of the job's window.
    void record_cpu_cost(const Json& cpu_after);
    // The image's manifest (GuestImage::manifest), read by prepare().
    Status load_manifest();
    // The run's image: its sweep's [guest] suite and its workload's variant.
    ImageChoice image_choice() const;
    // What the guest reported about itself (the hello, then a MariaDB
    // workload's server_version) against the manifest: errc::kProtocol
    // naming each tool that differs. Records versions_["guest_os"] and what
    // the manifest could not check.
    Status check_guest_identity(const std::string& tool, const std::string& reported);
    Status check_guest_identity();

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
    std::optional<ImageManifest> manifest_;  // image_'s, when it has one
    GuestReport guest_report_;               // by tool, as the guest reported it
    // image_ as the leased host sees it (Hypervisor::stage_image) while a
    // guest of this attempt may use it; released by teardown.
    std::optional<GuestImage> staged_image_;
    StorageBackend* storage_ = nullptr;  // the configuration's own, from the registry
    std::optional<Volume> volume_;
    std::optional<AgentSession> session_;
    // The acknowledgements of a workload that sends them (WorkloadKind::
    // acknowledges), set up by job().
    std::optional<AckLedger> acks_;
    // A durability run's files (workload `durability`), set up by provision().
    std::optional<DurabilityTrial> trial_;
    Json timings_ = Json::object();
    Json versions_ = Json::object();
    Json applied_ = Json::object();
    Json counters_before_;
    Json cpu_before_;  // sample_host_cpu() as the job was sent
    guest::ResultMessage result_;
    bool agent_trims_ = false;     // hello announced "trim": the job asks for it
    bool agent_datasets_ = false;  // hello announced "dataset": golden volumes work
    bool agent_marks_ = false;     // hello announced "mark": a durability run's window
    std::uint64_t allocated_before_trim_ = 0;
    std::string not_measured_;      // why the discard effect was not measured, "" = it was
    std::string discard_mismatch_;  // the discard effect's mismatch, for verify()
    bool timed_out_ = false;        // the workload's time limit or the result deadline passed
    bool host_baseline_ = false;    // no guest: provision, host_job, teardown, record
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

void RunAttempt::publish(Json event) {
    if (env_.events != nullptr) env_.events->publish(run_.sweep_id, std::move(event));
}

void RunAttempt::notify(const std::function<void(RunObserver&)>& call) {
    if (env_.observer == nullptr) return;
    (void)run_guarded(
        [&] {
            call(*env_.observer);
            return ok_status();
        },
        run_.id);
}

Status RunAttempt::timed(RunPhase phase, Status (RunAttempt::*body)()) {
    notify([&](RunObserver& observer) { observer.phase_started(run_.id, phase); });
    const auto phase_start = env_.clock->now();
    Status outcome = (this->*body)();
    const double seconds = seconds_since(phase_start, *env_.clock);
    if (phase != RunPhase::kRecord) timings_[std::string(to_string(phase)) + "_s"] = seconds;
    notify(
        [&](RunObserver& observer) { observer.phase_finished(run_.id, phase, seconds, outcome); });
    return outcome;
}

Status RunAttempt::place() {
    host_baseline_ = is_host_baseline_run(run_);
    accel_ = env_.accel;
    accel_enforced_ = env_.accel_enforced;
    if (host_baseline_) return ok_status();
    if (env_.hosts == nullptr) {
        hypervisor_ = env_.hypervisor;
        host_name_ = std::string(kLocalHostName);
        return ok_status();
    }
    if (env_.placement) placement_ = env_.placement(run_.sweep_id);
    DS_ASSIGN_OR_RETURN(auto request, placement_request(run_, placement_));
    DS_ASSIGN_OR_RETURN(auto lease, env_.hosts->acquire(request, cancelled_));
    lease_.emplace(std::move(lease));
    Host& host = lease_->host();
    hypervisor_ = host.hypervisor.get();
    accel_ = host.accel;
    accel_enforced_ = host.accel_enforced;
    accel_reason_ = host.accel_reason;
    host_name_ = host.description.name;
    return ok_status();
}

bool RunAttempt::start() {
    vm_name_ = env_.names.vm(run_.id);
    run_.vm_name = host_baseline_ ? "" : vm_name_;
    run_.volume_name = env_.names.volume(run_.id);
    run_.console_log = hypervisor_ ? hypervisor_->console_location(vm_name_) : "";
    // A host baseline runs no guest, so no accelerator either.
    run_.accel = host_baseline_ ? "none" : std::string(to_string(accel_));
    run_.started_at = utc_now_iso8601(*env_.clock);
    run_.status = RunStatus::kRunning;
    Status marked = env_.store->mark_run_running(run_.id, run_.vm_name, run_.volume_name,
                                                 run_.console_log, run_.accel, run_.started_at);
    if (!marked.ok()) {
        // Cancelled between being queued and starting (or the store failed):
        // start nothing, report the run as the store has it.
        auto current = env_.store->get_run(run_.id);
        if (current.ok()) {
            run_ = current.value();
        } else {
            run_.status = RunStatus::kFailed;
            run_.failure_reason = "cannot start run: " + marked.error().message;
        }
        return false;
    }
    publish(Json{{"type", "run_started"},
                 {"run_id", run_.id},
                 {"config_id", run_.config_id},
                 {"config_label", config_label(run_.config)},
                 {"workload", run_.workload_name},
                 {"repetition", run_.repetition}});
    versions_ = {{"disksweepd", std::string(disksweep_version())}};
    if (host_baseline_) {
        versions_["kernel"] = host_kernel_release();
        if (env_.host_processes) versions_["fio_version"] = host_fio_version(*env_.host_processes);
        return true;
    }
    if (hypervisor_ == nullptr) return true;  // not placed: execute() records why
    // Held: items() refers into the object it iterates.
    const Json hypervisor_versions = hypervisor_->versions();
    for (const auto& [key, value] : hypervisor_versions.items()) versions_[key] = value;
    versions_["accel"] = run_.accel;
    versions_["host"] = host_name_;
    // Pooled across hosts the user vouches are alike: the comparison
    // partition reads this in place of the host (store.cpp).
    if (placement_.identical_hosts) versions_["partition_host"] = "identical hosts";
    return true;
}

// What the run needs before anything is created: its settings, workload,
// guest image and storage backend, each from the stored run.
Status RunAttempt::prepare() {
    DS_ASSIGN_OR_RETURN(auto config, storage_config_from_json(run_.config));
    config_ = config;
    // Every flush must reach the golden volume before its guest is destroyed.
    if (mode_ == AttemptMode::kGoldenPreparation && config_->cache == CacheMode::kUnsafe) {
        config_->cache = CacheMode::kWriteback;
    }
    if (mode_ == AttemptMode::kHelloOnly) {
        image_ = env_.image;
        storage_ = env_.storage;
        return load_manifest();
    }
    auto workload = workload_from_json(run_.workload);
    if (!workload.ok()) {
        return make_error(errc::kInvalidArgument, "stored workload: " + workload.error().message);
    }
    workload_ = workload.value();
    image_ = env_.image;
    const HypervisorKindDef* kind = find_hypervisor_kind(config_->hypervisor);
    const bool boots_project_image = kind == nullptr || kind->boots_project_image;
    if (env_.image_for && boots_project_image) {
        DS_ASSIGN_OR_RETURN(auto located, env_.image_for(image_choice()));
        image_ = located;
    }
    if (boots_project_image) DS_TRY(load_manifest());
    // The storage the configuration names, never a stand-in: a run can only
    // be recorded under a backend that really made its disk.
    DS_ASSIGN_OR_RETURN(auto found, env_.backends ? env_.backends->storage_for(*config_)
                                                  : Result<StorageBackend*>(env_.storage));
    storage_ = found;
    // A host with a storage of that name of its own (a remote libvirt host's
    // pool for `file`) makes the volume there.
    if (lease_) {
        if (StorageBackend* own = lease_->host().own_storage(storage_name(*config_)))
            storage_ = own;
    }
    return ok_status();
}

Status RunAttempt::provision() {
    DS_TRY(prepare());
    if (uses_golden()) {
        DS_TRY(provision_from_golden());
    } else {
        DS_ASSIGN_OR_RETURN(auto volume, storage_->create_volume(run_.volume_name, *config_));
        volume_ = volume;
        if (mode_ == AttemptMode::kRun && !host_baseline_)
            applied_["dataset"] = {{"source", "fresh"}};
    }
    if (mode_ == AttemptMode::kRun && workload_->durability) DS_TRY(start_durability_trial());
    applied_["storage"] = {{"backend", storage_->name()},
                           {"source", to_json(volume_->source)},
                           {"before", storage_->state(run_.volume_name)}};
    return ok_status();
}

bool RunAttempt::uses_golden() const {
    return mode_ == AttemptMode::kRun && !host_baseline_ && workload_ &&
           workload_->dataset == DatasetSource::kGolden;
}

Status RunAttempt::provision_from_golden() {
    if (env_.goldens == nullptr) {
        return make_error(errc::kUnsupported,
                          "this disksweepd keeps no golden volumes (workload dataset \"golden\")");
    }
    publish(Json{{"type", "run_progress"},
                 {"run_id", run_.id},
                 {"phase", "dataset"},
                 {"message", "golden volume: preparing it or waiting for its preparation"}});
    DS_ASSIGN_OR_RETURN(
        auto golden, env_.goldens->acquire(
                         run_.sweep_id, golden_key(storage_->name(), *config_, *workload_), run_.id,
                         [this](const std::string& vm, const std::string& volume) {
                             return prepare_golden(vm, volume);
                         },
                         cancelled_));
    const auto clone_start = env_.clock->now();
    DS_ASSIGN_OR_RETURN(auto cloned,
                        storage_->clone_volume(golden.name, run_.volume_name, *config_));
    volume_ = cloned.volume;
    applied_["dataset"] = golden_dataset_record(golden, run_.id, cloned.method,
                                                seconds_since(clone_start, *env_.clock));
    return ok_status();
}

Result<GoldenVolume> RunAttempt::prepare_golden(const std::string& vm, const std::string& volume) {
    const auto start = env_.clock->now();
    RunAttempt preparation = golden_preparation(vm, volume);
    DS_ASSIGN_OR_RETURN(double prepare_s, preparation.execute_golden_preparation());
    GoldenVolume golden;
    golden.name = volume;
    golden.storage = storage_;
    golden.prepare_s = prepare_s;
    golden.preparation_s = seconds_since(start, *env_.clock);
    return golden;
}

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

Status RunAttempt::take_preparation_timings() {
    for (const char* key : {"format_s", "post_format_s", "prepare_s"}) {
        const auto found = result_.timings.find(key);
        if (found != result_.timings.end()) preparation_s_ += found->second;
    }
    return ok_status();
}

Status RunAttempt::boot() {
    VmRequest request;
    request.name = vm_name_;
    request.config = *config_;
    request.data_disk = volume_->source;
    DS_TRY(stage_guest_image());
    request.image = *staged_image_;
    request.accel = accel_;
    request.vcpus = env_.vcpus;
    request.memory_mib = env_.memory_mib;
    request.record_handle = [this](const Json& handle) { return record_vm_handle(handle); };
    if (trial_) request.write_log_path = trial_->log_path();
    // boot_s in two parts (bench/run_overhead): the hypervisor's start of the
    // guest with its settings read back, then the guest's own boot to hello.
    const auto vm_start = env_.clock->now();
    DS_TRY(hypervisor_->start_vm(request));
    DS_TRY(read_running_guest());

    DS_ASSIGN_OR_RETURN(auto applied_hypervisor, hypervisor_->applied_settings(vm_name_));
    applied_["hypervisor"] = applied_hypervisor;
    const auto guest_start = env_.clock->now();
    timings_["vm_start_s"] = seconds_since(vm_start, *env_.clock);

    // One boot timeout for the socket and the hello. The hypervisor waits for
    // the socket in real time; the session decides by the run's clock.
    const auto boot_timeout = std::chrono::seconds(boot_timeout_s_);
    const auto hello_deadline = env_.clock->now() + boot_timeout;
    auto channel = hypervisor_->open_agent_channel(
        vm_name_, std::chrono::steady_clock::now() + boot_timeout, &cancelled_);
    if (!channel.ok()) return boot_failure(channel.error());
    session_.emplace(std::move(channel.value()), &cancelled_, *env_.clock);
    auto hello = session_->receive_hello(hello_deadline);
    if (!hello.ok()) return boot_failure(hello.error());
    agent_trims_ = std::find(hello->capabilities.begin(), hello->capabilities.end(),
                             protocol::kTrimCapability) != hello->capabilities.end();
    agent_datasets_ = std::find(hello->capabilities.begin(), hello->capabilities.end(),
                                protocol::kDatasetCapability) != hello->capabilities.end();
    agent_marks_ = std::find(hello->capabilities.begin(), hello->capabilities.end(),
                             protocol::kMarkCapability) != hello->capabilities.end();
    versions_["agent_version"] = hello->agent_version;
    versions_["kernel"] = hello->kernel;
    versions_["fio_version"] = hello->fio_version;
    guest_report_["kernel"] = hello->kernel;
    guest_report_["fio"] = hello->fio_version;
    if (hello->os) {
        guest_report_["os"] = hello->os->version_id;
        versions_["guest_os"] =
            hello->os->id + " " + hello->os->version_id +
            (hello->os->codename.empty() ? "" : " (" + hello->os->codename + ")");
    }
    DS_TRY(check_guest_identity());
    timings_["guest_boot_s"] = seconds_since(guest_start, *env_.clock);
    publish(Json{{"type", "run_progress"},
                 {"run_id", run_.id},
                 {"phase", "booted"},
                 {"message", "agent connected"}});
    return ok_status();
}

ImageChoice RunAttempt::image_choice() const {
    ImageChoice choice;
    if (env_.guest_suite) choice.suite = env_.guest_suite(run_.sweep_id);
    if (workload_) choice.variant = std::string(image_variant_for_kind(workload_->kind));
    return choice;
}

Status RunAttempt::load_manifest() {
    if (image_.manifest.empty()) {
        versions_["image_manifest"] = "none: the guest's tool versions were not checked";
        return ok_status();
    }
    DS_ASSIGN_OR_RETURN(auto manifest, read_image_manifest(image_.manifest));
    manifest_ = std::move(manifest);
    versions_["image_manifest"] = image_.manifest;
    return ok_status();
}

Status RunAttempt::check_guest_identity(const std::string& tool, const std::string& reported) {
    guest_report_[tool] = reported;
    return check_guest_identity();
}

Status RunAttempt::check_guest_identity() {
    if (!manifest_) return ok_status();
    const std::vector<std::string> unchecked = manifest_unchecked(*manifest_, guest_report_);
    if (unchecked.empty()) {
        versions_.erase("image_manifest_unchecked");
    } else {
        versions_["image_manifest_unchecked"] = join(unchecked, ", ");
    }
    const std::vector<std::string> mismatches = manifest_mismatches(*manifest_, guest_report_);
    if (mismatches.empty()) return ok_status();
    return make_error(errc::kProtocol,
                      "the guest is not the build its image's manifest describes (rebuild the "
                      "image: scripts/build-guest-image.sh): " +
                          join(mismatches, "; "));
}

Status RunAttempt::record_vm_handle(const Json& handle) {
    if (mode_ != AttemptMode::kHelloOnly) {
        DS_TRY(env_.store->record_vm_handle(run_.id, host_name_, handle));
    }
    vm_handle_ = handle;
    return ok_status();
}

// The run's accel is what the guest runs with, not what was asked: a
// Proxmox VM may run TCG (kvm: 0) whatever the host was expected to do, and
// the comparison partition must not pool it with KVM runs. Where the host's
// accel is enforced (libvirt: its probe's decision), another one fails the
// run as a setting not in force, at once: a guest under the wrong
// accelerator may never get as far as the verify phase (KVM here hangs in
// the BIOS).
Status RunAttempt::read_running_guest() {
    auto guest = hypervisor_->running_guest(vm_name_, accel_);
    if (!guest.ok()) {
        return make_error(guest.error().code,
                          "cannot tell the guest's acceleration: " + guest.error().message);
    }
    if (accel_enforced_ && guest->accel != accel_) {
        applied_["accel"] = {{"in_force", to_string(guest->accel)},
                             {"source", guest->accel_source},
                             {"expected", to_string(accel_)}};
        return make_error(errc::kSettingsMismatch,
                          "settings not in force: acceleration: host " + host_name_ + " runs " +
                              std::string(to_string(accel_)) +
                              (accel_reason_.empty() ? "" : " (" + accel_reason_ + ")") +
                              ", QEMU runs " + std::string(to_string(guest->accel)) + " (" +
                              guest->accel_source + ")");
    }
    accel_ = guest->accel;
    run_.accel = std::string(to_string(accel_));
    versions_["accel"] = run_.accel;
    for (const auto& [key, value] : guest->versions.items()) versions_[key] = value;
    applied_["accel"] = {{"in_force", run_.accel}, {"source", guest->accel_source}};
    return ok_status();
}

// A guest that never said hello: how long it had, whether it stopped, and
// the end of its console.
Error RunAttempt::boot_failure(const Error& error) {
    if (error.code != errc::kTimeout && error.code != errc::kIo) return error;
    auto running = hypervisor_->is_running(vm_name_);
    const std::string state = running.ok() && !running.value() ? " (the guest stopped)" : "";
    const std::string tail = hypervisor_->console_tail(vm_name_, kConsoleTailBytes);
    return make_error(errc::kTimeout, "agent did not connect within " +
                                          std::to_string(boot_timeout_s_) + " s" + state +
                                          "; console log: " + run_.console_log +
                                          (tail.empty() ? "" : "\n--- console tail ---\n" + tail));
}

Status RunAttempt::job() {
    const Workload& workload = *workload_;
    const StorageConfig& config = *config_;
    const int job_timeout_s = workload.timeout_s > 0 ? workload.timeout_s : run_timeout_s_;
    Json job = {{"run_id", std::to_string(run_.id)},
                {"filesystem", filesystem_json(config)},
                {"workload", run_.workload},
                {"timeout_s", job_timeout_s}};
    if (Json block = block_settings_json(config); !block.empty()) job["block"] = block;
    const bool preparing = mode_ == AttemptMode::kGoldenPreparation;
    if ((preparing || uses_golden()) && !agent_datasets_) {
        return make_error(errc::kUnsupported,
                          "the guest's agent cannot use a golden volume (its hello announces no "
                          "'dataset' capability): rebuild the guest image");
    }
    if (preparing) job["dataset"] = "prepare";
    if (uses_golden()) job["dataset"] = "prepared";
    if (trial_ && !agent_marks_) {
        return make_error(errc::kUnsupported,
                          "the guest's agent cannot mark a durability run's measured window (its "
                          "hello announces no 'mark' capability): rebuild the guest image");
    }
    if (trial_) job["mark"] = true;
    // A durability run keeps the workload's files: its last crash states
    // are cut after the workload, where a trim would have deleted them.
    const bool trims = agent_trims_ && !preparing && !trial_;
    if (trims) job["trim"] = true;
    read_disk_counters(counters_before_);
    cpu_before_ = sample_host_cpu();
    // The agent's own, more precise report of its time limit comes first.
    const int wait_s = workload.timeout_s > 0
                           ? std::max(run_timeout_s_, workload.timeout_s + kAgentGraceSeconds)
                           : run_timeout_s_;
    // The deadline counts from before the job is sent: once sent, the guest's
    // time runs (a guest, or a test's clock, may move it before this thread
    // would read it again).
    const auto deadline = env_.clock->now() + std::chrono::seconds(wait_s);
    listen_for_acks();
    DS_TRY(session_->send_job(job));
    const auto on_progress = [this](const guest::Progress& progress) {
        publish_progress(progress);
    };
    if (trial_) DS_TRY(mark_measured_window(deadline, on_progress, wait_s));
    if (trims) DS_TRY(measure_before_trim(deadline, on_progress, wait_s));
    auto result = session_->await_result(deadline, on_progress);
    if (!result.ok()) return job_failure(result.error(), wait_s);
    // Read while the guest runs: once told to shut down, its QEMU exits.
    read_applied_settings_after_io();
    Json counters_after;
    if (!counters_before_.is_null()) read_disk_counters(counters_after);
    const Json cpu_after = sample_host_cpu();
    session_->send_shutdown();
    // Checked against its schema by the session (guest_messages.h).
    result_ = std::move(result.value());
    if (result_.run_id != job.at("run_id").get<std::string>()) {
        return make_error(errc::kProtocol, "agent sent a result for run \"" +
                                               guest::cut_text(result_.run_id, 80) +
                                               "\", not for this run (\"" +
                                               job.at("run_id").get<std::string>() + "\")");
    }
    if (preparing) return take_preparation_timings();
    judge_trim();
    if (!counters_after.is_null())
        applied_["disk_counters"] = numeric_delta(counters_before_, counters_after);
    // The guest is untrusted: metrics are re-derived from the raw output
    // rather than taken from its "metrics".
    auto metrics = metrics_from_workload_output(workload.kind, result_.output);
    if (!metrics.ok()) {
        return make_error(errc::kProtocol, "agent result has unusable " + workload.kind +
                                               " output: " + metrics.error().message);
    }
    run_.metrics = metrics.value();
    record_cpu_cost(cpu_after);
    DS_TRY(settle_acks());
    run_.raw_output = result_.output.dump(-1, ' ', false, Json::error_handler_t::replace);
    for (const auto& [key, seconds] : result_.timings) timings_[key] = seconds;
    for (const auto& [key, value] : result_.versions) versions_["guest_" + key] = value;
    if (const auto server = result_.readback.find("server_version");
        server != result_.readback.end() && server->is_string()) {
        DS_TRY(check_guest_identity("mariadb", server->get<std::string>()));
    }
    return ok_status();
}

void RunAttempt::read_applied_settings_after_io() {
    auto again = hypervisor_->applied_settings(vm_name_);
    if (again.ok()) {
        applied_["hypervisor"] = std::move(again.value());
        applied_["hypervisor_read"] = "after the job";
        return;
    }
    // The boot's reading stands; verify() judges it as before.
    applied_["hypervisor_read"] =
        "at boot: reading them again after the job failed: " + again.error().message;
}

void RunAttempt::listen_for_acks() {
    const WorkloadKind* kind = find_workload_kind(workload_->kind);
    if (kind == nullptr || !kind->acknowledges) return;
    // With a write log, each ack notes how far the log had grown by then.
    std::function<std::optional<std::uint64_t>()> log_bytes;
    if (trial_) log_bytes = [this] { return trial_->log_bytes(); };
    acks_.emplace(std::to_string(run_.id), std::move(log_bytes));
    session_->set_ack_handler([this](const guest::Ack& ack) { return acks_->record(ack); });
}

Status RunAttempt::settle_acks() {
    if (!acks_) return ok_status();
    const auto reported = run_.metrics.find("acknowledged");
    DS_TRY(acks_->check_result_count(
        reported == run_.metrics.end() ? 0 : static_cast<long long>(reported->second)));
    applied_["ledger"] = acks_->summary();
    return ok_status();
}

Status RunAttempt::start_durability_trial() {
    const auto* file = std::get_if<FileDisk>(&volume_->source);
    if (file == nullptr || env_.durability_dir.empty()) {
        return make_error(errc::kUnsupported,
                          file == nullptr
                              ? "durability: only a file volume can be copied before the run"
                              : "durability: this disksweepd has no durability directory");
    }
    // A qcow2 file may grow past the disk's size with its metadata.
    const std::uint64_t size_limit =
        config_->disk_size_bytes * (file->format == ImageFormat::kQcow2 ? 2 : 1);
    DS_ASSIGN_OR_RETURN(auto trial,
                        DurabilityTrial::start(env_.durability_dir, run_.id, file->path, size_limit,
                                               config_->cache, *workload_->durability));
    trial_.emplace(std::move(trial));
    return ok_status();
}

Status RunAttempt::measure_durability() {
    // QEMU writes the last of the log as it stops.
    DS_TRY(stop_guest());
    DS_TRY(trial_->plan(acks_ ? acks_->entries() : std::vector<AckEntry>{}));
    const std::size_t states = trial_->state_count();
    for (std::size_t first = 0; first < states; first += kMaxCheckImages) {
        if (cancelled_.load()) return make_error(errc::kCancelled, "cancelled");
        publish(Json{{"type", "run_progress"},
                     {"run_id", run_.id},
                     {"phase", "durability"},
                     {"message", "checking crash states " + std::to_string(first + 1) + "-" +
                                     std::to_string(std::min(states, first + kMaxCheckImages)) +
                                     " of " + std::to_string(states)},
                     {"fraction", static_cast<double>(first) / static_cast<double>(states)}});
        DS_ASSIGN_OR_RETURN(auto images, trial_->build_images(first, kMaxCheckImages));
        const auto check_start = env_.clock->now();
        auto checks = check_crash_images(images);
        trial_->add_check_seconds(seconds_since(check_start, *env_.clock));
        if (!checks.ok()) {
            return make_error(checks.error().code, "durability: checking crash states from " +
                                                       std::to_string(first) + ": " +
                                                       checks.error().message);
        }
        trial_->record_checks(first, checks.value());
    }
    applied_["durability"] = trial_->result();
    return ok_status();
}

Result<std::vector<CrashCheck>> RunAttempt::check_crash_images(
    const std::vector<std::string>& images) {
    const std::string vm = env_.names.checker_vm(run_.id);
    VmRequest request;
    request.name = vm;
    request.config = checker_config(*config_);
    request.data_disk = at_path(volume_->source, images.front());
    Json disks = Json::array({std::string(protocol::kDataDiskSerial)});
    for (std::size_t i = 1; i < images.size(); ++i) {
        request.extra_disks.push_back(
            {at_path(volume_->source, images[i]), protocol::crash_disk_serial(i)});
        disks.push_back(protocol::crash_disk_serial(i));
    }
    request.image = staged_image_ ? *staged_image_ : image_;
    request.accel = accel_;
    request.vcpus = env_.vcpus;
    request.memory_mib = env_.memory_mib;
    const int timeout_s = kCheckSecondsPerImage * static_cast<int>(images.size());
    Json job = {{"run_id", std::to_string(run_.id)},
                {"filesystem", filesystem_json(*config_)},
                {"workload", run_.workload},
                {"timeout_s", timeout_s},
                {"check", true},
                {"check_disks", disks}};
    auto checks = [&]() -> Result<std::vector<CrashCheck>> {
        DS_TRY(hypervisor_->start_vm(request));
        const auto deadline = env_.clock->now() + std::chrono::seconds(boot_timeout_s_);
        DS_ASSIGN_OR_RETURN(
            auto channel,
            hypervisor_->open_agent_channel(
                vm, std::chrono::steady_clock::now() + std::chrono::seconds(boot_timeout_s_),
                &cancelled_));
        AgentSession session(std::move(channel), &cancelled_, *env_.clock);
        DS_ASSIGN_OR_RETURN(auto hello, session.receive_hello(deadline));
        if (std::find(hello.capabilities.begin(), hello.capabilities.end(),
                      protocol::kCheckCapability) == hello.capabilities.end()) {
            return make_error(errc::kUnsupported,
                              "the guest's agent cannot check crash images (its hello announces "
                              "no 'check' capability): rebuild the guest image");
        }
        DS_TRY(session.send_job(job));
        DS_ASSIGN_OR_RETURN(
            auto result,
            session.await_result(
                env_.clock->now() + std::chrono::seconds(timeout_s + kAgentGraceSeconds),
                [](const guest::Progress&) {}));
        session.send_shutdown();
        return parse_crash_checks(result.output, images.size());
    }();
    const Status destroyed = hypervisor_->destroy_vm(vm);
    if (checks.ok() && destroyed.ok()) hypervisor_->discard_console(vm);
    if (checks.ok() && !destroyed.ok()) return destroyed.error();
    if (!checks.ok()) {
        return make_error(checks.error().code,
                          "checker guest " + vm + ": " + checks.error().message +
                              "; console log: " + hypervisor_->console_location(vm));
    }
    return checks;
}

Status RunAttempt::await_ready(std::string_view ready_type, Deadline deadline,
                               const std::function<void(const guest::Progress&)>& on_progress,
                               int wait_s) {
    auto ready = session_->await_ready(ready_type, deadline, on_progress);
    if (!ready.ok()) return job_failure(ready.error(), wait_s);
    const std::string run_id = std::to_string(run_.id);
    if (ready->run_id != run_id) {
        return make_error(errc::kProtocol, "agent sent " + std::string(ready_type) + " for run \"" +
                                               guest::cut_text(ready->run_id, 80) +
                                               "\", not for this run (\"" + run_id + "\")");
    }
    return ok_status();
}

Status RunAttempt::mark_measured_window(
    Deadline deadline, const std::function<void(const guest::Progress&)>& on_progress, int wait_s) {
    DS_TRY(await_ready(protocol::kMarkReady, deadline, on_progress, wait_s));
    DS_TRY(trial_->mark(read_host_writeback(env_.vm_sysctl_dir)));
    return session_->send_answer(protocol::kMark);
}

Status RunAttempt::measure_before_trim(
    Deadline deadline, const std::function<void(const guest::Progress&)>& on_progress, int wait_s) {
    DS_TRY(await_ready(protocol::kTrimReady, deadline, on_progress, wait_s));
    auto before = storage_->allocated_bytes(run_.volume_name);
    if (before.ok()) {
        allocated_before_trim_ = before.value();
    } else {
        not_measured_ = "cannot measure the volume's allocation: " + before.error().message;
    }
    return session_->send_answer(protocol::kTrim);
}

// The storage's allocation after the guest's trim against the one before,
// as applied_settings.discard_effect; verify() fails a mismatch.
void RunAttempt::judge_trim() {
    const bool discard = config_->discard;
    if (trial_) {
        applied_["discard_effect"] = discard_effect_not_measured(
            discard, "a durability run keeps the workload's files for its crash states: no trim");
        return;
    }
    if (!agent_trims_) {
        applied_["discard_effect"] = discard_effect_not_measured(
            discard,
            "the agent cannot wait for the host's measurement before its trim (it "
            "announced no 'trim' capability: a one-shot agent, docs/proxmox.md)");
        return;
    }
    std::uint64_t allocated_after = 0;
    if (not_measured_.empty()) {
        auto after = storage_->allocated_bytes(run_.volume_name);
        if (after.ok()) allocated_after = after.value();
        if (!after.ok()) {
            not_measured_ = "cannot measure the volume's allocation: " + after.error().message;
        }
    }
    if (!not_measured_.empty()) {
        applied_["discard_effect"] = discard_effect_not_measured(discard, not_measured_);
        return;
    }
    // Checked by the session's schema (integers 0..2^63-1, a string); read
    // without throwing all the same.
    const Json& readback = result_.readback;
    const auto count_at = [&readback](const char* key) -> std::optional<std::uint64_t> {
        const auto found = readback.find(key);
        if (found == readback.end() || !found->is_number_unsigned()) return std::nullopt;
        return found->get<std::uint64_t>();
    };
    DiscardFigures figures;
    figures.allocated_before = allocated_before_trim_;
    figures.allocated_after = allocated_after;
    figures.removed_bytes = count_at("trim_removed_bytes");
    figures.trimmed_bytes = count_at("trimmed_bytes");
    figures.trim_error = json_read::string_or_empty(readback, "trim_error");
    DiscardVerdict verdict = judge_discard_effect(discard, figures);
    applied_["discard_effect"] = std::move(verdict.record);
    discard_mismatch_ = std::move(verdict.mismatch);
}

Status RunAttempt::host_job() {
    if (env_.host_processes == nullptr)
        return make_error(errc::kUnsupported, "this disksweepd cannot run host baselines");
    const int timeout_s = workload_->timeout_s > 0 ? workload_->timeout_s : run_timeout_s_;
    publish(Json{{"type", "run_progress"},
                 {"run_id", run_.id},
                 {"phase", "bench"},
                 {"message", "fio on the raw volume, from the host"}});
    auto result = run_host_fio(*workload_, volume_->source, config_->disk_size_bytes,
                               *env_.host_processes, std::chrono::seconds(timeout_s));
    if (!result.ok()) {
        timed_out_ = result.error().code == errc::kTimeout;
        return result.error();
    }
    applied_["host_baseline"] = result->layout;
    timings_["prefill_s"] = result->prefill_s;
    timings_["bench_s"] = result->bench_s;
    DS_ASSIGN_OR_RETURN(auto metrics,
                        metrics_from_workload_output(workload_->kind, result->fio_output));
    run_.metrics = metrics;
    run_.raw_output = result->fio_output.dump();
    return ok_status();
}

void RunAttempt::publish_progress(const guest::Progress& progress) {
    // Checked and cut to guest::kMaxTextBytes per text by the session.
    Json event = {{"type", "run_progress"},
                  {"run_id", run_.id},
                  {"phase", progress.phase},
                  {"message", progress.message},
                  {"elapsed_s", progress.elapsed_s}};
    if (progress.fraction) event["fraction"] = *progress.fraction;
    publish(std::move(event));
}

// The hypervisor's I/O counters of the data disk, or null where it has none
// (a backend without them does not fail the run).
void RunAttempt::read_disk_counters(Json& into) {
    auto counters = hypervisor_->disk_counters(vm_name_);
    into = counters.ok() && counters->is_object() ? counters.value() : Json();
}

Json RunAttempt::sample_host_cpu() {
    Result<Json> qemu = hypervisor_->emulator_cpu_times(vm_name_);
    if (!qemu.ok()) return Json{{"not_measured", qemu.error().message}};
    Json sample{{"qemu", std::move(qemu).value()}};
    if (volume_) sample["host"] = read_host_io_counters(volume_->source);
    return sample;
}

void RunAttempt::record_cpu_cost(const Json& cpu_after) {
    const Json disk = applied_.value("disk_counters", Json::object());
    const Json record = cpu_cost_record(cpu_before_, cpu_after, result_.guest_cpu, disk);
    for (const auto& [name, value] :
         cpu_per_io_metrics(record.value("qemu", Json()), result_.guest_cpu, disk))
        run_.metrics[name] = value;
    applied_["cpu_cost"] = record;
}

Error RunAttempt::job_failure(const Error& error, int wait_s) {
    if (error.code == kWorkloadTimedOut) {
        timed_out_ = true;
        return error;
    }
    if (error.code != errc::kIo && error.code != errc::kTimeout) return error;
    timed_out_ = error.code == errc::kTimeout;
    std::string what = timed_out_
                           ? "run exceeded its time limit of " + std::to_string(wait_s) + " s"
                           : "lost the guest agent mid-run (" + error.message + ")";
    if (error.code == errc::kIo && guest_stopped(*hypervisor_, vm_name_)) {
        what += ": the guest stopped unexpectedly";
    }
    return make_error(error.code, what + "; console log: " + run_.console_log);
}

// Mismatches fail the run; so do the levels not checked that the sweep's
// `unchecked_levels` does not allow (settings_verify.h fails_run). Every
// level and setting not checked is recorded as applied_["verification"].
Status RunAttempt::verify() {
    applied_["guest"] = result_.readback;
    auto [mismatches, not_checked] =
        verify_applied_settings(*config_, *workload_, applied_["hypervisor"], result_.readback);
    if (!discard_mismatch_.empty()) mismatches.push_back(discard_mismatch_);
    judge_throttle(mismatches);
    add_effects_not_checked(not_checked);
    const UncheckedLevelPolicy policy = env_.unchecked_levels
                                            ? env_.unchecked_levels(run_.sweep_id)
                                            : UncheckedLevelPolicy::kFailUnlessForbidden;
    applied_["verification"] = verification_record(not_checked, policy);
    std::vector<std::string> unchecked;
    for (const NotChecked& entry : not_checked)
        if (fails_run(entry, policy)) unchecked.push_back(not_checked_line(entry));
    applied_["verified"] = mismatches.empty() && unchecked.empty();
    std::vector<std::string> parts;
    if (!mismatches.empty()) parts.push_back("settings not in force: " + join(mismatches, "; "));
    if (!unchecked.empty()) {
        parts.push_back("settings not verified (unchecked_levels = \"" +
                        std::string(to_string(policy)) + "\"): " + join(unchecked, "; "));
    }
    if (!parts.empty()) return make_error(errc::kSettingsMismatch, join(parts, "; "));
    return ok_status();
}

void RunAttempt::judge_throttle(std::vector<std::string>& mismatches) {
    if (!config_->iops_limit && !config_->bandwidth_limit) return;
    // fio's and the agent's engine's `direct` (a flag: true or 1).
    const Json direct = workload_->params.is_object()
                            ? workload_->params.value("direct", Json(false))
                            : Json(false);
    const WorkloadIo io =
        direct == true || direct == 1 ? WorkloadIo::kDirect : WorkloadIo::kBuffered;
    ThrottleVerdict verdict = judge_throttle_effect(*config_, io, throttle_rates_of(run_.metrics),
                                                    unthrottled_reference());
    applied_["throttle_effect"] = std::move(verdict.record);
    for (std::string& line : verdict.mismatches) mismatches.push_back(std::move(line));
}

void RunAttempt::add_effects_not_checked(std::vector<NotChecked>& not_checked) const {
    constexpr const char* kLevel = "effect on the run";
    const Json& discard = applied_.value("discard_effect", Json());
    if (discard.is_object() && discard.value("checked", true) == false) {
        not_checked.push_back(
            {"effect on the storage (the guest's trim)", "discard", discard.value("reason", "")});
    }
    const Json& throttle = applied_.value("throttle_effect", Json());
    if (!throttle.is_object()) return;
    for (const auto& [setting, record] : throttle.items()) {
        if (!record.is_object()) continue;
        if (record.value("checked", true) == false) {
            not_checked.push_back({kLevel, setting, record.value("reason", "")});
            continue;
        }
        const Json& lower = record.value("lower", Json());
        if (lower.is_object() && lower.value("checked", true) == false) {
            not_checked.push_back(
                {kLevel, setting, "a lower limit than asked: " + lower.value("reason", "")});
        }
    }
}

std::optional<ThrottleRates> RunAttempt::unthrottled_reference() {
    if (env_.store == nullptr || run_.sweep_id == 0) return std::nullopt;
    auto aggregates = env_.store->metric_aggregates(run_.sweep_id);
    if (!aggregates.ok()) return std::nullopt;
    const std::string twin = config_id(unthrottled_twin(*config_));
    std::map<std::string, double> means;
    for (const MetricAggregate& aggregate : *aggregates) {
        if (aggregate.config_id != twin || aggregate.workload_name != run_.workload_name) continue;
        // The partition key is [accel, host, qemu, libvirt, kernel, proxmox] (store.h):
        // a twin measured on another host says nothing of this one's disk.
        const Json partition = Json::parse(aggregate.partition_key, nullptr, false);
        if (!partition.is_array() || partition.size() < 2 || partition[1] != host_name_) continue;
        means[aggregate.metric] = aggregate.moments.mean;
    }
    if (means.empty()) return std::nullopt;
    return throttle_rates_of(means);
}

// Always runs, whatever failed before; an Error lists every step that failed.
Status RunAttempt::stage_guest_image() {
    if (staged_image_) return ok_status();
    auto staged = hypervisor_->stage_image(image_);
    if (!staged.ok()) {
        return make_error(staged.error().code,
                          "guest image on host " + host_name_ + ": " + staged.error().message);
    }
    staged_image_ = std::move(staged).value();
    return ok_status();
}

Status RunAttempt::teardown() {
    session_.reset();
    std::string problems;
    if (Status stopped = stop_guest(); !stopped.ok()) problems += stopped.error().message + "; ";
    if (staged_image_) {
        hypervisor_->release_image(*staged_image_);
        staged_image_.reset();
    }
    if (trial_) {
        if (Status removed = trial_->remove(); !removed.ok())
            problems += removed.error().message + "; ";
    }
    if (volume_ && !keep_volume_) {
        applied_["storage"]["after"] = storage_->state(run_.volume_name);
        Status removed = storage_->remove_volume(run_.volume_name);
        if (!removed.ok()) problems += removed.error().message + "; ";
    }
    if (problems.empty()) return ok_status();
    return make_error(errc::kIo, problems);
}

// Also when start_vm failed half-way: destroy_vm succeeds on a missing VM.
// A recorded guest is destroyed by its handle (also one start_vm left half
// made) and, once gone, forgotten; else by its name.
Status RunAttempt::stop_guest() {
    if (hypervisor_ == nullptr) return ok_status();
    DS_TRY(vm_handle_ ? hypervisor_->destroy_recorded_vm(vm_name_, *vm_handle_)
                      : hypervisor_->destroy_vm(vm_name_));
    if (vm_handle_ && mode_ != AttemptMode::kHelloOnly) {
        DS_TRY(env_.store->clear_vm_handle(run_.id));
        vm_handle_.reset();
    }
    return ok_status();
}

void RunAttempt::settle(const Status& outcome, const std::string& teardown_problems) {
    if (outcome.ok()) {
        run_.status = RunStatus::kSucceeded;
        run_.failure_reason.clear();
        // A clean run keeps no console log; a failed one keeps it for reading.
        if (hypervisor_ != nullptr) hypervisor_->discard_console(vm_name_);
        run_.console_log.clear();
    } else if (outcome.error().code == errc::kCancelled && env_.shutting_down &&
               env_.shutting_down->load()) {
        // Not the user's cancel: the daemon is stopping. The run was not
        // measured; say so (the next daemon resumes the sweep's pending runs).
        run_.status = RunStatus::kFailed;
        run_.failure_reason = std::string(kInterruptedReason);
    } else if (outcome.error().code == errc::kCancelled) {
        run_.status = RunStatus::kCancelled;
        run_.failure_reason = "cancelled";
    } else {
        run_.status = timed_out_ ? RunStatus::kTimedOut : RunStatus::kFailed;
        run_.failure_reason = outcome.error().message;
    }
    if (!teardown_problems.empty()) {
        run_.failure_reason += (run_.failure_reason.empty() ? "" : "; ") +
                               std::string("teardown: ") + teardown_problems;
    }
    timings_["total_s"] = seconds_since(started_, *env_.clock);
    run_.timings = timings_;
    run_.versions = versions_;
    run_.applied_settings = applied_;
    run_.finished_at = utc_now_iso8601(*env_.clock);
}

Status RunAttempt::record() {
    Status stored = env_.store->finish_run(run_);
    if (!stored.ok() && stored.error().code != errc::kConflict) {
        // E.g. a value SQLite cannot hold: record the failure without the
        // measurements rather than leave the run 'running' forever.
        run_.status = RunStatus::kFailed;
        run_.failure_reason = "cannot record result: " + stored.error().message;
        run_.metrics.clear();
        run_.raw_output.clear();
        (void)env_.store->finish_run(run_);
    } else if (!stored.ok()) {
        run_.status = RunStatus::kFailed;
        run_.failure_reason = "cannot record result: " + stored.error().message;
    }
    publish(Json{{"type", "run_finished"},
                 {"run_id", run_.id},
                 {"status", run_.status},
                 {"message", run_.failure_reason},
                 {"total_s", timings_["total_s"]}});
    return stored;
}

RunRecord RunAttempt::execute() {
    const Status placed = run_guarded([this] { return place(); }, run_.id);
    if (!start()) return run_;
    bool workload_started = false;
    const Status outcome = run_guarded(
        [&]() -> Status {
            DS_TRY(placed);
            DS_TRY(timed(RunPhase::kProvision, &RunAttempt::provision));
            if (host_baseline_) return timed(RunPhase::kJob, &RunAttempt::host_job);
            DS_TRY(timed(RunPhase::kBoot, &RunAttempt::boot));
            workload_started = true;
            DS_TRY(timed(RunPhase::kJob, &RunAttempt::job));
            DS_TRY(timed(RunPhase::kVerify, &RunAttempt::verify));
            if (!trial_) return ok_status();
            return timed(RunPhase::kDurability, &RunAttempt::measure_durability);
        },
        run_.id);
    tear_down_and_settle(outcome);
    if (lease_) lease_->report(host_verdict(outcome, workload_started), run_.failure_reason);
    (void)timed(RunPhase::kRecord, &RunAttempt::record);
    return run_;
}

void RunAttempt::tear_down_and_settle(const Status& outcome) {
    const Status torn_down =
        run_guarded([this] { return timed(RunPhase::kTeardown, &RunAttempt::teardown); }, run_.id);
    settle(outcome, torn_down.ok() ? "" : torn_down.error().message);
}

RunAttempt RunAttempt::hello_only(const RunEnvironment& env, const std::string& name,
                                  const StorageConfig& config, int boot_timeout_s,
                                  const std::atomic<bool>& cancelled) {
    RunRecord run;
    run.config = to_json(config);
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
    auto request = placement_request(run, placement);
    return !request.ok() || env_.hosts->hold(request.value());
}

}  // namespace ds
