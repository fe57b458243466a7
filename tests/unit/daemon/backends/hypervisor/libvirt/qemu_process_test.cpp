// The QEMU process level: the data disk's block node options and the AIO
// engine in use, from texts as /proc shows them for a QEMU that libvirt 9.0
// started (its -blockdev JSON; the maps line and descriptor names measured
// on QEMU 7.2.22: a Linux AIO ring for aio=native, an io_uring descriptor
// for aio=io_uring, neither for the thread pool).
#include "daemon/backends/hypervisor/libvirt/qemu_process.h"

#include <catch2/catch.hpp>

namespace ds {
namespace {

constexpr const char* kLinuxAioRing =
    "7febf80ba000-7febf80cb000 rw-s 00000000 00:12 22775                      /[aio] (deleted)\n";
constexpr const char* kLibaio =
    "7f9e27d9d000-7f9e27d9e000 r--p 00000000 fe:00 14884964   "
    "/usr/lib/x86_64-linux-gnu/libaio.so.1.0.2\n";

// A QEMU with the root disk (node libvirt-2-*) and the data disk
// (libvirt-1-*) as libvirt writes them; `storage_extra` and `format_extra`
// go into the data disk's protocol and format nodes.
QemuProcessView process(const std::string& storage_extra, const std::string& format_extra) {
    QemuProcessView view;
    view.pid = 4242;
    view.argv = {
        "/usr/bin/qemu-system-x86_64",
        "-name",
        "guest=disksweep-abc-r7,debug-threads=on",
        "-blockdev",
        R"({"driver":"file","filename":"/images/root.img","node-name":"libvirt-2-storage","auto-read-only":true,"discard":"unmap"})",
        "-blockdev",
        R"({"node-name":"libvirt-2-format","read-only":true,"driver":"raw","file":"libvirt-2-storage"})",
        "-blockdev",
        R"({"driver":"file","filename":"/volumes/r7.img","node-name":"libvirt-1-storage","auto-read-only":true)" +
            storage_extra + "}",
        "-blockdev",
        R"({"node-name":"libvirt-1-format","read-only":false)" + format_extra +
            R"(,"driver":"raw","file":"libvirt-1-storage"})",
    };
    view.maps = kLibaio;
    view.fd_targets = {"/dev/null", "anon_inode:[eventfd]", "anon_inode:[signalfd]"};
    return view;
}

}  // namespace

TEST_CASE("QEMU process: aio from the engine in use, discard from both block nodes",
          "[qemu_process]") {
    const std::string discard = R"(,"discard":"unmap")";
    SECTION("native: a Linux AIO ring") {
        QemuProcessView view = process(R"(,"aio":"native")" + discard, discard);
        view.maps += kLinuxAioRing;
        const Result<Json> settings = qemu_process_disk_settings(view, "libvirt-1-format");
        INFO((settings.ok() ? settings->dump() : settings.error().message));
        REQUIRE(settings.ok());
        CHECK(settings->at("aio") == "native");
        CHECK(settings->at("discard") == true);
        CHECK(settings->at("pid") == 4242);
        CHECK(settings->at("sources").at("aio") ==
              "/proc/4242 maps and fds: native in use; -blockdev libvirt-1-storage aio=native");
    }
    SECTION("io_uring: an io_uring descriptor") {
        QemuProcessView view = process(R"(,"aio":"io_uring")", "");
        view.fd_targets.push_back("anon_inode:[io_uring]");
        const Result<Json> settings = qemu_process_disk_settings(view, "libvirt-1-format");
        REQUIRE(settings.ok());
        CHECK(settings->at("aio") == "io_uring");
        CHECK(settings->at("discard") == false);
    }
    SECTION("threads, and no aio option: QEMU's default") {
        CHECK(qemu_process_disk_settings(process(R"(,"aio":"threads")", ""), "libvirt-1-format")
                  ->at("aio") == "threads");
        CHECK(qemu_process_disk_settings(process("", ""), "libvirt-1-format")->at("aio") ==
              "default");
    }
    SECTION("discard on one node only is no discard") {
        CHECK(qemu_process_disk_settings(process(discard, ""), "libvirt-1-format")->at("discard") ==
              false);
        CHECK(qemu_process_disk_settings(process("", discard), "libvirt-1-format")->at("discard") ==
              false);
    }
}

TEST_CASE("QEMU process: the engine in use wins over the option it was given", "[qemu_process]") {
    // Asked for native, but no ring exists: the guest's I/O goes through the
    // thread pool, and that is what is reported.
    const Result<Json> settings =
        qemu_process_disk_settings(process(R"(,"aio":"native")", ""), "libvirt-1-format");
    REQUIRE(settings.ok());
    CHECK(settings->at("aio") == "threads");
    CHECK_THAT(settings->at("sources").at("aio").get<std::string>(), Catch::Contains("aio=native"));
    // Both engines at once cannot be told apart: an error, not a guess.
    QemuProcessView both = process(R"(,"aio":"native")", "");
    both.maps += kLinuxAioRing;
    both.fd_targets.push_back("anon_inode:[io_uring]");
    CHECK_FALSE(qemu_process_disk_settings(both, "libvirt-1-format").ok());
}

TEST_CASE("QEMU process: a node that is not there is an error naming it", "[qemu_process]") {
    const Result<Json> missing = qemu_process_disk_settings(process("", ""), "libvirt-9-format");
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.error().code == errc::kHypervisor);
    CHECK_THAT(missing.error().message, Catch::Contains("'libvirt-9-format'"));
    QemuProcessView garbled = process("", "");
    garbled.argv.back() = "{not json";
    CHECK_FALSE(qemu_process_disk_settings(garbled, "libvirt-1-format").ok());
}

