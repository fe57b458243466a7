// QEMU's own view of the data disk, from QMP replies recorded on this host's
// QEMU 7.2 under libvirt 9.0's embedded driver (tests/data/qmp/:
// each file maps the exact command text to QEMU's reply).
#include "daemon/backends/hypervisor/libvirt/qemu_monitor.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "support/test_data.h"

namespace ds {
namespace {

const std::filesystem::path kRecordings = test::test_data_dir() / "qmp";

// A transport that answers from a recording; a command not recorded is an
// error (so a test notices when the code asks something new).
QmpTransport replay(const std::string& recording) {
    std::ifstream in(kRecordings / (recording + ".json"));
    const Json replies = Json::parse(in, nullptr, false);
    REQUIRE(replies.is_object());
    return [replies](const std::string& command) -> Result<std::string> {
        if (!replies.contains(command))
            return make_error(errc::kHypervisor, "not recorded: " + command);
        return replies.at(command).get<std::string>();
    };
}

// The settings without the informational keys.
Json settings_of(const std::string& recording) {
    Result<Json> settings = read_qemu_disk_settings(replay(recording));
    INFO((settings.ok() ? "" : settings.error().message));
    REQUIRE(settings.ok());
    Json result = *settings;
    CHECK(result.at("sources").is_object());
    for (const char* key : {"sources", "qdev", "node_name", "controller", "devices_on_controller"})
        result.erase(key);
    return result;
}

}  // namespace

TEST_CASE("QEMU read-back: scsi-single, IO thread, ssd, unsafe, throttled, 2 queues",
          "[qemu_monitor]") {
    // Requested: scsi-single iothread ssd discard=unmap cache=unsafe aio=io_uring
    // detect_zeroes=unmap, 500 IOPS, 8 MiB/s, queues=2.
    CHECK(settings_of("scsi-single-iothread-ssd-unsafe-throttled-queues2") ==
          Json{{"bus", "scsi-single"},
               {"cache", "unsafe"},
               {"detect_zeroes", "unmap"},
               {"discard", true},
               {"image_format", "raw"},
               {"ssd", true},
               {"iothread", true},
               {"queues", 2},
               {"iops_limit", 500},
               {"bandwidth_limit", 8388608}});
}

TEST_CASE("QEMU read-back: virtio-blk with IO thread and 4 queues, cache none", "[qemu_monitor]") {
    // Requested: virtio-blk iothread queues=4 cache=none aio=native detect_zeroes=on.
    CHECK(settings_of("virtio-blk-iothread-none-queues4") == Json{{"bus", "virtio-blk"},
                                                                  {"cache", "none"},
                                                                  {"detect_zeroes", "on"},
                                                                  {"image_format", "raw"},
                                                                  {"ssd", false},
                                                                  {"iothread", true},
                                                                  {"queues", 4}});
}

TEST_CASE("QEMU read-back: the shared SCSI controller and SATA", "[qemu_monitor]") {
    // scsi (shared controller), cache=writethrough, no IO thread: QEMU's own
    // queue count (one per vCPU, 2) is reported though none was requested.
    CHECK(settings_of("scsi-shared-writethrough") == Json{{"bus", "scsi"},
                                                          {"cache", "writethrough"},
                                                          {"detect_zeroes", "off"},
                                                          {"image_format", "raw"},
                                                          {"ssd", false},
                                                          {"iothread", false},
                                                          {"queues", 2}});
    // sata, ssd, cache=directsync, 1 MiB/s.
    CHECK(settings_of("sata-ssd-directsync-bps1m") == Json{{"bus", "sata"},
                                                           {"cache", "directsync"},
                                                           {"detect_zeroes", "off"},
                                                           {"image_format", "raw"},
                                                           {"ssd", true},
                                                           {"iothread", false},
                                                           {"bandwidth_limit", 1048576}});
}

TEST_CASE("QEMU read-back: the controller a SCSI disk sits on", "[qemu_monitor]") {
    Result<Json> single =
        read_qemu_disk_settings(replay("scsi-single-iothread-ssd-unsafe-throttled-queues2"));
    REQUIRE(single.ok());
    CHECK(single->at("controller") == "/machine/peripheral/ua-disksweep-scsi-data");
    CHECK(single->at("qdev") == "scsi0-0-0-0");
    Result<Json> shared = read_qemu_disk_settings(replay("scsi-shared-writethrough"));
    REQUIRE(shared.ok());
    CHECK(shared->at("controller") == "/machine/peripheral/ua-disksweep-scsi-shared");
}

// The qom-list replies of the controllers' buses were added to the
// recordings by hand, in the form QEMU 7.2.22 gives (a bus's devices are its
// "child[N]" links): the shared controller holds the root disk too.
TEST_CASE("QEMU read-back: scsi or scsi-single from the devices on the controller, not its id",
          "[qemu_monitor]") {
    Result<Json> single =
        read_qemu_disk_settings(replay("scsi-single-iothread-ssd-unsafe-throttled-queues2"));
    REQUIRE(single.ok());
    CHECK(single->at("devices_on_controller") == 1);
    CHECK(single->at("node_name") == "libvirt-1-format");
    Result<Json> shared = read_qemu_disk_settings(replay("scsi-shared-writethrough"));
    REQUIRE(shared.ok());
    CHECK(shared->at("devices_on_controller") == 2);
    CHECK(shared->at("bus") == "scsi");

    // The data disk's own controller with a second device on it is shared,
    // whatever its id says (the axes tier's injected bus fault).
    const QmpTransport recorded = replay("scsi-single-iothread-ssd-unsafe-throttled-queues2");
    const QmpTransport second_device = [&](const std::string& command) -> Result<std::string> {
        if (command.find("qom-list") == std::string::npos) return recorded(command);
        return std::string(
            R"({"return":[{"name":"type","type":"string"},{"name":"child[0]","type":"link<scsi-hd>"},)"
            R"({"name":"child[1]","type":"link<scsi-hd>"}]})");
    };
    Result<Json> injected = read_qemu_disk_settings(second_device);
    REQUIRE(injected.ok());
    CHECK(injected->at("bus") == "scsi");
    CHECK(injected->at("controller") == "/machine/peripheral/ua-disksweep-scsi-data");
}

TEST_CASE("QEMU's acceleration from query-kvm", "[qemu_monitor]") {
    const auto answering = [](std::string reply) -> QmpTransport {
        return [reply](const std::string& command) -> Result<std::string> {
            CHECK(command == R"({"execute":"query-kvm"})");
            return reply;
        };
    };
    // As QEMU 7.2.22 answered here for a TCG guest (/dev/kvm present).
    Result<RunningGuest> tcg =
        read_qemu_accel(answering(R"({"return":{"enabled":false,"present":true}})"));
    REQUIRE(tcg.ok());
    CHECK(tcg->accel == Accel::kTcg);
    CHECK(tcg->accel_source == "QEMU query-kvm: enabled=false");
    Result<RunningGuest> kvm =
        read_qemu_accel(answering(R"({"return":{"enabled":true,"present":true}})"));
    REQUIRE(kvm.ok());
    CHECK(kvm->accel == Accel::kKvm);
    CHECK_FALSE(read_qemu_accel(answering(R"({"return":{"present":true}})")).ok());
    CHECK_FALSE(read_qemu_accel(answering(R"({"return":{"enabled":"yes"}})")).ok());
}

TEST_CASE("cache mode from QEMU's three flags", "[qemu_monitor]") {
    CHECK(cache_mode_from_flags(true, true, false) == "none");
    CHECK(cache_mode_from_flags(false, true, false) == "writeback");
    CHECK(cache_mode_from_flags(false, false, false) == "writethrough");
    CHECK(cache_mode_from_flags(true, false, false) == "directsync");
    CHECK(cache_mode_from_flags(false, true, true) == "unsafe");
    CHECK(cache_mode_from_flags(true, true, true) == "direct=on,writeback=on,no-flush=on");
}

TEST_CASE("QMP replies: errors are values naming the command", "[qemu_monitor]") {
    const std::string command = qmp_command("qom-get", Json{{"path", "x"}, {"property", "y"}});
    CHECK(command == R"({"arguments":{"path":"x","property":"y"},"execute":"qom-get"})");
    CHECK(qmp_command("query-block") == R"({"execute":"query-block"})");
    const Result<Json> error = qmp_return(
        command,
        R"({"id":"libvirt-1","error":{"class":"DeviceNotFound","desc":"Device 'x' not found"}})");
    REQUIRE_FALSE(error.ok());
    CHECK(error.error().code == errc::kHypervisor);
    CHECK(error.error().message ==
          "QEMU monitor: " + command + ": DeviceNotFound: Device 'x' not found");
    CHECK_FALSE(qmp_return(command, "not json").ok());
    CHECK_FALSE(qmp_return(command, R"({"id":"libvirt-1"})").ok());
    CHECK(*qmp_return(command, R"({"return":7,"id":"libvirt-1"})") == 7);
}

TEST_CASE("QMP read-back never throws on malformed replies", "[qemu_monitor]") {
    for (const std::string reply :
         {R"({"return":[{"qdev":5,"inserted":{}}]})", R"({"return":[{"qdev":"a","inserted":[]}]})",
          R"({"return":{"qdev":"a"}})", R"({"return":"x"})"}) {
        const QmpTransport qmp = [&](const std::string&) -> Result<std::string> { return reply; };
        INFO(reply);
        CHECK_FALSE(read_qemu_disk_settings(qmp).ok());
        CHECK_FALSE(read_qemu_disk_counters(qmp).ok());
    }
    CHECK_FALSE(block_node_settings(Json{{"cache", {{"direct", "yes"}}}}).ok());
}

TEST_CASE("QEMU disk counters of the data disk", "[qemu_monitor]") {
    Result<Json> counters = read_qemu_disk_counters(replay("virtio-blk-iothread-none-queues4"));
    INFO((counters.ok() ? "" : counters.error().message));
    REQUIRE(counters.ok());
    for (const char* key : {"rd_bytes", "wr_bytes", "rd_operations", "wr_operations",
                            "flush_operations", "discard_operations", "discard_bytes"}) {
        INFO(key);
        CHECK(counters->at(key).is_number_unsigned());
    }
}

}  // namespace ds

