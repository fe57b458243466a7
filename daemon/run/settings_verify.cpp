#include "daemon/run/settings_verify.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>

#include "common/protocol.h"
#include "common/text.h"
#include "common/verification_text.h"
#include "common/workload_kind.h"

namespace ds {
namespace {

// How a mount option written in a spec appears in /proc/mounts when it is in
// force. Tokens are compared whole (see mount_option_in_force for the one
// generic rule, ":level" suffixes).
struct MountOptionEquivalence {
    std::string_view requested;
    // Any one of these shown means the option is in force.
    std::array<std::string_view, 3> shown_as;  // unused slots are empty
    // The kernel does not print the option when it is in force because it is
    // the default; then it is in force unless one of these is shown.
    bool default_not_shown;
    std::array<std::string_view, 2> contradicted_by;  // unused slots are empty
};

// The equivalence table. Options not listed here must appear verbatim.
// Checked against a Debian 12 guest (Linux 6.1) mounting ext4, btrfs and xfs;
// tests/unit/daemon/run/settings_verify_test.cpp holds what /proc/mounts showed.
// clang-format off
constexpr std::array kMountOptionEquivalences = {
    // ext4 prints barrier=0 (and nobarrier) as "nobarrier"; barrier on is the
    // default and not printed.
    MountOptionEquivalence{"barrier=0", {"nobarrier"}, false, {}},
    MountOptionEquivalence{"nobarrier", {"nobarrier"}, false, {}},
    MountOptionEquivalence{"barrier", {}, true, {"nobarrier"}},
    MountOptionEquivalence{"barrier=1", {}, true, {"nobarrier"}},
    // btrfs prints "discard" (Linux 6.1) or "discard=sync"/"discard=async"
    // depending on kernel and request; any of them discards.
    MountOptionEquivalence{"discard", {"discard", "discard=sync", "discard=async"}, false, {}},
    // btrfs prints nodatacow as "nodatasum,nodatacow" (no CoW implies no data
    // checksums); the extra nodatasum needs no rule, nodatacow is there.
    MountOptionEquivalence{"nodatacow", {"nodatacow"}, false, {}},
    // ext4 defaults that it does not print (data=ordered only when asked).
    MountOptionEquivalence{"data=ordered", {"data=ordered"}, true, {"data=writeback", "data=journal"}},
    MountOptionEquivalence{"delalloc", {}, true, {"nodelalloc"}},
    MountOptionEquivalence{"user_xattr", {"user_xattr"}, true, {"nouser_xattr"}},
    MountOptionEquivalence{"acl", {"acl"}, true, {"noacl"}},
    // Generic VFS defaults.
    MountOptionEquivalence{"defaults", {}, true, {}},
    MountOptionEquivalence{"async", {}, true, {"sync"}},
};
// clang-format on

bool shows(const std::vector<std::string>& shown_options, std::string_view token) {
    return std::find(shown_options.begin(), shown_options.end(), token) != shown_options.end();
}

std::string on_off(bool value) {
    return value ? "on" : "off";
}

// Any JSON value as compact text, never throwing (invalid UTF-8, which a
// hand-built Json can hold, is replaced) and never long: what ends up in a
// mismatch line stays readable whatever a readback holds.
std::string json_text(const Json& value) {
    constexpr std::size_t kShownBytes = 200;
    std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
    if (text.size() > kShownBytes) text = text.substr(0, kShownBytes) + "...";
    return text;
}

// A JSON value as a person would write it in a spec.
std::string display(const Json& value) {
    if (value.is_boolean()) return on_off(value.get<bool>());
    if (value.is_string()) return value.get<std::string>();
    return json_text(value);
}

// What a readback shows at `key`: "" when absent or null, the string itself,
// else the value's JSON (a readback that lies about a type then mismatches
// instead of throwing).
std::string shown_text(const Json& readback, const char* key) {
    const auto found = readback.find(key);
    if (found == readback.end() || found->is_null()) return "";
    return found->is_string() ? found->get<std::string>() : json_text(*found);
}

// How one level of the hypervisor (the live domain XML, QEMU) must report a
// key of to_json(StorageConfig).
enum class Reported {
    kAlways,         // absent = mismatch
    kWhenSet,        // absent = not set (none), like to_json's optional keys
    kWhenRequested,  // compared only when requested (unset = the emulator's choice)
    kWhenShown,      // compared only when the level shows it
    kNotShown,       // the level cannot show it; not compared there
};

struct HypervisorKey {
    std::string_view key;
    Reported domain_xml;       // flat keys: libvirt's live XML, or PVE's VM config
    Reported qemu;             // "qemu": QMP (libvirt)
    Reported qemu_process;     // "qemu_process": the QEMU process on this machine (libvirt)
    Reported qemu_info_block;  // "qemu_info_block": HMP `info block` (Proxmox's monitor)
};

// Every key of to_json(StorageConfig) that the hypervisor applies, and how
// each level reports it; the one place that says so.
//  * QMP (qemu_monitor.h): query-block's cache flags (all five modes),
//    detect_zeroes, format and throttle values; the guest device's bus (its
//    type, and for SCSI the devices on its controller in QEMU's device tree),
//    rotation rate, IO thread (the device's or its controller's iothread
//    link, checked against query-iothreads) and queues. QEMU 7.2's QMP has no
//    aio and no discard member: discard shows there only as
//    detect_zeroes=unmap.
//  * The QEMU process (qemu_process.h): the data disk's block nodes'
//    discard option, and the AIO engine the process really set up.
//  * `info block` shows the block node only (qemu_block.h): no device
//    properties, no aio.
// clang-format off
using enum Reported;
constexpr std::array kHypervisorKeys = {
    //            key                domain XML      QMP             QEMU process  info block
    HypervisorKey{"bus",             kAlways,        kAlways,        kNotShown,    kNotShown},
    HypervisorKey{"cache",           kAlways,        kAlways,        kNotShown,    kAlways},
    HypervisorKey{"aio",             kAlways,        kNotShown,      kAlways,      kNotShown},
    HypervisorKey{"discard",         kAlways,        kWhenShown,     kAlways,      kWhenShown},
    HypervisorKey{"detect_zeroes",   kAlways,        kAlways,        kNotShown,    kAlways},
    HypervisorKey{"ssd",             kAlways,        kAlways,        kNotShown,    kNotShown},
    HypervisorKey{"iothread",        kAlways,        kAlways,        kNotShown,    kNotShown},
    HypervisorKey{"image_format",    kAlways,        kAlways,        kNotShown,    kAlways},
    HypervisorKey{"iops_limit",      kWhenSet,       kWhenSet,       kNotShown,    kWhenSet},
    HypervisorKey{"bandwidth_limit", kWhenSet,       kWhenSet,       kNotShown,    kWhenSet},
    HypervisorKey{"queues",          kWhenRequested, kWhenRequested, kNotShown,    kNotShown},
    // Never requested (StorageConfig has no such setting), so any value a
    // QEMU reader shows is a limit nobody asked for: a mismatch.
    HypervisorKey{"iops_read_limit",       kNotShown, kWhenSet, kNotShown, kWhenSet},
    HypervisorKey{"iops_write_limit",      kNotShown, kWhenSet, kNotShown, kWhenSet},
    HypervisorKey{"bandwidth_read_limit",  kNotShown, kWhenSet, kNotShown, kWhenSet},
    HypervisorKey{"bandwidth_write_limit", kNotShown, kWhenSet, kNotShown, kWhenSet},
    HypervisorKey{"iops_burst_limit",      kNotShown, kWhenSet, kNotShown, kWhenSet},
    HypervisorKey{"bandwidth_burst_limit", kNotShown, kWhenSet, kNotShown, kWhenSet},
    HypervisorKey{"iops_read_burst_limit",       kNotShown, kWhenSet, kNotShown, kWhenSet},
    HypervisorKey{"iops_write_burst_limit",      kNotShown, kWhenSet, kNotShown, kWhenSet},
    HypervisorKey{"bandwidth_read_burst_limit",  kNotShown, kWhenSet, kNotShown, kWhenSet},
    HypervisorKey{"bandwidth_write_burst_limit", kNotShown, kWhenSet, kNotShown, kWhenSet},
    HypervisorKey{"iops_op_size",                kNotShown, kWhenSet, kNotShown, kWhenSet},
};

// The levels of the hypervisor, in the order they are checked and listed:
// the id a backend reports them under in applied["levels"], the key of
// their readback (empty: the flat keys), the name lines give them, and
// their column of kHypervisorKeys.
struct HypervisorLevel {
    std::string_view id;
    std::string_view readback_key;
    std::string_view name;
    Reported HypervisorKey::*rule;
};
constexpr std::array kHypervisorLevels = {
    HypervisorLevel{"domain_xml",      "",                "domain XML",        &HypervisorKey::domain_xml},
    HypervisorLevel{"qemu",            "qemu",            "QEMU",              &HypervisorKey::qemu},
    HypervisorLevel{"qemu_process",    "qemu_process",    "QEMU process",      &HypervisorKey::qemu_process},
    HypervisorLevel{"qemu_info_block", "qemu_info_block", "QEMU (info block)", &HypervisorKey::qemu_info_block},
};
// clang-format on

// A requested or shown value; null (an unset optional key) reads "none".
std::string display_or_none(const Json& value) {
    return value.is_null() ? std::string("none") : display(value);
}

// Whether a configuration can request `key`: the flat level (the domain
// XML, PVE's config) shows what was asked, and only what can be asked.
bool requestable(std::string_view key) {
    return std::any_of(kHypervisorKeys.begin(), kHypervisorKeys.end(), [key](const auto& entry) {
        return entry.key == key && entry.domain_xml != Reported::kNotShown;
    });
}

// The keys a level's readback says it cannot show ("unseen": {"KEY":
// "reason"}), each skipped there. Those a configuration can request are
// listed as not checked there; the per-direction and burst limits no
// configuration requests are not (a QEMU 10 throttle group would list all
// eleven on every run, unthrottled ones included).
std::map<std::string, std::string> unseen_keys(const Json& readback, std::string_view level,
                                               std::vector<NotChecked>& not_checked) {
    std::map<std::string, std::string> unseen;
    const auto found = readback.find("unseen");
    if (found == readback.end() || !found->is_object()) return unseen;
    for (const auto& [key, reason] : found->items()) {
        const std::string why = reason.is_string() ? reason.get<std::string>() : json_text(reason);
        unseen.emplace(key, why);
        if (requestable(key)) not_checked.push_back({std::string(level), key, why, false});
    }
    return unseen;
}

// One level's readback against the request. `level` names it in every line
// ("domain XML", "QEMU"); `sources`, when an object, names per key where the
// level read it, appended in parentheses. Keys in `unseen` are skipped.
void verify_hypervisor_level(const Json& requested, const Json& applied, std::string_view level,
                             Reported HypervisorKey::*rule,
                             const std::map<std::string, std::string>& unseen,
                             std::vector<std::string>& mismatches) {
    const Json sources = applied.contains("sources") ? applied.at("sources") : Json();
    for (const HypervisorKey& entry : kHypervisorKeys) {
        const std::string key(entry.key);
        const Reported how = entry.*rule;
        const Json want = requested.contains(key) ? requested.at(key) : Json();
        const bool shown = applied.contains(key) && !applied.at(key).is_null();
        if (how == Reported::kNotShown || (how == Reported::kWhenRequested && want.is_null()) ||
            (how == Reported::kWhenShown && !shown) || unseen.contains(key)) {
            continue;
        }
        if (!shown && how == Reported::kAlways) {
            mismatches.push_back(key + ": requested " + display_or_none(want) +
                                 ", not reported by " + std::string(level));
            continue;
        }
        const Json have = shown ? applied.at(key) : Json();
        if (have == want) continue;
        std::string line = key + ": requested " + display_or_none(want) + ", " +
                           std::string(level) + " has " + display_or_none(have);
        const std::string source = sources.is_object() ? shown_text(sources, key.c_str()) : "";
        if (!source.empty()) line += " (" + source + ")";
        mismatches.push_back(line);
    }
}

// A level the backend reports as not read: why, from its report.
NotChecked unchecked_level(std::string_view name, const Json& report) {
    if (!report.is_object())
        return {std::string(name), "", "the backend's report of it is " + json_text(report), false};
    const std::string reason = shown_text(report, "reason");
    const Json forbidden = report.value("forbidden", Json());
    return {std::string(name), "", reason.empty() ? "no reason given" : reason,
            forbidden.is_boolean() && forbidden.get<bool>()};
}

// Whether the backend's report says the level was not read (anything but
// an object with "checked": true).
bool reported_unchecked(const Json& report) {
    const Json checked = report.is_object() ? report.value("checked", Json()) : Json();
    return !(checked.is_boolean() && checked.get<bool>());
}

// Each level of kHypervisorLevels: compared when read back, else listed
// not checked when the backend reports it (see verify_applied_settings).
void verify_hypervisor_levels(const Json& wanted, const Json& applied, const Json& levels,
                              SettingsVerification& out) {
    for (const HypervisorLevel& level : kHypervisorLevels) {
        const Json* report =
            levels.is_object() && levels.contains(level.id) ? &levels.at(level.id) : nullptr;
        if (report != nullptr && reported_unchecked(*report)) {
            out.not_checked.push_back(unchecked_level(level.name, *report));
            continue;
        }
        const Json* readback = level.readback_key.empty() ? &applied : nullptr;
        if (readback == nullptr && applied.contains(level.readback_key))
            readback = &applied.at(level.readback_key);
        if (readback == nullptr) {
            if (report != nullptr)
                out.not_checked.push_back({std::string(level.name), "",
                                           "reported as read, but its readback is missing", false});
            continue;
        }
        if (!readback->is_object()) {
            out.mismatches.push_back(std::string(level.name) +
                                     " settings: expected an object, got " + json_text(*readback));
            continue;
        }
        const auto unseen = unseen_keys(*readback, level.name, out.not_checked);
        verify_hypervisor_level(wanted, *readback, level.name, level.rule, unseen, out.mismatches);
    }
}

// Levels a backend reports that kHypervisorLevels does not know: listed
// when not checked, so no level goes unmentioned.
void list_unknown_levels(const Json& levels, std::vector<NotChecked>& not_checked) {
    if (!levels.is_object()) return;
    for (const auto& [key, report] : levels.items()) {
        // A copy: a structured binding is not captured by lambdas (C++20
        // allows it, clang 14 does not).
        const std::string id = key;
        const bool known =
            std::any_of(kHypervisorLevels.begin(), kHypervisorLevels.end(),
                        [&](const HypervisorLevel& level) { return level.id == id; });
        if (!known && reported_unchecked(report))
            not_checked.push_back(unchecked_level(id, report));
    }
}

// The flat keys are the live domain XML's (PVE's VM config on Proxmox);
// "qemu" (QMP), "qemu_process" (the process) and "qemu_info_block" (HMP),
// when present, QEMU's own; "levels" the backend's word on each.
void verify_hypervisor(const StorageConfig& requested, const Json& applied,
                       SettingsVerification& out) {
    if (!applied.is_object()) {
        out.mismatches.push_back("hypervisor settings: expected an object, got " +
                                 json_text(applied));
        return;
    }
    const Json levels = applied.value("levels", Json());
    if (!levels.is_null() && !levels.is_object())
        out.mismatches.push_back("hypervisor levels: expected an object, got " + json_text(levels));
    verify_hypervisor_levels(to_json(requested), applied, levels, out);
    list_unknown_levels(levels, out.not_checked);
}

// A guest-reported number (the agent may send 0/1 or false/true).
std::optional<long long> guest_number(const Json& guest, const char* key) {
    if (!guest.contains(key)) return std::nullopt;
    const Json& value = guest.at(key);
    if (value.is_boolean()) return value.get<bool>() ? 1 : 0;
    if (value.is_number_unsigned()) {
        // Beyond long long only by a lie; clamped rather than wrapped negative.
        return static_cast<long long>(std::min<std::uint64_t>(
            value.get<std::uint64_t>(), std::numeric_limits<long long>::max()));
    }
    if (value.is_number_integer()) return value.get<long long>();
    return std::nullopt;
}

void verify_guest(const StorageConfig& requested, const Json& guest,
                  std::vector<std::string>& mismatches) {
    if (!guest.is_object()) {
        mismatches.push_back("guest readback: expected an object, got " + json_text(guest));
        return;
    }
    const FilesystemSpec& filesystem = requested.filesystem;
    if (!filesystem.type.empty()) {
        const std::string fs_type = shown_text(guest, "fs_type");
        if (fs_type != filesystem.type) {
            mismatches.push_back("filesystem: requested " + filesystem.type + ", guest has " +
                                 (fs_type.empty() ? std::string("none reported") : fs_type));
        }
        const std::vector<std::string> shown =
            split_mount_options(shown_text(guest, "mount_options"));
        for (const std::string& option : split_mount_options(filesystem.mount_options)) {
            if (!mount_option_in_force(option, shown)) {
                mismatches.push_back(
                    "mount option " + option + ": requested, guest mounted with " +
                    (shown.empty() ? std::string("no options reported") : join(shown, ",")));
            }
        }
    }

    // Measured here (QEMU 7.2, Linux 6.1 guest): rotation_rate='1' gives
    // rotational=0 on scsi-hd and SATA; without it every bus, virtio-blk
    // included, shows rotational=1. Both directions matter: btrfs switches to
    // its ssd allocation mode by itself on a non-rotational disk.
    const auto rotational = guest_number(guest, "rotational");
    if (!rotational) {
        mismatches.push_back("ssd: requested " + on_off(requested.ssd) +
                             ", guest did not report rotational");
    } else if (requested.ssd && *rotational != 0) {
        mismatches.push_back("ssd: requested on, guest sees a rotational disk (rotational=" +
                             std::to_string(*rotational) + ")");
    } else if (!requested.ssd && *rotational == 0) {
        mismatches.push_back("ssd: requested off, guest sees a non-rotational disk (rotational=0)");
    }
    // Only discard on is checked. Measured here: with discard off (libvirt
    // discard='ignore') the guest still sees discard support on every bus
    // (discard_max_bytes 1 GiB on scsi-hd, 2 GiB on virtio-blk and SATA):
    // QEMU keeps advertising it and drops the requests on the host side. So
    // the guest cannot tell off from on; the hypervisor readback covers off.
    if (requested.discard) {
        const auto discard_max_bytes = guest_number(guest, "discard_max_bytes");
        if (!discard_max_bytes) {
            mismatches.push_back("discard: requested on, guest did not report discard_max_bytes");
        } else if (*discard_max_bytes <= 0) {
            mismatches.push_back(
                "discard: requested on, guest sees no discard support (discard_max_bytes=" +
                std::to_string(*discard_max_bytes) + ")");
        }
    }
}

// The guest driver behind each bus (the first driver bound on the data
// disk's sysfs device chain that is not a SCSI disk, PCI port or virtio PCI
// transport; see guestagent/discovery.h). Measured here (Linux 6.1 guest,
// QEMU 7.2): virtio-blk -> virtio_blk; scsi-hd on virtio-scsi -> sd over
// virtio_scsi; SATA -> sd over ahci.
struct BusDriver {
    Bus bus;
    std::string_view driver;
};
constexpr std::array kBusDrivers = {
    BusDriver{Bus::kVirtioBlk, "virtio_blk"},
    BusDriver{Bus::kScsi, "virtio_scsi"},
    BusDriver{Bus::kScsiSingle, "virtio_scsi"},
    BusDriver{Bus::kSata, "ahci"},
};

// queue/write_cache as the guest shows it per cache mode. Measured here on
// virtio-blk, scsi-hd and SATA alike (QEMU 7.2, Linux 6.1): writethrough and
// directsync give the guest a disk without a volatile cache ("write
// through"); none, writeback and unsafe a write-back cache.
std::string_view expected_write_cache(CacheMode cache) {
    const bool write_through = cache == CacheMode::kWritethrough || cache == CacheMode::kDirectsync;
    return write_through ? "write through" : "write back";
}

// A string the guest must report equal to `want`; `what` names the setting.
void expect_guest_text(const Json& guest, const char* key, std::string_view want,
                       const std::string& what, std::vector<std::string>& mismatches) {
    const std::string shown = shown_text(guest, key);
    if (shown.empty()) {
        mismatches.push_back(what + ": expected " + std::string(key) + " " + std::string(want) +
                             ", guest did not report it");
    } else if (shown != want) {
        mismatches.push_back(what + ": expected " + std::string(key) + " " + std::string(want) +
                             ", guest has " + shown);
    }
}

// What the guest sees of the disk device itself: its driver, its write
// cache, its hardware queues, and that the mounted filesystem is on the data
// disk found by its serial.
void verify_guest_device(const StorageConfig& requested, const Json& guest,
                         std::vector<std::string>& mismatches) {
    const std::string bus(to_string(requested.bus));
    for (const BusDriver& entry : kBusDrivers) {
        if (entry.bus == requested.bus)
            expect_guest_text(guest, "driver", entry.driver, "bus " + bus, mismatches);
    }
    expect_guest_text(guest, "write_cache", expected_write_cache(requested.cache),
                      "cache " + std::string(to_string(requested.cache)), mismatches);
    expect_guest_text(guest, "serial", protocol::kDataDiskSerial, "data disk", mismatches);
    const std::string device = shown_text(guest, "device");
    if (!requested.filesystem.type.empty() && !device.empty()) {
        expect_guest_text(guest, "mount_source", "/dev/" + device, "data disk", mismatches);
    }
    // The guest's blk-mq uses at most one hardware queue per CPU (virtio_blk
    // and virtio_scsi cap their queues at nr_cpu_ids): measured, queues=4 on
    // a 2-vCPU guest shows 2 in /sys/block/DEV/mq.
    if (requested.queues) {
        const auto queues = guest_number(guest, "hw_queues");
        const auto cpus = guest_number(guest, "online_cpus");
        const std::string wanted = std::to_string(*requested.queues);
        if (!queues || !cpus || *cpus < 1) {
            mismatches.push_back("queues: requested " + wanted +
                                 ", guest did not report hw_queues and online_cpus");
        } else if (const long long expected =
                       std::min<long long>(static_cast<long long>(*requested.queues), *cpus);
                   *queues != expected) {
            mismatches.push_back("queues: requested " + wanted + " (" + std::to_string(expected) +
                                 " with " + std::to_string(*cpus) + " guest CPUs), guest has " +
                                 std::to_string(*queues) + " hardware queues");
        }
    }
}

void verify_block_layer(const StorageConfig& requested, const Json& guest,
                        std::vector<std::string>& mismatches) {
    if (requested.scheduler != IoScheduler::kDefault) {
        const std::string want(to_string(requested.scheduler));
        const std::string shown = shown_text(guest, "scheduler");
        if (shown.empty()) {
            mismatches.push_back("scheduler: requested " + want + ", guest did not report one");
        } else if (shown != want) {
            mismatches.push_back("scheduler: requested " + want + ", guest has " + shown);
        }
    }
    const std::pair<const char*, const std::optional<std::uint64_t>*> numbers[] = {
        {"read_ahead_kb", &requested.read_ahead_kb}, {"nr_requests", &requested.nr_requests}};
    for (const auto& [key, want] : numbers) {
        if (!*want) continue;
        const auto shown = guest_number(guest, key);
        const std::string wanted = std::to_string(**want);
        if (!shown) {
            mismatches.push_back(std::string(key) + ": requested " + wanted +
                                 ", guest did not report it");
        } else if (*shown < 0 || static_cast<std::uint64_t>(*shown) != **want) {
            mismatches.push_back(std::string(key) + ": requested " + wanted + ", guest has " +
                                 std::to_string(*shown));
        }
    }
}

// Profiles the btrfs filesystem should have, by chunk type ("data",
// "metadata", "system"), from mkfs options and post-format steps.
std::map<std::string, std::string> expected_btrfs_profiles(const FilesystemSpec& filesystem) {
    std::map<std::string, std::string> expected;
    const auto& options = filesystem.mkfs_options;
    for (std::size_t i = 0; i < options.size(); ++i) {
        const std::string& option = options[i];
        const bool has_next = i + 1 < options.size();
        if ((option == "-d" || option == "--data") && has_next) {
            expected["data"] = ascii_lower(options[++i]);
        } else if ((option == "-m" || option == "--metadata") && has_next) {
            expected["metadata"] = ascii_lower(options[++i]);
        } else if (option.rfind("--data=", 0) == 0) {
            expected["data"] = ascii_lower(option.substr(7));
        } else if (option.rfind("--metadata=", 0) == 0) {
            expected["metadata"] = ascii_lower(option.substr(11));
        }
    }
    const auto& steps = filesystem.post_format;
    if (std::find(steps.begin(), steps.end(), "single") != steps.end()) {
        expected["metadata"] = "single";
        expected["system"] = "single";
    }
    return expected;
}

void verify_btrfs(const FilesystemSpec& filesystem, const Json& guest,
                  std::vector<std::string>& mismatches) {
    if (filesystem.type != "btrfs") return;
    const auto expected = expected_btrfs_profiles(filesystem);
    if (!expected.empty()) {
        const Json& profiles = guest.contains("btrfs") ? guest.at("btrfs") : Json();
        for (const auto& [chunk, want] : expected) {
            const std::string shown =
                profiles.is_object() && profiles.contains(chunk) && profiles.at(chunk).is_string()
                    ? ascii_lower(profiles.at(chunk).get<std::string>())
                    : std::string();
            if (shown.empty()) {
                mismatches.push_back("btrfs " + chunk + " profile: requested " + want +
                                     ", guest did not report it");
            } else if (shown != want) {
                mismatches.push_back("btrfs " + chunk + " profile: requested " + want +
                                     ", guest has " + shown);
            }
        }
    }
    const auto& steps = filesystem.post_format;
    if (std::find(steps.begin(), steps.end(), "nocow") != steps.end()) {
        const Json nocow = guest.value("nocow", Json());
        if (!nocow.is_boolean()) {
            mismatches.push_back(
                "nocow: requested, guest did not report the work directory's "
                "attributes");
        } else if (!nocow.get<bool>()) {
            const std::string attributes = shown_text(guest, "work_dir_attributes");
            mismatches.push_back("nocow: requested, the work directory is not No_COW (lsattr: " +
                                 (attributes.empty() ? std::string("?") : attributes) + ")");
        }
    }
}

// The workload's `server` table against the guest's readback of its server
// (SHOW VARIABLES, SHOW), as its kind's rules read it for the server's
// version (for MariaDB ds::server_variable_mismatches: the one place that
// knows what a value does on which version). A kind without rules has no
// server to set: its `server` table is a mismatch of its own.
void verify_server_variables(const Workload& workload, const Json& guest,
                             std::vector<std::string>& mismatches) {
    if (!workload.params.is_object() || !workload.params.contains("server")) return;
    const ServerSettingsRules* rules = kind_server_settings(workload.kind, workload.params);
    if (rules == nullptr) {
        mismatches.push_back("server variables: requested, but workload kind '" + workload.kind +
                             "' has no server to set them on");
        return;
    }
    const Json& requested = workload.params.at("server");
    const Json shown = guest.contains("server_variables") ? guest.at("server_variables") : Json();
    for (std::string& line :
         rules->mismatches(requested, shown, shown_text(guest, "server_version"))) {
        mismatches.push_back(std::move(line));
    }
}

}  // namespace

std::vector<std::string> split_mount_options(std::string_view options) {
    std::vector<std::string> items;
    std::size_t start = 0;
    while (start <= options.size()) {
        std::size_t end = options.find(',', start);
        if (end == std::string_view::npos) end = options.size();
        std::string_view item = options.substr(start, end - start);
        while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
        while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
        if (!item.empty()) items.emplace_back(item);
        start = end + 1;
    }
    return items;
}

bool mount_option_in_force(std::string_view requested,
                           const std::vector<std::string>& shown_options) {
    for (const MountOptionEquivalence& entry : kMountOptionEquivalences) {
        if (entry.requested != requested) continue;
        for (std::string_view form : entry.shown_as) {
            if (!form.empty() && shows(shown_options, form)) return true;
        }
        if (!entry.default_not_shown) return false;
        for (std::string_view contradiction : entry.contradicted_by) {
            if (!contradiction.empty() && shows(shown_options, contradiction)) return false;
        }
        return true;
    }
    if (shows(shown_options, requested)) return true;
    // The one generic rule: btrfs prints a compression algorithm with its
    // level, so "compress=zstd" is in force as "compress=zstd:3".
    const std::string with_level = std::string(requested) + ':';
    return std::any_of(shown_options.begin(), shown_options.end(),
                       [&](const std::string& shown) { return shown.rfind(with_level, 0) == 0; });
}

SettingsVerification verify_applied_settings(const StorageConfig& requested,
                                             const Workload& workload,
                                             const Json& applied_hypervisor,
                                             const Json& guest_readback) {
    SettingsVerification out;
    if (!applied_hypervisor.is_null()) verify_hypervisor(requested, applied_hypervisor, out);
    std::vector<std::string>& mismatches = out.mismatches;
    if (!guest_readback.is_null()) {
        verify_guest(requested, guest_readback, mismatches);
        if (guest_readback.is_object()) {
            verify_guest_device(requested, guest_readback, mismatches);
            verify_block_layer(requested, guest_readback, mismatches);
            verify_btrfs(requested.filesystem, guest_readback, mismatches);
            verify_server_variables(workload, guest_readback, mismatches);
        }
    }
    return out;
}

std::vector<std::string> verify_settings(const StorageConfig& requested, const Workload& workload,
                                         const Json& applied_hypervisor,
                                         const Json& guest_readback) {
    return verify_applied_settings(requested, workload, applied_hypervisor, guest_readback)
        .mismatches;
}

bool fails_run(const NotChecked& entry, UncheckedLevelPolicy policy) {
    if (!entry.setting.empty()) return false;
    switch (policy) {
        case UncheckedLevelPolicy::kFail:
            return true;
        case UncheckedLevelPolicy::kFailUnlessForbidden:
            return !entry.forbidden;
        case UncheckedLevelPolicy::kReport:
            return false;
    }
    return true;
}

namespace {

// One entry of verification_record; what not_checked_text reads.
Json not_checked_json(const NotChecked& entry, UncheckedLevelPolicy policy) {
    Json item = {{"level", entry.level}};
    if (!entry.setting.empty()) item["setting"] = entry.setting;
    item["reason"] = entry.reason;
    item["forbidden"] = entry.forbidden;
    item["fails_run"] = fails_run(entry, policy);
    return item;
}

}  // namespace

std::string not_checked_line(const NotChecked& entry) {
    return not_checked_text(not_checked_json(entry, UncheckedLevelPolicy::kReport));
}

Json verification_record(const std::vector<NotChecked>& not_checked, UncheckedLevelPolicy policy) {
    Json entries = Json::array();
    for (const NotChecked& entry : not_checked) entries.push_back(not_checked_json(entry, policy));
    return {{"policy", std::string(to_string(policy))}, {"not_checked", std::move(entries)}};
}

std::vector<std::string> verify_settings(const StorageConfig& requested,
                                         const Json& applied_hypervisor,
                                         const Json& guest_readback) {
    return verify_settings(requested, Workload{}, applied_hypervisor, guest_readback);
}

}  // namespace ds
