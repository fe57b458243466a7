#include "daemon/run/run_attempt.h"

#include <algorithm>
#include <iostream>
#include <thread>

#include "common/version.h"
#include "common/workload_kind.h"
#include "common/workload_output.h"
#include "daemon/run/golden_volume_phase.h"
#include "daemon/run/host_cpu.h"
#include "daemon/run/host_fio.h"
#include "daemon/run/verify_phase.h"

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
std::string config_label(const StorageConfig& config) {
    if (is_host_baseline(config)) return "host baseline";
    return filesystem_shorthand(config.filesystem) +
           " cache=" + std::string(to_string(config.cache)) +
           " bus=" + std::string(to_string(config.bus));
}

// The job's `filesystem` (docs/agent-protocol.md).
Json filesystem_json(const StorageConfig& config) {
    return Json{{"type", config.filesystem.type},
                {"mkfs_options", config.filesystem.mkfs_options},
                {"mount_options", config.filesystem.mount_options},
                {"post_format", config.filesystem.post_format}};
}

}  // namespace

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
    return is_host_baseline(run.config);
}

PlacementRequest placement_request(const RunRecord& run, const SweepPlacement& placement) {
    PlacementRequest request{run.config, placement.hosts, run.sweep_id, run.repetition, run.id};
    request.needs_local_files = run.workload.durability.has_value();
    return request;
}

void RunAttempt::publish(const api::SweepEvent& event) {
    if (env_.events != nullptr) env_.events->publish(run_.sweep_id, event);
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
    DS_ASSIGN_OR_RETURN(auto lease,
                        env_.hosts->acquire(placement_request(run_, placement_), cancelled_));
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
    publish({.type = "run_started",
             .run_id = run_.id,
             .config_id = run_.config_id,
             .config_label = config_label(run_.config),
             .workload = run_.workload_name,
             .repetition = run_.repetition});
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
    // partition reads this in place of the host (store/runs.cpp).
    if (placement_.identical_hosts) versions_["partition_host"] = "identical hosts";
    return true;
}

// What the run needs before anything is created: its settings, workload,
// guest image and storage backend, each from the stored run.
Status RunAttempt::prepare() {
    config_ = mode_ == AttemptMode::kGoldenPreparation
                  ? GoldenVolumePhase::preparation_config(run_.config)
                  : run_.config;
    if (mode_ == AttemptMode::kHelloOnly) {
        image_ = env_.image;
        storage_ = env_.storage;
        return identity_.load(image_.manifest, versions_);
    }
    workload_ = run_.workload;
    image_ = env_.image;
    const HypervisorKindDef* kind = find_hypervisor_kind(config_->hypervisor);
    const bool boots_project_image = kind == nullptr || kind->boots_project_image;
    if (env_.image_for && boots_project_image) {
        DS_ASSIGN_OR_RETURN(auto located, env_.image_for(image_choice()));
        image_ = located;
    }
    if (boots_project_image) DS_TRY(identity_.load(image_.manifest, versions_));
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
    if (mode_ == AttemptMode::kRun && workload_->durability) {
        DS_ASSIGN_OR_RETURN(auto durability,
                            DurabilityPhase::start(env_.durability_dir, run_.id, *config_,
                                                   volume_->source, *workload_->durability));
        durability_.emplace(std::move(durability));
    }
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
    const GoldenCloneRun clone_run{run_.sweep_id, run_.id,  run_.volume_name,
                                   storage_,      *config_, *workload_};
    const GoldenVolumePhase phase(env_.goldens, *env_.clock);
    DS_ASSIGN_OR_RETURN(auto clone,
                        phase.provision(
                            clone_run,
                            [this](const std::string& vm, const std::string& volume) {
                                return golden_preparation(vm, volume).execute_golden_preparation();
                            },
                            [this](const std::string& message) {
                                publish({.type = "run_progress",
                                         .run_id = run_.id,
                                         .phase = "dataset",
                                         .message = message});
                            },
                            cancelled_));
    volume_ = clone.volume;
    applied_["dataset"] = std::move(clone.dataset_record);
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
    if (durability_) request.write_log_path = durability_->log_path();
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
    identity_.note("kernel", hello->kernel);
    identity_.note("fio", hello->fio_version);
    if (hello->os) {
        identity_.note("os", hello->os->version_id);
        versions_["guest_os"] =
            hello->os->id + " " + hello->os->version_id +
            (hello->os->codename.empty() ? "" : " (" + hello->os->codename + ")");
    }
    DS_TRY(identity_.check(versions_));
    timings_["guest_boot_s"] = seconds_since(guest_start, *env_.clock);
    publish({.type = "run_progress",
             .run_id = run_.id,
             .phase = "booted",
             .message = "agent connected"});
    return ok_status();
}

