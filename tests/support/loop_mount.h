// Test support: a file system (ext4 or xfs) on a loop device over a sparse
// file, mounted on DIR/mnt; unmounted and detached when the object goes,
// whatever the test did (a failed REQUIRE unwinds through it). For the
// integration tests that run a workload's real tools on a real file system
// (root only).
#pragma once

#include <sys/mount.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "common/process.h"
#include "support/loop_device.h"

namespace ds::test {

class LoopMount {
  public:
    LoopMount(const std::filesystem::path& dir, std::uintmax_t bytes,
              const std::string& fs_type = "ext4")
        : device_(dir / "disk.img", bytes), mount_point_(dir / "mnt") {
        INFO(device_.error());
        REQUIRE(!device_.path().empty());
        std::filesystem::create_directories(mount_point_);
        auto made = runner_.run(mkfs_argv(fs_type, device_.path()), kTimeout);
        REQUIRE(made.ok());
        REQUIRE(made->exit_code == 0);
        REQUIRE(::mount(device_.path().c_str(), mount_point_.c_str(), fs_type.c_str(), 0,
                        nullptr) == 0);
        mounted_ = true;
    }
    ~LoopMount() {
        if (mounted_) ::umount2(mount_point_.c_str(), MNT_DETACH);
    }
    LoopMount(const LoopMount&) = delete;
    LoopMount& operator=(const LoopMount&) = delete;

    std::string path() const { return mount_point_.string(); }
    // Unmounts (a clean shutdown) and hands out the device, still attached
    // until the end.
    std::string release_mount() {
        if (mounted_) REQUIRE(::umount2(mount_point_.c_str(), 0) == 0);
        mounted_ = false;
        return device_.path();
    }

  private:
    static constexpr std::chrono::seconds kTimeout{60};
    // The mkfs of each file system type a test formats.
    static std::vector<std::string> mkfs_argv(const std::string& fs_type,
                                              const std::string& device) {
        if (fs_type == "xfs") return {"mkfs.xfs", "-q", "-f", device};
        return {"mkfs.ext4", "-q", "-F", device};
    }

    RealProcessRunner runner_;
    LoopDevice device_;
    std::filesystem::path mount_point_;
    bool mounted_ = false;
};

}  // namespace ds::test
