// The data disk as QEMU itself has it, read through QMP (libvirt's
// virDomainQemuMonitorCommand): the second level of the settings check, below
// the domain XML that libvirt keeps and above what the guest sees.
//
// Everything here is pure over a QmpTransport, so unit tests replay replies
// recorded from this host's QEMU 7.2 (tests/data/qmp/).
//
// What QEMU 7.2 exposes, and what it does not (checked on this host):
//  * query-block "inserted" (BlockDeviceInfo): cache.{direct,writeback,
//    no-flush}, detect_zeroes, the format driver (drv), the throttle values
//    iops and bps (0 = unthrottled). It has no discard and no aio member (nor
//    has query-named-block-nodes), so neither can be read back from QEMU;
//    only detect_zeroes "unmap" implies discard=unmap (QEMU refuses one
//    without the other).
//  * query-block's node-name: the data disk's top (format) node, whose own
//    open options (aio, discard) the QEMU process shows (qemu_process.h).
//  * qom-get on the guest device (query-block's "qdev"): serial, type
//    (virtio-blk-device, scsi-hd, ide-hd), rotation_rate (scsi-hd, ide-hd),
//    num-queues and iothread (virtio-blk), parent_bus (scsi-hd: the bus of
//    the virtio-scsi controller, whose num_queues and iothread are read
//    next, and whose devices qom-list shows as its child[N] links).
//  * query-kvm: whether QEMU runs the guest with KVM.
//  * query-iothreads: the IO threads that exist; an iothread link must name
//    one of them.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "common/settings.h"
#include "daemon/backends/hypervisor/hypervisor.h"
#include "daemon/backends/hypervisor/qemu_block.h"

// libvirt's domain handle, without pulling libvirt's headers into ours.
struct _virDomain;

namespace ds {

// Sends one QMP command (JSON text) to the guest's QEMU and returns the raw
// reply text ({"return": ...} or {"error": ...}); an error only when the
// command could not be sent.
using QmpTransport = std::function<Result<std::string>(const std::string& command)>;

// The transport of a running libvirt domain: virDomainQemuMonitorCommand
// (libvirt-qemu), which works with libvirt's embedded driver too, on the
// domains the process itself runs. libvirt marks such a domain "tainted:
// custom-monitor" (a log line, nothing else changes). `domain` must outlive
// the transport.
QmpTransport libvirt_qmp_transport(_virDomain* domain);

// The text of a QMP command: {"arguments":ARGS,"execute":NAME} (arguments
// left out when null), compact, keys sorted, so the same command always
// reads the same (recorded replies are keyed by it).
std::string qmp_command(std::string_view execute, const Json& arguments = Json());

// The "return" member of a reply. errc::kHypervisor naming the command for a
// reply that is not JSON, an "error" reply (with QEMU's class and desc) or one
// without "return".
Result<Json> qmp_return(const std::string& command, const std::string& reply);

// The settings of one query-block entry's "inserted" object, in our names:
// {"cache", "detect_zeroes", "image_format" (drv), and "iops_limit",
// "bandwidth_limit" when throttled (iops, bps > 0), "discard": true when
// detect_zeroes is "unmap"}. errc::kHypervisor when a member is missing or
// of another type.
Result<Json> block_node_settings(const Json& inserted);

// The data disk (found by its serial, protocol::kDataDiskSerial, among
// query-block's devices) as QEMU has it:
//   {"bus", "cache", "detect_zeroes", "image_format", "ssd", "iothread",
//    "queues" (virtio-blk and virtio-scsi), "iops_limit", "bandwidth_limit",
//    "discard" (as block_node_settings),
//    "qdev" (the device's QOM path), "node_name" (its top block node),
//    "controller" and "devices_on_controller" (scsi: the controller's QOM
//    path and how many devices its bus holds), "sources" {key: the QMP
//    command and member it came from}}.
// bus: "virtio-blk" for virtio-blk-device, "sata" for ide-hd, and for
// scsi-hd "scsi-single" when its controller's bus holds the data disk alone,
// "scsi" when it holds other devices too (QEMU's device tree, whatever the
// controller's id says). ssd: rotation_rate == 1 (virtio-blk has none: false).
// errc::kHypervisor when a command fails or no device has the serial.
Result<Json> read_qemu_disk_settings(const QmpTransport& qmp);
// The same for a durability run's logged data disk (write_log_disk.h), whose
// cache.no-flush sits on `volume_node` below the logger, not on the top
// node: "cache" is the mode of the device's writeback with the volume
// node's direct and no-flush (query-named-block-nodes), what the guest's
// writes and flushes meet on their way to the volume.
Result<Json> read_qemu_logged_disk_settings(const QmpTransport& qmp,
                                            const std::string& volume_node);

// The guest's acceleration as QEMU runs it (query-kvm "enabled"), with the
// reply quoted in accel_source. errc::kHypervisor when the command fails.
Result<RunningGuest> read_qemu_accel(const QmpTransport& qmp);

// The data disk's query-blockstats counters:
//   {"rd_bytes", "wr_bytes", "rd_operations", "wr_operations",
//    "flush_operations", "discard_operations", "discard_bytes"}
// (QEMU's unmap_operations and unmap_bytes are the discards). Monotonic
// while the guest runs: a run's I/O is the difference of two readings.
Result<Json> read_qemu_disk_counters(const QmpTransport& qmp);

}  // namespace ds
