// QEMU's view of a legacy `-drive` device from HMP `info block`, as PVE's
// monitor endpoint returns it: replies recorded from this host's QEMU 7.2
// through QMP's human-monitor-command (tests/data/hmp/README.md, and
// tests/data/hmp/qemu72/ for qemu-server 8.3's own -drive lines).
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

TEST_CASE("info block: qemu-server 8's -drive lines, each case of tests/data/hmp/qemu72",
          "[qemu_info_block]") {
    struct Case {
        std::string name, device, cache, detect_zeroes;
    };
    for (const Case& c : {Case{"scsi-cache-none", "drive-scsi1", "none", "unmap"},
                          Case{"scsi-cache-writeback", "drive-scsi1", "writeback", "unmap"},
                          Case{"scsi-cache-writethrough", "drive-scsi1", "writethrough", "unmap"},
                          Case{"scsi-cache-directsync", "drive-scsi1", "directsync", "unmap"},
                          Case{"scsi-cache-unsafe", "drive-scsi1", "unsafe", "unmap"},
                          Case{"scsi-detect-zeroes-off", "drive-scsi1", "none", "off"},
                          Case{"virtio-blk", "drive-virtio1", "none", "unmap"},
                          Case{"sata", "drive-sata1", "none", "unmap"}}) {
        INFO(c.name);
        const auto text = test::test_data_text("hmp/qemu72/" + c.name + ".info_block.txt");
        auto settings = parse_info_block(text, c.device);
        REQUIRE(settings.ok());
        CHECK(settings->at("image_format") == "raw");
        CHECK(settings->at("cache") == c.cache);
        CHECK(settings->at("detect_zeroes") == c.detect_zeroes);
        CHECK(settings->contains("discard") == (c.detect_zeroes == "unmap"));
        for (const ThrottleField& field : kThrottleFields)
            CHECK_FALSE(settings->contains(std::string(field.key)));
    }
}

TEST_CASE("info block: per-direction limits are read, not taken for unthrottled",
          "[qemu_info_block]") {
    // qemu-server 8's iops_rd=500,mbps_rd=8 (tests/data/hmp/qemu72/README).
    auto read = parse_info_block(test::test_data_text("hmp/qemu72/scsi-throttle-rd.info_block.txt"),
                                 "drive-scsi1");
    REQUIRE(read.ok());
    CHECK(read->at("iops_read_limit") == 500);
    CHECK(read->at("bandwidth_read_limit") == 8388608);
    CHECK_FALSE(read->contains("iops_limit"));
    CHECK_FALSE(read->contains("bandwidth_limit"));
    CHECK(read->at("sources").at("iops_read_limit") == "info block I/O throttling iops_rd");

    auto total = parse_info_block(
        test::test_data_text("hmp/qemu72/scsi-throttle-total.info_block.txt"), "drive-scsi1");
    REQUIRE(total.ok());
    CHECK(total->at("iops_limit") == 500);
    CHECK(total->at("bandwidth_limit") == 8388608);
    CHECK_FALSE(total->contains("iops_read_limit"));
}

TEST_CASE("info block: write limits and bursts, in QEMU's own print format", "[qemu_info_block]") {
    // print_block_info's format (block-hmp-cmds.c) for PVE's
    // iops_wr=300,iops_wr_max=600,mbps_max=20: no capture has bursts.
    const std::string text =
        "drive-scsi1 (#block307): /dev/pve/vm-101-disk-1 (raw)\r\n"
        "    Attached to:      scsi1\r\n"
        "    Cache mode:       writeback, direct\r\n"
        "    I/O throttling:   bps=0 bps_rd=0 bps_wr=0 bps_max=20971520 bps_rd_max=0 "
        "bps_wr_max=0 iops=0 iops_rd=0 iops_wr=300 iops_max=0 iops_rd_max=0 iops_wr_max=600 "
        "iops_size=0 group=drive-scsi1\r\n";
    auto settings = parse_info_block(text, "drive-scsi1");
    REQUIRE(settings.ok());
    CHECK(settings->at("iops_write_limit") == 300);
    CHECK(settings->at("iops_write_burst_limit") == 600);
    CHECK(settings->at("bandwidth_burst_limit") == 20971520);
    CHECK_FALSE(settings->contains("iops_limit"));
    CHECK_FALSE(settings->contains("iops_read_limit"));
}

TEST_CASE("info block: a truncated throttling line is an error naming device and field",
          "[qemu_info_block]") {
    const std::string text =
        "drive-scsi1 (#block307): /dev/pve/vm-101-disk-1 (raw)\n"
        "    Cache mode:       writeback\n"
        "    I/O throttling:   bps=0 bps_rd=0 bps_wr=0 bps_max=0 bps_rd_max=0 bps_wr_max=0 "
        "iops=0 iops_rd=50";
    auto settings = parse_info_block(text, "drive-scsi1");
    REQUIRE_FALSE(settings.ok());
    CHECK_THAT(settings.error().message, Catch::Contains("drive-scsi1"));
    CHECK_THAT(settings.error().message, Catch::Contains("iops_wr="));
    CHECK_FALSE(parse_info_block("drive-scsi1 (#block3): /x (raw", "drive-scsi1").ok());
    CHECK_FALSE(
        parse_info_block("drive-scsi1 (#block3): /x ()\n    Cache mode: writeback\n", "drive-scsi1")
            .ok());
    auto odd_cache = parse_info_block(
        "drive-scsi1 (#block3): /x (raw)\n    Cache mode:       sometimes\n", "drive-scsi1");
    REQUIRE_FALSE(odd_cache.ok());
    CHECK_THAT(odd_cache.error().message, Catch::Contains("drive-scsi1"));
}

}  // namespace ds
