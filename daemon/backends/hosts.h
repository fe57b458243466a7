// The hosts runs are placed on (issue "placement across hosts"): each a
// hypervisor connection with its own parallelism, acceleration and
// storages. The daemon's own libvirt connection is the host "local"; more
// come from `host = KIND:NAME,...` lines of the config (registry.h).
//
// A run leases a slot of one host for its whole life (boot to teardown):
// a host of the configuration's hypervisor kind that reaches its storage,
// among the sweep's pinned hosts when it names any, the least busy first
// (ties in configuration order). A host at its `parallel` runs makes the
// next run wait for a slot.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

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

// One slot of one host, held by a run; released when destroyed.
class HostLease {
  public:
    HostLease(HostPool* pool, Host* host) : pool_(pool), host_(host) {}
    HostLease(HostLease&& other) noexcept
        : pool_(std::exchange(other.pool_, nullptr)), host_(other.host_) {}
    HostLease& operator=(HostLease&&) = delete;
    ~HostLease();
    Host& host() const { return *host_; }

  private:
    HostPool* pool_;
    Host* host_;
};

class HostPool {
  public:
    // Hosts keep their order; names are unique (the catalog checks).
    void add(std::unique_ptr<Host> host);

    // Waits for a slot (see the file comment). errc::kCancelled as soon as
    // `cancelled` is set; errc::kNotConfigured at once when no host could
    // ever take the run (the catalog refuses such sweeps before they run).
    Result<HostLease> acquire(const StorageConfig& config, const std::vector<std::string>& pinned,
                              const std::atomic<bool>& cancelled);

    std::vector<Host*> hosts() const;
    // The runs all hosts take at the same time.
    int total_parallel() const;

  private:
    friend class HostLease;
    void release(Host* host);
    bool eligible(const Host& host, const StorageConfig& config,
                  const std::vector<std::string>& pinned) const;

    std::vector<std::unique_ptr<Host>> hosts_;
    std::vector<int> busy_;  // runs holding a slot, per host (index as hosts_)
    mutable std::mutex mutex_;
    std::condition_variable slot_freed_;
};

}  // namespace ds
