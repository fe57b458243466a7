// A libvirt storage pool on a libvirt host, reached through its API only
// (issue 20: a remote host's files are not this machine's):
//  * LibvirtPoolStorage is the spec's `file` storage on that host: each run's
//    volume is a pool volume (virStorageVolCreateXML, virStorageVolDelete),
//    attached by the path libvirt names for it there;
//  * PoolImages puts the guest image into the pool (virStorageVolUpload),
//    once per content, and answers the volumes' paths there.
// Both use the host's connection (LibvirtHypervisor::live_connection), so a
// host whose libvirtd restarts is reached again.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "daemon/backends/hypervisor/hypervisor.h"
#include "daemon/backends/storage/storage.h"

struct _virStoragePool;

namespace ds {

class LibvirtHypervisor;

// Checks that `pool` exists on the host and is an active `dir` pool (the
// kind whose volumes are files QEMU opens by path); the error says what it
// is instead and how to make one.
Status check_libvirt_dir_pool(LibvirtHypervisor& host, const std::string& pool);

class LibvirtPoolStorage : public StorageBackend {
  public:
    // `host` outlives the storage (both belong to the same Host).
    LibvirtPoolStorage(LibvirtHypervisor& host, std::string pool);
    // The spec's name: a run asks for `file` and gets this host's pool.
    std::string name() const override { return "file"; }
    DiskSourceKind produces() const override { return DiskSourceKind::kFile; }
    // A sparse volume (allocation 0) of config.disk_size_bytes in
    // config.image_format, at the path libvirt gives it in the pool.
    Result<Volume> create_volume(const std::string& name, const StorageConfig& config) override;
    Status remove_volume(const std::string& name) override;
    // The pool's volumes (refreshed first) whose names start with `prefix`,
    // but not the guest image's (PoolImages keeps those itself).
    Result<std::vector<std::string>> list_volumes(const std::string& prefix) override;
    // The volume's allocation as libvirt reports it (virStorageVolGetInfo).
    Result<std::uint64_t> allocated_bytes(const std::string& name) override;
    // {"pool", "host", "capacity_bytes", "allocation_bytes", "available_bytes"}.
    Json state(const std::string& volume) override;
    // A copy made by libvirt in the pool (virStorageVolCreateXMLFrom):
    // method "libvirt-copy".
    Result<ClonedVolume> clone_volume(const std::string& golden, const std::string& name,
                                      const StorageConfig& config) override;

    const std::string& pool() const { return pool_; }

  private:
    LibvirtHypervisor& host_;
    std::string pool_;
};

// The guest image in a host's pool. Its volumes are named
// PREFIX + "img-" + SLOT + "-" + HASH + "-" + PART, where SLOT names the
// local image (its root disk's path, hashed: one per image variant), HASH
// its content (the three files' SHA-256) and PART is kernel, initrd, root or
// done: an empty marker volume created after the other three are complete,
// so an upload cut short (a daemon killed mid-way) is never reused: it is
// deleted and made again.
class PoolImages {
  public:
    PoolImages(LibvirtHypervisor& host, std::string pool, std::string prefix);

    // The image's volumes in the pool (uploaded now unless complete there),
    // as a GuestImage of their paths on the host. Counted as in use until
    // release(). Images of the same slot with other content are removed once
    // none is in use.
    Result<GuestImage> stage(const GuestImage& local);
    void release(const GuestImage& staged);
    // Whether `volume` is one of PoolImages' volumes (of any prefix's).
    static bool is_image_volume(const std::string& volume, const std::string& prefix);

  private:
    struct Staged {
        std::string slot;
        std::string hash;
        GuestImage image;
        int users = 0;
    };
    Result<std::string> content_hash(const GuestImage& local);
    Result<GuestImage> upload(const GuestImage& local, const std::string& stem);
    void remove_stale(const std::string& slot);  // with mutex_ held

    LibvirtHypervisor& host_;
    std::string pool_;
    std::string prefix_;
    std::mutex mutex_;                           // one upload at a time; guards staged_ and hashes_
    std::map<std::string, Staged> staged_;       // by volume stem (slot + hash)
    std::map<std::string, std::string> hashes_;  // local file identity -> content hash
    std::map<std::string, std::string> current_hash_;  // slot -> hash staged last
};

}  // namespace ds
