// A measured configuration as the user applies it outside disksweep: a
// `qm set` line for Proxmox VE, a libvirt <disk> element, an fstab line with
// the mkfs command, the server settings of a workload in its server's
// configuration format (mycnf: the [mysqld] lines of a MariaDB workload)
// (docs/api.md, GET /v1/configurations/{id}/apply).
//
// Each format is written by the code that applies the same settings in a run,
// never by a second encoder: the Proxmox backend's pve_data_disk() for the
// qm line, the libvirt backend's data_disk_xml() for the <disk> element, the
// agent's rules (settings.h) for mkfs, mount and block tuning, the workload
// kind's server settings rules (common/server_settings.h) for its server's
// configuration lines. What a format
// cannot carry is said, never dropped silently: a setting PVE has no key for
// makes the qm format fail with the backend's reason; settings that belong
// elsewhere (the guest's filesystem for qm and libvirt, the VM's disk for
// fstab) are named in the snippet's notes.
//
// Pure functions over data: no I/O.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/settings.h"
#include "daemon/compare/durability_results.h"

namespace ds {

struct ServerSettingsRules;  // common/server_settings.h

// What a format applies: the disk, in one of the formats rendered here, or a
// workload's server settings, in the format its kind's rules declare.
enum class ApplyTarget { kQm, kLibvirt, kFstab, kServerSettings };

// An apply format: its target and, for kServerSettings (only), the rules
// that print it (a workload kind's WorkloadKind::server_settings).
struct ApplyFormat {
    ApplyTarget target = ApplyTarget::kQm;
    const ServerSettingsRules* server_settings = nullptr;
    bool operator==(const ApplyFormat&) const = default;
    // The disk's formats.
    static const ApplyFormat kQm;
    static const ApplyFormat kLibvirt;
    static const ApplyFormat kFstab;
};
inline constexpr ApplyFormat ApplyFormat::kQm{ApplyTarget::kQm, nullptr};
inline constexpr ApplyFormat ApplyFormat::kLibvirt{ApplyTarget::kLibvirt, nullptr};
inline constexpr ApplyFormat ApplyFormat::kFstab{ApplyTarget::kFstab, nullptr};

// One output format, declared as data: its name in the API and hostctl, and
// how a line becomes a comment in it (so that warnings travel inside the
// snippet and a snippet redirected into a file is still valid).
struct ApplyFormatDef {
    ApplyFormat format;
    std::string_view name;           // "qm", "libvirt", "fstab", then the rules' ("mycnf")
    std::string_view comment_open;   // "# ", "<!-- "
    std::string_view comment_close;  // "", " -->"
    std::string help;
};
// The disk's formats, then one per rule set the workload kinds point at
// (ds::server_settings_rule_sets), in that order.
std::span<const ApplyFormatDef> apply_formats();
// errc::kInvalidArgument naming the valid formats.
Result<ApplyFormat> parse_apply_format(std::string_view name);
// The definition of `format`; a server settings format's from its rules,
// whether a kind points at them or not.
ApplyFormatDef format_def(ApplyFormat format);
// Whether `format` prints a workload's server settings rather than the
// disk's.
bool prints_server_settings(ApplyFormat format);

// Placeholders the user replaces, used where the request names nothing.
inline constexpr std::string_view kVmidPlaceholder = "VMID";
inline constexpr std::string_view kPveStoragePlaceholder = "STORAGE";
inline constexpr std::string_view kDiskImagePlaceholder = "/var/lib/libvirt/images/DISK";
inline constexpr std::string_view kGuestDevicePlaceholder = "/dev/DEVICE";
inline constexpr std::string_view kMountPointPlaceholder = "/mnt/POINT";

struct ApplyRequest {
    ApplyFormat format = ApplyFormat::kQm;
    std::optional<std::int64_t> vmid;  // qm: a pve-vmid; VMID when unset
    std::string pve_storage;           // qm: a pve-storage-id; STORAGE when empty
    // A server settings format: the workload whose `server` table it prints
    // (choose_server_settings_workload); its name is also what a request
    // asks for.
    std::string workload_name;
    std::optional<Workload> workload;
    // What durability runs measured of what is applied
    // (applicable_durability, configuration_apply.h); unset or not
    // measured: the warning comes from the risk labels alone.
    std::optional<DurabilityResult> durability;
};

// The query of GET /v1/configurations/{id}/apply: format (required), vmid,
// storage, workload. errc::kInvalidArgument naming the parameter for an
// unknown format, a vmid that is not a pve-vmid, a storage that is not a
// pve-storage-id, or a parameter that does not exist.
Result<ApplyRequest> apply_request_from_query(const std::map<std::string, std::string>& query);

// The parameters apply_request_from_query knows: format, vmid, storage,
// workload.
std::span<const std::string_view> apply_query_parameters();

struct ApplySnippet {
    // durability_risks(), and for a server settings format the workload's by
    // the format's rules.
    std::vector<std::string> durability_risks;
    // Of durability_risks, those the measurement speaks for
    // (ds::measurement_covers); empty without a measurement.
    std::vector<std::string> measured_risks;
    std::vector<std::string> notes;  // placeholders, settings that live elsewhere
    std::string body;                // the lines to apply, each ending in '\n'
    // The whole snippet: the durability lines (below), the notes, both as the
    // format's comments, then the body.
    std::string text;
};

// The durability lines of a snippet (docs/durability.md, "What you see"):
//  * with a measurement (request.durability measured), its verdict first:
//    "WARNING: measured: lost acknowledged commits in 7 of 50 crash states
//    (up to 12) (...)" when it is not safe, naming the risks it speaks for;
//    "measured: kept every acknowledged commit in 50 crash states (...)"
//    when it is;
//  * a risk label the measurement speaks for and found safe keeps its
//    warning, saying it was measured without loss (crash points are a
//    sample, not a proof);
//  * a risk label it does not speak for (or every label, without a
//    measurement) keeps the label warning: "WARNING: trades durability for
//    speed (...): nobarrier".
// So a measurement only ever replaces a label's warning by a measured loss.

// The snippet of `config` in request.format. Errors (errc::kInvalidArgument):
// a host baseline (no VM, no guest: nothing to apply), a configuration the
// Proxmox backend cannot express (its reason), a server settings format
// without a workload.
Result<ApplySnippet> render_apply_snippet(const StorageConfig& config, const ApplyRequest& request);

// A workload's `server` table (its params.server), or an empty object.
Json workload_server_variables(const Workload& workload);

}  // namespace ds