TEST_CASE("QEMU process: none runs for an unknown guest", "[qemu_process]") {
    const Result<QemuProcessView> none = read_qemu_process("disksweep-no-such-guest-here");
    REQUIRE_FALSE(none.ok());
    CHECK(none.error().code == errc::kNotFound);
}

}  // namespace ds

namespace ds {

// A durability run's data disk (write_log_disk.h): format node, blklogwrites
// logger, volume node; aio is the volume node's, discard needs all three.
TEST_CASE("QEMU process: a logged disk is followed through its logger to the volume node",
          "[qemu_process][durability]") {
    auto logged = [](const std::string& logger_discard) {
        QemuProcessView view;
        view.pid = 7;
        view.argv = {
            "/usr/bin/qemu-system-x86_64",
            "-name",
            "guest=disksweep-abc-r9,debug-threads=on",
            "-blockdev",
            R"({"node-name":"disksweep-data-volume","driver":"file","filename":"/v/r9.img","discard":"unmap","aio":"native"})",
            "-blockdev",
            R"({"node-name":"disksweep-data-log","driver":"file","filename":"/d/write.log"})",
            "-blockdev",
            R"({"node-name":"disksweep-data-logger","driver":"blklogwrites","file":"disksweep-data-volume","log":"disksweep-data-log")" +
                logger_discard + "}",
            "-blockdev",
            R"({"node-name":"disksweep-data-format","driver":"raw","file":"disksweep-data-logger","discard":"unmap"})"};
        view.maps = kLinuxAioRing;
        return view;
    };
    const Result<Json> settings =
        qemu_process_disk_settings(logged(R"(,"discard":"unmap")"), "disksweep-data-format");
    INFO((settings.ok() ? settings->dump() : settings.error().message));
    REQUIRE(settings.ok());
    CHECK(settings->at("aio") == "native");
    CHECK(settings->at("discard") == true);
    CHECK(settings->at("sources").at("discard") ==
          "-blockdev disksweep-data-format, disksweep-data-logger, disksweep-data-volume discard");
    // A logger that drops discards stops them before the volume.
    CHECK(qemu_process_disk_settings(logged(""), "disksweep-data-format")->at("discard") == false);
}

}  // namespace ds
