// Backends, as data. Two tables: the backend kinds this build knows (a
// hypervisor or a storage kind, with its options and what disk sources it
// produces or attaches) and, per daemon, the backends configured from them.
// A sweep is checked against what is configured before it is accepted, and
// each run looks its storage up here by name, so a result can never claim a
// backend that did not run it.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/process.h"
#include "common/result.h"
#include "common/settings.h"
#include "daemon/backends/hypervisor/hypervisor.h"
#include "daemon/backends/hypervisor/libvirt/domain_xml.h"
#include "daemon/backends/storage/storage.h"

namespace ds {

// One `storage = ...` or `host = ...` line of the daemon config, split:
// "rbd:rbd,mon_host=127.0.0.1:6789,id=disksweep" -> kind "rbd", pool "rbd",
// options {mon_host: ..., id: ...}. `name` is "KIND" or "KIND:POOL", the
// name a sweep spec uses for a storage. A host line's "pool" is the host's
// name: "libvirt:node2,uri=qemu+ssh://node2/system".
struct BackendLine {
    std::string kind;
    std::string pool;
    std::map<std::string, std::string> options;
    std::string name() const { return pool.empty() ? kind : kind + ":" + pool; }
};
using StorageLine = BackendLine;
// Errors name the line's words (never an option's value).
Result<StorageLine> parse_storage_line(std::string_view text);
// A host line: KIND:NAME[,KEY=VALUE...]; the name is required.
Result<BackendLine> parse_host_line(std::string_view text);

// What a storage factory may use besides its own line.
struct StorageContext {
    std::string default_file_directory;  // <state_dir>/volumes
    // How backends run their tools (qemu-img, lvs, rbd); without it, a
    // backend that needs one is refused when it is made (file: at a qcow2
    // volume).
    std::shared_ptr<ProcessRunner> process_runner{};
};

struct BackendOptionDef {
    std::string_view key;
    bool required;
    std::string_view help;
};
using StorageOptionDef = BackendOptionDef;

struct StorageKindDef {
    std::string_view kind;         // "file", "block", "lvm-thin", "rbd"
    std::string_view pool_syntax;  // "" (no pool), "DEVICE", "VG/POOL", "POOL"
    bool pool_required;
    DiskSourceKind produces;
    std::vector<StorageOptionDef> options;
    std::string_view help;
    // How StorageBackend::allocated_bytes measures a volume (what a discard
    // frees), "" when it cannot: docs/spec.md's Storages table says it.
    std::string_view allocation;
    // How StorageBackend::clone_volume makes a run's volume of a golden one
    // (spec `dataset = "golden"`), "" when it cannot: the spec parser refuses
    // golden datasets on such a storage, docs/spec.md's Storages table says it.
    std::string_view golden_clone;
    // How a durability run (docs/durability.md) keeps the volume as it was
    // before the run, which every crash image starts from; "" when it cannot
    // (the spec parser refuses `durability` on such a storage).
    std::string_view pre_run_copy;
    std::function<Result<std::unique_ptr<StorageBackend>>(const StorageLine&,
                                                          const StorageContext&)>
        make;
};
// The storage kinds built into this disksweepd (one static library each).
std::span<const StorageKindDef> storage_kinds();
const StorageKindDef* find_storage_kind(std::string_view kind);
// The storage kinds' names, in table order: what a spec's storage.backend
// may name (the daemon still refuses one it has not configured).
std::vector<std::string_view> storage_kind_names();
// Checks the line against its kind's table (pool, option keys, required
// options) and builds the backend.
Result<std::unique_ptr<StorageBackend>> make_storage_backend(const StorageLine& line,
                                                             const StorageContext& context);

// What a hypervisor factory may use besides its own host line.
struct HostContext {
    std::string embedded_root;  // the default libvirt URI's root, <state_dir>/libvirt
    std::string run_dir;        // <state_dir>/runs: guests' sockets and console logs
    // The daemon's ResourceNames::prefix(): what a host keeps of the daemon's
    // beyond a run (a remote host's guest image volumes) is named from it.
    std::string resource_prefix = {};
    // The fault-injection seam of libvirt hosts (DaemonSeams): empty but in
    // test binaries.
    DomainXmlFilter domain_xml_filter{};
};

// What a host line gives its host besides the hypervisor (from
// HypervisorKindDef::host_storages).
struct HostStorages {
    // Storages of the host's own, standing for the spec's storage of their
    // name there (Host::own_storages).
    std::vector<std::unique_ptr<StorageBackend>> own;
    // Storage kinds the host cannot reach, whatever its `storages=` says,
    // and why (a remote libvirt host: block, lvm-thin).
    std::vector<std::string> unreached_kinds;
    std::string unreached_reason;
    // The host is another machine (a remote libvirt URI).
    bool remote = false;
};

struct HypervisorKindDef {
    std::string_view name;                 // "libvirt"
    std::vector<DiskSourceKind> attaches;  // the disk sources it can attach
    std::string_view help;
    // Whether its guests boot the project's guest image from the image
    // directory (libvirt); Proxmox clones its own template, host baselines
    // boot nothing.
    bool boots_project_image = false;
    // The keys of its host lines besides the ones every host has
    // (host_option_defs()); empty with `make` for kinds no line configures.
    std::vector<BackendOptionDef> options;
    std::function<Result<std::unique_ptr<Hypervisor>>(const BackendLine&, const HostContext&)> make;
    // For a line that stands for several hosts (a Proxmox cluster's nodes):
    // the lines of those hosts, each named NAME/MEMBER, given to `make` one
    // by one. Empty: the line is one host.
    std::function<Result<std::vector<BackendLine>>(const BackendLine&)> expand{};
    // Why its guests' data disks cannot be logged for a durability run
    // (docs/durability.md); "" when they can. The spec parser refuses
    // `durability` on a hypervisor with a reason.
    std::string_view no_write_log{};
    // The host's own storages and unreachable storage kinds, from its line
    // and its connected hypervisor (made by `make`); unset: none. An Error
    // refuses the host at start.
    std::function<Result<HostStorages>(const BackendLine&, Hypervisor&, const HostContext&)>
        host_storages{};
};
std::span<const HypervisorKindDef> hypervisor_kinds();
const HypervisorKindDef* find_hypervisor_kind(std::string_view name);
// What a spec's [hypervisor] backend may name, in table order: every kind
// but the host baselines' pseudo-hypervisor (a spec asks for those with
// host_baseline, not as its backend).
std::vector<std::string_view> spec_hypervisor_names();
// The keys every host line has: parallel, storages.
std::span<const BackendOptionDef> host_option_defs();
// Checks the line against its kind's table (known kind, option keys,
// required options) and connects. The host's own keys (host_option_defs)
// are not passed on to the kind's factory.
Result<std::unique_ptr<Hypervisor>> make_host_hypervisor(const BackendLine& line,
                                                         const HostContext& context);

// A host as the catalog checks sweeps against it: its name, its
// hypervisor kind, and the storages it reaches (empty = every storage whose
// disks its kind attaches).
struct HostDescription {
    std::string name;  // "local", "node2", "pve/pve1"
    std::string kind;  // a hypervisor kind: "libvirt", "proxmox", "host"
    std::string detail;
    std::vector<std::string> storages{};
    // The name of the config line it came from when that line stands for
    // several hosts ("pve" for "pve/pve1"); "" otherwise.
    std::string group{};
    // Storage kinds it never reaches (HostStorages::unreached_kinds).
    std::vector<std::string> unreached_kinds{};
    // Another machine: its files are not this one's (HostStorages::remote).
    bool remote = false;
    bool reaches(const std::string& storage) const;
    // Whether a sweep's [hypervisor] hosts entry selects it: its name, or
    // its group (all the hosts of that line).
    bool selected_by(const std::string& pin) const;
    // Whether a run of `config` may go here: a host of its hypervisor kind
    // that reaches its storage, selected by one of `pinned` when any.
    bool takes(const StorageConfig& config, const std::vector<std::string>& pinned) const;
};

// What one daemon has configured: its hosts and its storages (by spec
// name). Owns the storage backends.
class BackendCatalog {
  public:
    // A host named like its kind that reaches every storage (tests, and the
    // host baselines' pseudo-hypervisor).
    void add_hypervisor(std::string kind, std::string detail);
    Status add_host(HostDescription host);
    Status add_storage(std::unique_ptr<StorageBackend> storage);

    // The storage a configuration names, or an Error that names it and lists
    // what is configured.
    Result<StorageBackend*> storage_for(const StorageConfig& config) const;
    // Whether `config` can run on this daemon: a host of its hypervisor kind
    // (one of `pinned` when not empty) reaches its storage, and the kind
    // attaches what the storage produces.
    Status check(const StorageConfig& config, const std::vector<std::string>& pinned = {}) const;
    std::vector<StorageBackend*> storages() const;
    const std::vector<HostDescription>& hosts() const { return hosts_; }
    // {"hypervisors":[{"name","detail","attaches"}],"hosts":[{"name","kind",
    //  "detail","storages"}],"storages":[{"name","produces"}]}
    Json to_json() const;

  private:
    std::string configured_storage_names() const;
    Status check_hosts(const StorageConfig& config, const std::vector<std::string>& pinned) const;
    std::vector<HostDescription> hosts_;
    std::map<std::string, std::unique_ptr<StorageBackend>> storages_;
};

// "rbd:mypool" for a configuration (its storage and pool).
std::string storage_name(const StorageConfig& config);

}  // namespace ds
