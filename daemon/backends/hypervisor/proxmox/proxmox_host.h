// A Proxmox VE host as disksweepd's config names it: one `host =
// proxmox:NAME,KEY=VALUE,...` line becomes a PveClient and a
// ProxmoxHypervisor, and each `storage = pve:STORAGE` line a PveStorage.
//
// The keys of a host line are the client's (pve_option_keys(): host, port,
// token, token_file, ca_file, fingerprint, timeouts) and the hypervisor's
// (proxmox_hypervisor_option_keys(): node, run_node, template_vmid, vmid_min,
// vmid_max, linked_clone, clone_storage, template_per_node, agent_program).
// Errors name the key, never its value.
#pragma once

#include <map>
#include <memory>
#include <span>
#include <string>

#include "common/result.h"
#include "daemon/backends/hypervisor/proxmox/proxmox_hypervisor.h"
#include "daemon/backends/hypervisor/proxmox/pve_client.h"
#include "daemon/backends/storage/storage.h"

namespace ds {

std::span<const PveOptionKey> proxmox_hypervisor_option_keys();

// A host line's `nodes` key: the cluster nodes its runs go to, one daemon
// host per node (the registry expands the line; each member gets run_node).
inline constexpr std::string_view kProxmoxNodesKey = "nodes";
inline constexpr std::string_view kProxmoxNodesHelp =
    "the cluster nodes runs go to, one host each named NAME/NODE: `auto` (the online nodes of "
    "/cluster/resources) or NODE|NODE; default: node only";

// The nodes `nodes=` names: for `auto` the online nodes PVE lists in
// /cluster/resources (sorted; contacts PVE with the line's client keys),
// else the listed ones. Empty when the line has no `nodes`. Errors name the
// key: an invalid node name, no node, `nodes` together with run_node, or
// PVE's error.
//
// When a node other than the template's, without a template of its own
// (template_per_node), is among them, its runs are clones to another node,
// which PVE refuses unless every volume of the template is on shared
// storage (and a full clone's clone_storage is shared): that is checked here,
// from /cluster/resources (type storage) and the template's config, and a
// line that cannot work is refused with what to change.
Result<std::vector<std::string>> proxmox_host_nodes(
    const std::map<std::string, std::string>& options);

// The hypervisor's keys of `options` (others are ignored), checked with
// check_proxmox_options. Errors name the key. A run node that
// template_per_node gives a template of its own gets that template, on that
// node (node = the run node, template_vmid = its template).
Result<ProxmoxHypervisorOptions> proxmox_hypervisor_options(
    const std::map<std::string, std::string>& options);

// A host line's options, split between the client and the hypervisor; a key
// of neither is refused, listing both tables. Reads the token file (mode
// 0600 or stricter) but does not contact PVE.
Result<std::unique_ptr<ProxmoxHypervisor>> make_proxmox_hypervisor(
    const std::map<std::string, std::string>& options);

// `storage = pve:STORAGE`: a PVE storage id (local-lvm, an RBD or directory
// storage). PVE allocates the disk itself when the VM gets it
// (STORAGE:SIZE_GIB), and deletes it with the VM (purge): create_volume only
// names it, remove_volume and list_volumes have nothing to do.
class PveStorage : public StorageBackend {
  public:
    explicit PveStorage(std::string storage) : storage_(std::move(storage)) {}
    std::string name() const override { return "pve:" + storage_; }
    DiskSourceKind produces() const override { return DiskSourceKind::kHypervisorAllocated; }
    Result<Volume> create_volume(const std::string& name, const StorageConfig& config) override {
        return Volume{name, HypervisorAllocatedDisk{storage_, config.disk_size_bytes}};
    }
    Status remove_volume(const std::string&) override { return ok_status(); }
    Result<std::vector<std::string>> list_volumes(const std::string&) override {
        return std::vector<std::string>{};
    }

  private:
    std::string storage_;
};

}  // namespace ds
