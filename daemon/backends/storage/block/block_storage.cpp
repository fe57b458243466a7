#include "daemon/backends/storage/block/block_storage.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "common/text.h"

namespace ds {

BlockStorage::BlockStorage(std::string device) : device_(std::move(device)) {}

Result<std::uint64_t> BlockStorage::device_size(int fd) const {
    std::uint64_t size = 0;
    if (::ioctl(fd, BLKGETSIZE64, &size) != 0) {
        return make_error(errc::kStorage, name() + ": cannot read the size of " + device_ + ": " +
                                              std::strerror(errno));
    }
    return size;
}

Result<Volume> BlockStorage::create_volume(const std::string& name, const StorageConfig& config) {
    DS_TRY(require_raw_format(this->name(), "a block device", config));
    std::lock_guard lock(mutex_);
    if (!holder_.empty()) {
        return make_error(errc::kConflict,
                          this->name() + ": the device is held by run volume " + holder_ +
                              " (one run at a time per device: give its host parallel=1)");
    }
    struct stat info {};
    if (::stat(device_.c_str(), &info) != 0) {
        return make_error(errc::kStorage,
                          this->name() + ": cannot stat " + device_ + ": " + std::strerror(errno));
    }
    if (!S_ISBLK(info.st_mode)) {
        return make_error(errc::kStorage, this->name() + ": " + device_ + " is not a block device");
    }
    // O_EXCL on a block device is the kernel's own "in use" check: it fails
    // with EBUSY when the device or a partition of it is mounted, part of
    // md/dm/LVM, swap, or opened exclusively by another program.
    FileDescriptor claim(::open(device_.c_str(), O_RDWR | O_EXCL | O_CLOEXEC));
    if (!claim.valid()) {
        const int error = errno;
        return make_error(errc::kStorage,
                          this->name() + ": cannot claim " + device_ + ": " + std::strerror(error) +
                              (error == EBUSY ? " (mounted, a member of md/dm/LVM, swap, or held "
                                                "by another program)"
                                              : ""));
    }
    DS_ASSIGN_OR_RETURN(auto size, device_size(claim.get()));
    if (size < config.disk_size_bytes) {
        return make_error(errc::kStorage, this->name() + ": the device has " +
                                              std::to_string(size) +
                                              " bytes, the configuration's "
                                              "disk_size is " +
                                              std::to_string(config.disk_size_bytes));
    }
    // Every run starts from an empty device, as from a fresh thin LV: its
    // blocks are given back (a loop device's backing file punched empty).
    // A device without discard keeps its old blocks; mkfs overwrites them.
    std::uint64_t range[2] = {0, size};
    if (::ioctl(claim.get(), BLKDISCARD, &range) != 0 && errno != EOPNOTSUPP) {
        return make_error(errc::kStorage, this->name() + ": cannot discard " + device_ + ": " +
                                              std::strerror(errno));
    }
    holder_ = name;
    claim_ = std::move(claim);
    size_ = size;
    return Volume{name, BlockDisk{device_}};
}

Status BlockStorage::remove_volume(const std::string& name) {
    std::lock_guard lock(mutex_);
    if (holder_ == name) {
        holder_.clear();
        claim_.reset();
        size_ = 0;
    }
    return ok_status();
}

Result<std::vector<std::string>> BlockStorage::list_volumes(const std::string& prefix) {
    std::lock_guard lock(mutex_);
    if (!holder_.empty() && holder_.starts_with(prefix)) return std::vector<std::string>{holder_};
    return std::vector<std::string>{};
}

std::string BlockStorage::loop_backing_file() const {
    struct stat info {};
    if (::stat(device_.c_str(), &info) != 0 || !S_ISBLK(info.st_mode)) return "";
    // Only a loop device has loop/backing_file under its sysfs entry.
    std::ifstream file("/sys/dev/block/" + std::to_string(major(info.st_rdev)) + ":" +
                       std::to_string(minor(info.st_rdev)) + "/loop/backing_file");
    std::string path;
    std::getline(file, path);
    return std::string(trim_whitespace(path));
}

Json BlockStorage::state(const std::string& volume) {
    Json state = {{"device", device_}};
    {
        std::lock_guard lock(mutex_);
        if (holder_ == volume && size_ > 0) state["size_bytes"] = size_;
    }
    if (const std::string backing = loop_backing_file(); !backing.empty()) {
        state["backing_file"] = backing;
    }
    return state;
}

Result<std::uint64_t> BlockStorage::allocated_bytes(const std::string&) {
    const std::string backing = loop_backing_file();
    if (backing.empty()) {
        return make_error(errc::kUnsupported, name() + ": " + device_ +
                                                  " is not a loop device: a disk does not say "
                                                  "which of its blocks are allocated");
    }
    struct stat info {};
    if (::stat(backing.c_str(), &info) != 0) {
        return make_error(errc::kStorage, name() + ": cannot stat the backing file " + backing +
                                              ": " + std::strerror(errno));
    }
    return static_cast<std::uint64_t>(info.st_blocks) * 512u;
}

}  // namespace ds
