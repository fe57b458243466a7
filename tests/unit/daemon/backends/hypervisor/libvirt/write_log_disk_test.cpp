#include "daemon/backends/hypervisor/libvirt/write_log_disk.h"

#include <catch2/catch.hpp>
#include <map>

#include "common/protocol.h"
#include "daemon/backends/hypervisor/libvirt/domain_xml.h"

namespace ds {
namespace {

// The -blockdev nodes and the -device of the arguments, parsed back.
struct Graph {
    std::map<std::string, Json> nodes;  // by node-name
    Json device;
};

Graph graph_of(const std::vector<std::string>& args) {
    Graph graph;
    REQUIRE(args.size() == 10);
    for (std::size_t i = 0; i + 1 < args.size(); i += 2) {
        const Json value = Json::parse(args[i + 1]);
        if (args[i] == "-blockdev") {
            graph.nodes[value.at("node-name").get<std::string>()] = value;
        } else {
            REQUIRE(args[i] == "-device");
            graph.device = value;
        }
    }
    return graph;
}

Graph graph_for(const StorageConfig& config, const DiskSource& source = FileDisk{"/v/data.img"}) {
    return graph_of(write_log_disk_args(config, source, "/v/data.log"));
}

const Json& node(const Graph& graph, std::string_view name) {
    return graph.nodes.at(std::string(name));
}

}  // namespace

TEST_CASE("write log: the logger sits between the format node and the volume", "[write_log_disk]") {
    StorageConfig config;
    const Graph graph = graph_for(config);
    const Json& logger = node(graph, kLoggerNode);
    CHECK(logger.at("driver") == "blklogwrites");
    CHECK(logger.at("file") == kLoggedVolumeNode);
    CHECK(logger.at("log") == kWriteLogNode);
    CHECK(logger.at("log-super-update-interval") == 1);
    CHECK(logger.at("log-sector-size") == 512);
    CHECK(node(graph, kLoggedFormatNode).at("file") == kLoggerNode);
    CHECK(node(graph, kLoggedFormatNode).at("driver") == "raw");
    CHECK(node(graph, kLoggedVolumeNode).at("filename") == "/v/data.img");
    CHECK(node(graph, kWriteLogNode).at("filename") == "/v/data.log");
    CHECK(graph.device.at("drive") == kLoggedFormatNode);
    CHECK(graph.device.at("serial") == protocol::kDataDiskSerial);
}

TEST_CASE("write log: no-flush only below the logger, for unsafe on the volume",
          "[write_log_disk]") {
    StorageConfig config;
    for (CacheMode cache : {CacheMode::kNone, CacheMode::kWriteback, CacheMode::kWritethrough,
                            CacheMode::kDirectsync, CacheMode::kUnsafe}) {
        config.cache = cache;
        const Graph graph = graph_for(config);
        INFO(to_string(cache));
        CHECK(node(graph, kLoggerNode).at("cache").at("no-flush") == false);
        CHECK(node(graph, kLoggedFormatNode).at("cache").at("no-flush") == false);
        CHECK(node(graph, kLoggedVolumeNode).at("cache").at("no-flush") ==
              (cache == CacheMode::kUnsafe));
        CHECK(node(graph, kWriteLogNode).at("cache").at("no-flush") == true);
        const bool direct = cache == CacheMode::kNone || cache == CacheMode::kDirectsync;
        CHECK(node(graph, kLoggedVolumeNode).at("cache").at("direct") == direct);
        const bool writeback = cache != CacheMode::kWritethrough && cache != CacheMode::kDirectsync;
        CHECK(graph.device.at("write-cache") == (writeback ? "on" : "off"));
    }
}

TEST_CASE("write log: the device keeps the bus, IO thread, queues and SSD asked for",
          "[write_log_disk]") {
    StorageConfig config;
    config.bus = Bus::kVirtioBlk;
    config.iothread = true;
    config.queues = 2;
    Graph graph = graph_for(config);
    CHECK(graph.device.at("driver") == "virtio-blk-pci");
    CHECK(graph.device.at("iothread") == "iothread1");
    CHECK(graph.device.at("num-queues") == 2);

    config.bus = Bus::kScsiSingle;
    config.ssd = true;
    graph = graph_for(config);
    CHECK(graph.device.at("driver") == "scsi-hd");
    CHECK(graph.device.at("bus") == std::string(kDataDiskScsiControllerAlias) + ".0");
    CHECK(graph.device.at("rotation_rate") == 1);
    config.bus = Bus::kScsi;
    CHECK(graph_for(config).device.at("bus") == std::string(kSharedScsiControllerAlias) + ".0");

    config.bus = Bus::kSata;
    graph = graph_for(config);
    CHECK(graph.device.at("driver") == "ide-hd");
    CHECK(graph.device.at("bus") == "ide.0");
}

TEST_CASE("write log: the volume's kind, format, aio, discard and detect-zeroes",
          "[write_log_disk]") {
    StorageConfig config;
    config.aio = AioMode::kNative;
    config.discard = true;
    config.detect_zeroes = DetectZeroes::kUnmap;
    Graph graph = graph_for(config, FileDisk{"/v/data.qcow2", ImageFormat::kQcow2});
    CHECK(node(graph, kLoggedFormatNode).at("driver") == "qcow2");
    CHECK(node(graph, kLoggedFormatNode).at("detect-zeroes") == "unmap");
    CHECK(node(graph, kLoggedVolumeNode).at("aio") == "native");
    for (const auto& [name, blockdev] : graph.nodes) {
        if (name != kWriteLogNode) CHECK(blockdev.at("discard") == "unmap");
    }
    graph = graph_for(StorageConfig{}, BlockDisk{"/dev/loop7"});
    CHECK(node(graph, kLoggedVolumeNode).at("driver") == "host_device");
    CHECK(node(graph, kLoggedVolumeNode).at("filename") == "/dev/loop7");
    CHECK_FALSE(node(graph, kLoggedVolumeNode).contains("aio"));
}

TEST_CASE("write log: what cannot be logged says why", "[write_log_disk]") {
    StorageConfig config;
    CHECK(write_log_unsupported_reason(config, FileDisk{"/v/a.img"}).empty());
    CHECK(write_log_unsupported_reason(config, BlockDisk{"/dev/loop0"}).empty());
    CHECK_THAT(write_log_unsupported_reason(config, RbdDisk{}), Catch::Contains("not rbd"));
    config.iops_limit = 100;
    CHECK_THAT(write_log_unsupported_reason(config, FileDisk{"/v/a.img"}),
               Catch::Contains("I/O limits"));
}

TEST_CASE("domain XML: a logged data disk is QEMU's own graph, not a libvirt <disk>",
          "[write_log_disk][domain_xml]") {
    VmRequest request;
    request.name = "disksweep-test-1";
    request.data_disk = FileDisk{"/v/data.img", ImageFormat::kRaw};
    request.image = {"/images/vmlinuz", "/images/initrd.img", "/images/root.img"};
    const std::string plain = build_domain_xml(request, LocalGuestFiles{"/run/x"});
    CHECK(plain.find("qemu:commandline") == std::string::npos);

    request.write_log_path = "/v/data.log";
    const std::string xml = build_domain_xml(request, LocalGuestFiles{"/run/x"});
    CHECK(xml.find("xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'") != std::string::npos);
    CHECK(xml.find("<serial>" + std::string(protocol::kDataDiskSerial)) == std::string::npos);
    CHECK(xml.find("/v/data.img") != std::string::npos);
    CHECK(xml.find("<qemu:arg value='-blockdev'/>") != std::string::npos);
    CHECK(xml.find("&quot;driver&quot;:&quot;blklogwrites&quot;") != std::string::npos);
    // The root disk stays a libvirt disk.
    CHECK(xml.find("<serial>" + std::string(protocol::kRootDiskSerial)) != std::string::npos);
    CHECK_FALSE(parse_applied_disk_settings(xml).ok());
}

}  // namespace ds
