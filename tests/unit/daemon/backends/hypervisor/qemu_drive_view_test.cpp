// QEMU's view of a PVE drive through HMP `info block` and `info block -n`
// alone (what a PVE 9 token with Sys.Audit may read): qemu-server 9's
// -blockdev chains recorded from QEMU 10.0 (tests/data/hmp/qemu10/README.md)
// and qemu-server 8's -drive lines from QEMU 7.2 (tests/data/hmp/qemu72/).
#include <catch2/catch.hpp>
#include <string>

#include "daemon/backends/hypervisor/qemu_block.h"
#include "support/test_data.h"

namespace ds {
namespace {

// `info block` and, when given, `info block -n` (no `info qtree`: not read).
HmpDriveTexts drive_texts(std::string_view block, std::optional<std::string_view> nodes) {
    HmpDriveTexts texts;
    texts.info_block = block;
    texts.info_block_nodes = nodes;
    return texts;
}

struct Recorded {
    std::string info_block;
    std::string info_block_nodes;
    HmpDriveTexts texts() const { return drive_texts(info_block, info_block_nodes); }
};

Recorded recorded(const std::string& folder, const std::string& name) {
    Recorded texts{test::test_data_text("hmp/" + folder + "/" + name + ".info_block.txt"),
                   test::test_data_text("hmp/" + folder + "/" + name + ".info_block_n.txt")};
    REQUIRE_FALSE(texts.info_block.empty());
    REQUIRE_FALSE(texts.info_block_nodes.empty());
    return texts;
}

// The text with every "\r\n" as "\n".
std::string without_cr(std::string text) {
    std::erase(text, '\r');
    return text;
}

// The text with the first `from` replaced by `to` (which must be there).
std::string replaced(std::string text, const std::string& from, const std::string& to) {
    const std::size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    return text.replace(at, from.size(), to);
}

struct Case {
    std::string name, device, cache, detect_zeroes;
};
// The recorded cases (record_hmp.py CASES) and what their configuration asks.
const Case kCases[] = {
    {"scsi-cache-none", "drive-scsi1", "none", "unmap"},
    {"scsi-cache-writeback", "drive-scsi1", "writeback", "unmap"},
    {"scsi-cache-writethrough", "drive-scsi1", "writethrough", "unmap"},
    {"scsi-cache-directsync", "drive-scsi1", "directsync", "unmap"},
    {"scsi-cache-unsafe", "drive-scsi1", "unsafe", "unmap"},
    {"scsi-throttle-rd", "drive-scsi1", "none", "unmap"},
    {"scsi-throttle-total", "drive-scsi1", "none", "unmap"},
    {"scsi-detect-zeroes-off", "drive-scsi1", "none", "off"},
    {"virtio-blk", "drive-virtio1", "none", "unmap"},
    {"sata", "drive-sata1", "none", "unmap"},
};

void check_common(const Json& view, const Case& c) {
    CHECK(view.at("image_format") == "raw");
    CHECK(view.at("cache") == c.cache);
    CHECK(view.at("detect_zeroes") == c.detect_zeroes);
    const Json& unseen = view.at("unseen");
    CHECK(unseen.contains("aio"));
    CHECK(unseen.contains("iothread"));
    // discard shows only as detect_zeroes=unmap (QEMU refuses unmap without it).
    CHECK(view.contains("discard") == (c.detect_zeroes == "unmap"));
    CHECK(unseen.contains("discard") == (c.detect_zeroes != "unmap"));
}

}  // namespace

TEST_CASE("drive view: every QEMU 10 -blockdev capture reads right, limits as unseen",
          "[qemu_drive_view]") {
    for (const Case& c : kCases) {
        INFO(c.name);
        const Recorded texts = recorded("qemu10", c.name);
        auto view = parse_qemu_drive_view(texts.texts(), c.device);
        REQUIRE(view.ok());
        check_common(*view, c);
        for (const ThrottleField& field : kThrottleFields) {
            CHECK_FALSE(view->contains(std::string(field.key)));
            CHECK_THAT(view->at("unseen").at(std::string(field.key)).get<std::string>(),
                       Catch::Contains("throttle-group"));
        }
        CHECK_THAT(view->at("sources").at("cache").get<std::string>(),
                   Catch::Contains("info block -n"));
        CHECK_THAT(view->at("sources").at("image_format").get<std::string>(),
                   Catch::Contains("format node f"));
        // `info qtree` names no IO thread of the device (only the unset
        // iothread-vq-mapping), which is why the reader is not given it.
        const std::string qtree = test::test_data_text("hmp/qemu10/" + c.name + ".info_qtree.txt");
        CHECK_THAT(qtree, !Catch::Contains("iothread = ") && !Catch::Contains("iothread-virtio"));
    }
}

TEST_CASE("drive view: the legacy QEMU 7.2 captures keep parse_info_block's result",
          "[qemu_drive_view]") {
    for (const Case& c : kCases) {
        INFO(c.name);
        const Recorded texts = recorded("qemu72", c.name);
        auto view = parse_qemu_drive_view(texts.texts(), c.device);
        REQUIRE(view.ok());
        check_common(*view, c);
        CHECK_FALSE(view->at("unseen").contains("iops_limit"));
        CHECK(view->at("sources").at("cache") == "info block Cache mode");
        // `info block` alone suffices for a -drive device.
        auto alone = parse_qemu_drive_view(drive_texts(texts.info_block, std::nullopt), c.device);
        REQUIRE(alone.ok());
        CHECK(*alone == *view);
    }
    const Recorded throttled = recorded("qemu72", "scsi-throttle-rd");
    auto view = parse_qemu_drive_view(throttled.texts(), "drive-scsi1");
    REQUIRE(view.ok());
    CHECK(view->at("iops_read_limit") == 500);
    CHECK(view->at("bandwidth_read_limit") == 8388608);
}

TEST_CASE("drive view: the other drives of a -blockdev VM are told apart", "[qemu_drive_view]") {
    const Recorded texts = recorded("qemu10", "scsi-cache-unsafe");
    auto system_disk = parse_qemu_drive_view(texts.texts(), "drive-scsi0");
    REQUIRE(system_disk.ok());
    CHECK(system_disk->at("cache") == "none");
    CHECK(system_disk->at("detect_zeroes") == "on");
    auto cdrom = parse_qemu_drive_view(texts.texts(), "ide2");
    REQUIRE_FALSE(cdrom.ok());
    CHECK_THAT(cdrom.error().message, Catch::Contains("no medium inserted"));
    auto missing = parse_qemu_drive_view(texts.texts(), "drive-scsi");
    REQUIRE_FALSE(missing.ok());
    CHECK_THAT(missing.error().message, Catch::Contains("drive-scsi: not listed"));
}

TEST_CASE("drive view: plain newlines read as HMP's CRLF", "[qemu_drive_view]") {
    const Recorded texts = recorded("qemu10", "scsi-cache-directsync");
    const std::string block = without_cr(texts.info_block);
    const std::string nodes = without_cr(texts.info_block_nodes);
    auto plain = parse_qemu_drive_view(drive_texts(block, nodes), "drive-scsi1");
    auto crlf = parse_qemu_drive_view(texts.texts(), "drive-scsi1");
    REQUIRE(plain.ok());
    REQUIRE(crlf.ok());
    CHECK(*plain == *crlf);
}

TEST_CASE("drive view: a chain without info block -n, or with a node missing, names the device",
          "[qemu_drive_view]") {
    const Recorded texts = recorded("qemu10", "scsi-cache-none");
    auto no_nodes =
        parse_qemu_drive_view(drive_texts(texts.info_block, std::nullopt), "drive-scsi1");
    REQUIRE_FALSE(no_nodes.ok());
    CHECK_THAT(no_nodes.error().message, Catch::Contains("drive-scsi1"));
    CHECK_THAT(no_nodes.error().message, Catch::Contains("`info block -n`"));

    // The file node's paragraph cut after its first line (a truncated reply).
    const std::string file_node = "e4d44046ab38e7fad9557d8ba01903e: ";
    const std::string nodes = without_cr(texts.info_block_nodes);
    const std::size_t at = nodes.find(file_node);
    REQUIRE(at != std::string::npos);
    const std::string cut = nodes.substr(0, nodes.find('\n', at) + 1);
    auto missing = parse_qemu_drive_view(drive_texts(texts.info_block, cut), "drive-scsi1");
    REQUIRE_FALSE(missing.ok());
    CHECK_THAT(missing.error().message, Catch::Contains("drive-scsi1"));
    CHECK_THAT(missing.error().message, Catch::Contains("lists no file node"));

    auto empty = parse_qemu_drive_view(drive_texts(texts.info_block, ""), "drive-scsi1");
    REQUIRE_FALSE(empty.ok());
    CHECK_THAT(empty.error().message, Catch::Contains("lists no raw node"));
}

TEST_CASE("drive view: format and file nodes that disagree are an error naming both",
          "[qemu_drive_view]") {
    const Recorded texts = recorded("qemu10", "scsi-cache-none");
    const std::string nodes =
        replaced(texts.info_block_nodes,
                 "e4d44046ab38e7fad9557d8ba01903e: /tmp/disksweep-hmp/images/100/"
                 "vm-100-disk-1.raw (file)\r\n    Cache mode:       writeback, direct",
                 "e4d44046ab38e7fad9557d8ba01903e: /tmp/disksweep-hmp/images/100/"
                 "vm-100-disk-1.raw (file)\r\n    Cache mode:       writeback");
    auto view = parse_qemu_drive_view(drive_texts(texts.info_block, nodes), "drive-scsi1");
    REQUIRE_FALSE(view.ok());
    const std::string& message = view.error().message;
    CHECK_THAT(message, Catch::Contains("drive-scsi1"));
    CHECK_THAT(message, Catch::Contains("f4d44046ab38e7fad9557d8ba01903e"));
    CHECK_THAT(message, Catch::Contains("e4d44046ab38e7fad9557d8ba01903e"));
    CHECK_THAT(message, Catch::Contains("disagree"));

    const std::string zeroes = replaced(texts.info_block_nodes,
                                        "(raw)\r\n    Cache mode:       writeback, direct\r\n"
                                        "    Detect zeroes:    unmap",
                                        "(raw)\r\n    Cache mode:       writeback, direct");
    auto differs = parse_qemu_drive_view(drive_texts(texts.info_block, zeroes), "drive-scsi1");
    REQUIRE_FALSE(differs.ok());
    CHECK_THAT(differs.error().message, Catch::Contains("detect zeroes differs"));
}

TEST_CASE("drive view: a truncated or malformed device line is an error, never a crash",
          "[qemu_drive_view]") {
    const Recorded texts = recorded("qemu10", "scsi-cache-none");
    // The json cut short, as QEMU's 4095-byte filename would cut it.
    const std::string cut_json = replaced(
        texts.info_block, "\"filename\": \"/tmp/disksweep-hmp/images/100/vm-100-disk-1.raw\"}}}",
        "\"filename\": \"/tmp/disksw");
    auto cut = parse_qemu_drive_view(drive_texts(cut_json, texts.info_block_nodes), "drive-scsi1");
    REQUIRE_FALSE(cut.ok());
    CHECK_THAT(cut.error().message, Catch::Contains("drive-scsi1"));

    for (const std::string& text :
         {std::string(""), std::string("drive-scsi1"), std::string("drive-scsi1: json:{"),
          std::string("drive-scsi1: json:{} (throttle)\r\n    Cache mode:       writeback\r\n"),
          std::string("drive-scsi1: json:[1] (throttle)\r\n    Cache mode:       writeback\r\n"),
          std::string(
              "drive-scsi1: json:{\"file\": 3} (throttle)\r\n    Cache mode: writeback\r\n"),
          std::string("drive-scsi1: x (throttle)\r\n    Cache mode:       writeback\r\n"),
          std::string("drive-scsi1: json:{\"file\": {\"driver\": 3, \"node-name\": [1]}} "
                      "(throttle)\r\n    Cache mode:       writeback\r\n"),
          std::string("drive-scsi1: json:{\"file\": {\"driver\": 3}} (throttle)\r\n"
                      "    Cache mode:       writeback\r\n")}) {
        INFO(text);
        auto view = parse_qemu_drive_view(drive_texts(text, texts.info_block_nodes), "drive-scsi1");
        REQUIRE_FALSE(view.ok());
        CHECK_THAT(view.error().message, Catch::Contains("drive-scsi1"));
    }
}

}  // namespace ds
