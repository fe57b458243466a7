"""PVE's permission model for the fake: privileges per release, roles, ACLs,
users and API tokens, following pve-access-control's own code.

Sources (github:proxmox/pve-access-control): src/PVE/AccessControl.pm
($privgroups, create_roles, add_role_privs, roles, normalize_path) and
src/PVE/RPCEnvironment.pm (permissions, $compile_acl_path, check, check_any,
check_full, exec_api2_perm_check, check_api2_permissions,
get_effective_permissions). 8.4 is branch stable-bookworm (8.2.3, the
package PVE 8.4 ships), 9.1 is master (9.1.1). RPCEnvironment.pm is the same
in both. Not modelled: pools, realms, user expiry and `enable`, group ACLs on
/access/groups (userid-group checks), perm-modify.

The --access FILE (JSON), as `pveum` would build it:

    {
      "users":  ["disksweep@pve"],                       # root@pam always exists
      "groups": {"benchers": ["disksweep@pve"]},         # optional
      "tokens": [{"tokenid": "disksweep@pve!sweeps", "privsep": 1,
                  "secret": "..."}],                     # secret: optional, see below
      "roles":  {"DiskSweep": ["VM.Allocate", "VM.Clone", ...]},
      "acls":   [{"path": "/vms", "ugid": "disksweep@pve!sweeps", "type": "token",
                  "role": "DiskSweep", "propagate": 1}]   # type: user | token | group
    }

* `roles` are custom roles; each goes through `pveum role add`'s checks
  (API2/Role.pm create_role, AccessControl.pm add_role_privs), so a
  privilege the release does not know refuses the file with PVE's message
  ("create role failed: invalid privilege 'VM.Monitor'"). The built-in roles
  (Administrator, NoAccess, PVEAdmin, PVEVMAdmin, PVEVMUser, PVEAuditor,
  PVETemplateUser, ...) exist as create_roles makes them for that release.
* `propagate` defaults to 1, as `pveum acl modify` does.
* The server's --token (USER@REALM!TOKENID=SECRET) must be one of `tokens`;
  further tokens with a `secret` authenticate too, so one server can serve a
  test several tokens.
Without --access: the --token's user with its token privsep=0 and, unless
it is root@pam (who has everything anyway), Administrator on / (the fake
before it had permissions: everything allowed).
"""

import json
import re
from dataclasses import dataclass, field
from typing import Optional

from cluster import DRIVE_KEY, NEW_DISK, ApiError, split_drive

ROOT = "root@pam"

# AccessControl.pm $privgroups: category -> (root, admin, user, audit)
# privileges, per release. Only the VM category differs: 9.x dropped
# VM.Monitor ("privileges: drop VM.Monitor") and added VM.Replicate ("add
# VM.Replicate privilege") and the VM.GuestAgent.* privileges.
_COMMON_GROUPS = {
    "Sys": (["Sys.PowerMgmt", "Sys.Modify", "Sys.Incoming", "Sys.AccessNetwork"],
            ["Sys.Console", "Sys.Syslog"], [], ["Sys.Audit"]),
    "Datastore": ([], ["Datastore.Allocate", "Datastore.AllocateTemplate"], ["Datastore.AllocateSpace"],
                  ["Datastore.Audit"]),
    "SDN": ([], ["SDN.Allocate", "SDN.Audit"], ["SDN.Use"], ["SDN.Audit"]),
    "User": (["Realm.Allocate"], ["User.Modify", "Group.Allocate", "Realm.AllocateUser"], [], []),
    "Pool": ([], ["Pool.Allocate"], ["Pool.Audit"], ["Pool.Audit"]),
    "Mapping": ([], ["Mapping.Modify"], ["Mapping.Use"], ["Mapping.Audit"]),
}
_VM_ADMIN_COMMON = ["VM.Config.Disk", "VM.Config.CPU", "VM.Config.Memory", "VM.Config.Network",
                    "VM.Config.HWType", "VM.Config.Options", "VM.Allocate", "VM.Clone"]