ImageChoice RunAttempt::image_choice() const {
    ImageChoice choice;
    if (env_.guest_suite) choice.suite = env_.guest_suite(run_.sweep_id);
    if (workload_) choice.variant = std::string(image_variant_for_kind(workload_->kind));
    return choice;
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

Json RunAttempt::job_fields() const {
    return Json{{"run_id", std::to_string(run_.id)},
                {"filesystem", filesystem_json(*config_)},
                {"workload", to_json(run_.workload)}};
}

Result<Json> RunAttempt::job_request(int timeout_s) {
    Json job = job_fields();
    job["timeout_s"] = timeout_s;
    if (Json block = block_settings_json(*config_); !block.empty()) job["block"] = block;
    using JobRole = GoldenVolumePhase::JobRole;
    const bool preparing = mode_ == AttemptMode::kGoldenPreparation;
    if (preparing) DS_TRY(GoldenVolumePhase::add_to_job(job, JobRole::kPrepare, agent_datasets_));
    if (uses_golden())
        DS_TRY(GoldenVolumePhase::add_to_job(job, JobRole::kUseClone, agent_datasets_));
    if (durability_) DS_TRY(DurabilityPhase::add_to_job(job, agent_marks_));
    if (!preparing) {
        trim_.emplace(*storage_, run_.volume_name, config_->discard, agent_trims_,
                      durability_.has_value());
        if (trim_->guest_trims()) job["trim"] = true;
    }
    return job;
}

Status RunAttempt::job() {
    const Workload& workload = *workload_;
    const int job_timeout_s = workload.timeout_s > 0 ? workload.timeout_s : run_timeout_s_;
    DS_ASSIGN_OR_RETURN(const Json job, job_request(job_timeout_s));
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
    if (durability_) {
        DS_TRY(handshake(
            protocol::kMarkReady, protocol::kMark,
            [this] { return durability_->mark(env_.vm_sysctl_dir); }, deadline, on_progress,
            wait_s));
    }
    if (trim_ && trim_->guest_trims()) {
        DS_TRY(handshake(
            protocol::kTrimReady, protocol::kTrim,
            [this] {
                trim_->measure_before();
                return ok_status();
            },
            deadline, on_progress, wait_s));
    }
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
    if (mode_ == AttemptMode::kGoldenPreparation) {
        preparation_s_ = GoldenVolumePhase::prepare_seconds(result_.timings);
        return ok_status();
    }
    applied_["discard_effect"] = trim_->judge(result_.readback);
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
    // The server's version against the image's package, by the tool name
    // its rules give.
    const ServerSettingsRules* server_rules =
        kind_server_settings(workload_->kind, workload_->params);
    if (const auto server = result_.readback.find("server_version");
        server_rules != nullptr && server != result_.readback.end() && server->is_string()) {
        identity_.note(std::string(server_rules->identity_tool), server->get<std::string>());
        DS_TRY(identity_.check(versions_));
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
    if (durability_) log_bytes = [this] { return durability_->log_bytes(); };
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

Status RunAttempt::measure_durability() {
    // QEMU writes the last of the log as it stops.
    DS_TRY(stop_guest());
    DS_ASSIGN_OR_RETURN(auto record,
                        durability_->measure(acks_ ? acks_->entries() : std::vector<AckEntry>{},
                                             checker_guests(), *env_.clock, cancelled_,
                                             [this](const std::string& message, double fraction) {
                                                 publish({.type = "run_progress",
                                                          .run_id = run_.id,
                                                          .phase = "durability",
                                                          .message = message,
                                                          .fraction = fraction});
                                             }));
    applied_["durability"] = std::move(record);
    return ok_status();
}

CheckerGuests RunAttempt::checker_guests() const {
    CheckerGuests checkers;
    checkers.hypervisor = hypervisor_;
    checkers.vm_name = env_.names.checker_vm(run_.id);
    checkers.image = staged_image_ ? *staged_image_ : image_;
    checkers.accel = accel_;
    checkers.vcpus = env_.vcpus;
    checkers.memory_mib = env_.memory_mib;
    checkers.boot_timeout_s = boot_timeout_s_;
    checkers.job = job_fields();
    return checkers;
}

Status RunAttempt::handshake(std::string_view ready_type, std::string_view answer,
                             const std::function<Status()>& at_ready, Deadline deadline,
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
    DS_TRY(at_ready());
    return session_->send_answer(answer);
}

Status RunAttempt::host_job() {
    if (env_.host_processes == nullptr)
        return make_error(errc::kUnsupported, "this disksweepd cannot run host baselines");
    const int timeout_s = workload_->timeout_s > 0 ? workload_->timeout_s : run_timeout_s_;
    publish({.type = "run_progress",
             .run_id = run_.id,
             .phase = "bench",
             .message = "fio on the raw volume, from the host"});
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
    publish({.type = "run_progress",
             .run_id = run_.id,
             .phase = progress.phase,
             .message = progress.message,
             .elapsed_s = progress.elapsed_s,
             .fraction = progress.fraction});
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

Status RunAttempt::verify() {
    const UncheckedLevelPolicy policy = env_.unchecked_levels
                                            ? env_.unchecked_levels(run_.sweep_id)
                                            : UncheckedLevelPolicy::kFailUnlessForbidden;
    return VerifyPhase(*config_, *workload_, policy)
        .verify(applied_, result_.readback, run_.metrics, trim_ ? &*trim_ : nullptr, [this] {
            return unthrottled_reference(env_.store, run_.sweep_id, *config_, run_.workload_name,
                                         host_name_);
        });
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
    if (durability_) {
        if (Status removed = durability_->remove(); !removed.ok())
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
    // total_s is set by then; were it not, the event would go without it.
    const Json& total_s = timings_["total_s"];
    publish({.type = "run_finished",
             .status = to_string(run_.status),
             .run_id = run_.id,
             .message = run_.failure_reason,
             .total_s = total_s.is_number() ? std::optional(total_s.get<double>()) : std::nullopt});
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
            if (!durability_) return ok_status();
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

}  // namespace ds
