#include "daemon/backends/hypervisor/libvirt/qemu_monitor.h"

#include <libvirt/libvirt-qemu.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>

#include "common/json_fields.h"
#include "common/protocol.h"

namespace ds {
namespace {

Error qmp_error(const std::string& what) {
    return make_error(errc::kHypervisor, "QEMU monitor: " + what);
}

Result<Json> run(const QmpTransport& qmp, std::string_view execute,
                 const Json& arguments = Json()) {
    const std::string command = qmp_command(execute, arguments);
    DS_ASSIGN_OR_RETURN(std::string reply, qmp(command));
    return qmp_return(command, reply);
}

Result<Json> qom_get(const QmpTransport& qmp, const std::string& path, std::string_view property) {
    return run(qmp, "qom-get", Json{{"path", path}, {"property", property}});
}

// The member `key` of `object` if it has JSON type `is_type`, else an error
// naming where it was looked for.
template <class Check>
Result<Json> member(const Json& object, const char* key, Check is_type, const std::string& where) {
    const auto found = object.is_object() ? object.find(key) : object.end();
    if (found == object.end() || !is_type(*found))
        return qmp_error(where + " has no usable '" + key + "'");
    return *found;
}

bool is_bool(const Json& value) {
    return value.is_boolean();
}
bool is_string(const Json& value) {
    return value.is_string();
}
bool is_count(const Json& value) {
    return value.is_number_unsigned() || (value.is_number_integer() && value.get<long long>() >= 0);
}

// The data disk among query-block's devices: its entry, identified by the
// serial of the guest device it is attached to (the root disk has another).
struct DataDisk {
    std::string qdev;
    Json inserted;
};

// The devices a QOM bus holds: its "child[N]" links (qom-list of the bus).
Result<int> devices_on_bus(const QmpTransport& qmp, const std::string& bus_path) {
    DS_ASSIGN_OR_RETURN(Json properties, run(qmp, "qom-list", Json{{"path", bus_path}}));
    if (!properties.is_array()) return qmp_error("qom-list " + bus_path + " did not return a list");
    int devices = 0;
    for (const Json& property : properties) {
        const std::string name = json_read::string_or_empty(property, "name");
        const std::string type = json_read::string_or_empty(property, "type");
        if (name.starts_with("child[") && type.starts_with("link<")) ++devices;
    }
    return devices;
}

Result<DataDisk> find_data_disk(const QmpTransport& qmp) {
    Result<Json> devices = run(qmp, "query-block");
    if (!devices.ok()) return devices.error();
    if (!devices->is_array()) return qmp_error("query-block did not return a list");
    std::string seen;
    for (const Json& device : *devices) {
        const std::string qdev = json_read::string_or_empty(device, "qdev");
        if (qdev.empty() || !device.contains("inserted")) continue;
        Result<Json> serial = qom_get(qmp, qdev, "serial");
        if (!serial.ok()) return serial.error();
        const std::string serial_text = serial->is_string() ? serial->get<std::string>() : "";
        if (serial_text == protocol::kDataDiskSerial) return DataDisk{qdev, device.at("inserted")};
        seen += " " + qdev + "(serial='" + serial_text + "')";
    }
    return qmp_error("no block device with serial " + std::string(protocol::kDataDiskSerial) +
                     "; devices:" + (seen.empty() ? " none" : seen));
}

// Whether `link` (a qom-get of an iothread link: "/objects/ID" or "") names
// an IO thread that query-iothreads lists.
Result<bool> iothread_in_use(const QmpTransport& qmp, const Json& link) {
    if (!link.is_string() || link.get<std::string>().empty()) return false;
    const std::string path = link.get<std::string>();
    const std::string id = path.substr(path.rfind('/') + 1);
    DS_ASSIGN_OR_RETURN(Json threads, run(qmp, "query-iothreads"));
    for (const Json& thread : threads.is_array() ? threads : Json::array()) {
        if (json_read::string_or_empty(thread, "id") == id) return true;
    }
    return qmp_error("the disk's IO thread " + path + " is not listed by query-iothreads");
}

// The controller device of a SCSI disk from its parent_bus,
// "/machine/peripheral/CONTROLLER/virtio-backend/CONTROLLER.0".
std::string controller_of_bus(const std::string& bus_path) {
    const std::string marker = "/virtio-backend/";
    const std::size_t at = bus_path.rfind(marker);
    return at == std::string::npos ? bus_path : bus_path.substr(0, at);
}

// scsi-single: the controller holds the data disk alone (a controller of
// its own); scsi: it shares it with other devices (the guest's root disk on
// the shared controller, see domain_xml.h). Read from QEMU's device tree,
// never from the controller's id, which is only the name libvirt was given.
std::string scsi_bus_name(int devices_on_controller) {
    return std::string(to_string(devices_on_controller == 1 ? Bus::kScsiSingle : Bus::kScsi));
}

// bus, ssd, iothread, queues and where each came from, for a virtio-blk disk.
Status read_virtio_blk(const QmpTransport& qmp, const std::string& qdev, Json& settings) {
    Result<Json> queues = qom_get(qmp, qdev, "num-queues");
    if (!queues.ok()) return queues.error();
    DS_ASSIGN_OR_RETURN(Json link, qom_get(qmp, qdev, "iothread"));
    Result<bool> iothread = iothread_in_use(qmp, link);
    if (!iothread.ok()) return iothread.error();
    settings["bus"] = std::string(to_string(Bus::kVirtioBlk));
    settings["ssd"] = false;  // virtio-blk has no rotation rate
    settings["iothread"] = *iothread;
    settings["queues"] = *queues;
    settings["sources"].update(Json{{"bus", "qom-get type"},
                                    {"ssd", "virtio-blk has no rotation_rate"},
                                    {"iothread", "qom-get iothread, query-iothreads"},
                                    {"queues", "qom-get num-queues"}});
    return ok_status();
}

// The same for a scsi-hd disk: the IO thread and queues are its controller's.
Status read_scsi_hd(const QmpTransport& qmp, const std::string& qdev, Json& settings) {
    DS_ASSIGN_OR_RETURN(Json rotation, qom_get(qmp, qdev, "rotation_rate"));
    Result<Json> bus = qom_get(qmp, qdev, "parent_bus");
    if (!bus.ok()) return bus.error();
    if (!bus->is_string()) return qmp_error("parent_bus of " + qdev + " is not a path");
    const std::string controller = controller_of_bus(bus->get<std::string>());
    DS_ASSIGN_OR_RETURN(const int devices, devices_on_bus(qmp, bus->get<std::string>()));
    Result<Json> queues = qom_get(qmp, controller, "num_queues");
    if (!queues.ok()) return queues.error();
    DS_ASSIGN_OR_RETURN(Json link, qom_get(qmp, controller, "iothread"));
    Result<bool> iothread = iothread_in_use(qmp, link);
    if (!iothread.ok()) return iothread.error();
    settings["bus"] = scsi_bus_name(devices);
    settings["devices_on_controller"] = devices;
    settings["controller"] = controller;
    settings["ssd"] = rotation == 1;
    settings["iothread"] = *iothread;
    settings["queues"] = *queues;
    settings["sources"].update(
        Json{{"bus", "qom-get parent_bus, qom-list of that bus: the devices on the controller"},
             {"ssd", "qom-get rotation_rate"},
             {"iothread", "qom-get iothread of the controller, query-iothreads"},
             {"queues", "qom-get num_queues of the controller"}});
    return ok_status();
}

// The same for a SATA (ide-hd) disk: no IO thread, no virtio queues.
Status read_ide_hd(const QmpTransport& qmp, const std::string& qdev, Json& settings) {
    DS_ASSIGN_OR_RETURN(Json rotation, qom_get(qmp, qdev, "rotation_rate"));
    settings["bus"] = std::string(to_string(Bus::kSata));
    settings["ssd"] = rotation == 1;
    settings["iothread"] = false;
    settings["sources"].update(Json{{"bus", "qom-get type"},
                                    {"ssd", "qom-get rotation_rate"},
                                    {"iothread", "ide-hd has no IO thread"}});
    return ok_status();
}

}  // namespace

QmpTransport libvirt_qmp_transport(_virDomain* domain) {
    return [domain](const std::string& command) -> Result<std::string> {
        char* reply = nullptr;
        if (virDomainQemuMonitorCommand(domain, command.c_str(), &reply,
                                        VIR_DOMAIN_QEMU_MONITOR_COMMAND_DEFAULT) < 0) {
            const char* message = virGetLastErrorMessage();
            Error error = qmp_error(command + ": " + (message != nullptr ? message : "failed"));
            virResetLastError();
            return error;
        }
        std::string text = reply != nullptr ? reply : "";
        std::free(reply);
        return text;
    };
}

std::string qmp_command(std::string_view execute, const Json& arguments) {
    Json command{{"execute", execute}};
    if (!arguments.is_null()) command["arguments"] = arguments;
    return command.dump();
}

Result<Json> qmp_return(const std::string& command, const std::string& reply) {
    const Json parsed = Json::parse(reply, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_discarded() || !parsed.is_object())
        return qmp_error(command + ": the reply is not a JSON object");
    if (const auto error = parsed.find("error"); error != parsed.end()) {
        const std::string error_class = json_read::string_or_empty(*error, "class");
        const std::string description = json_read::string_or_empty(*error, "desc");
        return qmp_error(command + ": " + error_class + ": " + description);
    }
    const auto result = parsed.find("return");
    if (result == parsed.end()) return qmp_error(command + ": the reply has no 'return'");
    return *result;
}

// The {direct, writeback, no-flush} flags of a block node's "cache" member.
Result<std::array<bool, 3>> cache_flags(const Json& node, const std::string& where) {
    Result<Json> cache = member(
        node, "cache", [](const Json& v) { return v.is_object(); }, where);
    if (!cache.ok()) return cache.error();
    std::array<bool, 3> flags{};
    const std::array<const char*, 3> names = {"direct", "writeback", "no-flush"};
    for (std::size_t i = 0; i < names.size(); ++i) {
        DS_ASSIGN_OR_RETURN(Json flag, member(*cache, names[i], is_bool, where + ".cache"));
        flags[i] = flag.get<bool>();
    }
    return flags;
}

// QEMU's protocol drivers: a device whose top node is one of these has no
// format layer over its storage, so the guest reads the bytes as they are,
// which is what image_format raw asks for. libvirt 9.0 always put a "raw"
// format node on top; later libvirt leaves it out where it adds nothing
// (libvirt commit 6eaf3614, "Stop using the 'raw' format driver in cases
// when it's not needed": libvirt 11.3 with QEMU 10.0 shows drv "file"). No
// libvirt version needs to be asked: either chain means raw, and any real
// format (qcow2) is its own driver name.
constexpr std::array<std::string_view, 5> kProtocolDrivers = {"file", "host_device", "rbd", "nbd",
                                                              "iscsi"};

// The image format a query-block "drv" stands for.
std::string image_format_of_driver(const std::string& driver) {
    const bool protocol = std::find(kProtocolDrivers.begin(), kProtocolDrivers.end(), driver) !=
                          kProtocolDrivers.end();
    return protocol ? "raw" : driver;
}

Result<Json> block_node_settings(const Json& inserted) {
    const std::string where = "query-block 'inserted'";
    DS_ASSIGN_OR_RETURN(const auto flags, cache_flags(inserted, where));
    Result<Json> detect_zeroes = member(inserted, "detect_zeroes", is_string, where);
    if (!detect_zeroes.ok()) return detect_zeroes.error();
    DS_ASSIGN_OR_RETURN(Json driver, member(inserted, "drv", is_string, where));
    Json settings{
        {"cache", cache_mode_from_flags(flags[0], flags[1], flags[2])},
        {"detect_zeroes", *detect_zeroes},
        {"image_format", image_format_of_driver(driver.get<std::string>())},
    };
    for (const auto& [ours, qemus] :
         {std::pair{"iops_limit", "iops"}, {"bandwidth_limit", "bps"}}) {
        DS_ASSIGN_OR_RETURN(Json limit, member(inserted, qemus, is_count, where));
        if (limit.get<std::uint64_t>() > 0) settings[ours] = limit;
    }
    // QEMU refuses detect-zeroes=unmap unless the node discards (unmap).
    if (*detect_zeroes == "unmap") settings["discard"] = true;
    return settings;
}

Result<Json> read_qemu_logged_disk_settings(const QmpTransport& qmp,
                                            const std::string& volume_node) {
    DS_ASSIGN_OR_RETURN(Json settings, read_qemu_disk_settings(qmp));
    DS_ASSIGN_OR_RETURN(DataDisk disk, find_data_disk(qmp));
    DS_ASSIGN_OR_RETURN(const auto device, cache_flags(disk.inserted, "query-block 'inserted'"));
    DS_ASSIGN_OR_RETURN(Json nodes, run(qmp, "query-named-block-nodes", Json{{"flat", true}}));
    for (const Json& node : nodes.is_array() ? nodes : Json::array()) {
        if (json_read::string_or_empty(node, "node-name") != volume_node) continue;
        const std::string where = "query-named-block-nodes " + volume_node;
        DS_ASSIGN_OR_RETURN(const auto volume, cache_flags(node, where));
        settings["cache"] = cache_mode_from_flags(volume[0], device[1], volume[2]);
        settings["sources"]["cache"] = "query-block cache.writeback (the device) and " + where +
                                       " cache.direct/no-flush (below the logger)";
        return settings;
    }
    return qmp_error("query-named-block-nodes lists no node '" + volume_node + "'");
}

Result<Json> read_qemu_disk_settings(const QmpTransport& qmp) {
    Result<DataDisk> disk = find_data_disk(qmp);
    if (!disk.ok()) return disk.error();
    DS_ASSIGN_OR_RETURN(Json settings, block_node_settings(disk->inserted));
    Json& result = settings;
    result["qdev"] = disk->qdev;
    result["node_name"] = json_read::string_or_empty(disk->inserted, "node-name");
    result["sources"] = Json{{"cache", "query-block cache.direct/writeback/no-flush"},
                             {"detect_zeroes", "query-block detect_zeroes"},
                             {"image_format",
                              "query-block drv (a protocol driver with no format node over it "
                              "is raw)"},
                             {"iops_limit", "query-block iops"},
                             {"bandwidth_limit", "query-block bps"},
                             {"discard", "query-block detect_zeroes unmap"}};
    DS_ASSIGN_OR_RETURN(Json type, qom_get(qmp, disk->qdev, "type"));
    const std::string device_type = type.is_string() ? type.get<std::string>() : "";
    Status read = ok_status();
    if (device_type == "virtio-blk-device") {
        read = read_virtio_blk(qmp, disk->qdev, result);
    } else if (device_type == "scsi-hd") {
        read = read_scsi_hd(qmp, disk->qdev, result);
    } else if (device_type == "ide-hd") {
        read = read_ide_hd(qmp, disk->qdev, result);
    } else {
        return qmp_error("the data disk is a '" + device_type +
                         "' device, not virtio-blk-device, scsi-hd or ide-hd");
    }
    if (!read.ok()) return read.error();
    return result;
}

Result<RunningGuest> read_qemu_accel(const QmpTransport& qmp) {
    DS_ASSIGN_OR_RETURN(Json kvm, run(qmp, "query-kvm"));
    DS_ASSIGN_OR_RETURN(Json enabled, member(kvm, "enabled", is_bool, "query-kvm"));
    RunningGuest guest;
    guest.accel = enabled.get<bool>() ? Accel::kKvm : Accel::kTcg;
    guest.accel_source = std::string("QEMU query-kvm: enabled=") +
                         (enabled.get<bool>() ? "true" : "false") +
                         (kvm.value("present", Json(false)) == true ? "" : ", KVM not present");
    return guest;
}

Result<Json> read_qemu_disk_counters(const QmpTransport& qmp) {
    DS_ASSIGN_OR_RETURN(DataDisk disk, find_data_disk(qmp));
    Result<Json> stats = run(qmp, "query-blockstats");
    if (!stats.ok()) return stats.error();
    for (const Json& entry : stats->is_array() ? *stats : Json::array()) {
        if (json_read::string_or_empty(entry, "qdev") != disk.qdev) continue;
        const Json counters =
            entry.is_object() && entry.contains("stats") ? entry.at("stats") : Json();
        Json result = Json::object();
        for (const auto& [ours, qemus] : {std::pair{"rd_bytes", "rd_bytes"},
                                          {"wr_bytes", "wr_bytes"},
                                          {"rd_operations", "rd_operations"},
                                          {"wr_operations", "wr_operations"},
                                          {"flush_operations", "flush_operations"},
                                          {"discard_operations", "unmap_operations"},
                                          {"discard_bytes", "unmap_bytes"}}) {
            DS_ASSIGN_OR_RETURN(Json value,
                                member(counters, qemus, is_count, "query-blockstats stats"));
            result[ours] = value;
        }
        return result;
    }
    return qmp_error("query-blockstats has no entry for " + disk.qdev);
}

}  // namespace ds
