#include "axes/fault_injection.h"

#include <array>
#include <chrono>
#include <iostream>

#include "common/process.h"
#include "common/protocol.h"
#include "common/text.h"

namespace ds::test {
namespace {

constexpr std::string_view kQemuNamespace = "http://libvirt.org/schemas/domain/qemu/1.0";
// The user alias the cache fault gives the data disk, for <qemu:override>.
constexpr std::string_view kDataDiskAlias = "ua-disksweep-injected-data";
// libvirt names a virtio-scsi controller's bus after the controller's alias.
constexpr std::string_view kDataControllerBus = "ua-disksweep-scsi-data.0";

// `xml` with `text` inserted before the first `anchor`; unchanged when there
// is none (the run then shows no fault, and the tier's assertion fails).
std::string insert_before(std::string xml, std::string_view anchor, std::string_view text) {
    const std::size_t at = xml.find(anchor);
    if (at != std::string::npos) xml.insert(at, text);
    return xml;
}

// The qemu: namespace on <domain>, which libvirt needs for its qemu: elements.
std::string with_qemu_namespace(std::string xml) {
    if (xml.find(kQemuNamespace) != std::string::npos) return xml;
    return insert_before(std::move(xml),
                         " type=", " xmlns:qemu='" + std::string(kQemuNamespace) + "'");
}

bool write_through_to_guest(const StorageConfig& requested) {
    return requested.cache == CacheMode::kWritethrough || requested.cache == CacheMode::kDirectsync;
}

std::string device_write_cache_on(std::string xml) {
    const std::string serial = "<serial>" + std::string(protocol::kDataDiskSerial) + "</serial>";
    xml = insert_before(std::move(xml), serial,
                        "<alias name='" + std::string(kDataDiskAlias) + "'/>\n      ");
    xml = insert_before(std::move(xml), "</domain>",
                        "  <qemu:override>\n"
                        "    <qemu:device alias='" +
                            std::string(kDataDiskAlias) +
                            "'>\n"
                            "      <qemu:frontend>\n"
                            "        <qemu:property name='write-cache' type='string' "
                            "value='on'/>\n"
                            "      </qemu:frontend>\n"
                            "    </qemu:device>\n"
                            "  </qemu:override>\n");
    return with_qemu_namespace(std::move(xml));
}

// A durability run's logged data disk (write_log_disk.h) is on QEMU's
// command line, not a <disk>: its volume node, below the logger, gets
// cache.no-flush, so QEMU drops the guest's flushes as under cache=unsafe
// while the run asked for a mode that keeps them. The domain XML has no
// <disk> to show it; QEMU's named block nodes do.
bool honours_flushes(const StorageConfig& requested) {
    return requested.cache != CacheMode::kUnsafe;
}

std::string logged_volume_drops_flushes(std::string xml) {
    const std::string node = "&quot;node-name&quot;:&quot;disksweep-data-volume&quot;";
    const std::string keeps = "&quot;no-flush&quot;:false";
    const std::size_t at = xml.find(node);
    if (at == std::string::npos) return xml;
    const std::size_t arg_start = xml.rfind("<qemu:arg", at);
    const std::size_t flag = xml.find(keeps, arg_start);
    if (arg_start != std::string::npos && flag != std::string::npos && flag < xml.find("/>", at))
        xml.replace(flag, keeps.size(), "&quot;no-flush&quot;:true");
    return xml;
}

bool discard_requested(const StorageConfig& requested) {
    return requested.discard;
}

std::string discard_ignored(std::string xml) {
    const std::string_view unmap = "discard='unmap'";
    const std::size_t at = xml.find(unmap);
    if (at != std::string::npos) xml.replace(at, unmap.size(), "discard='ignore'");
    return xml;
}

bool own_scsi_controller(const StorageConfig& requested) {
    return requested.bus == Bus::kScsiSingle;
}

std::string second_disk_on_controller(std::string xml) {
    const std::string blockdev =
        R"({"driver":"null-co","node-name":"disksweep-injected","size":67108864,"read-zeroes":true})";
    const std::string device = R"({"driver":"scsi-hd","bus":")" + std::string(kDataControllerBus) +
                               R"(","scsi-id":2,"lun":0,"drive":"disksweep-injected",)"
                               R"("id":"disksweep-injected","serial":"disksweep-injected"})";
    std::string arguments = "  <qemu:commandline>\n";
    for (const std::string& argument :
         {std::string("-blockdev"), blockdev, std::string("-device"), device}) {
        arguments += "    <qemu:arg value='" + argument + "'/>\n";
    }
    arguments += "  </qemu:commandline>\n";
    xml = insert_before(std::move(xml), "</domain>", arguments);
    return with_qemu_namespace(std::move(xml));
}

bool ext4_on_file(const StorageConfig& requested) {
    return requested.storage == "file" && requested.filesystem.type == "ext4";
}

// The data disk's file (its <source file='...'> before its serial): made a
// btrfs on the host before QEMU opens it. xml unchanged.
std::string data_disk_made_btrfs(std::string xml) {
    const std::size_t serial =
        xml.find("<serial>" + std::string(protocol::kDataDiskSerial) + "</serial>");
    const std::string_view open = "<source file='";
    const std::size_t source = serial == std::string::npos ? serial : xml.rfind(open, serial);
    if (source == std::string::npos) return xml;
    const std::size_t start = source + open.size();
    const std::string path = xml.substr(start, xml.find('\'', start) - start);
    RealProcessRunner runner;
    // btrfs, not xfs: xfsprogs 6 makes nothing below 300 MiB.
    const Status made =
        run_checked(runner, {"mkfs.btrfs", "-f", "-q", path}, std::chrono::seconds(60));
    if (!made.ok()) std::cerr << "golden_fs fault: " << made.error().message << std::endl;
    return xml;
}

const std::array kFaults = {
    InjectedFault{"cache", "device write-cache=on under a write-through cache mode",
                  write_through_to_guest, device_write_cache_on},
    InjectedFault{"discard", "discard='ignore' instead of 'unmap'", discard_requested,
                  discard_ignored},
    InjectedFault{"bus", "a second disk on the scsi-single disk's own controller",
                  own_scsi_controller, second_disk_on_controller},
    InjectedFault{"golden_fs", "the data disk made a btrfs on the host before QEMU opens it",
                  ext4_on_file, data_disk_made_btrfs},
    InjectedFault{"logged_no_flush",
                  "cache.no-flush on a logged data disk's volume node, below the logger",
                  honours_flushes, logged_volume_drops_flushes},
};

}  // namespace

std::span<const InjectedFault> injected_faults() {
    return kFaults;
}

Result<std::vector<const InjectedFault*>> parse_fault_list(std::string_view list) {
    std::vector<const InjectedFault*> faults;
    for (const std::string& name : split_list(list, ',')) {
        const InjectedFault* found = nullptr;
        for (const InjectedFault& fault : kFaults) {
            if (fault.name == name) found = &fault;
        }
        if (found == nullptr) {
            return make_error(errc::kInvalidArgument, "unknown fault '" + name + "' (known: " +
                                                          join(kFaults, ", ",
                                                               [](const InjectedFault& fault) {
                                                                   return std::string(fault.name);
                                                               }) +
                                                          ")");
        }
        faults.push_back(found);
    }
    return faults;
}

}  // namespace ds::test