namespace ds {

TEST_CASE("QEMU read-back: a raw disk with no format node (libvirt 11) is raw, qcow2 stays qcow2",
          "[qemu_monitor]") {
    // libvirt 11.3 with QEMU 10.0 puts no "raw" node over the file: the
    // device's top node is the protocol node itself (drv "file").
    std::ifstream in(kRecordings / "virtio-blk-iothread-none-queues4.json");
    const Json replies = Json::parse(in);
    for (const auto& [driver, format] :
         {std::pair{"file", "raw"}, {"host_device", "raw"}, {"qcow2", "qcow2"}}) {
        Json edited = replies;
        for (auto& [asked, reply] : edited.items()) {
            if (asked.find("query-block") == std::string::npos) continue;
            Json parsed = Json::parse(reply.get<std::string>());
            for (Json& device : parsed["return"]) {
                if (device.contains("inserted")) device["inserted"]["drv"] = driver;
            }
            reply = parsed.dump();
        }
        QmpTransport transport = [edited](const std::string& asked) -> Result<std::string> {
            if (!edited.contains(asked)) return make_error(errc::kHypervisor, "not recorded");
            return edited.at(asked).get<std::string>();
        };
        Result<Json> settings = read_qemu_disk_settings(transport);
        INFO(driver);
        REQUIRE(settings.ok());
        CHECK(settings->at("image_format") == format);
    }
}

}  // namespace ds
