// The Proxmox VE hypervisor backend, over the REST client (pve_client.h).
//
// A run's guest is a clone of a template VM (docs/proxmox.md, "Guest
// template"): cloned to the run node (the template's unless run_node says
// another; one ProxmoxHypervisor per cluster node a host line expands to,
// see proxmox_host.h) to a VM id inside
// [vmid_min, vmid_max], named as the run asks (the daemon's prefix) and
// tagged kProxmoxTag; then its data disk is added as scsi1 / virtio1 / sata1
// = STORAGE:SIZE_GIB with the configuration's settings (pve_data_disk.h), and
// it starts. The agent runs in one-shot mode through the QEMU guest agent
// (open_agent_channel). destroy_vm stops and purges it.
//
// It touches only VMs that carry both the run's name and the tag, and ids in
// its range: a VM of anyone else, even one named with the prefix, is left
// alone (list_vms, destroy_vm). The one exception is the id a run recorded
// before its clone (VmRequest::record_handle, {"vmid": N, "node": NODE}):
// destroy_recorded_vm destroys the VM there, tagged or not, when it bears
// the run's name (the clone names it), so a clone whose configuration failed
// does not leak.
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
#include "daemon/backends/hypervisor/hypervisor.h"
#include "daemon/backends/hypervisor/proxmox/pve_agent_channel.h"
#include "daemon/backends/hypervisor/proxmox/pve_client.h"
#include "daemon/backends/hypervisor/proxmox/pve_data_disk.h"
#include "daemon/backends/hypervisor/proxmox/pve_encoding.h"
#include "daemon/backends/hypervisor/proxmox/pve_version.h"

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
    // In the guest: the agent (one-shot mode), its job, its progress file
    // (replaced whole at each message) and its result file (read once).
    std::string agent_program = "/usr/local/bin/disksweep-agent";
    std::string guest_job_file = "/run/disksweep-job.json";
    std::string guest_progress_file = "/run/disksweep-progress.jsonl";
    std::string guest_result_file = "/run/disksweep-result.jsonl";
    std::chrono::milliseconds task_timeout{std::chrono::minutes(10)};
    std::chrono::milliseconds agent_poll_interval{500};
};

// Checks the options: a node, a template id and a range within PVE's
// 100..999999999 that does not hold the template. errc::kInvalidArgument.
Status check_proxmox_options(const ProxmoxHypervisorOptions& options);

// A template's volumes, drive key -> volume id (qemu-server Drive.pm,
// valid_drive_names: ideN, scsiN, virtioN, sataN, efidisk0, tpmstate0;
// unusedN are not cloned), without "none" and "cdrom".
std::vector<std::pair<std::string, std::string>> pve_template_volumes(const Json& config);
// The bridges of a config's NICs (netN's `bridge=`), sorted, once each.
std::vector<std::string> pve_template_bridges(const Json& config);
// "local-lvm" of "local-lvm:vm-100-disk-0"; "" for a path or a bare name.
std::string pve_storage_of(const std::string& volume);

class ProxmoxHypervisor : public Hypervisor {
  public:
    // Checks the options (check_proxmox_options); does not contact PVE.
    static Result<std::unique_ptr<ProxmoxHypervisor>> create(std::shared_ptr<PveClient> client,
                                                             ProxmoxHypervisorOptions options);

