// A durability run's data disk on QEMU's blklogwrites filter
// (docs/durability.md): the QEMU arguments that build its block graph with
// explicit -blockdev nodes, and the guest device over it.
//
// Why libvirt's qemu namespace (<qemu:commandline>) and not blockdev-add +
// device_add through virDomainQemuMonitorCommand: libvirt 9.0's <disk>
// cannot express the filter, and with the command line the disk exists
// when QEMU starts, so the guest finds it at boot like any other run's (no
// hotplug, no race with the agent, no spare PCIe root port, nothing to undo
// when a start fails); the whole guest is still one document that
// build_domain_xml writes and the fault-injection seam
// (LibvirtHypervisor::set_domain_xml_filter) can rewrite. The price: libvirt
// does not know the disk (its live XML has no <disk> with the data serial;
// QEMU's view, qemu_monitor.h, has it) and marks the domain
// "tainted: custom-argv".
//
// The graph, top down (node names below):
//   device (serial disksweep-data; bus, write-cache, iothread, queues, ssd
//           as the configuration asks)
//   format node  (raw/qcow2; detect-zeroes, discard, cache.direct)
//   logger node  (blklogwrites; log-super-update-interval=1, never no-flush)
//   ├ file: volume node (file/host_device; aio, discard, cache.direct, and
//   │       cache.no-flush for cache=unsafe)
//   └ log:  log node    (file; cache.no-flush: the log is read after QEMU
//                        wrote it, never after a host crash)
// The logger is below the format node so its offsets are the volume file's
// (replay.h). cache.no-flush is set only below the logger: on the logger's
// own node QEMU would skip its flush handler and log no FLUSH at all.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/settings.h"
#include "daemon/backends/storage/storage.h"

namespace ds {

// The nodes' names (QEMU node-name); the device's id.
inline constexpr std::string_view kLoggedVolumeNode = "disksweep-data-volume";
inline constexpr std::string_view kWriteLogNode = "disksweep-data-log";
inline constexpr std::string_view kLoggerNode = "disksweep-data-logger";
inline constexpr std::string_view kLoggedFormatNode = "disksweep-data-format";
inline constexpr std::string_view kLoggedDeviceId = "ua-disksweep-data";

// Why the data disk of `config` on `source` cannot be logged, or "": RBD
// volumes (not attached this way yet) and I/O limits (libvirt applies them
// to its own disks only).
std::string write_log_unsupported_reason(const StorageConfig& config, const DiskSource& source);

// The QEMU arguments ("-blockdev", JSON, ..., "-device", JSON) for the data
// disk of `config` on `source`, logged to `log_path` (an existing file,
// emptied by the caller; QEMU writes it from the start). Like
// build_domain_xml, it writes what is asked: a configuration
// write_log_unsupported_reason names is refused before (LibvirtHypervisor::
// start_vm), or by QEMU (an RBD volume gets an empty file name). I/O limits
// are not written.
std::vector<std::string> write_log_disk_args(const StorageConfig& config, const DiskSource& source,
                                             const std::string& log_path);

}  // namespace ds