_VM_USER_COMMON = ["VM.Config.CDROM", "VM.Config.Cloudinit", "VM.Console", "VM.Backup"]
PRIVILEGE_GROUPS = {
    "8.4": {**_COMMON_GROUPS, "VM": ([], _VM_ADMIN_COMMON + ["VM.Migrate", "VM.Monitor", "VM.Snapshot",
                                                             "VM.Snapshot.Rollback"],
                                     _VM_USER_COMMON + ["VM.PowerMgmt"], ["VM.Audit"])},
    "9.1": {**_COMMON_GROUPS, "VM": ([], _VM_ADMIN_COMMON + ["VM.GuestAgent.Unrestricted", "VM.Migrate",
                                                             "VM.Replicate", "VM.Snapshot",
                                                             "VM.Snapshot.Rollback"],
                                     _VM_USER_COMMON + ["VM.GuestAgent.FileRead", "VM.GuestAgent.FileSystemMgmt",
                                                        "VM.GuestAgent.FileWrite", "VM.PowerMgmt"],
                                     ["VM.Audit", "VM.GuestAgent.Audit"])},
}
VERSIONS = tuple(PRIVILEGE_GROUPS)


def valid_privileges(version: str) -> frozenset:
    """AccessControl.pm $valid_privs: every privilege of every group, plus
    Permissions.Modify ("not contained in a group")."""
    privileges = {"Permissions.Modify"}
    for groups in PRIVILEGE_GROUPS[version].values():
        for level in groups:
            privileges.update(level)
    return frozenset(privileges)


def builtin_roles(version: str) -> dict:
    """AccessControl.pm create_roles: role -> set of privileges."""
    roles = {"NoAccess": set(), "Administrator": set(valid_privileges(version)), "PVEAdmin": set(),
             "PVEAuditor": set()}
    for category, (_, admin, user, audit) in PRIVILEGE_GROUPS[version].items():
        roles.setdefault(f"PVE{category}Admin", set()).update(admin + user + audit)
        roles["PVEAdmin"].update(admin + user + audit)
        if user:
            roles.setdefault(f"PVE{category}User", set()).update(user + audit)
        roles["PVEAuditor"].update(audit)
    # "remove Mapping.Modify from PVEAdmin, only Administrator, root@pam and
    # PVEMappingAdmin should be able to use that for now"
    roles["PVEAdmin"].discard("Mapping.Modify")
    roles["PVETemplateUser"] = {"VM.Clone", "VM.Audit"}
    return roles


def split_tokenid(authid: str) -> tuple:
    """AccessControl.pm split_tokenid: (user, token name), or (authid, None)."""
    user, bang, token = authid.partition("!")
    return (user, token) if bang else (authid, None)


def normalize_path(path: Optional[str]) -> Optional[str]:
    """AccessControl.pm normalize_path."""
    if not path:
        return None
    path = re.sub(r"/+", "/", path)
    path = re.sub(r"/$", "", path) or "/"
    if not path.startswith("/"):
        path = "/" + path
    return path if re.fullmatch(r"[A-Za-z0-9.\-_/]+", path) else None


def template_replace(template: str, params: dict) -> str:
    """pve-common Tools.pm template_replace: {name} becomes the parameter's
    value, or '-' when it is missing or false (Perl's ||)."""
    def value(match):
        found = params.get(match.group(1))
        return "-" if found in (None, "", "0", 0, False) else str(found)
    return re.sub(r"\{([^}]+)\}", value, template)


def permission_error(what: Optional[str] = None) -> ApiError:
    """pve-common Exception.pm raise_perm_exc: 403 "Permission check failed (WHAT)"."""
    return ApiError(403, "Permission check failed" + (f" ({what})" if what else ""))


@dataclass
class Acl:
    path: str
    kind: str          # user | token | group
    ugid: str
    role: str
    propagate: bool


