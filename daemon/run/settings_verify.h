// Did the run get the settings it asked for? Compares the requested storage
// configuration with what the hypervisor has in force (read back from it) and
// with what the guest sees (read back by the agent). A run whose settings are
// not in force measures something else and must not be recorded as the
// requested configuration.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/settings.h"
#include "daemon/spec/unchecked_levels.h"

namespace ds {

// One human-readable line per mismatch, naming the level that disagrees,
// e.g. "cache: requested unsafe, QEMU has none (query-block
// cache.direct/writeback/no-flush)"; empty when everything checked agrees.
// Never throws, whatever JSON it is given: a readback value of an unexpected
// type is a mismatch (the daemon checks the guest's types earlier, see
// guest_messages.h; this holds for any caller).
//
// `applied_hypervisor`: Hypervisor::applied_settings(). Its flat keys are the
// live domain XML's (parse_applied_disk_settings; PVE's VM config on
// Proxmox); its objects, when present, are QEMU's own views, each with
// "sources" naming where each key was read: "qemu" (QMP,
// read_qemu_disk_settings), "qemu_process" (the QEMU process on this
// machine, qemu_process_disk_settings) and "qemu_info_block" (HMP, Proxmox).
// Every level is compared key by key with to_json(requested) by the table
// kHypervisorKeys (settings_verify.cpp), the one place that says which level
// reports what: bus, cache, aio, discard, detect_zeroes, ssd, iothread,
// image_format must be reported by the domain XML (a key it did not report
// is a mismatch); QMP reports all of them but aio and discard (discard only
// as detect_zeroes unmap), the QEMU process aio and discard; iops_limit and
// bandwidth_limit absent mean unthrottled; queues is compared only when
// requested. Null skips the hypervisor checks.
//
// `guest_readback`: the agent's view of the data disk, e.g.
//   {"device":"sdb","fs_type":"ext4","mount_options":"rw,relatime",
//    "mount_source":"/dev/sdb","serial":"disksweep-data","driver":"virtio_scsi",
//    "write_cache":"write back","hw_queues":2,"online_cpus":2,
//    "rotational":0,"discard_max_bytes":1073741824,...}
// Checked: fs_type equals filesystem.type; each requested mount option is in
// force (see mount_option_in_force); rotational is 0 exactly when ssd was
// requested; discard requested -> discard_max_bytes > 0 (discard off is not
// visible to the guest, see settings_verify.cpp); driver matches the bus
// (virtio-blk -> virtio_blk, scsi and scsi-single -> virtio_scsi, sata ->
// ahci); write_cache is "write through" for cache writethrough and
// directsync, "write back" otherwise; serial is the data disk's and the
// filesystem is mounted from /dev/DEVICE; with queues requested, hw_queues
// == min(queues, online_cpus). Null skips the guest checks; a key the checks
// need but the guest did not report is a mismatch.
//
// Also checked against the guest readback, each only when requested:
//  * block layer: scheduler, read_ahead_kb, nr_requests equal the readback's;
//  * btrfs profiles (readback "btrfs": {"data","metadata","system"}): the
//    `single` step -> metadata and system "single"; mkfs `-d X`, `--data X`,
//    `--data=X` -> data X; `-m X`, `--metadata X`, `--metadata=X` ->
//    metadata X (the step wins over mkfs: it converts after mkfs);
//  * the `nocow` step -> readback "nocow" is true;
//  * each variable of the workload's params.server -> readback
//    "server_variables" as its kind's server settings rules read them
//    (ServerSettingsRules::mismatches; MariaDB's:
//    ds::server_variable_mismatches) for the readback's "server_version".
std::vector<std::string> verify_settings(const StorageConfig& requested, const Workload& workload,
                                         const Json& applied_hypervisor,
                                         const Json& guest_readback);
// A level, or one setting at a level, that the verify phase could not check.
struct NotChecked {
    std::string level;    // as mismatch lines name it: "QEMU (info block)"
    std::string setting;  // a key of to_json(StorageConfig); "" = the whole level
    std::string reason;
    // The host does not let disksweep read the level (its privileges, or a
    // QEMU process on another machine): the backend's "forbidden".
    bool forbidden = false;
};

struct SettingsVerification {
    std::vector<std::string> mismatches;  // as verify_settings returns them
    std::vector<NotChecked> not_checked;  // in level order, levels before their keys
};

// verify_settings, and what it could not check. `applied_hypervisor` may
// say, per level, whether the backend read it:
//   "levels": {"domain_xml"|"qemu"|"qemu_process"|"qemu_info_block":
//              {"checked": bool, "source": "how it was read",
//               "reason": "why not", "forbidden": bool}}
// A level with "checked": false is not compared and is listed not checked
// (an object that says no reason lists "no reason given"); a level reported
// but without its readback (the level's object; the flat keys for
// domain_xml) is listed not checked, never forbidden; a level the backend
// neither reports nor reads back is neither (a backend without that level,
// e.g. libvirt's test driver, which runs no QEMU). A level's object may
// carry "unseen": {"KEY": "reason"}: settings that level cannot show, not
// compared there and listed not checked per key. "levels" that is not an
// object is a mismatch.
SettingsVerification verify_applied_settings(const StorageConfig& requested,
                                             const Workload& workload,
                                             const Json& applied_hypervisor,
                                             const Json& guest_readback);

// Whether `entry` fails its run under `policy`: a setting merely unseen at
// one level never does (that is the level's nature); a whole level does
// under kFail, and under kFailUnlessForbidden unless forbidden.
bool fails_run(const NotChecked& entry, UncheckedLevelPolicy policy);

// "QEMU (info block): not checked: REASON", or with a setting
// "QEMU (info block), iops_limit: not checked: REASON".
std::string not_checked_line(const NotChecked& entry);

// What a run stores as applied_settings.verification (docs/schema.md):
//   {"policy": "fail-unless-forbidden",
//    "not_checked": [{"level": "QEMU (info block)", "setting": "iops_limit"
//                     (only per key), "reason": "...", "forbidden": false,
//                     "fails_run": false}]}
Json verification_record(const std::vector<NotChecked>& not_checked, UncheckedLevelPolicy policy);

// The same without a workload (no server variables to check).
std::vector<std::string> verify_settings(const StorageConfig& requested,
                                         const Json& applied_hypervisor,
                                         const Json& guest_readback);

// Whether mount option `requested` (as written in a spec, e.g. "barrier=0")
// is in force given the options the guest's /proc/mounts shows for the
// file system (split at commas). The kernel prints some options differently
// from how they are written and leaves defaults out, so this goes through a
// documented equivalence table (settings_verify.cpp) before comparing tokens.
bool mount_option_in_force(std::string_view requested,
                           const std::vector<std::string>& shown_options);

// "a,b,,c" -> {"a","b","c"} (empty items and surrounding spaces dropped).
std::vector<std::string> split_mount_options(std::string_view options);

}  // namespace ds
