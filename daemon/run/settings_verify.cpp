#include "daemon/run/settings_verify.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>

#include "common/text.h"
#include "common/workload_output.h"

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
// tests/unit/daemon/settings_verify_test.cpp holds what /proc/mounts showed.
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

std::string join(const std::vector<std::string>& items) {
    std::string joined;
    for (const std::string& item : items) {
        if (!joined.empty()) joined += ',';
        joined += item;
    }
    return joined;
}

void verify_hypervisor(const StorageConfig& requested, const Json& applied,
                       std::vector<std::string>& mismatches) {
    if (!applied.is_object()) {
        mismatches.push_back("hypervisor settings: expected an object, got " + json_text(applied));
        return;
    }
    const std::array<std::pair<std::string_view, Json>, 8> expected = {{
        {"bus", std::string(to_string(requested.bus))},
        {"cache", std::string(to_string(requested.cache))},
        {"aio", std::string(to_string(requested.aio))},
        {"discard", requested.discard},
        {"detect_zeroes", std::string(to_string(requested.detect_zeroes))},
        {"ssd", requested.ssd},
        {"iothread", requested.iothread},
        {"image_format", std::string(to_string(requested.image_format))},
    }};
    for (const auto& [key, want] : expected) {
        const std::string name(key);
        if (!applied.contains(name)) {
            mismatches.push_back(name + ": requested " + display(want) +
                                 ", not reported by the hypervisor");
        } else if (applied.at(name) != want) {
            mismatches.push_back(name + ": requested " + display(want) + ", in force " +
                                 display(applied.at(name)));
        }
    }
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
                    (shown.empty() ? std::string("no options reported") : join(shown)));
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

void verify_server_variables(const Workload& workload, const Json& guest,
                             std::vector<std::string>& mismatches) {
    if (!workload.params.is_object() || !workload.params.contains("server")) return;
    const Json& requested = workload.params.at("server");
    if (!requested.is_object()) return;
    const Json& shown_all =
        guest.contains("server_variables") ? guest.at("server_variables") : Json();
    for (const auto& [name, want] : requested.items()) {
        if (!shown_all.is_object() || !shown_all.contains(name)) {
            mismatches.push_back("server variable " + name + ": requested " + display(want) +
                                 ", SHOW VARIABLES did not list it");
            continue;
        }
        const Json& shown = shown_all.at(name);
        const std::string shown_value =
            shown.is_string() ? shown.get<std::string>() : json_text(shown);
        if (!server_variable_matches(name, want, shown_value)) {
            mismatches.push_back("server variable " + name + ": requested " + display(want) +
                                 ", server has " + shown_value);
        }
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

std::vector<std::string> verify_settings(const StorageConfig& requested, const Workload& workload,
                                         const Json& applied_hypervisor,
                                         const Json& guest_readback) {
    std::vector<std::string> mismatches;
    if (!applied_hypervisor.is_null()) verify_hypervisor(requested, applied_hypervisor, mismatches);
    if (!guest_readback.is_null()) {
        verify_guest(requested, guest_readback, mismatches);
        if (guest_readback.is_object()) {
            verify_block_layer(requested, guest_readback, mismatches);
            verify_btrfs(requested.filesystem, guest_readback, mismatches);
            verify_server_variables(workload, guest_readback, mismatches);
        }
    }
    return mismatches;
}

std::vector<std::string> verify_settings(const StorageConfig& requested,
                                         const Json& applied_hypervisor,
                                         const Json& guest_readback) {
    return verify_settings(requested, Workload{}, applied_hypervisor, guest_readback);
}

}  // namespace ds