@dataclass
class AccessConfig:
    """user.cfg as the fake knows it."""
    version: str
    users: set = field(default_factory=lambda: {ROOT})
    groups: dict = field(default_factory=dict)        # group -> set of users
    tokens: dict = field(default_factory=dict)        # tokenid -> {"privsep": bool, "secret": str | None}
    roles: dict = field(default_factory=dict)         # role -> set of privileges
    acls: list = field(default_factory=list)          # Acl

    def add_role(self, role: str, privileges: list) -> None:
        """API2/Role.pm create_role + AccessControl.pm add_role_privs, with
        lock_user_config's "create role failed: " prefix."""
        if re.match(r"PVE", role, re.IGNORECASE):
            raise ValueError("roleid: cannot use role ID starting with the (case-insensitive) 'PVE' namespace")
        if role in self.roles:
            raise ValueError(f"create role failed: role '{role}' already exists")
        valid = valid_privileges(self.version)
        for privilege in privileges:
            if privilege not in valid:
                raise ValueError(f"create role failed: invalid privilege '{privilege}'")
        self.roles[role] = set(privileges)


def load(path: str, version: str, server_token: str) -> AccessConfig:
    """The --access FILE (module docstring); ValueError says what is wrong."""
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    try:
        return _config_from_json(data, version, server_token)
    except (KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"access file {path}: malformed ({error!r})") from None


def _config_from_json(data: dict, version: str, server_token: str) -> AccessConfig:
    config = AccessConfig(version, roles=builtin_roles(version))
    config.users.update(data.get("users", []))
    config.groups = {name: set(members) for name, members in data.get("groups", {}).items()}
    for token in data.get("tokens", []):
        user, name = split_tokenid(token["tokenid"])
        if name is None or user not in config.users:
            raise ValueError(f"token '{token['tokenid']}': no such user '{user}' (or not USER!TOKEN)")
        config.tokens[token["tokenid"]] = {"privsep": bool(int(token.get("privsep", 1))),
                                           "secret": token.get("secret")}
    for role, privileges in data.get("roles", {}).items():
        config.add_role(role, privileges)
    for entry in data.get("acls", []):
        config.acls.append(_acl_from_json(config, entry))
    if server_token not in config.tokens:
        raise ValueError(f"the --token '{server_token}' is not one of the access file's tokens")
    return config


def _acl_from_json(config: AccessConfig, entry: dict) -> Acl:
    """API2/ACL.pm update_acl's checks: a normalized path, an existing role
    and user/group/token."""
    path = normalize_path(entry["path"])
    kind, ugid, role = entry.get("type", "user"), entry["ugid"], entry["role"]
    known = {"user": config.users, "token": config.tokens, "group": config.groups}.get(kind)
    if path is None or known is None or ugid not in known or role not in config.roles:
        raise ValueError(f"acl {json.dumps(entry)}: bad path, type, ugid or role")
    return Acl(path, kind, ugid, role, bool(int(entry.get("propagate", 1))))


def default_config(version: str, server_token: str) -> AccessConfig:
    """Without --access: the token's user has everything (module docstring)."""
    config = AccessConfig(version, roles=builtin_roles(version))
    user, _ = split_tokenid(server_token)
    config.users.add(user)
    config.tokens[server_token] = {"privsep": False, "secret": None}
    if user != ROOT:
        config.acls.append(Acl("/", "user", user, "Administrator", True))
    return config


