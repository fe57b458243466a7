// QEMU's view of a drive from HMP `info block`, as PVE's monitor endpoint
// returns it: replies recorded from this host's QEMU 7.2 through QMP's
// human-monitor-command (tests/data/hmp/README.md).
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "daemon/backends/hypervisor/qemu_block.h"
#include "support/test_data.h"

namespace ds {
namespace {

std::string recorded(const std::string& cache_mode) {
    const auto path = test::test_data_dir() / "hmp" / ("info_block_" + cache_mode + ".txt");
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    REQUIRE_FALSE(text.str().empty());
    return text.str();
}

}  // namespace

TEST_CASE("info block: each cache mode of the data disk, its throttle and detect_zeroes",
          "[qemu_info_block]") {
    for (const std::string mode : {"unsafe", "none", "writethrough", "directsync", "writeback"}) {
        INFO(mode);
        auto settings = parse_info_block(recorded(mode), "drive-scsi1");
        REQUIRE(settings.ok());
        CHECK(settings->at("cache") == mode);
        CHECK(settings->at("detect_zeroes") == "unmap");
        CHECK(settings->at("discard") == true);
        CHECK(settings->at("image_format") == "raw");
        CHECK(settings->at("iops_limit") == 500);
        CHECK(settings->at("bandwidth_limit") == 10485760);
        CHECK(settings->at("sources").at("cache") == "info block Cache mode");
    }
}

TEST_CASE("info block: the other drives of the VM are told apart", "[qemu_info_block]") {
    const std::string text = recorded("unsafe");
    auto system_disk = parse_info_block(text, "drive-scsi0");
    REQUIRE(system_disk.ok());
    CHECK(system_disk->at("cache") == "none");
    CHECK(system_disk->at("detect_zeroes") == "on");
    CHECK_FALSE(system_disk->contains("discard"));
    CHECK_FALSE(system_disk->contains("iops_limit"));
    // "drive-scsi1" is not "drive-scsi10", nor a prefix of another name.
    auto missing = parse_info_block(text, "drive-scsi");
    REQUIRE_FALSE(missing.ok());
    CHECK_THAT(missing.error().message, Catch::Contains("drive-scsi: not listed"));
    auto empty_cdrom = parse_info_block(text, "drive-ide2");
    REQUIRE_FALSE(empty_cdrom.ok());
    CHECK_THAT(empty_cdrom.error().message, Catch::Contains("no medium inserted"));
}

TEST_CASE("info block: plain newlines, no detect zeroes line, and garbage", "[qemu_info_block]") {
    const std::string plain =
        "drive-virtio1 (#block9): /dev/pve/vm-101-disk-1 (qcow2, read-only)\n"
        "    Attached to:      /machine/peripheral/virtio1/virtio-backend\n"
        "    Cache mode:       writethrough\n";
    auto settings = parse_info_block(plain, "drive-virtio1");
    REQUIRE(settings.ok());
    CHECK(settings->at("image_format") == "qcow2");
    CHECK(settings->at("detect_zeroes") == "off");
    CHECK(settings->at("cache") == "writethrough");

    CHECK_FALSE(parse_info_block("drive-virtio1 (#block9): /x (raw)\n", "drive-virtio1").ok());
    CHECK_FALSE(
        parse_info_block("drive-virtio1: garbage\n    Cache mode: writeback\n", "drive-virtio1")
            .ok());
    const std::string bad_throttle = plain + "    I/O throttling:   bps=x iops=3\n";
    auto throttled = parse_info_block(bad_throttle, "drive-virtio1");
    REQUIRE_FALSE(throttled.ok());
    CHECK_THAT(throttled.error().message, Catch::Contains("I/O throttling"));
    CHECK_FALSE(parse_info_block("", "drive-virtio1").ok());
}

}  // namespace ds
