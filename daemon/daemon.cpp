#include "daemon/daemon.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <set>

#include "common/api/status.h"
#include "common/clock.h"
#include "common/file_descriptor.h"
#include "common/http.h"
#include "common/process.h"
#include "common/version.h"
#include "common/workload_kind.h"
#include "daemon/api/access.h"
#include "daemon/api/api.h"
#include "daemon/backends/hosts.h"
#include "daemon/backends/registry.h"
#include "daemon/host_watch.h"
#include "daemon/plan/submission.h"
#include "daemon/plan/sweep_specs.h"
#include "daemon/recovery.h"
#include "daemon/run/agent_session.h"
#include "daemon/run/events.h"
#include "daemon/run/image_manifest.h"
#include "daemon/run/run_executor.h"
#include "daemon/schedule/scheduler.h"
#include "daemon/store/store.h"

namespace ds {

namespace fs = std::filesystem;

namespace {

void log_line(const std::string& text) {
    std::cerr << "disksweepd: " << text << std::endl;
}

// Holds an exclusive lock on STATE_DIR/disksweepd.lock for the daemon's life:
// two daemons on one state dir would destroy each other's guests.
class StateLock {
  public:
    static Result<StateLock> acquire(const std::string& state_dir) {
        std::string path = state_dir + "/disksweepd.lock";
        FileDescriptor fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
        if (!fd.valid()) {
            return make_error(errc::kIo, "cannot open " + path + ": " + std::strerror(errno));
        }
        if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
            char pid[32] = {};
            (void)!::pread(fd.get(), pid, sizeof pid - 1, 0);
            fd.reset();
            return make_error(errc::kConflict, "another disksweepd (pid " +
                                                   std::string(pid[0] ? pid : "?") + ") is using " +
                                                   state_dir);
        }
        std::string me = std::to_string(::getpid()) + "\n";
        (void)!::ftruncate(fd.get(), 0);
        (void)!::pwrite(fd.get(), me.data(), me.size(), 0);
        return StateLock(std::move(fd));
    }

  private:
    explicit StateLock(FileDescriptor fd) : fd_(std::move(fd)) {}
    FileDescriptor fd_;  // holds the lock while open
};

// Creates `path` (and parents) and gives it `perms` when it was created or
// `always_set_perms`.
Status ensure_directory(const std::string& path, fs::perms perms, bool always_set_perms) {
    std::error_code ec;
    const bool created = fs::create_directories(path, ec);
    if (ec) return make_error(errc::kIo, "cannot create directory " + path + ": " + ec.message());
    if (!created && !always_set_perms) return ok_status();
    fs::permissions(path, perms, fs::perm_options::replace, ec);
    if (ec) return make_error(errc::kIo, "cannot set the mode of " + path + ": " + ec.message());
    return ok_status();
}

}  // namespace

void sd_notify_state(const std::string& state) {
    const char* socket_path = std::getenv("NOTIFY_SOCKET");
    if (!socket_path || !*socket_path) return;
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::string path = socket_path;
    if (path.size() >= sizeof address.sun_path) return;
    std::memcpy(address.sun_path, path.data(), path.size());
    if (path[0] == '@') address.sun_path[0] = '\0';  // abstract namespace
    socklen_t length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size());
    FileDescriptor fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (!fd.valid()) return;
    (void)::sendto(fd.get(), state.data(), state.size(), MSG_NOSIGNAL,
                   reinterpret_cast<sockaddr*>(&address), length);
}

std::optional<std::chrono::milliseconds> watchdog_ping_interval() {
    const char* usec = std::getenv("WATCHDOG_USEC");
    if (usec == nullptr || *usec == '\0') return std::nullopt;
    if (const char* pid = std::getenv("WATCHDOG_PID"); pid && *pid) {
        if (std::strtoll(pid, nullptr, 10) != ::getpid()) return std::nullopt;
    }
    char* end = nullptr;
    const long long value = std::strtoll(usec, &end, 10);
    if (end == usec || *end != '\0' || value <= 0) return std::nullopt;
    return std::max(std::chrono::milliseconds(1),
                    std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::microseconds(value) / 2));
}