class Rpc:
    """RPCEnvironment.pm's permission half, over one AccessConfig."""

    def __init__(self, config: AccessConfig):
        self.config = config
        self.valid = valid_privileges(config.version)

    # ---- AccessControl.pm roles ------------------------------------------------------------

    def roles(self, authid: str, path: str) -> dict:
        """AccessControl.pm roles: role -> propagate, walking from / down to
        PATH; at each level the most specific entry (token, else user, else
        its groups) replaces what came before; a propagating entry counts
        below its path, a non-propagating one only on it; NoAccess wins."""
        roles = {}
        parts = path.strip("/").split("/") if path != "/" else []
        levels = ["/"] + ["/" + "/".join(parts[:i + 1]) for i in range(len(parts))]
        for index, level in enumerate(levels):
            final = index == len(levels) - 1
            for kinds in (("token",), ("user",), ("group",)):
                found = {acl.role: acl.propagate for acl in self.config.acls
                         if acl.path == level and acl.kind in kinds and self._applies(acl, authid)
                         and (final or acl.propagate)}
                if found:
                    roles = found
                    break
        return {"NoAccess": roles["NoAccess"]} if "NoAccess" in roles else roles

    def _applies(self, acl: Acl, authid: str) -> bool:
        if acl.kind == "group":
            return authid in self.config.groups.get(acl.ugid, set())
        return acl.ugid == authid

    # ---- RPCEnvironment.pm -------------------------------------------------------------------

    def permissions(self, authid: str, path: Optional[str]) -> dict:
        """RPCEnvironment.pm permissions: privilege -> propagate flag.
        root@pam has everything; a token of privsep=0 has its user's
        privileges, one of privsep=1 those both its own ACLs and its user's
        grant (root@pam's privsep token: its own ACLs alone,
        $compile_acl_path); an unknown token nothing."""
        if authid == ROOT:
            return {privilege: 1 for privilege in self.config.roles["Administrator"]}
        if path is None:
            return {}
        user, token = split_tokenid(authid)
        if token is not None:
            info = self.config.tokens.get(authid)
            if info is None:
                return {}
            user_privileges = self.permissions(user, path)
            if not info["privsep"]:
                return user_privileges
            privileges = self._compiled(authid, path)
            if user != ROOT:
                privileges = {p: int(bool(user_privileges[p] and flag))
                              for p, flag in privileges.items() if p in user_privileges}
            return privileges
        return self._compiled(authid, path)

    def _compiled(self, authid: str, path: str) -> dict:
        """$compile_acl_path: the roles' privileges; a privilege propagates
        if any role holding it does."""
        privileges = {}
        for role, propagate in self.roles(authid, path).items():
            for privilege in self.config.roles.get(role, ()):
                privileges[privilege] = int(bool(privileges.get(privilege) or propagate))
        return privileges

    def _verify_privname(self, privilege: str) -> None:
        """AccessControl.pm verify_privname: a check naming a privilege the
        release does not have dies (a 500: the schema is of another release)."""
        if privilege not in self.valid:
            raise ApiError(500, f"invalid privilege '{privilege}'")

    def check(self, authid: str, path: str, privileges: list, noerr: bool = False) -> bool:
        """RPCEnvironment.pm check: every privilege, else 403 "(PATH, PRIV)"
        naming the first one missing."""
        held = self.permissions(authid, path)
        for privilege in privileges:
            self._verify_privname(privilege)
            if privilege not in held:
                if noerr:
                    return False
                raise permission_error(f"{path}, {privilege}")
        return True

    def check_any(self, authid: str, path: str, privileges: list, noerr: bool = False) -> bool:
        """RPCEnvironment.pm check_any: one of them, else 403 "(PATH, A|B)"."""
        held = self.permissions(authid, path)
        for privilege in privileges:
            self._verify_privname(privilege)
            if privilege in held:
                return True
        if noerr:
            return False
        raise permission_error(f"{path}, " + "|".join(privileges))

    def check_full(self, authid: str, path: str, privileges: list, any_of: bool, noerr: bool = False) -> bool:
        return (self.check_any if any_of else self.check)(authid, path, privileges, noerr)

    def check_api2_permissions(self, permissions: Optional[dict], authid: str, params: dict) -> None:
        """RPCEnvironment.pm check_api2_permissions: the schema's
        `permissions` of the method, before its parameters are verified
        (pve-manager PVE/HTTPServer.pm rest_handler)."""
        if authid == ROOT:
            return
        if not permissions:
            raise permission_error("user != root@pam")
        if permissions.get("user") == "all":
            return
        if permissions.get("check"):
            self.exec_check(permissions["check"], authid, params)
            return
        raise permission_error()

    def exec_check(self, check: list, authid: str, params: dict, noerr: bool = False) -> bool:
        """RPCEnvironment.pm exec_api2_perm_check: and, or, perm (path
        template, privileges, options `any`, `require_param`), userid-param."""
        test = check[0]
        if test == "and":
            for sub in check[1:]:
                self.exec_check(sub, authid, params)
            return True
        if test == "or":
            if any(self.exec_check(sub, authid, params, True) for sub in check[1:]):
                return True
            if noerr:
                return False
            raise permission_error()
        if test == "perm":
            return self._perm_check(check, authid, params, noerr)
        if test == "userid-param":
            return self._userid_check(check[1], authid, params, noerr)
        raise ApiError(500, f"pve_fake: permission test '{test}' is not modelled")

    def _perm_check(self, check: list, authid: str, params: dict, noerr: bool) -> bool:
        _, template, privileges, *flat = check
        options = dict(zip(flat[::2], flat[1::2]))
        required = options.get("require_param")
        if required and params.get(required) is None:
            if noerr:
                return False
            raise permission_error()
        path = normalize_path(template_replace(template, params))
        return self.check_full(authid, path or "", privileges, bool(options.get("any")), noerr)

    def _userid_check(self, subtest: str, authid: str, params: dict, noerr: bool) -> bool:
        """userid-param: `self` (the user asks about itself) or
        Realm.AllocateUser on the user's realm."""
        userid = str(params.get("userid") or "")
        if subtest == "self":
            if userid in self.config.users and authid == userid:
                return True
            if noerr:
                return False
            raise permission_error()
        realm = userid.rpartition("@")[2]
        return self.check(authid, f"/access/realm/{realm}", ["Realm.AllocateUser"], noerr)

    def effective_permissions(self, authid: str) -> dict:
        """RPCEnvironment.pm get_effective_permissions: the top-level paths
        and every ACL's path, each with its privileges; paths without any
        are left out."""
        paths = {"/", "/access", "/access/groups", "/nodes", "/pool", "/sdn", "/storage", "/vms"}
        paths.update(acl.path for acl in self.config.acls)
        answer = {}
        for path in sorted(paths):
            privileges = self.permissions(authid, path)
            if privileges:
                answer[path] = privileges
        return answer

    def authenticate(self, tokenid: str) -> Optional[str]:
        """The secret of a token that may authenticate (None: none given)."""
        info = self.config.tokens.get(tokenid)
        return info.get("secret") if info else None


