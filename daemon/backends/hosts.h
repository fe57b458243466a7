// The hosts runs are placed on (issue "placement across hosts"): each a
// hypervisor connection with its own parallelism, acceleration and
// storages. The daemon's own libvirt connection is the host "local"; more
// come from `host = KIND:NAME,...` lines of the config (registry.h).
//
// A run leases a slot of one host for its whole life (boot to teardown):
// a host of the configuration's hypervisor kind that reaches its storage,
// among the sweep's pinned hosts when it names any, the least busy first
// (ties in configuration order). A host at its `parallel` runs makes the
// next run wait for a slot. HostPool adds whole rounds per host and the
// backoff of a failing host.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "common/settings.h"
#include "daemon/backends/hypervisor/hypervisor.h"
#include "daemon/backends/registry.h"

namespace ds {

// The name of the daemon's own libvirt connection (hypervisor-uri).
inline constexpr std::string_view kLocalHostName = "local";

struct Host {
    HostDescription description;
    std::unique_ptr<Hypervisor> hypervisor;
    int parallel = 1;
    Accel accel = Accel::kTcg;
    std::string accel_reason;
    // A libvirt host's accel is its probe's decision, and each run's guest
    // must run with it: a run whose QEMU reports another fails its
    // verification. Another kind's VMs run as their own config says (each
    // run records what its VM ran): not enforced.
    bool accel_enforced = false;
    // Storages the host has of its own, by the spec's name: a remote libvirt
    // host's pool stands for `file` there (its volumes are not this
    // machine's files). Declared after `hypervisor`: destroyed first.
    std::vector<std::unique_ptr<StorageBackend>> own_storages;
    // The own storage named `name` (StorageBackend::name), or null.
    StorageBackend* own_storage(const std::string& name) const;
};

// A `host = KIND:NAME,KEY=VALUE...` line of the config, connected: the
// kind's factory (registry.h) makes the hypervisor; the keys every host has
// set `parallel` (1..64, default 1, per host) and the storages it reaches
// (`storages=NAME|NAME`). A line the kind expands (a Proxmox cluster's
// `nodes=`) gives one host per member, named NAME/MEMBER, grouped as NAME.
// Acceleration is left to the caller. Errors name the host and the key.
Result<std::vector<std::unique_ptr<Host>>> make_configured_hosts(std::string_view line_text,
                                                                 const HostContext& context);

// The daemon's own host, "local": a libvirt connection to `hypervisor_uri`
// (the daemon's hypervisor-uri, the embedded driver's URI by default), made
// by the libvirt kind's factory like any configured libvirt host, that
// reaches every storage its kind attaches and runs `parallel` runs at once
// (the daemon's max-parallel-runs).
Result<std::unique_ptr<Host>> make_local_host(const std::string& hypervisor_uri, int parallel,
                                              const HostContext& context);

// What a sweep says of where its runs go (its spec's [hypervisor] table).
struct SweepPlacement {
    std::vector<std::string> hosts;  // pinned hosts; empty = any eligible host
    // The user vouches the hosts are alike: runs record the host, but
    // comparisons pool them (versions.partition_host, docs/schema.md).
    bool identical_hosts = false;
};

class HostPool;

// What placement knows of a run: where it may go (its configuration's
// hypervisor kind and storage, the sweep's pinned hosts) and the round it
// belongs to. sweep_id 0 (a hello probe) is in no round.
struct PlacementRequest {
    StorageConfig config;
    std::vector<std::string> pinned;
    std::int64_t sweep_id = 0;
    int repetition = 0;
    // A slot HostPool::hold kept for this run is the run's; 0: none.
    std::int64_t run_id = 0;
    // The run reads and writes files of its guest's disks on this machine (a
    // durability run's write log and crash images): only hosts whose files
    // are this machine's take it (HostDescription::remote).
    bool needs_local_files = false;
};

// How a run went as its host's health sees it (HostLease::report).
enum class HostVerdict {
    kWorked,    // the host ran the run (it may still have failed): resets the count
    kFault,     // the host failed the run: counts toward its backoff
    kUnjudged,  // cancelled or interrupted: says nothing of the host
};

// One slot of one host, held by a run; released when destroyed.
class HostLease {
  public:
    HostLease(HostPool* pool, Host* host) : pool_(pool), host_(host) {}
    HostLease(HostLease&& other) noexcept
        : pool_(std::exchange(other.pool_, nullptr)), host_(other.host_) {}
    HostLease& operator=(HostLease&&) = delete;
    ~HostLease();
    Host& host() const { return *host_; }
    // How the run went, told before the lease is released (HostPool's
    // backoff); `reason` names a fault in `hostctl status`.
    void report(HostVerdict verdict, const std::string& reason = "");

