// The block storage backend (`block:DEVICE`): every run's data disk is one
// block device the user set aside (a spare disk or partition, or a loop
// device), attached as it is (`<disk type='block'>`).
//
// Contract:
//  * The device is WIPED by every run: create_volume discards all of it
//    (BLKDISCARD, where the device supports it) and the guest's mkfs
//    overwrites it. Give disksweep only a device whose data may go.
//  * A device that is in use is refused: mounted (also a partition of it),
//    a member of md/dm/LVM, swap, or held exclusively by another program.
//    The kernel decides, by an exclusive open (O_EXCL on a block device),
//    which the backend then keeps open while the run holds the device, so
//    nothing can mount it meanwhile.
//  * One run at a time per device: a second create_volume while a run holds
//    it is refused (errc::kConflict) naming the run's volume; give the host
//    parallel=1, or one `block:` line per device.
//  * The device must hold at least the configuration's disk_size; a larger
//    one is used whole (state() records its size).
//  * Nothing is created on the host, so nothing outlives a crash: a
//    restarted daemon finds no volumes to clean.
//  * allocated_bytes: a loop device's backing file's st_blocks × 512 (what a
//    discard frees in it); another device cannot say (kUnsupported).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "common/file_descriptor.h"
#include "daemon/backends/storage/storage.h"

namespace ds {

class BlockStorage : public StorageBackend {
  public:
    // `device` is the path of a block device, e.g. /dev/sdb, /dev/loop3;
    // nothing is checked until a run asks for it.
    explicit BlockStorage(std::string device);

    // "block:DEVICE".
    std::string name() const override { return "block:" + device_; }
    DiskSourceKind produces() const override { return DiskSourceKind::kBlock; }
    // Claims the device for the run `name` (see the contract above): a block
    // device, not in use, not held by another run, at least
    // config.disk_size_bytes; raw only. Then discards it whole.
    Result<Volume> create_volume(const std::string& name, const StorageConfig& config) override;
    // Releases the device if `name` holds it; succeeds otherwise too.
    Status remove_volume(const std::string& name) override;
    // The run holding the device, when its name starts with `prefix`.
    Result<std::vector<std::string>> list_volumes(const std::string& prefix) override;
    // {"device": PATH, "size_bytes": N, "backing_file": PATH (loop devices)}.
    Json state(const std::string& volume) override;
    Result<std::uint64_t> allocated_bytes(const std::string& volume) override;

  private:
    // The device's size, once claimed (fd open with O_EXCL).
    Result<std::uint64_t> device_size(int fd) const;
    // The backing file of a loop device, "" for another device.
    std::string loop_backing_file() const;

    const std::string device_;
    std::mutex mutex_;
    std::string holder_;      // the volume name of the run holding the device, "" = free
    FileDescriptor claim_;    // the exclusive open while a run holds it
    std::uint64_t size_ = 0;  // of the device, while held
};

}  // namespace ds
