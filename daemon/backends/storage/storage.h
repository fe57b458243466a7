// The storage seam: one fresh data volume per run, removed afterwards. A
// volume is a typed disk source, never a path string to guess from: each
// hypervisor says which kinds it can attach (Hypervisor::attachable_disks),
// and the registry refuses a sweep whose storage produces a kind its
// hypervisor cannot attach.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/result.h"
#include "common/settings.h"

namespace ds {

// An image file on the host (file storage).
struct FileDisk {
    std::string path;
    ImageFormat format = ImageFormat::kRaw;
};

// A block device on the host (an lvm-thin LV, a loop device).
struct BlockDisk {
    std::string path;
};

// A Ceph RBD image, reached by QEMU's rbd driver. The cephx key itself is
// never held here: `keyring` names a root-only file, and `ceph_conf` a
// ceph.conf that points at it (for hypervisors without a secret store).
struct RbdDisk {
    std::string pool;
    std::string image;
    std::vector<std::string> monitors;  // "127.0.0.1:6789"
    std::string user;                   // cephx id without "client.", "" = no auth
    std::string keyring;                // path of the keyring file holding the key
    std::string ceph_conf;              // path of a ceph.conf naming monitors and keyring
};

// A disk the hypervisor allocates itself inside the VM's config (Proxmox's
// `STORAGE:SIZE`): the storage backend only names where.
struct HypervisorAllocatedDisk {
    std::string storage;  // the hypervisor's own storage id, e.g. "local-lvm"
    std::uint64_t size_bytes = 0;
};

using DiskSource = std::variant<FileDisk, BlockDisk, RbdDisk, HypervisorAllocatedDisk>;

enum class DiskSourceKind { kFile, kBlock, kRbd, kHypervisorAllocated };
DiskSourceKind kind_of(const DiskSource&);
std::string_view to_string(DiskSourceKind);  // "file" "block" "rbd" "hypervisor-allocated"
// {"kind":"rbd","pool":...,"image":...} for the run record (no secrets).
Json to_json(const DiskSource&);

// For a backend whose volumes QEMU always sees raw (`what`: "an RBD image",
// "a thin LV"): errc::kInvalidArgument "BACKEND: WHAT has no image format
// (QEMU sees it raw); image_format must be raw, not qcow2" unless the
// configuration's format is raw.
Status require_raw_format(const std::string& backend, std::string_view what,
                          const StorageConfig& config);

struct Volume {
    std::string name;   // unique; starts with the daemon's prefix
    DiskSource source;  // what the hypervisor attaches
};

// A run's volume made from a golden one, and how (for the run record:
// "reflink", "sparse-copy", "rbd-clone", "thin-snapshot").
struct ClonedVolume {
    Volume volume;
    std::string method;
};

class StorageBackend {
  public:
    virtual ~StorageBackend() = default;
    // The name a sweep spec uses for this storage: "file", "lvm-thin:VG/POOL",
    // "rbd:POOL".
    virtual std::string name() const = 0;
    // The kind of disk source create_volume produces.
    virtual DiskSourceKind produces() const = 0;
    // Creates an empty volume of config.disk_size_bytes (in
    // config.image_format where the backend has formats).
    virtual Result<Volume> create_volume(const std::string& name, const StorageConfig& config) = 0;
    // Removes the volume. Succeeds if it is already gone.
    virtual Status remove_volume(const std::string& name) = 0;
    // Volumes whose name starts with prefix (crash recovery).
    virtual Result<std::vector<std::string>> list_volumes(const std::string& prefix) = 0;
    // The backend's state recorded with a run before and after it (pool fill,
    // cluster health, the volume's real usage); an object, {} when the
    // backend has nothing to say. `volume` may already be removed.
    virtual Json state(const std::string& volume) { return Json::object(); }
    // The bytes the storage holds allocated for the volume now: what a
    // discard frees (daemon/run/discard_effect.h measures it before and after
    // the guest's fstrim). errc::kUnsupported when this backend cannot tell
    // (the registry's StorageKindDef::allocation says how each one measures).
    virtual Result<std::uint64_t> allocated_bytes(const std::string& volume);

    // Golden volumes (docs/golden-volumes.md): a volume made with
    // create_volume and filled once by a guest, then sealed, then cloned per
    // run; removed with remove_golden once its clones are gone. The
    // registry's StorageKindDef::golden_clone says which backends clone; the
    // others answer errc::kUnsupported.
    //
    // Makes the filled volume `golden` ready to be cloned (an RBD snapshot,
    // protected); nothing where a clone needs nothing.
    virtual Status seal_golden(const std::string& golden) { return ok_status(); }
    // A new volume `name` with the content of the sealed `golden`, sharing
    // its blocks where the storage can. `config` is the run's (its format).
    virtual Result<ClonedVolume> clone_volume(const std::string& golden, const std::string& name,
                                              const StorageConfig& config);
    // Removes a golden volume and what seal_golden made. Succeeds if it is
    // already gone; fails while clones of it exist where the storage keeps
    // them dependent (RBD).
    virtual Status remove_golden(const std::string& golden) { return remove_volume(golden); }
};

}  // namespace ds
