// The hypervisor seam: define/boot a guest with the requested disk settings,
// read back what is really in force, destroy it. One real implementation per
// backend (libvirt now, proxmox later), chosen by name from a registry; a fake
// for unit tests lives in tests/.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/protocol.h"
#include "common/result.h"
#include "common/settings.h"
#include "daemon/backends/hypervisor/agent_channel.h"
#include "daemon/backends/storage/storage.h"

namespace ds {

enum class Accel { kKvm, kTcg };
std::string_view to_string(Accel);  // "kvm" | "tcg"

// The guest image built by guest/build-image.sh.
struct GuestImage {
    std::string kernel;     // vmlinuz
    std::string initrd;     // initramfs with the agent
    std::string root_disk;  // read-only ext4 root file system image (raw)
    // The build's manifest.json on this machine (daemon/run/image_manifest.h);
    // "" when the image has none. Never staged: only the daemon reads it.
    // Initialized so that {kernel, initrd, root_disk} stays a complete
    // initializer (no -Wmissing-field-initializers).
    std::string manifest = {};
};

// A disk attached besides the data disk: a checker guest's crash images
// (docs/durability.md). Writable, its settings irrelevant (a throwaway
// image: the backend picks whatever is quickest), found in the guest by its
// serial (protocol::disk_serial_problem says which are valid).
struct ExtraDisk {
    DiskSource source;   // a raw file or block device
    std::string serial;  // e.g. protocol::crash_disk_serial(i)
};
// The most extra disks one guest gets: what one checker guest checks.
inline constexpr std::size_t kMaxExtraDisks = protocol::kMaxCheckDisks;

// errc::kInvalidArgument naming the disk when `disks` are more than
// kMaxExtraDisks, or a serial is invalid, repeated, or the root or data
// disk's.
Status check_extra_disks(const std::vector<ExtraDisk>& disks);

struct VmRequest {
    std::string name;      // unique domain name; starts with the daemon's prefix
    StorageConfig config;  // the disk settings to apply to the data disk
    DiskSource data_disk;  // the data disk, typed (Hypervisor::attachable_disks)
    GuestImage image;
    std::string kernel_cmdline_extra;
    Accel accel = Accel::kTcg;
    int vcpus = 1;
    int memory_mib = 1024;
    // Where the guest will be, in the backend's own terms (a JSON object, e.g.
    // Proxmox's {"vmid":5000,"node":"pve1"}): start_vm calls this once it
    // knows, BEFORE it creates anything there, so that a run that fails half
    // way and a daemon that dies both find the guest again
    // (Hypervisor::destroy_recorded_vm). An Error from it makes start_vm fail
    // without creating anything. Unset, or never called by a backend whose
    // names alone find its guests (libvirt): nothing is recorded.
    std::function<Status(const Json& handle)> record_handle;
    // A durability run (docs/durability.md): when set, the data disk sits on
    // QEMU's blklogwrites filter, which logs every write, flush and discard
    // the guest sends to this file (on the hypervisor's host, existing and
    // empty). A backend that cannot log refuses the request.
    std::string write_log_path;
    // Disks attached besides the data disk (ExtraDisk), at most
    // kMaxExtraDisks, each visible in the guest under its serial. A backend
    // that cannot attach them refuses the request (errc::kUnsupported).
    std::vector<ExtraDisk> extra_disks;
};

// What the running guest really is, read from it rather than assumed.
struct RunningGuest {
    Accel accel = Accel::kTcg;  // what its emulator accelerates with
    std::string accel_source;   // where that was read, e.g. "QEMU info kvm"
    // Versions of this guest's own (Proxmox: the QEMU binary it runs),
    // recorded with the run over Hypervisor::versions().
    Json versions = Json::object();
};

class Hypervisor {
  public:
    virtual ~Hypervisor() = default;
    virtual std::string name() const = 0;
    // Defines and starts the guest. On failure nothing is left defined.
    virtual Status start_vm(const VmRequest& request) = 0;
    // The data disk's settings as the hypervisor has them in force (live
    // config), as a JSON object with the same keys as to_json(StorageConfig)
    // where they apply: bus, cache, aio, discard, detect_zeroes, ssd,
    // iothread, image_format.
    virtual Result<Json> applied_settings(const std::string& vm_name) = 0;
    virtual Result<bool> is_running(const std::string& vm_name) = 0;
    // The line transport to a started guest's agent, waiting until `deadline`
    // (a point on the real steady clock: this waits on the world)
    // for it to exist. errc::kTimeout when it does not in time,
    // errc::kCancelled as soon as *cancelled is set (may be null).
    virtual Result<std::unique_ptr<AgentChannel>> open_agent_channel(
        const std::string& vm_name, Deadline deadline, const std::atomic<bool>* cancelled) = 0;
    // The end of the guest's console output, at most `max_bytes`; "" when
    // there is none. Works until discard_console() or the next start of a
    // guest of that name, also after destroy_vm.
    virtual std::string console_tail(const std::string& vm_name, std::size_t max_bytes) = 0;
    // Where the guest's console output stays for reading after the run (a
    // file path for libvirt), recorded with a failed run.
    virtual std::string console_location(const std::string& vm_name) = 0;
    // Drops the console output of a finished guest (a clean run keeps none).
    virtual void discard_console(const std::string& vm_name) = 0;
    // The data disk's I/O counters as the emulator counts them (QEMU's
    // query-blockstats for libvirt): {"rd_bytes", "wr_bytes", "rd_operations",
    // "wr_operations", "flush_operations", ...}. The executor stores their
    // change over the job. errc::kUnsupported where a backend cannot tell.
    virtual Result<Json> disk_counters(const std::string& vm_name) {
        return make_error(errc::kUnsupported,
                          name() + " does not report disk counters for " + vm_name);
    }
    // The CPU time the guest's emulator process has spent so far, by what
    // its threads do (docs/host-cpu.md): {"vcpu_s", "iothread_s",
    // "main_loop_s", "other_s", "total_s", "vcpu_threads", "iothreads"}.
    // Monotonic while the guest runs: the executor stores the change over
    // the job. errc::kUnsupported where the emulator runs on another machine
    // (its /proc is not here) or the backend cannot see its threads
    // (Proxmox's API); the run then has no host CPU figures.
    virtual Result<Json> emulator_cpu_times(const std::string& vm_name) {
        return make_error(errc::kUnsupported,
                          name() + " does not report its emulator's CPU time for " + vm_name);
    }
    // Stops (hard) and removes the guest. Succeeds if it is already gone.
    virtual Status destroy_vm(const std::string& vm_name) = 0;
    // The same for the guest whose handle start_vm gave to
    // VmRequest::record_handle: found by that handle, so also a guest that
    // start_vm left half made (Proxmox: cloned, not yet tagged). Never touches
    // what the handle does not name, nor a guest there that is not vm_name's.
    // Succeeds when there is nothing (left) to destroy. Default: destroy_vm.
    virtual Status destroy_recorded_vm(const std::string& vm_name, const Json& handle) {
        (void)handle;
        return destroy_vm(vm_name);
    }
    // The started guest as it runs: its acceleration and its own versions.
    // Default: `requested`, as asked (libvirt starts the guest with exactly
    // that accelerator or fails), and no versions of its own.
    virtual Result<RunningGuest> running_guest(const std::string& vm_name, Accel requested) {
        (void)vm_name;
        return RunningGuest{requested, "as requested", Json::object()};
    }
    // Names of the guests (running or defined) whose name starts with prefix,
    // so a restarted daemon can clean what an earlier one left.
    virtual Result<std::vector<std::string>> list_vms(const std::string& prefix) = 0;
    // Versions recorded with each run: {"libvirt": "9.0.0", "qemu": "7.2.0", ...}.
    virtual Json versions() = 0;

    // Whether the hypervisor answers now, for `hostctl status`:
    // {"state": "connected"|"unreachable", "error": "..."}; a backend that
    // connects per call says {"state": "connected"}.
    virtual Json reachability() { return Json{{"state", "connected"}}; }
    // `hostctl hosts check NAME`: whether this host can run sweeps, asked of
    // the hypervisor now (Proxmox: its release and the token's privileges on
    // every path a sweep touches, with what to grant). Default: reachability().
    virtual Result<Json> check_host() { return reachability(); }
    // True once after the connection was lost and made again (or made for
    // the first time after the daemon started without it): what the daemon
    // had there may be left half done, so it cleans the host up
    // (daemon/recovery.h) before the host takes runs again.
    virtual bool take_reconnected() { return false; }

    // The guest image as this hypervisor's host sees it (VmRequest::image):
    // `local` itself where the host reads this machine's files; a remote
    // libvirt host gets it uploaded into its pool once per content and
    // answers the volumes' paths there. Each successful call is paired with
    // release_image(staged) once no guest of the run uses it any more.
    virtual Result<GuestImage> stage_image(const GuestImage& local) { return local; }
    virtual void release_image(const GuestImage& staged) { (void)staged; }
};

}  // namespace ds
