// What the agent finds out about the guest from sysfs and procfs: its channel
// port, the data disk (by serial, without udev), and the settings in force on
// that disk. Every path is under a configurable root so tests can build a
// fake tree in a temporary directory.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/settings.h"

namespace ds::agent {

struct SystemRoots {
    std::string sysfs = "/sys";
    std::string proc = "/proc";
    std::string dev = "/dev";
    std::string os_release = "/etc/os-release";
};

// The release the guest's root file system says it is (os-release(5)).
struct OsRelease {
    std::string id;          // ID: "debian"
    std::string version_id;  // VERSION_ID: "13"
    std::string codename;    // VERSION_CODENAME: "trixie"
};
// os-release's KEY=VALUE lines (values unquoted as the format allows);
// fields left empty when absent.
OsRelease parse_os_release(std::string_view text);
// nullopt when `path` cannot be read or names no ID.
std::optional<OsRelease> read_os_release(const std::string& path);

// The name of the virtio-serial port whose sysfs "name" is `channel_name`
// (e.g. "vport0p1"; the device node is roots.dev + "/vport0p1").
// errc::kNotFound listing the ports seen.
Result<std::string> find_virtio_port(const SystemRoots& roots, std::string_view channel_name);

// The block device (e.g. "sdb", "vdb") whose serial is `serial`: virtio-blk
// exposes it in /sys/block/NAME/serial, SCSI and SATA disks in the VPD page
// 0x80 at /sys/block/NAME/device/vpd_pg80. errc::kNotFound listing the disks
// seen with their serials.
Result<std::string> find_disk_by_serial(const SystemRoots& roots, std::string_view serial);

// The serial in a raw VPD page 0x80 (Unit Serial Number): a 4-byte header
// whose bytes 2..3 are the big-endian length, then the ASCII serial, which
// devices may pad with spaces or NULs (stripped). Empty if malformed.
std::string serial_from_vpd_page80(std::string_view page);

struct MountEntry {
    std::string device;
    std::string mount_point;
    std::string fs_type;
    std::string options;
};
// The last (topmost) /proc/mounts entry for `mount_point`, with the octal
// escapes (\040 for a space) decoded.
std::optional<MountEntry> find_mount(const SystemRoots& roots, std::string_view mount_point);

// Whether /proc/filesystems lists `fs_type` (built in or module loaded).
bool filesystem_registered(const SystemRoots& roots, std::string_view fs_type);

// A queue/scheduler file: "none mq-deadline kyber [bfq]" offers four and
// bfq is active. A queue without an elevator choice shows a lone "none"
// (no brackets): offered {"none"}, active "none". Empty text: both empty.
struct SchedulerList {
    std::vector<std::string> offered;  // in the kernel's order, brackets removed
    std::string active;                // "" when no entry is bracketed (and not lone)
};
SchedulerList parse_scheduler_list(std::string_view text);

// The block group profiles of a btrfs file system, lowercase as mkfs.btrfs
// spells them ("single", "dup", "raid1", "raid1c3", "raid10", ...), from
// `btrfs filesystem df MOUNT`, whose lines read
//   "Data, single: total=8.00MiB, used=0.00B"
//   "Metadata, DUP: total=32.00MiB, used=128.00KiB"
// "Data+Metadata" (mkfs --mixed) sets both data and metadata;
// GlobalReserve (always "single", not a profile one chooses) is ignored.
// When a type shows several profiles (a conversion left chunks of both),
// they are joined with ',' in output order ("dup,single"), so a readback
// check sees the mix.
struct BtrfsProfiles {
    std::string data;
    std::string metadata;
    std::string system;
};
// errc::kInvalidArgument naming the line that does not parse or the type
// (data, metadata, system) no line gave.
Result<BtrfsProfiles> parse_btrfs_df_profiles(std::string_view text);
Json to_json(const BtrfsProfiles& profiles);  // {"data", "metadata", "system"}

// The attribute flags of `lsattr -d PATH` ("---------------C------ /mnt"):
// the first field of its first line. errc::kInvalidArgument when that is
// empty or holds something other than letters and '-'.
Result<std::string> parse_lsattr_flags(std::string_view text);

// What the guest sees of disk `device_name` mounted at `mount_point`:
//   {"device", "fs_type", "mount_options", "mount_source" (the mounted
//    device, from /proc/mounts),
//    "rotational", "discard_max_bytes", "logical_block_size", "read_ahead_kb",
//    "nr_requests" (integers from /sys/block/DEV/queue), "scheduler" (the
//    active one, the bracketed entry of queue/scheduler), "write_cache"
//    (queue/write_cache: "write back" or "write through"),
//    "serial" (as find_disk_by_serial reads it), "driver" (the host adapter's
//    driver: walking up /sys/block/DEV/device, the first bound driver other
//    than the SCSI disk driver "sd": virtio_blk, virtio_scsi, ahci),
//    "hw_queues" (entries of /sys/block/DEV/mq), "online_cpus" (counted
//    from /sys/devices/system/cpu/online: blk-mq uses at most one hardware
//    queue per CPU)}
// A value that cannot be read is left out; the host decides what it needs.
Json read_disk_readback(const SystemRoots& roots, const std::string& device_name,
                        std::string_view mount_point);

}  // namespace ds::agent