# ---- checks PVE's code makes that the schema only describes in words ---------------------------
#
# Each takes the Rpc and plain data, raises PVE's error, and cites its source.

# qemu-server src/PVE/API2/Qemu.pm: the option tables $check_vm_modify_config_perm
# reads (the same in 8.3 and 9.2 but for allow-ksm, new in 9) -> the privilege.
CONFIG_KEY_PRIVILEGES = {
    **dict.fromkeys(["cores", "cpu", "runningcpu", "cpulimit", "cpuunits", "numa", "smp", "sockets", "vcpus"],
                    "VM.Config.CPU"),
    **dict.fromkeys(["memory", "balloon", "shares", "allow-ksm"], "VM.Config.Memory"),
    **dict.fromkeys(["acpi", "hotplug", "kvm", "machine", "runningmachine", "scsihw", "smbios1", "tablet", "vga",
                     "watchdog", "audio0", "rng0"], "VM.Config.HWType"),
    **dict.fromkeys(["agent", "autostart", "bios", "description", "keyboard", "localtime", "migrate_downtime",
                     "migrate_speed", "name", "onboot", "ostype", "protection", "reboot", "startdate", "startup",
                     "tdf", "template"], "VM.Config.Options"),
    "freeze": "VM.PowerMgmt",
    **dict.fromkeys(["boot", "bootdisk", "vmstatestorage"], "VM.Config.Disk"),
}
_CLOUDINIT_KEYS = {"cicustom", "cipassword", "citype", "ciuser", "ciupgrade", "nameserver", "searchdomain",
                   "sshkeys"}
