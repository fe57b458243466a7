// What QEMU says of a block device, independent of how it was asked:
// libvirt reads it over QMP (libvirt/qemu_monitor.h), Proxmox through its
// monitor endpoint, which answers HMP text (`info block`).
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"
#include "common/settings.h"

namespace ds {

// libvirt's cache mode for QEMU's three cache flags, as QEMU defines the
// modes: none = direct + writeback, writeback = writeback only, writethrough =
// neither, directsync = direct only, unsafe = writeback + no-flush. Any other
// combination is described as "direct=..,writeback=..,no-flush=..".
std::string cache_mode_from_flags(bool direct, bool writeback, bool no_flush);

// The other way: QEMU's three flags for a cache mode. `writeback` is the
// guest device's write-cache property, the others are block node options.
struct QemuCacheFlags {
    bool direct = false;
    bool writeback = false;
    bool no_flush = false;
};
QemuCacheFlags qemu_cache_flags(CacheMode cache);

// One device of HMP's `info block` output (QEMU 7.2 to 9.x print it the
// same way; recorded in tests/data/hmp/):
//   drive-scsi1 (#block307): /dev/pve/vm-101-disk-1 (raw)
//       Attached to:      scsi1
//       Cache mode:       writeback, ignore flushes
//       Detect zeroes:    unmap
//       I/O throttling:   bps=10485760 ... iops=500 ...
// The device whose first line starts with `device` (PVE's "drive-scsi1"),
// in our names: {"cache", "detect_zeroes" ("off" when QEMU prints no line),
// "image_format", "iops_limit"/"bandwidth_limit" when throttled (iops, bps
// > 0), "discard": true when detect_zeroes is "unmap" (QEMU refuses unmap
// without discard), "sources": {key: "info block LINE"}}. Lines may end in
// "\r\n" (HMP's own) or "\n". errc::kHypervisor naming the device when it is
// missing, not inserted, or a line of it does not parse.
Result<Json> parse_info_block(std::string_view text, std::string_view device);

}  // namespace ds