int wait_for_signal(const sigset_t& signals, std::optional<std::chrono::milliseconds> interval,
                    const std::function<void()>& ping) {
    for (;;) {
        if (!interval) {
            int received = 0;
            if (sigwait(&signals, &received) == 0) return received;
            continue;
        }
        timespec timeout{};
        timeout.tv_sec = static_cast<time_t>(interval->count() / 1000);
        timeout.tv_nsec = static_cast<long>(interval->count() % 1000) * 1000000L;
        const int received = sigtimedwait(&signals, nullptr, &timeout);
        if (received > 0) return received;
        if (errno == EAGAIN && ping) ping();
    }
}

Status add_configured_storages(const DaemonConfig& config, BackendCatalog& backends) {
    // Shared by the backends and alive as long as the process (lvm-thin keeps
    // a reference).
    static const auto process_runner = std::make_shared<RealProcessRunner>();
    StorageContext context{config.effective_volume_dir(), process_runner};
    for (const std::string& text : config.effective_storages()) {
        DS_ASSIGN_OR_RETURN(auto line, parse_storage_line(text));
        DS_ASSIGN_OR_RETURN(auto storage, make_storage_backend(line, context));
        DS_TRY(backends.add_storage(std::move(storage)));
    }
    return ok_status();
}

namespace {

// The daemon's own libvirt connection as the host "local" (make_local_host),
// then the config's host lines, each a host of the pool and of the catalog.
Status add_configured_hosts(const DaemonConfig& config, const DaemonSeams& seams,
                            const ResourceNames& names, BackendCatalog& backends, HostPool& hosts) {
    const HostContext context{config.embedded_root(), config.run_dir(), names.prefix(),
                              seams.domain_xml_filter};
    DS_ASSIGN_OR_RETURN(auto own, make_local_host(config.effective_hypervisor_uri(),
                                                  config.max_parallel_runs, context));
    DS_TRY(backends.add_host(own->description));
    hosts.add(std::move(own));
    for (const std::string& text : config.hosts) {
        DS_ASSIGN_OR_RETURN(auto configured, make_configured_hosts(text, context));
        for (auto& host : configured) {
            DS_TRY(backends.add_host(host->description));
            hosts.add(std::move(host));
        }
    }
    backends.add_hypervisor(std::string(kHostBaselineHypervisor),
                            "fio from the host on the raw volume (host baselines)");
    return ok_status();
}

// Each libvirt host probes its own acceleration. Another kind's VMs run
// as their own configuration says (a Proxmox VM's `kvm`, default 1): each
// run asks for KVM and records what its VM really runs
// (Hypervisor::running_guest: the config's kvm and QEMU's `info kvm`), so
// no run claims KVM unchecked.
void decide_host_acceleration(const DaemonConfig& config, const ResourceNames& names,
                              HostPool& hosts, StorageBackend& storage,
                              const Result<GuestImage>& image) {
    for (Host* host : hosts.hosts()) {
        if (host->description.kind != "libvirt") {
            host->accel = Accel::kKvm;
            host->accel_reason = "read from each run's VM (" + host->description.kind +
                                 ": its config and QEMU), asked for: kvm";
        } else if (!image.ok()) {
            host->accel = Accel::kTcg;
            host->accel_reason = "no guest image to probe with";
        } else {
            // A remote host's probe volume is in its pool.
            StorageBackend* own = host->own_storage("file");
            const AccelDecision decision = decide_acceleration(
                config, names, *host->hypervisor, own != nullptr ? *own : storage, image.value());
            host->accel = decision.accel;
            host->accel_reason = decision.reason;
            host->accel_enforced = true;
        }
        log_line("acceleration of host " + host->description.name + ": " +
                 std::string(to_string(host->accel)) + " (" + host->accel_reason + ")");
    }
}

// Where each sweep's runs may go (its spec's [hypervisor] hosts and
// identical_hosts), what a level not checked does to them (its
// unchecked_levels) and which guest they boot ([guest] suite), read from the
// sweep's parsed spec (SweepSpecs) once per sweep.
class Placements {
  public:
    Placements(Store& store, SweepSpecs& specs) : store_(store), specs_(specs) {}
    SweepPlacement operator()(std::int64_t sweep_id) { return rules(sweep_id).placement; }
    UncheckedLevelPolicy unchecked_levels(std::int64_t sweep_id) {
        return rules(sweep_id).unchecked_levels;
    }
    std::string guest_suite(std::int64_t sweep_id) { return rules(sweep_id).guest_suite; }