# Keys checked elsewhere, by their value (drives, serial, usb, ...).
_VALUE_CHECKED = re.compile(r"(?:unused|serial|usb|hostpci|virtiofs)\d+|cdrom|tags")


def check_vm_modify_config_perm(rpc: Rpc, authid: str, vmid: int, keys) -> None:
    """qemu-server API2/Qemu.pm $check_vm_modify_config_perm: each key's
    privilege on /vms/VMID; a key of no table ("catches args, lock, etc.")
    is root@pam's alone."""
    if authid == ROOT:
        return
    path = f"/vms/{vmid}"
    for key in sorted(keys):
        if DRIVE_KEY.fullmatch(key) or _VALUE_CHECKED.fullmatch(key):
            continue
        privilege = CONFIG_KEY_PRIVILEGES.get(key) or ("VM.Config.CPU" if re.fullmatch(r"numa\d+", key) else None)
        if privilege:
            rpc.check(authid, path, [privilege])
            if key == "startup":   # "special case for startup since it changes host behaviour"
                rpc.check(authid, "/", ["Sys.Modify"])
        elif re.fullmatch(r"net\d+", key) or key == "running-nets-host-mtu":
            rpc.check(authid, path, ["VM.Config.Network"])
        elif key in _CLOUDINIT_KEYS or re.fullmatch(r"ipconfig\d+", key):
            rpc.check_any(authid, path, ["VM.Config.Cloudinit", "VM.Config.Network"])
        elif key == "vmstate":
            rpc.check(authid, path, ["VM.Config.Disk", "VM.PowerMgmt"])
        else:
            raise ApiError(500, f"only root can set '{key}' config")


def check_drive_perms(rpc: Rpc, authid: str, vmid: int, key: str, value: str) -> None:
    """$update_vm_api's $check_drive_perms (old and new value of a drive):
    a CD-ROM needs VM.Config.CDROM, any other drive VM.Config.Disk."""
    _, options = split_drive(value)
    privilege = "VM.Config.CDROM" if options.get("media") == "cdrom" else "VM.Config.Disk"
    rpc.check(authid, f"/vms/{vmid}", [privilege])


def check_serial_perm(rpc: Rpc, authid: str, vmid: int, key: str, value: str) -> None:
    """$update_vm_api / $check_vm_create_serial_perm: a serial `socket`
    needs VM.Config.HWType, a real device is root@pam's."""
    if value == "socket":
        rpc.check(authid, f"/vms/{vmid}", ["VM.Config.HWType"])
    elif authid != ROOT:
        raise ApiError(500, f"only root can modify '{key}' config for real devices")


def volume_owner(volid: str) -> Optional[int]:
    """pve-storage Plugin.pm parse_volname: the owner is the VMID of the
    volume's (last) name, vm-ID-... or base-ID-..."""
    match = re.search(r"(?:^|/)(?:vm|base)-(\d+)-[^/]*$", volid.split(":", 1)[-1])
    return int(match.group(1)) if match else None


def check_volume_access(rpc: Rpc, authid: str, vmid: Optional[int], volid: str) -> None:
    """pve-storage src/PVE/Storage.pm check_volume_access, for VM images:
    Datastore.Allocate on the storage is enough; the VM's own volume needs
    nothing more; another VM's needs Datastore.Audit on the storage and
    VM.Config.Disk on its owner."""
    if ":" not in volid:
        if authid != ROOT:
            raise ApiError(500, "Only root can pass arbitrary filesystem paths.")
        return
    storage = volid.split(":", 1)[0]
    if rpc.check(authid, f"/storage/{storage}", ["Datastore.Allocate"], True):
        return
    owner = volume_owner(volid)
    if owner is not None and vmid is not None and owner == vmid:
        return
    if owner is None:
        raise ApiError(500, f"missing privileges to access {volid}")
    rpc.check(authid, f"/storage/{storage}", ["Datastore.Audit"])
    rpc.check(authid, f"/vms/{owner}", ["VM.Config.Disk"])


