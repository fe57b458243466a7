#include "daemon/backends/hypervisor/proxmox/pve_version.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

#include "common/text.h"

namespace ds {
namespace {

using enum PvePathRole;
using enum PveNeed;

// What both releases check the same way. Each row's calls name the check:
// the schema's `permissions` of the method (shared/pve/*-api-subset.json),
// or qemu-server's own code where the schema only describes it.
//  * clone: qemu-server src/PVE/API2/Qemu.pm clone_vm: VM.Clone on the
//    source, VM.Allocate on /vms/NEWID, Datastore.AllocateSpace on the
//    target storage ($check_storage_access_clone), SDN.Use on each bridge of
//    the source's NICs (check_vnet_access, PVE >= 8.0);
//  * config: update_vm_api's $check_vm_modify_config_perm: cores
//    VM.Config.CPU, memory VM.Config.Memory, scsihw VM.Config.HWType, tags
//    VM.Config.Options, a disk VM.Config.Disk plus Datastore.AllocateSpace
//    on its storage (create_disks);
//  * the storage content of a volume: pve-storage src/PVE/API2/Storage/
//    Content.pm `info`, check_volume_access (Datastore.Audit reads it).
constexpr PvePrivilege kCommonPrivileges[] = {
    {kTemplate, "VM.Clone", kRequired, "clone of the template"},
    {kTemplate, "VM.Audit", kRequired, "the template's config (its disks and NICs)"},
    {kRunVms, "VM.Allocate", kRequired, "clone to the new id, delete with purge"},
    {kRunVms, "VM.Config.Disk", kRequired, "config: the data disk"},
    {kRunVms, "VM.Config.CPU", kRequired, "config: cores"},
    {kRunVms, "VM.Config.Memory", kRequired, "config: memory"},
    {kRunVms, "VM.Config.HWType", kRequired, "config: scsihw"},
    {kRunVms, "VM.Config.Options", kRequired, "config: tags"},
    {kRunVms, "VM.PowerMgmt", kRequired, "status/start, status/stop"},
    {kRunVms, "VM.Audit", kRequired, "config and status/current read back"},
    {kStorage, "Datastore.AllocateSpace", kRequired, "the data disk's and clones' volumes"},
    {kStorage, "Datastore.Audit", kForVerifying, "storage content: the volume's format"},
    {kBridge, "SDN.Use", kRequired, "clone of a template with a network card"},
};

// PVE 8.4: the guest agent and the monitor both check VM.Monitor
// (qemu-server 8.3 src/PVE/API2/Qemu/Agent.pm, register_command's
// permissions; API2/Qemu.pm `monitor`).
constexpr PvePrivilege kPve8Privileges[] = {
    {kRunVms, "VM.Monitor", kRequired,
     "agent/exec, exec-status, file-read, file-write, ping; monitor `info` commands"},
};

// PVE 9: VM.Monitor is gone (pve-access-control "privileges: drop
// VM.Monitor"); the agent's calls check VM.GuestAgent.* (qemu-server 9
// src/PVE/API2/Qemu/Agent.pm: exec and exec-status need Unrestricted, which
// also covers file-read, file-write and ping) and the monitor Sys.Audit for
// `info` and `help`, Sys.Modify for the rest (API2/Qemu.pm `monitor`).
constexpr PvePrivilege kPve9Privileges[] = {
    {kRunVms, "VM.GuestAgent.Unrestricted", kRequired,
     "agent/exec and exec-status (the agent), file-read, file-write, ping"},
    {kRunVms, "Sys.Audit|Sys.Modify", kForVerifying,
     "monitor `info block`, `info block -n`, `info qtree`, `info kvm`: QEMU's own view"},
};

constexpr PveRelease kPveReleases[] = {
    {8, 4, "8.4", "qemu-server 8.3", kPve8Privileges, "VM.Monitor", PveDriveModel::kDrive, false},
    {9, 0, "9.x", "qemu-server 9.2", kPve9Privileges, "Sys.Audit|Sys.Modify",
     PveDriveModel::kBlockdev, true},
};

// "9.1.2" or "9.1" -> {9, 1}; nullopt when it does not start with two numbers.
std::optional<std::pair<int, int>> major_minor(std::string_view text) {
    int major = 0;
    int minor = 0;
    const char* end = text.data() + text.size();
    auto [after_major, major_error] = std::from_chars(text.data(), end, major);
    if (major_error != std::errc() || after_major == end || *after_major != '.')
        return std::nullopt;
    auto [after_minor, minor_error] = std::from_chars(after_major + 1, end, minor);
    if (minor_error != std::errc()) return std::nullopt;
    return std::pair{major, minor};
}

std::string supported_names() {
    std::vector<std::string> names;
    for (const PveRelease& release : kPveReleases) names.emplace_back(release.name);
    return join(names, " and ");
}

std::vector<std::string> paths_of(PvePathRole role, const PvePreflightTargets& targets) {
    switch (role) {
        case kTemplate:
            return {"/vms/" + std::to_string(targets.template_vmid)};
        case kRunVms: {
            std::vector<std::string> ends = {"/vms/" + std::to_string(targets.vmid_min)};
            if (targets.vmid_max != targets.vmid_min)
                ends.push_back("/vms/" + std::to_string(targets.vmid_max));
            return ends;
        }
        case kStorage: {
            std::vector<std::string> paths;
            for (const std::string& storage : targets.storages)
                paths.push_back("/storage/" + storage);
            return paths;
        }
        case kBridge: {
            std::vector<std::string> paths;
            for (const std::string& bridge : targets.bridges)
                paths.push_back("/sdn/zones/localnetwork/" + bridge);
            return paths;
        }
    }
    return {};
}

// The privileges GET /access/permissions?path=PATH says the token has on
// PATH: {"PATH": {"PRIV": 0|1 (propagates)}}.
Result<std::set<std::string>> privileges_on(PveApi& api, const std::string& path) {
    DS_ASSIGN_OR_RETURN(auto answer, api.get("/access/permissions", PveParams().set("path", path)));
    std::set<std::string> held;
    if (!answer.is_object()) {
        return make_error(errc::kProtocol, "proxmox: /access/permissions for " + path +
                                               " is no object: " + answer.dump());
    }
    if (!answer.contains(path)) return held;  // no privilege at all there
    const Json& privileges = answer[path];
    if (!privileges.is_object()) {
        return make_error(errc::kProtocol,
                          "proxmox: /access/permissions for " + path + " lists no privileges");
    }
    for (const auto& item : privileges.items()) held.insert(item.key());
    return held;
}

bool holds_any(const std::set<std::string>& held, std::string_view alternatives) {
    for (const std::string& privilege : split_list(alternatives, '|')) {
        if (held.contains(privilege)) return true;
    }
    return false;
}

// The first of "A|B": the one the grant lines give.
std::string first_alternative(std::string_view alternatives) {
    return std::string(alternatives.substr(0, alternatives.find('|')));
}

// Where the grant goes: the range's ids through /vms (ACLs propagate; a
// pool of the range would be narrower, docs/proxmox.md says how).
std::string grant_path(const std::string& path) {
    return path.starts_with("/vms/") ? "/vms" : path;
}

std::string quoted_privileges(const std::vector<std::string>& privileges) {
    return "\"" + join(privileges, " ") + "\"";
}

std::string user_of(std::string_view token_id) {
    return std::string(token_id.substr(0, token_id.find('!')));
}

}  // namespace

std::span<const PveRelease> pve_releases() {
    return kPveReleases;
}

std::vector<PvePrivilege> pve_privileges(const PveRelease& release) {
    std::vector<PvePrivilege> all(std::begin(kCommonPrivileges), std::end(kCommonPrivileges));
    all.insert(all.end(), release.own_privileges.begin(), release.own_privileges.end());
    return all;
}

Result<const PveRelease*> pve_release_of(const Json& version) {
    std::string text;
    for (const char* key : {"release", "version"}) {
        if (version.is_object() && version.contains(key) && version[key].is_string()) {
            text = version[key].get<std::string>();
            break;
        }
    }
    const auto numbers = major_minor(text);
    if (numbers) {
        for (const PveRelease& release : kPveReleases) {
            if (release.major == numbers->first && numbers->second >= release.min_minor)
                return &release;
        }
    }
    return make_error(errc::kUnsupported,
                      "proxmox: Proxmox VE " + (text.empty() ? std::string("(no version)") : text) +
                          " is not supported (supported: " + supported_names() +
                          "); its privileges, monitor and drives differ from those disksweep "
                          "knows");
}

bool PvePreflight::ready() const {
    return std::none_of(missing.begin(), missing.end(),
                        [](const PveMissingPrivilege& m) { return m.need == kRequired; });
}

Result<PvePreflight> pve_preflight(PveApi& api, const PvePreflightTargets& targets) {
    DS_ASSIGN_OR_RETURN(auto version, api.get("/version"));
    DS_ASSIGN_OR_RETURN(auto release, pve_release_of(version));
    PvePreflight preflight;
    preflight.release = release;
    preflight.version = version.value("version", "");
    std::map<std::string, std::set<std::string>> held;
    for (const PvePrivilege& need : pve_privileges(*release)) {
        for (const std::string& path : paths_of(need.role, targets)) {
            if (!held.contains(path)) {
                DS_ASSIGN_OR_RETURN(auto privileges, privileges_on(api, path));
                held[path] = std::move(privileges);
            }
            if (holds_any(held[path], need.privileges)) continue;
            preflight.missing.push_back(
                {path, std::string(need.privileges), need.need, std::string(need.used_by)});
        }
    }
    preflight.monitor_allowed = true;
    for (const std::string& path : paths_of(kRunVms, targets)) {
        if (!holds_any(held[path], release->monitor_privilege)) {
            preflight.monitor_allowed = false;
            preflight.monitor_reason =
                "the token lacks " + std::string(release->monitor_privilege) + " on " + path +
                " (PVE " + std::string(release->name) + "'s monitor `info` commands)";
        }
    }
    return preflight;
}

std::string pve_preflight_report(const PvePreflight& preflight, std::string_view token_id,
                                 std::string_view role) {
    if (preflight.missing.empty()) return "";
    std::string report = "Proxmox VE " + preflight.version + " (rules of " +
                         std::string(preflight.release->name) + "): the token " +
                         std::string(token_id) + " lacks\n";
    std::vector<std::string> privileges;
    std::vector<std::string> paths;
    for (const PveMissingPrivilege& missing : preflight.missing) {
        report += "  " + missing.privileges + " on " + missing.path + " (" + missing.used_by +
                  (missing.need == kRequired ? "" : "; without it that is not checked") + ")\n";
        const std::string privilege = first_alternative(missing.privileges);
        if (std::find(privileges.begin(), privileges.end(), privilege) == privileges.end())
            privileges.push_back(privilege);
        const std::string path = grant_path(missing.path);
        if (std::find(paths.begin(), paths.end(), path) == paths.end()) paths.push_back(path);
    }
    report += "Grant them (a new role: `pveum role add " + std::string(role) + " --privs " +
              quoted_privileges(privileges) + "`):\n";
    report += "  pveum role modify " + std::string(role) + " --append 1 --privs " +
              quoted_privileges(privileges) + "\n";
    for (const std::string& path : paths) {
        report += "  pveum acl modify " + path + " --users " + user_of(token_id) + " --roles " +
                  std::string(role) + "\n";
        if (token_id.find('!') != std::string_view::npos)
            report += "  pveum acl modify " + path + " --tokens '" + std::string(token_id) +
                      "' --roles " + std::string(role) + "\n";
    }
    return report;
}

std::string pve_role_command(const PveRelease& release, std::string_view role) {
    std::vector<std::string> privileges;
    for (const PvePrivilege& need : pve_privileges(release)) {
        const std::string privilege = first_alternative(need.privileges);
        if (std::find(privileges.begin(), privileges.end(), privilege) == privileges.end())
            privileges.push_back(privilege);
    }
    return "pveum role add " + std::string(role) + " --privs " + quoted_privileges(privileges);
}

}  // namespace ds
