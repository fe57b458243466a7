// What QEMU says of a block device, independent of how it was asked:
// libvirt reads it over QMP (libvirt/qemu_monitor.h), Proxmox through its
// monitor endpoint, which answers HMP text (`info block`, `info block -n`:
// the `info` commands a token with Sys.Audit may run on PVE 9).
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

// One field of HMP's `I/O throttling:` line and the key we report it under
// when it is non-zero. QEMU prints all of them, in this order, whenever any
// of bps, bps_rd, bps_wr, iops, iops_rd, iops_wr is set
// (block/monitor/block-hmp-cmds.c, print_block_info). A request sets only
// iops_limit and bandwidth_limit; every other key here is a setting no
// request sets, so a shown value means the drive is throttled in a way the
// configuration does not say:
//   iops_read_limit, iops_write_limit, bandwidth_read_limit,
//   bandwidth_write_limit (per direction, like PVE's iops_rd, mbps_wr),
//   iops_burst_limit, iops_read_burst_limit, iops_write_burst_limit,
//   bandwidth_burst_limit, bandwidth_read_burst_limit,
//   bandwidth_write_burst_limit (bursts, PVE's *_max), and iops_op_size
//   (the size one I/O counts as; PVE never sets it).
struct ThrottleField {
    std::string_view hmp;  // "iops_rd"
    std::string_view key;  // "iops_read_limit"
};
inline constexpr std::array<ThrottleField, 13> kThrottleFields = {{
    {"bps", "bandwidth_limit"},
    {"bps_rd", "bandwidth_read_limit"},
    {"bps_wr", "bandwidth_write_limit"},
    {"bps_max", "bandwidth_burst_limit"},
    {"bps_rd_max", "bandwidth_read_burst_limit"},
    {"bps_wr_max", "bandwidth_write_burst_limit"},
    {"iops", "iops_limit"},
    {"iops_rd", "iops_read_limit"},
    {"iops_wr", "iops_write_limit"},
    {"iops_max", "iops_burst_limit"},
    {"iops_rd_max", "iops_read_burst_limit"},
    {"iops_wr_max", "iops_write_burst_limit"},
    {"iops_size", "iops_op_size"},
}};

// One paragraph of HMP `info block` (a BlockBackend) or `info block -n` (a
// named node), as QEMU prints it (block-hmp-cmds.c, print_block_info):
//   NAME[ (NODE)]: FILE (DRIVER[, read-only][, encrypted][, inactive])
//       Cache mode:       writeback|writethrough[, direct][, ignore flushes]
//       Detect zeroes:    on|unmap            (absent when off)
//       I/O throttling:   bps=.. ... group=.. (absent when unthrottled)
// NAME is the BlockBackend's name, or its top node's name when the backend
// is anonymous (a -blockdev drive), or the node's name under `-n`.
struct HmpBlockEntry {
    std::string name;
    bool inserted = true;                 // false: "[not inserted]"
    std::string file;                     // bs->filename: a path, or "json:{...}"
    std::string driver;                   // the node's format_name: "raw", "throttle", "file"
    std::optional<QemuCacheFlags> cache;  // none: no (readable) Cache mode line
    std::string detect_zeroes = "off";
    std::optional<std::string> throttling;  // the I/O throttling line's value
};

// The paragraph whose first line starts with `name` followed by " " or ":"
// ("drive-scsi1" is not "drive-scsi10"). Lines may end in "\r\n" (HMP's
// own) or "\n". errc::kHypervisor "QEMU `COMMAND`, NAME: why" when it is not
// listed or its first or Cache mode line does not parse (an empty drive,
// "[not inserted]", is returned with inserted = false).
Result<HmpBlockEntry> read_hmp_block_entry(std::string_view text, std::string_view name,
                                           std::string_view command);

// Every paragraph of the text whose first line parses, in QEMU's order.
std::vector<HmpBlockEntry> read_hmp_block_entries(std::string_view text);

// detect_zeroes "unmap" implies discard: QEMU refuses it on a node opened
// without discard=unmap (block.c, bdrv_parse_detect_zeroes). When
// settings["detect_zeroes"] is "unmap", sets settings["discard"] = true and
// its source in settings["sources"], and returns true.
bool add_discard_implied(Json& settings);

// The legacy `-drive` device of HMP's `info block` (QEMU 7.2 to 10 print it
// the same way; PVE 8.4 and machine versions < 10.0 on PVE 9; recorded in
// tests/data/hmp/):
//   drive-scsi1 (#block307): /dev/pve/vm-101-disk-1 (raw)
//       Attached to:      scsi1
//       Cache mode:       writeback, ignore flushes
//       Detect zeroes:    unmap
//       I/O throttling:   bps=10485760 ... iops=500 ...
// The device whose first line starts with `device` (PVE's "drive-scsi1"),
// in our names: {"cache", "detect_zeroes" ("off" when QEMU prints no line),
// "image_format", each non-zero field of kThrottleFields under its key,
// "discard": true when detect_zeroes is "unmap" (QEMU refuses unmap
// without discard), "sources": {key: "info block LINE"}}. errc::kHypervisor
// naming the device when it is missing, not inserted, or a line of it
// (first, Cache mode, I/O throttling with any field missing) does not parse.
Result<Json> parse_info_block(std::string_view text, std::string_view device);

// The replies of HMP `info` commands that show a drive. Only info_block is
// needed for a legacy `-drive` device; a -blockdev chain needs
// info_block_nodes for its cache mode. `info qtree` is not among them:
// QEMU 10's shows the device's write-cache, which `info block` already
// gives as the BlockBackend's live write cache, and omits link properties,
// so no iothread (recorded in tests/data/hmp/qemu10/).
struct HmpDriveTexts {
    std::string_view info_block;                       // `info block`
    std::optional<std::string_view> info_block_nodes;  // `info block -n`
};

// QEMU's view of the drive `device` ("drive-scsi1"), whichever way it was
// built, from what a PVE token with Sys.Audit may read:
//  * a legacy `-drive` device (its `info block` driver is the image
//    format): parse_info_block's result;
//  * a -blockdev chain, qemu-server 9's throttle filter node "drive-<id>"
//    over a format node over a file node (its `info block` driver is
//    "throttle"): "image_format" = the format node's driver; "cache" from
//    the device's write cache (`info block`: only the BlockBackend shows it)
//    and the format and file nodes' direct and ignore-flushes flags
//    (`info block -n`), which must agree; "detect_zeroes" shown by every
//    node of the chain alike; "discard": true when that is "unmap". No
//    limits: they sit in the throttle-group object, which no `info`
//    command shows.
// Either way "unseen": {key: why this level cannot show it} for each
// setting it cannot check: aio and iothread always; discard unless
// detect_zeroes=unmap implies it; on a -blockdev chain every key of
// kThrottleFields (a legacy device shows its limits).
// "sources": {key: "command and line"}. errc::kHypervisor naming the device
// for a missing device or node, nodes that disagree, text that does not
// parse, or a chain without info_block_nodes.
Result<Json> parse_qemu_drive_view(const HmpDriveTexts& texts, std::string_view device);

}  // namespace ds