    std::string name() const override { return "proxmox"; }
    // Allocates an id, gives request.record_handle {"vmid": N, "node": NODE}
    // (before anything is created: its Error fails the start), clones
    // (named as the request), configures (tag, controller, data disk, cores,
    // memory) and starts the VM; the data disk must be
    // HypervisorAllocatedDisk (errc::kInvalidArgument otherwise). On failure
    // the clone is destroyed again by its id (destroy_recorded_vm's rule).
    // errc::kConflict when a tagged VM of that name exists already,
    // errc::kUnavailable when the range has no free id.
    Status start_vm(const VmRequest& request) override;
    // From GET .../config: {"bus", "cache", "aio", "discard", "detect_zeroes",
    // "ssd", "iothread", "iops_limit" (iops=), "bandwidth_limit" (mbps=, MiB/s,
    // as qemu-server gives it to QEMU: int(mbps * 1024 * 1024)), "queues"
    // (queues=), the last three only when set, "pve": {"drive": "scsi1",
    // "value": the drive's property string, "options": its keys, "scsihw":
    // ...}}; "image_format" from what PVE says of the volume, since its config
    // names no format for a disk it allocated (volume_format), with
    // "sources": {"image_format": where}; QEMU's own view from `info block`
    // (and on PVE 9 `info block -n`) through PVE's monitor endpoint,
    // "qemu_info_block" (parse_qemu_drive_view); and "levels": {"domain_xml":
    // the config, "qemu_info_block": {"checked", "source" | "reason",
    // "forbidden"}} (a token the preflight found without the monitor
    // privilege is not sent there). errc::kNotFound if no such VM.
    Result<Json> applied_settings(const std::string& vm_name) override;
    Result<bool> is_running(const std::string& vm_name) override;
    // The one-shot agent through the QEMU guest agent (open_pve_agent_channel).
    Result<std::unique_ptr<AgentChannel>> open_agent_channel(
        const std::string& vm_name, Deadline deadline, const std::atomic<bool>* cancelled) override;
    // PVE gives a token no console: "" (and nothing to discard).
    std::string console_tail(const std::string& vm_name, std::size_t max_bytes) override;
    std::string console_location(const std::string& vm_name) override;
    void discard_console(const std::string& vm_name) override;
    // Its config's `kvm` (qemu-server's default 1) and QEMU's own answer to
    // `info kvm` through the monitor ("kvm support: enabled"), QEMU's
    // winning; where QEMU cannot be asked (no VM.Monitor), the config's. The
    // versions: {"qemu": running-qemu, "qemu_machine": running-machine} of
    // status/current.
    Result<RunningGuest> running_guest(const std::string& vm_name, Accel requested) override;
    // Stops the VM (hard) if it runs, then deletes it with purge=1 and
    // destroy-unreferenced-disks=1. Succeeds when no tagged VM has that name.
    Status destroy_vm(const std::string& vm_name) override;
    // The VM at the handle's id (which must be in the range,
    // errc::kInvalidArgument otherwise), tagged or not, when its name is
    // vm_name. A clone still under way there (qemu-server's `lock: clone`,
    // its config not yet named) is waited for, up to task_timeout: it ends
    // named ours or removed. A VM there of another name is left alone, and
    // that succeeds, as does an id without a VM.
    Status destroy_recorded_vm(const std::string& vm_name, const Json& handle) override;
    // Sorted names of the VMs of /cluster/resources whose name starts with
    // prefix, that carry kProxmoxTag and whose id is in the range.
    Result<std::vector<std::string>> list_vms(const std::string& prefix) override;
    // {"proxmox": "8.4.1", "proxmox_release": "8.4", "proxmox_repoid": ...,
    // "proxmox_rules": "8.4" | "9.x" (the row of pve_version.h that applies)}
    // from GET /version; {"proxmox": "unknown: REASON"} when it fails.
    Json versions() override;
    // {"state": "connected", "proxmox": VERSION, "rules": "9.x", "monitor":
    // "allowed" | "not allowed: REASON"} once the preflight has run;
    // {"state": "unreachable", "error": ...} when PVE does not answer it.
    Json reachability() override;

    // The preflight (pve_version.h): the release's rules and the token's
    // privileges on every path a sweep touches: the template, both ends of
    // the id range, `storages` (with the template's own and clone_storage)
    // and the bridges of the template's NICs. Refuses (errc::kUnsupported)
    // an unsupported release and (errc::kForbidden) a token that lacks a
    // required privilege, with what is missing and the pveum lines that
    // grant it. PVE unreachable: errc::kUnavailable, and the preflight runs
    // again before the first run (start_vm). A privilege that only a
    // verification level needs (the monitor) is remembered: that level is
    // then reported as not checked, forbidden, without asking PVE.
    Status check_access(const std::vector<std::string>& storages);
    // The preflight again, now: its findings as JSON for `hostctl hosts
    // check` ({"proxmox", "rules", "ready", "missing": [{path, privileges,
    // need, used_by}], "monitor", "report": the text check_access refuses
    // with}); PVE's error when it cannot be asked.
    Result<Json> check_host() override;

    const ProxmoxHypervisorOptions& options() const { return options_; }
    // The node runs' VMs go to: run_node, else node.
    const std::string& run_node() const;
    PveAgentOptions agent_options() const;

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
    // The VM with that id, from /cluster/resources; null when there is none.
    Result<Json> resource_of(int vmid);
    // destroy_recorded_vm's rule for the VM at vm.vmid.
    Status destroy_if_named(const VmRef& vm, const std::string& vm_name);
    Status stop_and_delete(const VmRef& vm);
    // The format of volume `volid` (STORAGE:NAME) as PVE reports it, and
    // where that was read: the storage's content entry for the volume
    // (pve-storage volume_size_info), else the drive's own format=, else a
    // storage type that holds raw volumes only; nullopt, with why, when
    // none says.
    struct VolumeFormat {
        std::optional<std::string> format;
        std::string source;
    };
    VolumeFormat volume_format(const VmRef& vm, const std::string& volid,
                               const PvePropertyString& drive);
    Status clone_and_start(const VmRequest& request, const PveDataDisk& disk, const VmRef& vm);
    Result<PvePreflight> run_preflight();
    Result<RunningGuest> add_running_versions(const VmRef& vm, RunningGuest guest);
    // The preflight's findings, running it first when it has not run (PVE
    // was unreachable at start); its Error when the token cannot sweep.
    Result<PvePreflight> preflight();
    void add_qemu_level(const VmRef& vm, std::string_view drive_key, Json& applied);
    std::string vm_path(const VmRef& vm, std::string_view tail = "") const;
    Result<PveTaskEnd> task(PveMethod method, const std::string& path, const PveParams& params);

    std::shared_ptr<PveClient> client_;
    ProxmoxHypervisorOptions options_;
    std::mutex preflight_mutex_;
    std::vector<std::string> storages_;      // GUARDED_BY(preflight_mutex_)
    std::optional<PvePreflight> preflight_;  // GUARDED_BY(preflight_mutex_): passed
};

}  // namespace ds