  private:
    HostPool* pool_;
    Host* host_;
};

// Places runs on hosts (see the file comment for who is eligible), with two
// rules on top of "the least busy first":
//
// Whole rounds: a round's key is (sweep, repetition, storage, hypervisor
// kind). Its first run picks the least busy eligible host (ties in
// configuration order) and the key keeps it: the round's other runs wait for
// that host's slot, so each host's comparison stays paired by round. A key
// whose host is backed off is placed again (the round then splits).
//
// Backoff: a host whose runs fail by its own fault (HostVerdict::kFault)
// kBackoffAfterFaults times in a row is backed off for kFirstBackoff, twice
// as long for each further fault, up to kMaxBackoff; a run it ran
// (kWorked) ends that. A backed-off host takes no run while another
// eligible host is not backed off; when every eligible host is, the run
// waits for the first backoff to end.
class HostPool {
  public:
    static constexpr int kBackoffAfterFaults = 2;
    static constexpr std::chrono::seconds kFirstBackoff{30};
    static constexpr std::chrono::seconds kMaxBackoff{600};

    // `clock` times the backoffs.
    explicit HostPool(const Clock& clock = real_clock()) : clock_(clock) {}

    // Before the first run: where each backoff is announced (the daemon's log).
    void log_backoffs(std::function<void(const std::string&)> log);
    // Hosts keep their order; names are unique (the catalog checks).
    void add(std::unique_ptr<Host> host);

    // Waits for a slot (see above). errc::kCancelled as soon as `cancelled`
    // is set; errc::kNotConfigured at once when no host could ever take the
    // run (the catalog refuses such sweeps before they run).
    Result<HostLease> acquire(const PlacementRequest& request, const std::atomic<bool>& cancelled);
    // The same for a run in no round.
    Result<HostLease> acquire(const StorageConfig& config, const std::vector<std::string>& pinned,
                              const std::atomic<bool>& cancelled);

    // Whether the run can start now: then its slot is kept for it (the
    // run's acquire takes it) until release_hold. True also for a run no
    // host could ever take (its acquire fails at once).
    bool hold(const PlacementRequest& request);
    // Frees a slot hold() kept that the run did not take; else nothing.
    void release_hold(std::int64_t run_id);
    // The sweep has finished: its rounds' hosts are forgotten.
    void forget_sweep(std::int64_t sweep_id);

    std::vector<Host*> hosts() const;
    // The runs all hosts take at the same time.
    int total_parallel() const;
    // {"busy","parallel","consecutive_failures","backed_off_until" (UTC, or
    // null when not backed off),"last_failure" (or null)}.
    Json placement_status(const Host& host) const;

  private:
    friend class HostLease;
    struct HostState {
        int busy = 0;  // runs holding (or held) a slot
        int consecutive_faults = 0;
        std::optional<Clock::time_point> backed_off_until;
        std::string last_failure;
    };
    using RoundKey = std::tuple<std::int64_t, int, std::string, std::string>;

    void release(Host* host);
    void record(Host* host, HostVerdict verdict, const std::string& reason);
    std::size_t index_of(const Host* host) const;
    bool backed_off(std::size_t index, Clock::time_point now) const;
    bool has_free_slot(std::size_t index) const;
    // With the lock held: the host the run takes now (its round then keeps
    // it), nullopt when it must wait; kNotConfigured when none ever could.
    Result<std::optional<std::size_t>> choose_locked(const PlacementRequest& request);

    const Clock& clock_;
    std::function<void(const std::string&)> log_;
    std::vector<std::unique_ptr<Host>> hosts_;
    std::vector<HostState> states_;  // index as hosts_
    std::map<RoundKey, std::size_t> rounds_;
    std::map<std::int64_t, std::size_t> held_;  // run id -> the host hold() kept
    mutable std::mutex mutex_;
    std::condition_variable slot_freed_;
};

}  // namespace ds