  private:
    struct SweepRules {
        SweepPlacement placement;
        UncheckedLevelPolicy unchecked_levels = UncheckedLevelPolicy::kFailUnlessForbidden;
        std::string guest_suite{kDefaultGuestSuite};
    };
    SweepRules rules(std::int64_t sweep_id) {
        std::lock_guard lock(mutex_);
        auto known = by_sweep_.find(sweep_id);
        if (known != by_sweep_.end()) return known->second;
        SweepRules rules;
        if (auto sweep = store_.get_sweep(sweep_id); sweep.ok()) {
            if (auto parsed = specs_.spec_of(sweep.value()); parsed.ok()) {
                const SweepSpec& spec = *parsed.value();
                rules = {
                    {spec.hosts, spec.identical_hosts}, spec.unchecked_levels, spec.guest_suite};
            }
        }
        return by_sweep_[sweep_id] = rules;
    }

    Store& store_;
    SweepSpecs& specs_;
    std::mutex mutex_;
    std::map<std::int64_t, SweepRules> by_sweep_;
};

std::vector<api::HostStatus> hosts_status(HostPool& hosts) {
    std::vector<api::HostStatus> list;
    for (Host* host : hosts.hosts()) {
        list.push_back({.name = host->description.name,
                        .kind = host->description.kind,
                        .detail = host->description.detail,
                        .parallel = host->parallel,
                        .accel = std::string(to_string(host->accel)),
                        .accel_reason = host->accel_reason,
                        .versions = host->hypervisor->versions(),
                        .connection = host->hypervisor->reachability(),
                        .placement = hosts.placement_status(*host)});
    }
    return list;
}

// GET /v1/status's "guest_images": every suite's base image and variants
// (common/guest_suite.h, the workload kinds' image_variant), each ready with
// its manifest's kernel or not with the command that builds it. Looked up on
// each request, so an image built while the daemon runs shows at once.
std::vector<api::GuestImageStatus> guest_images_status(const DaemonConfig& config) {
    std::set<std::string> variants = {""};
    for (const WorkloadKind& kind : workload_kinds()) variants.emplace(kind.image_variant);
    std::vector<api::GuestImageStatus> images;
    for (const GuestSuiteDef& suite : kGuestSuites) {
        for (const std::string& variant : variants) {
            const ImageChoice choice{std::string(suite.name), variant};
            api::GuestImageStatus& entry = images.emplace_back();
            entry.suite = std::string(suite.name);
            entry.variant = variant;
            auto located = locate_guest_image(config, choice);
            entry.ready = located.ok();
            if (!located.ok()) {
                entry.problem = located.error().message;
            } else if (!located->manifest.empty()) {
                if (auto manifest = read_image_manifest(located->manifest); manifest.ok())
                    entry.kernel = manifest->kernel_release;
            }
        }
    }
    return images;
}

// GET /v1/status's "instance": the name, the prefix of what this daemon
// creates, and whether the name was configured or generated.
api::InstanceStatus instance_status(const DaemonConfig& config, const ResourceNames& names) {
    return {.name = names.instance(),
            .resource_prefix = names.prefix(),
            .source = config.instance.empty() ? "generated" : "configured"};
}

}  // namespace

Result<ResourceNames> daemon_resource_names(const DaemonConfig& config, Store& store) {
    if (!config.instance.empty()) return ResourceNames::for_instance(config.instance);
    DS_ASSIGN_OR_RETURN(auto stored, store.instance_id());
    return ResourceNames::for_instance(std::move(stored));
}

Result<GuestImage> locate_guest_image(const DaemonConfig& config, const ImageChoice& choice) {
    const std::string base_dir = config.effective_image_dir();
    const std::string subdir = image_subdir(choice);
    const std::string dir = subdir.empty() ? base_dir : base_dir + "/" + subdir;
    GuestImage image{dir + "/vmlinuz", dir + "/initrd.img", dir + "/root.img"};
    // The uncompressed ELF kernel boots straight into the kernel (PVH entry),
    // skipping firmware setup and decompression: about 10 s less under TCG.
    if (fs::exists(dir + "/vmlinux")) image.kernel = dir + "/vmlinux";
    // Written last by guest/build-image.sh; images made by hand may lack it,
    // and their runs then say their tool versions were not checked.
    if (fs::exists(dir + "/manifest.json")) image.manifest = dir + "/manifest.json";
    for (const auto& path : {image.kernel, image.initrd, image.root_disk}) {
        if (!fs::exists(path)) {
            return make_error(errc::kUnavailable, describe_image(choice) + " incomplete: " + path +
                                                      " is missing; build it with: " +
                                                      image_build_command(choice, base_dir));
        }
    }
    return image;
}