def check_storage_access(rpc: Rpc, authid: str, vmid: int, settings: dict) -> None:
    """qemu-server API2/Qemu.pm $check_storage_access, for each drive set:
    a new disk (STORAGE:SIZE) needs Datastore.AllocateSpace on its storage,
    an existing volume check_volume_access, the `cdrom` drive Sys.Console on
    /; `none` and cloud-init drives nothing."""
    for key, value in sorted(settings.items()):
        if not DRIVE_KEY.fullmatch(key):
            continue
        volid, options = split_drive(value)
        if key.startswith("unused"):
            check_volume_access(rpc, authid, vmid, volid)
        elif not volid or volid == "none" or "cloudinit" in volid:
            continue
        elif volid == "cdrom" and options.get("media") == "cdrom":
            rpc.check(authid, "/", ["Sys.Console"])
        elif NEW_DISK.fullmatch(volid) and options.get("media") != "cdrom":
            storage = NEW_DISK.fullmatch(volid).group(2)
            if storage:
                rpc.check(authid, f"/storage/{storage}", ["Datastore.AllocateSpace"])
        else:
            check_volume_access(rpc, authid, vmid, volid)
    if settings.get("vmstatestorage") is not None:
        rpc.check(authid, f"/storage/{settings['vmstatestorage']}", ["Datastore.AllocateSpace"])


def check_storage_access_clone(rpc: Rpc, authid: str, config: dict, storage: Optional[str]) -> None:
    """qemu-server API2/Qemu.pm $check_storage_access_clone: each disk (not
    CD-ROMs) needs Datastore.AllocateSpace on the clone's storage (the
    `storage` parameter, else the disk's own), linked clones too."""
    for key, value in sorted(config.items()):
        if not DRIVE_KEY.fullmatch(key) or key.startswith("unused"):
            continue
        volid, options = split_drive(value)
        if not volid or volid == "none":
            continue
        if options.get("media") == "cdrom":
            if volid == "cdrom":
                rpc.check(authid, "/", ["Sys.Console"])
            continue
        rpc.check(authid, f"/storage/{storage or volid.split(':', 1)[0]}", ["Datastore.AllocateSpace"])
    if config.get("vmstatestorage") is not None:
        rpc.check(authid, f"/storage/{config['vmstatestorage']}", ["Datastore.AllocateSpace"])


def check_bridge_access(rpc: Rpc, authid: str, config: dict) -> None:
    """qemu-server QemuServer.pm check_bridge_access -> pve-guest-common
    GuestHelpers.pm check_vnet_access (PVE >= 8.0), for each netN with a
    bridge: SDN.Use on /sdn/zones/localnetwork/BRIDGE (a plain Linux
    bridge is in the zone `localnetwork`; SDN vnets are not modelled), or
    with a VLAN `tag` on .../BRIDGE/TAG, with `trunks` on each trunk's VLAN."""
    if authid == ROOT:
        return
    for key in sorted(config):
        if not re.fullmatch(r"net\d+", key):
            continue
        _, options = split_drive(config[key])
        bridge = options.get("bridge")
        if bridge is None:
            continue
        base = f"/sdn/zones/localnetwork/{bridge}"
        if options.get("tag"):
            rpc.check(authid, f"{base}/{options['tag']}", ["SDN.Use"])
        for tag in _trunk_tags(options.get("trunks")):
            rpc.check(authid, f"{base}/{tag}", ["SDN.Use"])
        if not (options.get("tag") or options.get("trunks")):
            rpc.check(authid, base, ["SDN.Use"])


def _trunk_tags(trunks: Optional[str]) -> list:
    """GuestHelpers.pm get_tags_from_trunk: "10;20-22" -> 10, 20, 21, 22, sorted as text."""
    tags = set()
    for part in (trunks or "").split(";"):
        low, _, high = part.partition("-")
        if low.isdigit():
            tags.update(str(t) for t in range(int(low), int(high or low) + 1))
    return sorted(tags)
