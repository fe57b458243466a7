// A run's data disk as a PVE VM config spells it, both ways: the drive
// written for a StorageConfig (pve_data_disk, the clone's config step) and
// the settings read back from GET .../config (read_pve_data_disk, what the
// verifier compares). One table of PVE's buses (kBusRules in
// pve_data_disk.cpp, see also docs/proxmox.md) serves both.
//
// Pure functions over data: no I/O, testable without a server. What only
// PVE's storage or QEMU can say (the volume's format, QEMU's own view of the
// drive) the backend adds (proxmox_hypervisor.h, applied_settings).
#pragma once

#include <optional>
#include <string>

#include "common/result.h"
#include "common/settings.h"
#include "daemon/backends/hypervisor/proxmox/pve_encoding.h"
#include "daemon/backends/storage/storage.h"

namespace ds {

// The data disk as PVE's VM config spells it.
struct PveDataDisk {
    std::string key;                    // "scsi1", "virtio1", "sata1"
    PvePropertyString drive;            // STORAGE:SIZE_GIB,cache=...,serial=disksweep-data
    std::optional<std::string> scsihw;  // the controller the bus needs, if any
};

// The data disk of `config` on `disk`, every StorageConfig field PVE supports
// mapped (see the table in pve_data_disk.cpp and docs/proxmox.md); what
// PVE cannot express is refused with errc::kUnsupported naming the field:
// ssd on virtio-blk, iothread on sata or on a shared scsi controller, queues
// except on scsi (and there at least 2), detect_zeroes=on with discard and
// unmap without it (PVE derives the mode from both), a size that is not a
// whole number of MiB.
Result<PveDataDisk> pve_data_disk(const StorageConfig& config, const HypervisorAllocatedDisk& disk);

// The data disk found in a VM's config (the drive of a data disk bus whose
// serial is protocol::kDataDiskSerial), and its settings in our names.
struct PveDataDiskReadBack {
    std::string key;          // the drive key, "scsi1", "virtio1", "sata1"
    PvePropertyString drive;  // its property string, parsed
    // {"bus", "cache", "aio", "discard", "detect_zeroes", "ssd", "iothread",
    // "iops_limit", "bandwidth_limit", "queues" (the last three only when
    // set), "pve": {"drive", "value", "volume", "options", "scsihw"},
    // "levels": {"domain_xml": the config}}.
    Json applied;
};

// The data disk of a VM's config (GET .../config); nullopt when it has none,
// the parse error of a data disk bus's drive that does not read.
Result<std::optional<PveDataDiskReadBack>> read_pve_data_disk(const Json& config);

}  // namespace ds