AccelDecision decide_acceleration(const DaemonConfig& config, const ResourceNames& names,
                                  Hypervisor& hypervisor, StorageBackend& storage,
                                  const GuestImage& image) {
    if (config.accel == AccelChoice::kTcg) return {Accel::kTcg, "configured: tcg"};
    if (config.accel == AccelChoice::kKvm) return {Accel::kKvm, "configured: kvm"};
    if (::access("/dev/kvm", R_OK | W_OK) != 0) {
        return {Accel::kTcg, "no usable /dev/kvm (" + std::string(std::strerror(errno)) + ")"};
    }
    // /dev/kvm can exist and still not run guests (nested setups that hang in
    // the BIOS): only a guest that boots to its agent proves KVM works. The
    // probe is an ordinary run attempt whose job is the hello.
    RunEnvironment environment(names);
    environment.hypervisor = &hypervisor;
    environment.storage = &storage;
    environment.image = image;
    environment.accel = Accel::kKvm;
    environment.vcpus = config.vcpus;
    environment.memory_mib = config.memory_mib;
    auto reached =
        run_hello_probe(environment, {names.probe(), 64ull << 20, config.probe_timeout_s});
    if (!reached.ok()) {
        return {Accel::kTcg, "KVM probe guest did not reach its agent: " + reached.error().message};
    }
    return {Accel::kKvm,
            "KVM probe guest reached its agent in " + std::to_string(reached.value()) + " s"};
}

namespace {

// Blocks the stop signals in every thread (threads inherit the mask); the
// main thread takes them with sigwait once everything runs.
sigset_t block_stop_signals() {
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
    return stop_signals;
}

// Not world-readable: the state holds results, volumes and QEMU's
// sockets; the socket's directory lets the API group reach the socket.
// The state directory is traversable (0711, not listable): the QEMU of a
// libvirtd host (qemu:///system) runs as another user and must reach the
// guest images and volumes beneath it; what is private in it has its own
// mode (the database is 0600, the run and libvirt directories 0700).
// The socket's directory may be shared (e.g. /tmp): its mode is set only
// when the daemon creates it.
Status make_daemon_directories(const DaemonConfig& config) {
    struct DaemonDirectory {
        std::string path;
        fs::perms perms;
        bool ours;  // the daemon's own: its mode is set even when it exists
    };
    const DaemonDirectory directories[] = {
        {config.state_dir, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec,
         true},
        {config.run_dir(), fs::perms::owner_all, true},
        {config.durability_dir(), fs::perms::owner_all, true},
        {config.embedded_root(), fs::perms::owner_all, true},
        {fs::path(config.socket_path).parent_path().string(),
         fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec, false}};
    for (const auto& [dir, perms, ours] : directories) {
        if (dir.empty()) continue;
        DS_TRY(ensure_directory(dir, perms, ours));
    }
    return ok_status();
}

// The state run_daemon's phases share, a member function a phase. The
// members are declared in the order the phases make them, so they are
// destroyed in the reverse order: the server before the scheduler, the
// scheduler (and with it the run executor) before the process runner, the
// events, the hosts and the store; the state lock last. A phase that
// returns false has logged why the daemon exits with 1.
class Daemon {
  public:
    Daemon(const DaemonConfig& config, const DaemonSeams& seams) : config_(config), seams_(seams) {}

    bool open_state();
    bool add_backends();
    void recover();
    void probe_acceleration();
    void start_scheduler();
    void resume_sweeps();
    bool serve();
    void announce_ready();
    void wait_for_stop_signal(const sigset_t& stop_signals);
    void stop();

  private:
    SweepTimeouts default_timeouts() const {
        return {config_.boot_timeout_s, config_.run_timeout_s};
    }
    RunEnvironment run_environment();
    ApiContext api_context(std::optional<gid_t> api_gid);

