// The Proxmox VE releases disksweep supports, and every rule of PVE's that
// differs between them, in one table (pve_version.cpp, kPveReleases):
//  * the privileges a sweep needs, per path, and what each is for;
//  * the QEMU monitor: which privilege lets a token run HMP `info` commands,
//    and how a drive becomes QEMU block nodes (what `info block` shows);
//  * API parameters that exist in one release only (agent/file-read's
//    offset and count).
// PVE 8.4 (qemu-server 8.3, QEMU 9.2) and 9.x (qemu-server 9, QEMU 10) are
// supported; any other release is refused with the reason.
//
// And the preflight that checks a token against them (pve_preflight): GET
// /access/permissions for each path a sweep touches, compared with the
// table; what is missing is named with the `pveum` lines that grant it.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "daemon/backends/hypervisor/proxmox/pve_client.h"

namespace ds {

// The paths a sweep's calls touch, by role; pve_preflight makes each a PVE
// ACL path from the host's options.
enum class PvePathRole {
    kTemplate,  // /vms/TEMPLATE: cloned, its config read
    kRunVms,    // /vms/ID for every ID of vmid_min..vmid_max (the runs' clones)
    kStorage,   // /storage/STORAGE for each storage a run's disk is allocated on
    kBridge,    // /sdn/zones/localnetwork/BRIDGE for each bridge of the template's NICs
};

// What a sweep needs of PVE's privileges on one path role.
enum class PveNeed {
    kRequired,      // without it runs fail: the daemon refuses to start
    kForVerifying,  // without it a verification level is not checked (reported)
};

struct PvePrivilege {
    PvePathRole role;
    // One privilege, or several separated by '|' of which any one will do.
    std::string_view privileges;
    PveNeed need;
    std::string_view used_by;  // the API calls that check it
};

// How qemu-server turns a VM's drive into QEMU options, which decides what
// HMP's `info block` shows of it.
enum class PveDriveModel {
    kDrive,     // one `-drive` per disk: `info block` shows all (qemu-server 8)
    kBlockdev,  // machine >= 10.0: throttle node over format over file node
                // (`info block` + `info block -n`; limits in a throttle
                // group, out of `info`'s reach) (qemu-server 9)
};

struct PveRelease {
    int major = 0;
    int min_minor = 0;                             // the oldest minor supported of that major
    std::string_view name;                         // "8.4", "9.x"
    std::string_view qemu_server;                  // the qemu-server it ships, for messages
    std::span<const PvePrivilege> own_privileges;  // besides those every release needs
    std::string_view monitor_privilege;            // for HMP `info` commands, on /vms/ID
    PveDriveModel drive_model;
    bool file_read_has_offset = false;  // agent/file-read takes offset and count
};

// The supported releases, oldest first.
std::span<const PveRelease> pve_releases();

// Every privilege a sweep needs on `release`: those all releases share,
// then the release's own.
std::vector<PvePrivilege> pve_privileges(const PveRelease& release);

// The rules of the release GET /version answers (`release` "9.1", or
// `version` "9.1.2"). errc::kUnsupported naming the version and the
// supported ones otherwise.
Result<const PveRelease*> pve_release_of(const Json& version);

// The concrete paths of a host (its options), for the preflight.
struct PvePreflightTargets {
    std::string node;
    int template_vmid = 0;
    int vmid_min = 0;
    int vmid_max = 0;
    std::vector<std::string> storages;  // data disks' and clones' storages
    std::vector<std::string> bridges;   // the template's NICs' bridges
};

// One privilege the token lacks on one path.
struct PveMissingPrivilege {
    std::string path;
    std::string privileges;  // as the table spells it ("A|B": any one)
    PveNeed need;
    std::string used_by;
};

struct PvePreflight {
    const PveRelease* release = nullptr;
    std::string version;  // GET /version's `version`
    std::vector<PveMissingPrivilege> missing;
    // Whether the token may run HMP `info` commands on the runs' VMs, and
    // why not when it may not.
    bool monitor_allowed = false;
    std::string monitor_reason;
    bool ready() const;  // nothing kRequired is missing
};

// Reads /version (refusing an unsupported release) and, for each path of
// `targets` the release's table names, the token's effective privileges on
// it (GET /access/permissions?path=PATH, which PVE answers for a token's own
// rights: pve-access-control src/PVE/API2/AccessControl.pm `permissions`).
// The ids of the range are checked at both ends (the ACLs of /vms propagate
// to every id; an ACL on single ids is checked where it matters).
// Errors: PVE's (unreachable, 401), errc::kUnsupported for the release.
Result<PvePreflight> pve_preflight(PveApi& api, const PvePreflightTargets& targets);

// What is missing, one line each, then the `pveum` commands that grant it
// to `token_id` (USER@REALM!TOKENID) and its user through one role
// (`role`, created or extended): a privilege-separated token holds only
// what both it and its user are granted (pve-access-control
// src/PVE/RPCEnvironment.pm `permissions`).
std::string pve_preflight_report(const PvePreflight& preflight, std::string_view token_id,
                                 std::string_view role = "DiskSweep");

// The whole least-privilege role of a release, as one `pveum role add` line
// (docs/proxmox.md prints them; a test checks it against the table).
std::string pve_role_command(const PveRelease& release, std::string_view role = "DiskSweep");

}  // namespace ds
