// The block storage backend (`block:DEVICE`) on a real loop device: it
// claims the device for one run at a time, wipes it (the backing file punched
// empty), refuses a device that is mounted, too small or not a block device,
// and measures a loop device's allocation by its backing file.
#include "daemon/backends/storage/block/block_storage.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <vector>

#include "common/file_descriptor.h"
#include "support/loop_device.h"
#include "support/skip.h"
#include "support/temp_dir.h"

namespace ds {
namespace {

using Catch::Matchers::Contains;
using namespace std::chrono_literals;

constexpr std::uint64_t kMiB = 1u << 20;

void skip_unless_loop_devices() {
    if (::geteuid() != 0) test::skip_test("not root");
    RealProcessRunner runner;
    auto loop = runner.run({"losetup", "--find"}, 10s);
    if (!loop.ok() || loop->exit_code != 0) test::skip_test("no free loop device");
}

// Writes `bytes` of non-zero data at the start of `device`, synced.
void write_data(const std::string& device, std::uint64_t bytes) {
    FileDescriptor fd(::open(device.c_str(), O_WRONLY | O_CLOEXEC));
    REQUIRE(fd.valid());
    const std::vector<char> chunk(kMiB, 'x');
    for (std::uint64_t written = 0; written < bytes; written += chunk.size()) {
        REQUIRE(::write(fd.get(), chunk.data(), chunk.size()) ==
                static_cast<ssize_t>(chunk.size()));
    }
    REQUIRE(::fsync(fd.get()) == 0);
}

StorageConfig config_of(std::uint64_t disk_size) {
    StorageConfig config;
    config.storage = "block";
    config.disk_size_bytes = disk_size;
    return config;
}

}  // namespace

TEST_CASE("block storage: one run at a time, wiped, measured by the backing file",
          "[block_storage][integration]") {
    skip_unless_loop_devices();
    test::TempDir dir;
    test::LoopDevice loop(dir.path() / "disk.img", 64 * kMiB);
    INFO(loop.error());
    REQUIRE_FALSE(loop.path().empty());
    write_data(loop.path(), 8 * kMiB);
    REQUIRE(loop.allocated_bytes() >= 8 * kMiB);

    BlockStorage storage(loop.path());
    CHECK(storage.name() == "block:" + loop.path());
    auto volume = storage.create_volume("run-1", config_of(32 * kMiB));
    INFO((volume.ok() ? "" : volume.error().message));
    REQUIRE(volume.ok());
    CHECK(std::get<BlockDisk>(volume->source).path == loop.path());
    // Claimed = wiped: the backing file holds nothing of the old data.
    CHECK(loop.allocated_bytes() < kMiB);
    CHECK(storage.allocated_bytes("run-1").value() == loop.allocated_bytes());
    const Json state = storage.state("run-1");
    CHECK(state.at("size_bytes") == 64 * kMiB);
    CHECK(state.at("backing_file") == loop.backing_file());

    // What a guest writes shows in the measure.
    write_data(loop.path(), 4 * kMiB);
    CHECK(storage.allocated_bytes("run-1").value() >= 4 * kMiB);

    // A second run while the first holds the device is refused.
    auto second = storage.create_volume("run-2", config_of(32 * kMiB));
    REQUIRE_FALSE(second.ok());
    CHECK(second.error().code == errc::kConflict);
    CHECK_THAT(second.error().message, Contains("held by run volume run-1"));
    CHECK(storage.list_volumes("run-").value() == std::vector<std::string>{"run-1"});

    REQUIRE(storage.remove_volume("run-1").ok());
    CHECK(storage.list_volumes("run-").value().empty());
    CHECK(storage.remove_volume("run-1").ok());  // gone already: success

    // Too small for the configuration's disk.
    auto too_small = storage.create_volume("run-3", config_of(128 * kMiB));
    REQUIRE_FALSE(too_small.ok());
    CHECK_THAT(too_small.error().message,
               Contains("the device has 67108864 bytes, the configuration's disk_size is "
                        "134217728"));
    CHECK(storage.create_volume("run-4", config_of(64 * kMiB)).ok());
    CHECK(storage.remove_volume("run-4").ok());
}

TEST_CASE("block storage: a mounted device or a non-block path is refused",
          "[block_storage][integration]") {
    skip_unless_loop_devices();
    test::TempDir dir;
    test::LoopDevice loop(dir.path() / "disk.img", 64 * kMiB);
    REQUIRE_FALSE(loop.path().empty());
    RealProcessRunner runner;
    auto made = runner.run({"mkfs.ext4", "-q", "-F", loop.path()}, 60s);
    REQUIRE(made.ok());
    REQUIRE(made->exit_code == 0);
    const std::string mount_point = dir.file("mnt");
    std::filesystem::create_directories(mount_point);
    REQUIRE(::mount(loop.path().c_str(), mount_point.c_str(), "ext4", 0, nullptr) == 0);
    BlockStorage storage(loop.path());
    auto refused = storage.create_volume("run-1", config_of(32 * kMiB));
    ::umount2(mount_point.c_str(), MNT_DETACH);
    REQUIRE_FALSE(refused.ok());
    CHECK_THAT(refused.error().message,
               Contains("cannot claim " + loop.path() + ": Device or resource busy (mounted"));
    // Unmounted, the same device is taken.
    CHECK(storage.create_volume("run-1", config_of(32 * kMiB)).ok());
    CHECK(storage.remove_volume("run-1").ok());

    BlockStorage not_block("/dev/null");
    auto wrong = not_block.create_volume("run-1", config_of(kMiB));
    REQUIRE_FALSE(wrong.ok());
    CHECK(wrong.error().message == "block:/dev/null: /dev/null is not a block device");
    CHECK(not_block.allocated_bytes("run-1").error().code == errc::kUnsupported);
    StorageConfig qcow2 = config_of(kMiB);
    qcow2.image_format = ImageFormat::kQcow2;
    CHECK(not_block.create_volume("run-1", qcow2).error().message ==
          "block:/dev/null: a block device has no image format (QEMU sees it raw); image_format "
          "must be raw, not qcow2");
}

}  // namespace ds
