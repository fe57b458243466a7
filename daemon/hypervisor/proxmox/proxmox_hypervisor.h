// The Proxmox VE hypervisor backend, over the REST client (pve_client.h).
//
// A run's guest is a clone of a template VM (docs/proxmox.md, "Guest
// template"): cloned to the run node (the template's unless run_node says
// another; one ProxmoxHypervisor per cluster node a host line expands to,
// see proxmox_host.h) to a VM id inside
// [vmid_min, vmid_max], named as the run asks (the daemon's prefix) and
// tagged kProxmoxTag; then its data disk is added as scsi1 / virtio1 / sata1
// = STORAGE:SIZE_GIB with the configuration's settings (pve_data_disk), and it
// starts. The agent runs in one-shot mode through the QEMU guest agent
// (open_agent_channel). destroy_vm stops and purges it.
//
// It touches only VMs that carry both the run's name and the tag, and ids in
// its range: a VM of anyone else, even one named with the prefix, is left
// alone (list_vms, destroy_vm).
//
// Not available through PVE's API to a token, so reported as nothing: the
// guest's serial console (console_tail "" / console_location ""), the QEMU
// block counters (disk_counters: errc::kUnsupported).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/settings.h"
#include "daemon/hypervisor/hypervisor.h"
#include "daemon/hypervisor/proxmox/pve_client.h"
#include "daemon/hypervisor/proxmox/pve_encoding.h"

namespace ds {

// The tag on every VM disksweep creates (with the name prefix, what cleanup
// looks for).
inline constexpr std::string_view kProxmoxTag = "disksweep";

struct ProxmoxHypervisorOptions {
    std::string node;       // the template's node
    int template_vmid = 0;  // the guest template (on `node`)
    // Where runs' VMs are cloned to and run ("" = node): another node of the
    // cluster is PVE's clone `target`, which PVE allows only when the
    // template's disks are on shared storage (or for full clones).
    std::string run_node;
    bool linked_clone = true;
    std::string clone_storage;  // full clones only: where their disks go ("" = as the template)
    int vmid_min = 0;           // the VM ids disksweep may use, inclusive
    int vmid_max = 0;
    // In the guest: the agent (one-shot mode), its job and its output file.
    std::string agent_program = "/usr/local/bin/disksweep-agent";
    std::string guest_job_file = "/run/disksweep-job.json";
    std::string guest_output_file = "/run/disksweep-agent.jsonl";
    std::chrono::milliseconds task_timeout{std::chrono::minutes(10)};
    std::chrono::milliseconds agent_poll_interval{500};
};

// Checks the options: a node, a template id and a range within PVE's
// 100..999999999 that does not hold the template. errc::kInvalidArgument.
Status check_proxmox_options(const ProxmoxHypervisorOptions& options);

// The data disk as PVE's VM config spells it.
struct PveDataDisk {
    std::string key;                    // "scsi1", "virtio1", "sata1"
    PvePropertyString drive;            // STORAGE:SIZE_GIB,cache=...,serial=disksweep-data
    std::optional<std::string> scsihw;  // the controller the bus needs, if any
};

// The data disk of `config` on `disk`, every StorageConfig field PVE supports
// mapped (see the table in proxmox_hypervisor.cpp and docs/proxmox.md); what
// PVE cannot express is refused with errc::kUnsupported naming the field:
// ssd on virtio-blk, iothread on sata or on a shared scsi controller, queues
// except on scsi (and there at least 2), detect_zeroes=on with discard and
// unmap without it (PVE derives the mode from both), a size that is not a
// whole number of MiB.
Result<PveDataDisk> pve_data_disk(const StorageConfig& config, const HypervisorAllocatedDisk& disk);

class ProxmoxHypervisor : public Hypervisor {
  public:
    // Checks the options (check_proxmox_options); does not contact PVE.
    static Result<std::unique_ptr<ProxmoxHypervisor>> create(std::shared_ptr<PveClient> client,
                                                             ProxmoxHypervisorOptions options);

    std::string name() const override { return "proxmox"; }
    // Clones, configures (tag, controller, data disk, cores, memory) and
    // starts the VM; the data disk must be HypervisorAllocatedDisk
    // (errc::kInvalidArgument otherwise). On failure the clone is destroyed
    // again. errc::kConflict when a tagged VM of that name exists already,
    // errc::kUnavailable when the range has no free id.
    Status start_vm(const VmRequest& request) override;
    // From GET .../config: {"bus", "cache", "aio", "discard", "detect_zeroes",
    // "ssd", "iothread", "image_format" where PVE's config says,
    // "pve": {"drive": "scsi1", "value": the drive's property string,
    // "options": its keys, "scsihw": ...}}; and QEMU's own view from `info
    // block` through PVE's monitor endpoint, "qemu_info_block" (see
    // parse_info_block), with "qemu_check" saying whether it was read and
    // why not (a token without VM.Monitor). errc::kNotFound if no such VM.
    Result<Json> applied_settings(const std::string& vm_name) override;
    Result<bool> is_running(const std::string& vm_name) override;
    // Waits for agent/ping until the deadline, creates the empty output
    // file, starts the agent in one-shot mode (agent/exec, no shell) and
    // returns the channel to it (see PveAgentChannel in the .cpp): the first
    // write delivers the job with agent/file-write, reads come from the output
    // file through agent/file-read; the agent's end is read once from
    // agent/exec-status.
    Result<std::unique_ptr<AgentChannel>> open_agent_channel(
        const std::string& vm_name, Deadline deadline, const std::atomic<bool>* cancelled) override;
    // PVE gives a token no console: "" (and nothing to discard).
    std::string console_tail(const std::string& vm_name, std::size_t max_bytes) override;
    std::string console_location(const std::string& vm_name) override;
    void discard_console(const std::string& vm_name) override;
    // Stops the VM (hard) if it runs, then deletes it with purge=1 and
    // destroy-unreferenced-disks=1. Succeeds when no tagged VM has that name.
    Status destroy_vm(const std::string& vm_name) override;
    // Sorted names of the VMs of /cluster/resources whose name starts with
    // prefix, that carry kProxmoxTag and whose id is in the range.
    Result<std::vector<std::string>> list_vms(const std::string& prefix) override;
    // {"proxmox": "8.4.1", "proxmox_release": "8.4", "proxmox_repoid": ...}
    // from GET /version; {"proxmox": "unknown: REASON"} when it fails.
    Json versions() override;

    const ProxmoxHypervisorOptions& options() const { return options_; }
    // The node runs' VMs go to: run_node, else node.
    const std::string& run_node() const;

  private:
    struct VmRef {
        int vmid = 0;
        std::string node;
    };
    ProxmoxHypervisor(std::shared_ptr<PveClient> client, ProxmoxHypervisorOptions options);
    // The tagged VM of that name in the range, from /cluster/resources;
    // nullopt when there is none.
    Result<std::optional<VmRef>> find_vm(const std::string& vm_name);
    Result<VmRef> require_vm(const std::string& vm_name);
    Result<int> allocate_vmid();
    Status clone_and_start(const VmRequest& request, const PveDataDisk& disk, const VmRef& vm);
    void add_qemu_level(const VmRef& vm, std::string_view drive_key, Json& applied);
    std::string vm_path(const VmRef& vm, std::string_view tail = "") const;
    Result<PveTaskEnd> task(PveMethod method, const std::string& path, const PveParams& params);

    std::shared_ptr<PveClient> client_;
    ProxmoxHypervisorOptions options_;
};

}  // namespace ds
