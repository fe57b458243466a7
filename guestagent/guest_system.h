// The operating-system calls the agent makes other than running programs
// (those go through ds::ProcessRunner): mounting, syncing, writing sysfs
// attributes, the kernel release. Abstract so the job flow can be unit-tested without root;
// RealGuestSystem is the one real implementation.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace ds::agent {

class GuestSystem {
  public:
    virtual ~GuestSystem() = default;
    // mkdir -p; an existing directory is fine.
    virtual Status make_directories(const std::string& path) = 0;
    // Mounts block device `device` of type `fs_type` at `target` with the
    // comma-separated `options` ("" = defaults), as mount(8) would.
    virtual Status mount(const std::string& device, const std::string& target,
                         const std::string& fs_type, const std::string& options) = 0;
    virtual Status unmount(const std::string& target) = 0;
    virtual void sync() = 0;
    // Writes `value` to the sysfs attribute at `path` in one write(2), as
    // `echo value > path` does: sysfs takes a store as a whole, and the
    // kernel refuses a value it does not accept with an errno (EINVAL for
    // an unknown scheduler or an out-of-range nr_requests). errc::kIo
    // "cannot write 'VALUE' to PATH: <errno text>".
    virtual Status write_attribute(const std::string& path, const std::string& value) = 0;
    // SIGKILLs every other process whose working directory or an open file
    // is `path` or below it (what `fuser -km` does), and returns them as
    // "PID (COMM)". For what a stopped workload leaves behind: fio's job
    // processes call setsid(), so killing fio's process group misses them,
    // and they keep the file system busy.
    virtual std::vector<std::string> kill_processes_using(const std::string& path) = 0;
    // uname -r
    virtual std::string kernel_release() = 0;
    // Removes everything inside `directory` (not the directory itself, nor
    // a file system's lost+found) and returns the bytes the removed files
    // held (st_blocks × 512). errc::kIo naming the first entry that could
    // not be removed.
    virtual Result<std::uint64_t> remove_contents(const std::string& directory) = 0;
    // fstrim: FITRIM over the whole file system mounted at `mount_point`;
    // returns the bytes the file system says it trimmed. errc::kIo with the
    // errno text (EOPNOTSUPP: the disk offers no discard).
    virtual Result<std::uint64_t> trim(const std::string& mount_point) = 0;
};

// mount(2)/umount2(2)/sync(2)/open(2)+write(2)/uname(2)/unlink(2)/ioctl(FITRIM).
class RealGuestSystem : public GuestSystem {
  public:
    Status make_directories(const std::string& path) override;
    Status mount(const std::string& device, const std::string& target, const std::string& fs_type,
                 const std::string& options) override;
    Status unmount(const std::string& target) override;
    void sync() override;
    Status write_attribute(const std::string& path, const std::string& value) override;
    std::vector<std::string> kill_processes_using(const std::string& path) override;
    std::string kernel_release() override;
    Result<std::uint64_t> remove_contents(const std::string& directory) override;
    Result<std::uint64_t> trim(const std::string& mount_point) override;
};

// mount(8)'s split of an option string: the generic options become MS_*
// flags for mount(2), everything else ("data=writeback", "nodatacow",
// "barrier=0") is passed to the file system as its data string, in order.
struct MountRequest {
    unsigned long flags = 0;
    std::string data;
};
MountRequest split_mount_options(std::string_view options);

}  // namespace ds::agent