    const DaemonConfig& config_;
    const DaemonSeams& seams_;
    std::optional<StateLock> lock_;
    std::unique_ptr<Store> store_;
    std::optional<ResourceNames> names_;
    BackendCatalog backends_;
    HostPool hosts_;
    StorageBackend* probe_storage_ = nullptr;
    std::optional<GuestImage> image_;
    std::string image_problem_;  // why there is no image_
    Host* local_host_ = nullptr;
    AccelDecision accel_;
    EventBus events_;
    // The sweeps' parsed specs, shared by the API, the scheduler and the runs.
    std::shared_ptr<SweepSpecs> specs_ = std::make_shared<SweepSpecs>();
    std::atomic<bool> shutting_down_{false};
    RealProcessRunner host_processes_;
    // Before the scheduler: its workers use them until it stops.
    std::optional<GoldenVolumes> goldens_;
    std::optional<Scheduler> scheduler_;
    // Declared after the scheduler: stopped before it.
    std::optional<HostWatch> host_watch_;
    std::optional<http::UnixServer> server_;
};

// The state lock, the results database (private) and the instance name.
bool Daemon::open_state() {
    auto lock = StateLock::acquire(config_.state_dir);
    if (!lock.ok()) {
        log_line(lock.error().message);
        return false;
    }
    lock_.emplace(std::move(lock).value());
    auto store = Store::open(config_.effective_database());
    if (!store.ok()) {
        log_line("cannot open the results database: " + store.error().message);
        return false;
    }
    store_ = std::move(store).value();
    // The results are root's: SQLite gives its -wal and -shm files this mode too.
    std::error_code private_error;
    fs::permissions(config_.effective_database(), fs::perms::owner_read | fs::perms::owner_write,
                    fs::perm_options::replace, private_error);
    if (private_error && fs::exists(config_.effective_database())) {
        log_line("cannot make the results database private: " + private_error.message());
        return false;
    }
    auto names = daemon_resource_names(config_, *store_);
    if (!names.ok()) {
        log_line("cannot name this daemon's instance: " + names.error().message);
        return false;
    }
    names_.emplace(std::move(names).value());
    return true;
}

// The hosts (the daemon's own libvirt connection first) and the storages.
bool Daemon::add_backends() {
    if (Status configured = add_configured_hosts(config_, seams_, *names_, backends_, hosts_);
        !configured.ok()) {
        log_line("configuration: " + configured.error().message);
        return false;
    }
    if (Status configured = add_configured_storages(config_, backends_); !configured.ok()) {
        log_line("configuration: " + configured.error().message);
        return false;
    }
    // The acceleration probe's volume: the file storage is always there.
    StorageConfig file_config;
    auto storage = backends_.storage_for(file_config);
    if (!storage.ok()) {
        log_line(storage.error().message);
        return false;
    }
    probe_storage_ = storage.value();
    return true;
}

// Before anything of this daemon runs: whatever carries its prefix is a
// leftover, and interrupted runs get their new attempts before resuming.
void Daemon::recover() {
    std::vector<RecoveryHost> recovery_hosts;
    std::vector<StorageBackend*> storages = backends_.storages();
    for (Host* host : hosts_.hosts()) {
        recovery_hosts.push_back({host->description.name, host->hypervisor.get()});
        for (const auto& own : host->own_storages) storages.push_back(own.get());
    }
    (void)recover_leftovers(*names_, recovery_hosts, storages, *store_, kMaxRunAttempts, log_line);
    remove_durability_leftovers(config_.durability_dir(), log_line);
}

void Daemon::probe_acceleration() {
    auto image = locate_guest_image(config_);
    if (!image.ok()) {
        log_line("warning: " + image.error().message + " (sweeps are refused until it exists)");
    } else if (config_.accel == AccelChoice::kAuto) {
        log_line("probing acceleration...");
    }
    decide_host_acceleration(config_, *names_, hosts_, *probe_storage_, image);
    if (image.ok()) {
        image_ = image.value();
    } else {
        image_problem_ = image.error().message;
    }
    local_host_ = hosts_.hosts().front();
    accel_ = {local_host_->accel, local_host_->accel_reason};
    log_line(std::string("acceleration: ") + std::string(to_string(accel_.accel)) + " (" +
             accel_.reason + ")");
}

// What every run is given; the run executor keeps a copy.
RunEnvironment Daemon::run_environment() {
    RunEnvironment environment(*names_);
    environment.shutting_down = &shutting_down_;
    environment.hosts = &hosts_;
    auto placements = std::make_shared<Placements>(*store_, *specs_);
    environment.placement = [placements](std::int64_t sweep_id) { return (*placements)(sweep_id); };
    environment.unchecked_levels = [placements](std::int64_t sweep_id) {
        return placements->unchecked_levels(sweep_id);
    };
    environment.hypervisor = local_host_->hypervisor.get();
    environment.backends = &backends_;
    environment.store = store_.get();
    environment.events = &events_;
    environment.vcpus = config_.vcpus;
    environment.memory_mib = config_.memory_mib;
    if (image_) environment.image = *image_;
    // Looked up per run, so a variant built while the daemon runs is used.
    environment.image_for = [&config = config_](const ImageChoice& image) {
        return locate_guest_image(config, image);
    };
    environment.guest_suite = [placements](std::int64_t sweep_id) {
        return placements->guest_suite(sweep_id);
    };
    environment.accel = accel_.accel;
    environment.host_processes = &host_processes_;
    environment.goldens = &*goldens_;
    environment.durability_dir = config_.durability_dir();
    environment.vm_sysctl_dir = config_.vm_sysctl_dir;
    return environment;
}

void Daemon::start_scheduler() {
    goldens_.emplace(*names_);
    auto executor = std::make_shared<RunExecutor>(run_environment());
    scheduler_.emplace(
        *store_, events_,
        [executor](const RunRecord& run, const SweepTimeouts& timeouts,
                   const std::atomic<bool>& cancelled) {
            return executor->execute(run, timeouts.boot_timeout_s, timeouts.run_timeout_s,
                                     cancelled);
        },
        hosts_.total_parallel());
    host_watch_.emplace(hosts_.hosts(), *names_, *store_, log_line);
    hosts_.log_backoffs(log_line);
    scheduler_->read_specs_from(*specs_);
    scheduler_->hold_before_start(
        [executor](const RunRecord& run) { return executor->hold_host(run); });
    scheduler_->on_sweep_finished([&goldens = *goldens_, &hosts = hosts_](std::int64_t sweep_id) {
        hosts.forget_sweep(sweep_id);
        for (const std::string& problem : goldens.release_sweep(sweep_id)) {
            log_line(
                "sweep " + std::to_string(sweep_id) +
                ": cannot remove golden volume (recovery retries at the next start): " + problem);
        }
    });
    scheduler_->start();
}

// Resume sweeps an earlier daemon did not finish (with the new attempts
// of their interrupted runs).
void Daemon::resume_sweeps() {
    const SweepTimeouts defaults = default_timeouts();
    auto sweeps = store_->list_sweeps();
    if (!sweeps.ok()) return;
    for (const auto& sweep : sweeps.value()) {
        if (is_final(sweep.status)) continue;
        SweepTimeouts timeouts = defaults;
        if (auto spec = specs_->spec_of(sweep); spec.ok()) {
            auto plan =
                plan_submission(*spec.value(), sweep.spec_toml, sweep.spec_source, defaults);
            if (plan.ok()) timeouts = plan->timeouts;
        }
        Status resumed = scheduler_->submit(sweep.id, timeouts);
        log_line("resuming sweep " + std::to_string(sweep.id) +
                 (resumed.ok() ? "" : ": " + resumed.error().message));
    }
}

ApiContext Daemon::api_context(std::optional<gid_t> api_gid) {
    ApiContext context;
    context.store = store_.get();
    context.scheduler = &*scheduler_;
    context.events = &events_;
    context.specs = specs_;
    context.default_timeouts = default_timeouts();
    context.backends = &backends_;
    context.image_problem = image_problem_;
    context.variant_image_problem = [&config = config_](const ImageChoice& image) -> std::string {
        auto located = locate_guest_image(config, image);
        return located.ok() ? "" : located.error().message;
    };
    context.status = [&config = config_, &backends = backends_, &hosts = hosts_,
                      hv = local_host_->hypervisor.get(), accel = accel_,
                      image_ready = image_.has_value(), image_problem = image_problem_,
                      instance = instance_status(config_, *names_)] {
        api::StatusReply status;
        status.instance = instance;
        status.accel = std::string(to_string(accel.accel));
        status.accel_reason = accel.reason;
        status.hypervisor = {.backend = "libvirt", .uri = config.effective_hypervisor_uri()};
        status.versions = hv->versions();
        status.backends = backends.to_json();
        status.hosts = hosts_status(hosts);
        status.guest_image = {.ready = image_ready, .problem = image_problem};
        status.guest_images = guest_images_status(config);
        status.config = config.to_json();
        return status;
    };
    context.check_host = [&hosts = hosts_](const std::string& name) -> Result<Json> {
        for (Host* host : hosts.hosts()) {
            if (host->description.name == name) return host->hypervisor->check_host();
        }
        return make_error(errc::kNotFound,
                          "no host '" + name + "' in this daemon (hostctl status lists them)");
    };
    context.peer_allowed = [api_gid](uid_t uid, gid_t gid) {
        return peer_may_use_api(uid, gid, api_gid);
    };
    context.log = log_line;
    return context;
}

// The API on the socket; when it cannot start, the scheduler is stopped.
bool Daemon::serve() {
    const std::optional<gid_t> api_gid = lookup_group(kApiGroup);
    server_.emplace(config_.socket_path, make_api_handler(api_context(api_gid)), 0660);
    if (Status started = server_->start(); !started.ok()) {
        log_line(started.error().message);
        scheduler_->stop();
        return false;
    }
    // 0660 root:disksweep; without the group only root may connect.
    if (api_gid && ::chown(config_.socket_path.c_str(), 0, *api_gid) != 0) {
        log_line("warning: cannot give " + config_.socket_path + " to group " + kApiGroup + ": " +
                 std::strerror(errno));
    }
    return true;
}

void Daemon::announce_ready() {
    log_line("disksweepd " + std::string(disksweep_version()) + " ready on " + config_.socket_path +
             " (instance " + names_->instance() + ", hypervisor " +
             config_.effective_hypervisor_uri() + ")");
    sd_notify_state("READY=1\nSTATUS=serving on " + config_.socket_path);
}

// The watchdog proves the API still answers, not merely that this thread
// runs: a wedged accept loop or a deadlocked store stops the pings.
void Daemon::wait_for_stop_signal(const sigset_t& stop_signals) {
    const std::string socket_path = config_.socket_path;
    const int received = wait_for_signal(stop_signals, watchdog_ping_interval(), [&socket_path] {
        auto answer = http::request(socket_path, "GET", "/v1/version", {}, "application/json",
                                    std::chrono::seconds(5));
        if (answer.ok() && answer->status == 200) sd_notify_state("WATCHDOG=1");
    });
    log_line(std::string("received ") + strsignal(received));
}

void Daemon::stop() {
    log_line("stopping: cancelling running runs and tearing down their guests");
    sd_notify_state("STOPPING=1");
    shutting_down_ = true;
    events_.shutdown();
    server_->stop();
    host_watch_.reset();
    scheduler_->stop();
    log_line("stopped");
}

}  // namespace

int run_daemon(const DaemonConfig& config, const DaemonSeams& seams) {
    const sigset_t stop_signals = block_stop_signals();
    signal(SIGPIPE, SIG_IGN);
    if (Status made = make_daemon_directories(config); !made.ok()) {
        log_line(made.error().message);
        return 1;
    }
    Daemon daemon(config, seams);
    if (!daemon.open_state() || !daemon.add_backends()) return 1;
    daemon.recover();
    daemon.probe_acceleration();
    daemon.start_scheduler();
    daemon.resume_sweeps();
    if (!daemon.serve()) return 1;
    daemon.announce_ready();
    daemon.wait_for_stop_signal(stop_signals);
    daemon.stop();
    return 0;
}

int daemon_main(int argc, char** argv, const DaemonSeams& seams) {
    auto parsed = parse_daemon_command_line(argc, argv);
    if (!parsed.ok()) {
        std::cerr << parsed.error().message << "\n";
        return 2;
    }
    if (parsed->exit_now) {
        std::cout << parsed->output;
        return parsed->exit_code;
    }
    return run_daemon(parsed->config, seams);
}

}  // namespace ds
