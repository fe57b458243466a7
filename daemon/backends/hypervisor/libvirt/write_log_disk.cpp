#include "daemon/backends/hypervisor/libvirt/write_log_disk.h"

#include <vector>

#include "common/protocol.h"
#include "common/text.h"
#include "daemon/backends/hypervisor/libvirt/domain_xml.h"
#include "daemon/backends/hypervisor/qemu_block.h"
#include "daemon/durability/log_writes.h"

namespace ds {
namespace {

std::string str(std::string_view view) {
    return std::string(view);
}

std::string discard_option(const StorageConfig& config) {
    return config.discard ? "unmap" : "ignore";
}

// The volume's own node: the protocol driver of its kind. Of the cache
// flags only here does no-flush belong (below the logger, see the header).
Json volume_node(const StorageConfig& config, const DiskSource& source) {
    const QemuCacheFlags cache = qemu_cache_flags(config.cache);
    // Another kind of volume (refused by write_log_unsupported_reason) gets
    // an empty file name, for QEMU to refuse.
    const auto* block_disk = std::get_if<BlockDisk>(&source);
    const auto* file_disk = std::get_if<FileDisk>(&source);
    const bool block = block_disk != nullptr;
    const std::string path = block ? block_disk->path : file_disk ? file_disk->path : "";
    Json node{{"node-name", str(kLoggedVolumeNode)},
              {"driver", block ? "host_device" : "file"},
              {"filename", path},
              {"discard", discard_option(config)},
              {"cache", {{"direct", cache.direct}, {"no-flush", cache.no_flush}}}};
    if (config.aio != AioMode::kDefault) node["aio"] = str(to_string(config.aio));
    return node;
}

// The log file's node. no-flush: QEMU fsyncs the log after every super
// block update (every entry at interval 1), which would only slow the
// guest; the log is read after QEMU wrote it, not after a host crash.
Json log_node(const std::string& log_path) {
    return Json{{"node-name", str(kWriteLogNode)},
                {"driver", "file"},
                {"filename", log_path},
                {"cache", {{"direct", false}, {"no-flush", true}}}};
}

// The logger: never no-flush (QEMU would then skip its flush handler and
// log no FLUSH entry), the super block rewritten after every entry so the
// log can be read while the guest runs.
Json logger_node(const StorageConfig& config) {
    return Json{{"node-name", str(kLoggerNode)},
                {"driver", "blklogwrites"},
                {"file", str(kLoggedVolumeNode)},
                {"log", str(kWriteLogNode)},
                {"log-sector-size", durability::log_format::kRunSectorSize},
                {"log-super-update-interval", 1},
                {"discard", discard_option(config)},
                {"cache", {{"no-flush", false}}}};
}

// The format node the guest device attaches to: detect-zeroes and discard
// as asked, cache.direct as the mode says, no no-flush (above the logger).
Json format_node(const StorageConfig& config, ImageFormat format) {
    return Json{
        {"node-name", str(kLoggedFormatNode)},
        {"driver", str(to_string(format))},
        {"file", str(kLoggerNode)},
        {"discard", discard_option(config)},
        {"detect-zeroes", str(to_string(config.detect_zeroes))},
        {"cache", {{"direct", qemu_cache_flags(config.cache).direct}, {"no-flush", false}}}};
}

// The guest device, on the bus the configuration asks for, where libvirt
// would have put the data disk: a SCSI disk on the controller
// build_domain_xml writes (its alias is its QEMU id), SATA on q35's
// built-in AHCI ("ide"), virtio-blk on the IO thread libvirt names
// "iothread1".
Json device(const StorageConfig& config) {
    const bool scsi = config.bus == Bus::kScsi || config.bus == Bus::kScsiSingle;
    Json device{{"id", str(kLoggedDeviceId)},
                {"drive", str(kLoggedFormatNode)},
                {"serial", str(protocol::kDataDiskSerial)},
                {"write-cache", qemu_cache_flags(config.cache).writeback ? "on" : "off"}};
    if (config.bus == Bus::kVirtioBlk) {
        device["driver"] = "virtio-blk-pci";
        if (config.iothread) device["iothread"] = "iothread1";
        if (config.queues) device["num-queues"] = *config.queues;
        return device;
    }
    device["driver"] = scsi ? "scsi-hd" : "ide-hd";
    const std::string_view controller =
        config.bus == Bus::kScsi ? kSharedScsiControllerAlias : kDataDiskScsiControllerAlias;
    device["bus"] = scsi ? str(controller) + ".0" : "ide.0";
    if (scsi) device.update(Json{{"channel", 0}, {"scsi-id", 0}, {"lun", 0}});
    if (config.ssd) device["rotation_rate"] = 1;
    return device;
}

ImageFormat format_of(const DiskSource& source) {
    const auto* file = std::get_if<FileDisk>(&source);
    return file != nullptr ? file->format : ImageFormat::kRaw;
}

}  // namespace

std::string write_log_unsupported_reason(const StorageConfig& config, const DiskSource& source) {
    std::vector<std::string> reasons;
    if (!std::holds_alternative<FileDisk>(source) && !std::holds_alternative<BlockDisk>(source)) {
        reasons.push_back("the write log is attached to file and block volumes only, not " +
                          str(to_string(kind_of(source))));
    }
    if (config.iops_limit || config.bandwidth_limit) {
        reasons.push_back("I/O limits: libvirt throttles its own disks only, not a logged one");
    }
    return join(reasons, "; ");
}

std::vector<std::string> write_log_disk_args(const StorageConfig& config, const DiskSource& source,
                                             const std::string& log_path) {
    // QEMU opens -blockdev nodes in order, so each names only nodes before it.
    const Json nodes[] = {volume_node(config, source), log_node(log_path), logger_node(config),
                          format_node(config, format_of(source))};
    std::vector<std::string> args;
    for (const Json& node : nodes) {
        args.push_back("-blockdev");
        args.push_back(node.dump());
    }
    args.push_back("-device");
    args.push_back(device(config).dump());
    return args;
}

}  // namespace ds
