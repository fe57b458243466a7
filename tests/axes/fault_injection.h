// Faults the axes tier injects into the libvirt backend: each makes QEMU
// really run a guest with another setting than its request says, by
// rewriting the domain XML libvirt receives (LibvirtHypervisor's
// DomainXmlFilter seam). Built only into the test-only daemon
// (injecting_daemon.cpp); verification must catch every one and name it.
//
// Two of them change QEMU alone, so the domain XML still reads as requested
// and only QEMU's own view (and the guest's) can tell:
//  * cache: a disk whose cache mode is write-through to the guest
//    (writethrough, directsync) gets the device property write-cache=on
//    through libvirt's <qemu:override>: QEMU's query-block shows a write-back
//    cache, the guest's queue/write_cache "write back".
//  * bus: a scsi-single disk's own controller gets a second disk through
//    <qemu:commandline> (a null-co block node on a scsi-hd): QEMU's device
//    tree shows a shared controller; libvirt's XML knows nothing of it.
// One changes what libvirt passes to QEMU:
//  * discard: discard='unmap' becomes 'ignore' on the data disk: QEMU's
//    block nodes drop the guest's discards.
// One changes a durability run's logged data disk, which has no <disk>:
//  * logged_no_flush: its volume node (below the logger) gets
//    cache.no-flush in the <qemu:commandline> arguments: QEMU drops the
//    guest's flushes though the run asked for cache=none.
// One changes the disk itself:
//  * golden_fs: an ext4 configuration's data disk file is made a btrfs on the
//    host before QEMU opens it. A golden volume's preparation formats it
//    again; a run on its clone must refuse a disk that holds another file
//    system than the configured one (docs/golden-volumes.md).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/settings.h"

namespace ds::test {

struct InjectedFault {
    std::string_view name;  // as listed in DISKSWEEP_TEST_INJECT
    std::string_view what;  // logged when applied
    // Whether the fault applies to a request (each triggers on a setting it
    // can contradict; the tier's injected configurations trigger one each).
    bool (*applies)(const StorageConfig& requested);
    // The domain XML with the fault in it.
    std::string (*inject)(std::string xml);
};

std::span<const InjectedFault> injected_faults();

// The faults named in `list` ("cache,discard,bus"); an unknown name is an
// error listing the known ones.
Result<std::vector<const InjectedFault*>> parse_fault_list(std::string_view list);

}  // namespace ds::test
