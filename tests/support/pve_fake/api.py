"""What the fake does for each API method it simulates.

ROUTES maps (METHOD, schema path template) to a handler. A handler gets the
server's state and the request (its parameters already verified against the
schema by the server) and returns the `data` of the answer, or raises
ApiError. Methods the schema has but ROUTES lacks answer 501 "not simulated"
(after the same verification): the fake never pretends.

Messages of errors are PVE's where a client may meet them.
"""

import base64
import binascii
import contextlib
import inspect
import json
import re
import time
from dataclasses import dataclass
from typing import Optional

import access
from cluster import (CONFIG_CALL_PARAMETERS, DRIVE_KEY, GIB, ApiError, Vm, _listed, param_error, parse_size,
                     print_drive, split_drive, start_warnings)
from guest import FILE_READ_CAP, HARDWARE_FILE, AgentError, Guests
from machines import SIMULATED_MACHINE, SIMULATED_QEMU, SIMULATED_QEMU_VERSION, SimulatedMachines
from schema import ApiMethod
from tasks import UPID_RE, ForcedOutcome, TaskFailed

# What differs per simulated release besides privileges (access.py), the
# schema (agent/file-read's offset and count are 9.1's) and the monitor's
# rule (_MONITOR_PERMISSION): pve-manager's version (GET /version:
# PVE/API2/Version.pm; `repoid` the pve-manager commit, 16 hex digits) and
# the kernel.
PVE_RELEASES = {
    "8.4": {"version": "8.4.1", "release": "8.4", "repoid": "2a5fa54a8503f96d", "kernel": "6.8.12-9-pve"},
    # pve-manager "bump version to 9.1.19" (commit 076d7c3c108f0346...).
    "9.1": {"version": "9.1.19", "release": "9.1", "repoid": "076d7c3c108f0346", "kernel": "6.17.2-1-pve"},
}


def release(version: str) -> dict:
    if version not in PVE_RELEASES:
        raise ValueError(f"PVE {version} is not simulated; one of " + ", ".join(PVE_RELEASES))
    return PVE_RELEASES[version]


@dataclass
class Request:
    method: str
    path: str                         # below /api2/json, as sent
    template: str                     # the schema's path template
    params: dict                      # verified parameters, path ones included
    user: str                         # USER@REALM!TOKENID of the token
    forced_task: Optional[ForcedOutcome] = None
    total: Optional[int] = None       # set by handlers of paged answers

    def integer(self, name: str, default: Optional[int] = None) -> Optional[int]:
        return int(self.params[name]) if name in self.params else default

    def flag(self, name: str) -> bool:
        return self.params.get(name) == "1"


def start_task(state, request: Request, node: str, kind: str, object_id, work, on_failure=lambda: None,
               first_step=None, failure_prefix: str = "") -> str:
    """pve-common RESTEnvironment.pm fork_worker: a task of `kind` for
    `object_id`; `first_step` runs at once (what a real worker does before
    a client can look again), `work` when the task's time is up."""
    return state.tasks.start(node, kind, str(object_id), request.user, work, on_failure, request.forced_task,
                             first_step=first_step, failure_prefix=failure_prefix)


# ---- cluster and nodes ------------------------------------------------------------------


def get_version(state, request):
    return {key: state.release[key] for key in ("version", "release", "repoid")}


# pve-manager API2Tools.pm extract_node_stats: what a user without
# Sys.Audit on /nodes/NODE does not see.
_NODE_STATS = ("cpu", "maxcpu", "mem", "maxmem", "uptime", "disk", "maxdisk")


def _node_entry(state, request, entry: dict) -> dict:
    """pve-manager API2/Nodes.pm index and API2/Cluster.pm resources: the
    node's stats only with Sys.Audit on /nodes/NODE."""
    if state.access.check(request.user, f"/nodes/{entry['node']}", ["Sys.Audit"], True):
        return entry
    return {key: value for key, value in entry.items() if key not in _NODE_STATS}


def get_nodes(state, request):
    return [_node_entry(state, request, {
        "node": node, "status": "online", "cpu": 0.02, "maxcpu": 2, "mem": 2 * GIB, "maxmem": 24 * GIB,
        "uptime": 86400, "level": "", "ssl_fingerprint": state.fingerprint}) for node in state.cluster.nodes]


def get_node_status(state, request):
    state.cluster.check_node(request.params["node"])
    return {"cpu": 0.02, "loadavg": ["0.10", "0.05", "0.01"],
            "pveversion": f"pve-manager/{state.release['version']}/{state.release['repoid']}",
            "boot-info": {"mode": "efi", "secureboot": 0},
            "cpuinfo": {"cores": 2, "cpus": 2, "model": "pve_fake CPU", "sockets": 1},
            "current-kernel": {"machine": "x86_64", "release": state.release["kernel"], "sysname": "Linux",
                               "version": "#1 SMP PREEMPT_DYNAMIC PMX " + state.release["kernel"][:-4]},
            "memory": {"free": 22 * GIB, "total": 24 * GIB, "used": 2 * GIB},
            "rootfs": {"avail": 50 * GIB, "free": 50 * GIB, "total": 100 * GIB, "used": 50 * GIB}}


def get_resources(state, request):
    """pve-manager API2/Cluster.pm resources: VMs with VM.Audit on
    /vms/VMID, storages with Datastore.Audit on /storage/ID, nodes always
    (their stats with Sys.Audit)."""
    rpc, user = state.access, request.user
    entries = []
    for entry in state.cluster.resources(request.params.get("type")):
        kind = entry["type"]
        if kind == "qemu" and not rpc.check(user, f"/vms/{entry['vmid']}", ["VM.Audit"], True):
            continue
        if kind == "storage" and not rpc.check(user, f"/storage/{entry['storage']}", ["Datastore.Audit"], True):
            continue
        entries.append(_node_entry(state, request, entry) if kind == "node" else entry)
    return entries


def get_nextid(state, request):
    return state.cluster.next_id(request.params.get("vmid"))


def get_storages(state, request):
    node = request.params["node"]
    state.cluster.check_node(node)
    wanted = request.params.get("content")
    # pve-storage API2/Storage/Status.pm index: only storages with
    # Datastore.Audit or Datastore.AllocateSpace.
    privileges = ["Datastore.Audit", "Datastore.AllocateSpace"]
    return [state.cluster.storage_summary(node, s) for s in state.cluster.storages.values()
            if s.on(node) and request.params.get("storage", s.id) == s.id
            and state.access.check_any(request.user, f"/storage/{s.id}", privileges, True)
            and (wanted is None or set(wanted.replace(";", ",").split(",")) & set(s.content))]


def get_storage_content(state, request):
    """pve-storage API2/Storage/Content.pm index -> the plugin's list_images:
    file storages report `used` and the backing file as `parent`
    (../BASEVMID/BASENAME), LVM-thin only volid, format raw, size, vmid."""
    node, storage = request.params["node"], request.params["storage"]
    state.cluster.check_node(node)
    if storage not in state.cluster.storages:
        raise ApiError(500, f"storage '{storage}' does not exist")
    vmid = request.integer("vmid")
    return [_volume_entry(state.cluster, v) for v in sorted(state.cluster.volumes.values(), key=lambda v: v.volid)
            if v.storage == storage and (vmid is None or v.vmid == vmid) and _may_read(state, request, v.volid)]


def _may_read(state, request, volid: str) -> bool:
    """Content.pm index: a volume check_volume_access refuses is left out."""
    try:
        access.check_volume_access(state.access, request.user, None, volid)
    except ApiError:
        return False
    return True


def _volume_entry(cluster, volume):
    entry = {"volid": volume.volid, "format": volume.format, "size": volume.size, "vmid": volume.vmid,
             "content": "images", "ctime": int(time.time())}
    if cluster.storages[volume.storage].is_file_based:
        entry["used"] = volume.used
        if volume.parent:
            base = cluster.volumes.get(volume.parent)
            entry["parent"] = f"../{base.vmid}/{base.volname.rsplit('/', 1)[-1]}" if base else volume.parent
    return entry


def get_volume_attributes(state, request):
    """GET /nodes/{node}/storage/{storage}/content/{volume} (Content.pm
    info): "read access for the volume" is check_volume_access."""
    state.cluster.check_node(request.params["node"])
    volume = request.params["volume"]
    volid = volume if ":" in volume else f"{request.params.get('storage')}:{volume}"
    access.check_volume_access(state.access, request.user, None, volid)
    return state.cluster.volume_attributes(request.params.get("storage"), request.params["volume"])


# ---- VMs --------------------------------------------------------------------------------


def _vm(state, request) -> Vm:
    return state.cluster.vm(request.params["node"], request.params["vmid"])


def _check_skiplock(request: Request) -> None:
    """qemu-server API2/Qemu.pm (update, destroy, start, stop ...): skiplock
    is root@pam's only; a token never is."""
    if request.flag("skiplock"):
        raise param_error("skiplock", "Only root may use this option.")


def _unlocked(state, request) -> Vm:
    """pve-guest-common AbstractConfig.pm, check_lock: "VM is locked (LOCK)"."""
    _check_skiplock(request)
    vm = _vm(state, request)
    if vm.lock:
        raise ApiError(500, f"VM is locked ({vm.lock})")
    return vm


def _check_config_permissions(state, request, vmid: int, deletions: list) -> None:
    """The permission checks qemu-server API2/Qemu.pm $update_vm_api (and
    create_vm) make before any change: $check_vm_modify_config_perm on the
    keys deleted and set, serial ports ($check_vm_create_serial_perm),
    $check_storage_access on the drives, check_bridge_access on the NICs."""
    rpc, user = state.access, request.user
    settings = {k: v for k, v in request.params.items() if k not in CONFIG_CALL_PARAMETERS and v is not None}
    access.check_vm_modify_config_perm(rpc, user, vmid, deletions)
    access.check_vm_modify_config_perm(rpc, user, vmid, settings)
    for key, value in sorted(settings.items()):
        if re.fullmatch(r"serial\d+", key):
            access.check_serial_perm(rpc, user, vmid, key, str(value))
    access.check_storage_access(rpc, user, vmid, {k: str(v) for k, v in settings.items()})
    access.check_bridge_access(rpc, user, {k: str(v) for k, v in settings.items()})


def _worker_permission_failure(state, request, vm: Vm, settings: dict, deletions: list) -> Optional[ApiError]:
    """$update_vm_api's $updatefn: each drive deleted, replaced or set needs
    $check_drive_perms on its old and new value; a NIC deleted, SDN.Use on
    its bridge; tags changed, VM.Config.Options (pve-guest-common
    GuestHelpers.pm assert_tag_permissions; free-form tags, PVE's default).
    In PVE the worker makes these checks (POST: the task fails)."""
    rpc, user = state.access, request.user
    try:
        for key in deletions:
            old = vm.config.get(key, vm.pending.get(key))
            if old is not None and DRIVE_KEY.fullmatch(key) and not key.startswith("unused"):
                access.check_drive_perms(rpc, user, vm.vmid, key, old)
            elif old is not None and re.fullmatch(r"net\d+", key):
                access.check_bridge_access(rpc, user, {key: old})
            elif key == "tags":
                rpc.check(user, f"/vms/{vm.vmid}", ["VM.Config.Options"])
        for key, value in sorted(settings.items()):
            if DRIVE_KEY.fullmatch(key) and not key.startswith("unused"):
                if vm.config.get(key):
                    access.check_drive_perms(rpc, user, vm.vmid, key, vm.config[key])
                access.check_drive_perms(rpc, user, vm.vmid, key, value)
            elif key == "tags":
                rpc.check(user, f"/vms/{vm.vmid}", ["VM.Config.Options"])
    except ApiError as error:
        return error
    return None


def _running(state, vm: Vm) -> bool:
    """qemu-server QemuServer.pm check_running: the machine runs."""
    return vm.status == "running" and state.machines.is_running(vm.vmid)


def get_vms(state, request):
    """qemu-server API2/Qemu.pm vmlist: only VMs with VM.Audit on /vms/VMID."""
    node = request.params["node"]
    state.cluster.check_node(node)
    return [state.cluster.vm_summary(vm) for vm in sorted(state.cluster.vms.values(), key=lambda v: v.vmid)
            if vm.node == node and state.access.check(request.user, f"/vms/{vm.vmid}", ["VM.Audit"], True)]


def get_vm_index(state, request):
    _vm(state, request)
    return [{"subdir": name} for name in ("config", "pending", "status", "agent", "clone", "template",
                                          "resize", "monitor", "rrd", "firewall")]


def create_vm(state, request):
    """qemu-server API2/Qemu.pm create_vm: the config is written with lock
    `create`, disks made by create_disks, then the lock removed."""
    node, vmid = request.params["node"], int(request.params["vmid"])
    state.cluster.check_node(node)
    _check_config_permissions(state, request, vmid, [])
    config = {"meta": f"creation-qemu={SIMULATED_QEMU[state.version]['version']},ctime={int(time.time())}"}
    vm = state.cluster.add_vm(vmid, node, config, lock="create")
    settings, _ = state.cluster.check_update(vm, {**request.params, "delete": ""})

    def work(log):
        for key, value in settings.items():
            vm.config[key] = state.cluster.create_disk(vm, key, value, log) if DRIVE_KEY.fullmatch(key) else value
        vm.lock = None

    def undo():
        for volume in state.cluster.owned_volumes(vm):
            state.cluster.free_volume(volume)
        state.cluster.vms.pop(vmid, None)

    return start_task(state, request, node, "qmcreate", vmid, work, undo)


def delete_vm(state, request):
    """qemu-server API2/Qemu.pm destroy_vm."""
    vm = _unlocked(state, request)
    if _running(state, vm):
        raise ApiError(500, f"VM {vm.vmid} is running - destroy failed")
    if vm.config.get("protection") == "1":
        raise ApiError(500, f"can't remove VM {vm.vmid} - protection mode enabled")

    def work(log):
        for volume in state.cluster.owned_volumes(vm):
            log.info(f"  Logical volume \"{volume.split(':', 1)[1]}\" successfully removed.")
        state.cluster.destroy(vm)
        state.guests.erase(vm.vmid)

    return start_task(state, request, vm.node, "qmdestroy", vm.vmid, work)


def get_config(state, request):
    """qemu-server API2/Qemu.pm vm_config: `current` and `snapshot` exclude
    each other (400 on both keys); a snapshot must exist; otherwise
    AbstractConfig.pm load_current_config: pending values taken in unless
    current=1. The digest is the config file's (pending section included)."""
    vm = _vm(state, request)
    if request.params.get("snapshot") and request.flag("current"):
        message = "cannot use 'snapshot' parameter with 'current'"
        raise ApiError(400, "Parameter verification failed.", {"snapshot": message, "current": message})
    if request.params.get("snapshot"):
        raise ApiError(500, f"snapshot '{request.params['snapshot']}' does not exist")
    config = vm.config if request.flag("current") else vm.with_pending()
    if vm.lock:
        config = {**config, "lock": vm.lock}   # `lock` is a key of the config file
    if "cipassword" in config:
        config = {**config, "cipassword": "**********"}
    return {**_typed_config(state, request, config), "digest": state.cluster.config_digest(vm)}


def _typed_config(state, request, config: dict) -> dict:
    answer_schema = ApiMethod.from_info(request.template, "GET", {"parameters": state.schema.method(
        request.template, "GET").returns})
    return {key: _typed(answer_schema.schema_of(key), value) for key, value in config.items()}


def get_pending(state, request):
    """qemu-server API2/Qemu.pm vm_pending -> pve-guest-common
    GuestHelpers.pm config_with_pending_array: each key with its current
    `value`, its `pending` value, and `delete` (1, or 2 when forced)."""
    vm = _vm(state, request)
    entries = []
    for key in sorted(set(vm.config) | set(vm.pending) | set(vm.pending_delete)):
        entry = {"key": key}
        if key in vm.config:
            entry["value"] = vm.config[key]
        if key in vm.pending:
            entry["pending"] = vm.pending[key]
        if key in vm.pending_delete:
            entry["delete"] = 2 if vm.pending_delete[key] else 1
        entries.append(entry)
    return entries


def _typed(schema, text: str):
    """A config value as PVE's config parser hands it to JSON: numbers and
    booleans as numbers, the rest as text."""
    kind = (schema or {}).get("type")
    try:
        if kind in ("integer", "boolean"):
            return int(text)
        if kind == "number":
            return float(text) if "." in text else int(text)
    except ValueError:
        pass
    return text


def _check_digest(state, request, vm: Vm) -> None:
    """qemu-server API2/Qemu.pm $update_vm_api: "checksum mismatch (file change by other user?)"."""
    if request.params.get("digest") and request.params["digest"] != state.cluster.config_digest(vm):
        raise ApiError(500, "checksum mismatch (file change by other user?)")


def _update_log_line(vm: Vm, params: dict) -> str:
    """$update_vm_api: "update VM ID: -KEY VALUE ..." over the sorted
    parameters left after node, vmid, digest, background_delay,
    skip_cloud_init and import-working-storage were taken out."""
    hidden = {"node", "vmid", "digest", "background_delay", "skip_cloud_init", "import-working-storage"}
    words = []
    for key in sorted(k for k in params if k not in hidden):
        words += [f"-{key}", "<hidden>" if key == "cipassword" else str(params[key])]
    return f"update VM {vm.vmid}: " + " ".join(words)


def _begin_update(state, request) -> tuple:
    """The synchronous part of $update_vm_api (errors answer the call)."""
    _check_skiplock(request)
    vm = _vm(state, request)
    _check_config_permissions(state, request, vm.vmid, _listed(request.params.get("delete") or ""))
    settings, deletions = state.cluster.check_update(vm, request.params)
    _check_digest(state, request, vm)
    if vm.lock:
        raise ApiError(500, f"VM is locked ({vm.lock})")
    return vm, settings, deletions


def _update_worker(state, request, vm: Vm, settings: dict, deletions: list):
    """$update_vm_api's worker, in two steps: the pending values a client
    sees at once (GET config shows them, current=1 does not), then what
    takes the task's time (disks) and applying the pending section:
    vmconfig_apply_pending for a stopped VM, vmconfig_hotplug_pending for a
    running one."""
    refused = _worker_permission_failure(state, request, vm, settings, deletions)

    def first_step(log):
        log.info(_update_log_line(vm, request.params))
        if not refused:
            state.cluster.write_pending(vm, settings, deletions, request.flag("force"), log)

    def rest(log):
        if refused:
            raise TaskFailed(refused.message)
        state.cluster.create_pending_disks(vm, settings, log)
        state.cluster.cleanup_pending(vm)
        if _running(state, vm):
            state.cluster.hotplug_pending(vm)
        else:
            state.cluster.apply_pending(vm)

    return first_step, rest


def post_config(state, request):
    vm, settings, deletions = _begin_update(state, request)
    first_step, rest = _update_worker(state, request, vm, settings, deletions)
    return start_task(state, request, vm.node, "qmconfig", vm.vmid, rest, first_step=first_step)


def put_config(state, request):
    """update_vm (PUT): the same worker, run before the answer."""
    vm, settings, deletions = _begin_update(state, request)
    refused = _worker_permission_failure(state, request, vm, settings, deletions)
    if refused:
        raise refused
    first_step, rest = _update_worker(state, request, vm, settings, deletions)
    log = state.discard_log()
    try:
        first_step(log)
        rest(log)
    except TaskFailed as failure:
        raise ApiError(500, str(failure)) from None
    return None


def get_status(state, request):
    """qemu-server API2/Qemu.pm vm_status -> QemuServer.pm vmstatus(full):
    qmpstatus (QMP query-status, else the status), and for a running VM
    running-qemu (query-version: MAJOR.MINOR.MICRO) and running-machine
    (query-machines); `agent: 1` only when the config enables it."""
    vm = _vm(state, request)
    running = _running(state, vm)
    status = {**state.cluster.vm_summary(vm), "ha": {"managed": 0}}
    status["status"] = "running" if running else "stopped"
    status["qmpstatus"] = "running" if running else status["status"]
    if vm.agent_enabled():
        status["agent"] = 1
    if running:
        status["running-qemu"] = vm.running_qemu or SIMULATED_QEMU_VERSION
        status["running-machine"] = vm.running_machine or SIMULATED_MACHINE
    return status


def start_vm(state, request):
    """qemu-server API2/Qemu.pm vm_start -> QemuServer.pm vm_start: a
    template cannot start, a running VM is not started twice; the machine
    boots (machines.Machines.start) and its warnings are the task's."""
    vm = _unlocked(state, request)

    def work(log):
        if vm.is_template:
            raise TaskFailed("you can't start a vm if it's a template")
        if _running(state, vm):
            raise TaskFailed(f"VM {vm.vmid} already running")
        # QemuServer.pm vm_start_nolock: a pending section is applied first.
        state.cluster.apply_pending(vm)
        for warning in start_warnings(vm.config):
            log.warn(warning)
        try:
            warnings = state.machines.start(vm, vm.node)
        except Exception as error:  # noqa: BLE001 (the backend's failure text is the task's, as QEMU's is on PVE)
            raise TaskFailed(str(error)) from None
        for warning in warnings or []:
            log.warn(warning[len("WARN: "):] if warning.startswith("WARN: ") else warning)
        vm.status, vm.started_at = "running", time.time()
        vm.running_qemu, vm.running_machine = _running_versions(state, vm)
        vm.agent_ready_at = time.monotonic() + state.cluster.agent_delay

    return start_task(state, request, vm.node, "qmstart", vm.vmid, work)


def _running_versions(state, vm: Vm) -> tuple:
    """running-qemu and running-machine from the backend (qemu_version /
    machine_type if it has them, else the x.y.z `info version` starts with)."""
    machines = state.machines
    version = getattr(machines, "qemu_version", None)
    if callable(version):
        version = version(vm.vmid)
    elif not isinstance(version, str):
        try:
            match = re.match(r"\s*(\d+\.\d+\.\d+)", machines.monitor(vm.vmid, "info version"))
        except Exception:  # noqa: BLE001 (a monitor that fails leaves the version unknown, as vmstatus does)
            match = None
        version = match.group(1) if match else "unknown"
    machine = getattr(machines, "machine_type", None)
    return version, machine(vm.vmid) if callable(machine) else SIMULATED_MACHINE


def _stop_machine(state, vm: Vm) -> None:
    state.machines.stop(vm)
    vm.status, vm.running_qemu, vm.running_machine = "stopped", None, None
    state.guests.forget(vm.vmid)


def stop_vm(state, request):
    """qemu-server vm_stop: stopping a stopped VM is no error."""
    vm = _unlocked(state, request)
    return start_task(state, request, vm.node, "qmstop", vm.vmid, lambda log: _stop_machine(state, vm))


def shutdown_vm(state, request):
    vm = _unlocked(state, request)
    if not _running(state, vm):
        raise ApiError(500, f"VM {vm.vmid} not running")
    return start_task(state, request, vm.node, "qmshutdown", vm.vmid, lambda log: _stop_machine(state, vm))


def clone_vm(state, request):
    """qemu-server PVE/API2/Qemu.pm clone_vm. $load_and_check (before the
    task, so its errors answer the call):
      * `target` equal to the source's node means none;
      * `storage` must exist and hold images (400 on `storage`), and with a
        target be shared ("can't clone to non-shared storage 'S'");
      * the source must not be locked;
      * full = `full` if given, else "not a template"; `storage` and
        `format` only for full clones ("parameter 'storage' not allowed
        for linked clones", a 500);
      * a target node needs every disk on shared storage ("can't clone VM
        to node 'N' (VM uses local storage)"), linked or full;
      * the new id must be free.
    The new config: every key but snapshot data and unusedN, MACs of netN
    renewed, `template` dropped, `name` the parameter or "Copy-of-VM-NAME",
    `description` if given; `lock: clone` while the task runs, on the
    source's node; the task (type qmclone, id the SOURCE's vmid) clones the
    drives and at the end moves the config to the target node."""
    source = _vm(state, request)
    params = request.params
    target = params.get("target")
    target = None if target in (None, source.node, "localhost") else target
    if target:
        _check_cluster_node(state, target)
    storage = params.get("storage")
    if storage:
        _check_clone_storage(state, storage, source.node, target)
    if source.lock:
        raise ApiError(500, f"VM is locked ({source.lock})")
    full = request.flag("full") if "full" in params else not source.is_template
    for name in ("storage", "format"):
        if name in params and not full:
            raise ApiError(500, f"parameter '{name}' not allowed for linked clones")
    config, drives = state.cluster.clone_plan(source, full, _running(state, source))
    # $load_and_check: $check_storage_access_clone, then check_bridge_access
    # on the source's config (SDN.Use on each NIC's bridge).
    access.check_storage_access_clone(state.access, request.user, source.config, storage)
    access.check_bridge_access(state.access, request.user, source.config)
    if target and not _all_disks_shared(state, source):
        raise ApiError(500, f"can't clone VM to node '{target}' (VM uses local storage)")
    newid = int(params["newid"])
    if newid in state.cluster.vms:
        raise ApiError(500, f"unable to create VM {newid}: config file already exists")
    config.pop("template", None)
    config["name"] = params.get("name") or f"Copy-of-VM-{source.config.get('name', source.vmid)}"
    if params.get("description"):
        config["description"] = params["description"]
    # "# qmclone temporary file\nlock: clone\n": until the first disk is
    # copied the clone's config is its lock only (vmstatus names it "VM ID").
    clone = state.cluster.add_vm(newid, source.node, {}, lock="clone")

    def work(log):
        clone.config = config
        state.cluster.clone_disks(clone, drives, full, storage, params.get("format"), log)
        clone.lock = None
        if target:
            clone.node = target

    def undo():
        for volume in state.cluster.owned_volumes(clone):
            state.cluster.free_volume(volume)
        state.cluster.vms.pop(newid, None)

    return start_task(state, request, source.node, "qmclone", source.vmid, work, undo,
                      failure_prefix="clone failed: ")


def _check_cluster_node(state, node: str) -> None:
    """pve-cluster PVE/Cluster.pm, check_node_exists."""
    if node not in state.cluster.nodes:
        raise ApiError(500, f"no such cluster node '{node}'")


def _check_clone_storage(state, storage_id: str, node: str, target: Optional[str]) -> None:
    """clone_vm: PVE::Storage::storage_check_enabled on this node (and the target), content, shared."""
    storage = state.cluster.storages.get(storage_id)
    if storage is None:
        raise ApiError(500, f"storage '{storage_id}' does not exist")
    for where in [node] + ([target] if target else []):
        if not storage.on(where):
            raise ApiError(500, f"storage '{storage_id}' is not available on node '{where}'")
    if "images" not in storage.content:
        raise param_error("storage", f"storage '{storage_id}' does not support vm images")
    if target and not storage.shared:
        raise ApiError(500, f"can't clone to non-shared storage '{storage_id}'")


def _all_disks_shared(state, vm: Vm) -> bool:
    """qemu-server API2/Qemu.pm $check_storage_access_clone: every volume of
    the config (CD-ROM images included, `none`/`cdrom` not) on shared storage."""
    for key, value in vm.config.items():
        if not DRIVE_KEY.fullmatch(key) or key.startswith("unused"):
            continue
        volume, _ = split_drive(value)
        if volume in ("", "none", "cdrom") or ":" not in volume:
            continue
        storage = state.cluster.storages.get(volume.split(":", 1)[0])
        if storage is None or not storage.shared:
            return False
    return True


def make_template(state, request):
    vm = _unlocked(state, request)
    if _running(state, vm):
        raise ApiError(500, "you can't convert a running VM to a template")
    return start_task(state, request, vm.node, "qmtemplate", vm.vmid, lambda log: state.cluster.make_template(vm))


def resize_disk(state, request):
    vm = _unlocked(state, request)
    disk, size = request.params["disk"], request.params["size"]
    if disk not in vm.config:
        raise ApiError(500, f"disk '{disk}' does not exist")

    def work(log):
        volume_id, options = split_drive(vm.config[disk])
        volume = state.cluster.volumes.get(volume_id)
        if volume is None:
            raise TaskFailed(f"disk '{disk}' has no volume to resize")
        wanted = parse_size(size.lstrip("+")) + (volume.size if size.startswith("+") else 0)
        # resize_vm's $updatefn (in the worker): Datastore.AllocateSpace on the volume's storage.
        if not state.access.check(request.user, f"/storage/{volume.storage}", ["Datastore.AllocateSpace"], True):
            raise TaskFailed(f"Permission check failed (/storage/{volume.storage}, Datastore.AllocateSpace)")
        if wanted < volume.size:
            raise TaskFailed("shrinking disks is not supported")
        volume.size = wanted
        vm.config[disk] = print_drive(volume_id, {**options, "size": str(wanted)})

    return start_task(state, request, vm.node, "resize", vm.vmid, work)


# ---- the QEMU monitor --------------------------------------------------------------------


def _monitor_permission_8(state, request, command: str) -> None:
    """qemu-server 8.3 API2/Qemu.pm monitor ($is_ro): commands other than
    `info ...` and `help` need Sys.Modify on / (the schema's check,
    VM.Monitor on /vms/VMID, came first)."""
    if not (re.match(r"\s*info(\s+|$)", command) or re.fullmatch(r"\s*help\s*", command)):
        state.access.check(request.user, "/", ["Sys.Modify"])


# qemu-server 9 src/PVE/API2/Qemu/HMPPerms.pm $hmp_command_perms, the
# commands a benchmark might send: none (help, ?, info), Sys.Modify (on /) or
# root (root@pam alone). The 9.1 schema's monitor description lists them
# all; hmp_command_class reads the rest from it.
_HMP_NONE = frozenset({"help", "?", "info"})


def hmp_command_class(schema_description: str, name: str) -> Optional[str]:
    """'none', 'Sys.Modify', 'root' or None (not listed) for an HMP command,
    from the 9.1 schema's monitor description (HMPPerms.pm generate_description)."""
    if name in _HMP_NONE:
        return "none"
    for label, wanted in (("require 'Sys.Modify'", "Sys.Modify"), ("are root-only", "root")):
        match = re.search(r"The following commands " + re.escape(label) + r": ([^\n]*)", schema_description)
        if match and name in [word.strip() for word in match.group(1).split(",")]:
            return wanted
    return None


def _monitor_permission_9(state, request, command: str) -> None:
    """qemu-server 9.2 API2/Qemu.pm monitor: the command's first word
    decides: none, Sys.Modify on /, or root@pam alone ("root-only command
    'X'"); a command HMPPerms.pm does not list is root@pam's too."""
    match = re.match(r"\s*(\S+)", command)
    if not match:
        raise ApiError(500, f"unexpected command '{command}'")
    name = match.group(1)
    method = state.schema.method(request.template, "POST")
    required = hmp_command_class((method.info.get("permissions") or {}).get("description", ""), name)
    if required is None:
        if request.user != access.ROOT:
            raise ApiError(500, f"command '{name}' non-existent or not assigned a required permission yet, "
                                "limiting to root user")
    elif required == "root":
        if request.user != access.ROOT:
            raise ApiError(500, f"root-only command '{name}'")
    elif required == "Sys.Modify":
        state.access.check(request.user, "/", ["Sys.Modify"])


# The monitor's per-command rule of each release's qemu-server.
_MONITOR_PERMISSION = {"8.4": _monitor_permission_8, "9.1": _monitor_permission_9}


def monitor(state, request):
    """qemu-server PVE/API2/Qemu.pm monitor: the command's own privilege
    (per release, above); the answer is hmp_cmd's output, and a failure
    (QemuServer/Monitor.pm qmp_cmd: "VM ID not running") is answered 200 as
    "ERROR: MESSAGE"."""
    command = request.params["command"]
    if not command:
        raise ApiError(500, "no command specified")
    _MONITOR_PERMISSION[state.version](state, request, command)
    with state.lock:
        vm = _vm(state, request)
        if not _running(state, vm):
            return f"ERROR: VM {vm.vmid} not running\n"
    # The simulation reads the cluster's state: under the lock; a real machine's HMP: not.
    guard = state.lock if isinstance(state.machines, SimulatedMachines) else contextlib.nullcontext()
    try:
        with guard:
            return state.machines.monitor(vm.vmid, command.strip())
    except Exception as error:  # noqa: BLE001 (PVE answers any monitor failure this way)
        return f"ERROR: {error}\n"


# ---- the guest agent ---------------------------------------------------------------------


def _agent_vm(state, request) -> Vm:
    """qemu-server PVE/QemuServer/Agent.pm, agent_available, in its order:
    "No QEMU guest agent configured" when the config has no `agent` key at
    all, "VM ID is not running", then qga_check_running (a guest-ping): an
    agent that is disabled (agent: 0, no QGA device) or not up yet is
    "QEMU guest agent is not running"."""
    with state.lock:
        vm = _vm(state, request)
        if "agent" not in vm.config:
            raise ApiError(500, "No QEMU guest agent configured")
        if not _running(state, vm):
            raise ApiError(500, f"VM {vm.vmid} is not running")
        if not vm.agent_enabled() or time.monotonic() < vm.agent_ready_at:
            raise ApiError(500, "QEMU guest agent is not running")
    ping = getattr(state.guests, "ping", None)
    if ping:
        _agent_call(lambda: ping(vm.vmid))
    return vm


def _agent_call(call):
    """Agent.pm check_agent_error: the agent's error is "Agent error: DESC";
    any other failure of the relay is answered with its own text."""
    try:
        return call()
    except AgentError as error:
        raise ApiError(500, f"Agent error: {error}") from None
    except ApiError:
        raise
    except Exception as error:  # noqa: BLE001 (a real relay's failure, e.g. QMP timeouts, is PVE's message)
        raise ApiError(500, str(error)) from None


def agent_ping(state, request):
    _agent_vm(state, request)
    return {"result": {}}


def agent_exec(state, request):
    """Agent.pm qemu_exec: command (path + arg) and/or input-data."""
    vm = _agent_vm(state, request)
    command = request.params.get("command")
    data = request.params.get("input-data")
    if not command and data is None:
        raise ApiError(500, "command or input-data (or both) required")
    if isinstance(state.guests, Guests):
        # What a real guest learns from its virtual hardware, a simulated one
        # reads from here: the VM's config as PVE has it (guest.py, HARDWARE_FILE).
        with state.lock:
            hardware = json.dumps(vm.config).encode()
        state.guests.write_file(vm.vmid, HARDWARE_FILE, hardware)
    pid = _agent_call(lambda: state.guests.exec(vm.vmid, command, data.encode() if data is not None else None))
    return {"pid": pid}


def agent_exec_status(state, request):
    vm = _agent_vm(state, request)
    return _agent_call(lambda: state.guests.exec_status(vm.vmid, int(request.params["pid"])))


def agent_file_read(state, request):
    """API2/Qemu/Agent.pm file-read: 1 MiB reads until EOF or 16 MiB;
    `bytes-read`, and `truncated: 1` when no EOF was seen. qemu-server 9
    (PVE 9.1's schema) adds `offset` (a guest-file-seek first, default 0)
    and `count` (bytes to read, 1..16 MiB, default 16 MiB): the reads stop
    at `count`, and `truncated` is set when they saw no EOF (so also when
    exactly `count` bytes were left; QGA's eof is feof after a short read)."""
    vm = _agent_vm(state, request)
    offset, count = request.integer("offset", 0), request.integer("count")
    content, truncated = _agent_call(lambda: _read_window(state, vm.vmid, request.params["file"], offset, count))
    # PVE hands the bytes to its JSON encoder as they are: each byte one character.
    answer = {"content": content.decode("latin-1"), "bytes-read": len(content)}
    if truncated:
        answer["truncated"] = 1
    return answer


def agent_file_write(state, request):
    """API2/Qemu/Agent.pm file-write: with encode (default 1) the content is
    base64-encoded by PVE; with encode=0 it must be base64 already, and the
    agent refuses what is not (QEMU qbase64_decode: "Base64 data is not
    valid", relayed as "Agent error: ...")."""
    vm = _agent_vm(state, request)
    content = request.params["content"]
    if request.params.get("encode", "1") == "1":
        data = content.encode("utf-8")
    else:
        try:
            data = base64.b64decode(content, validate=True)
        except (binascii.Error, ValueError):
            raise ApiError(500, "Agent error: Base64 data is not valid") from None
    _agent_call(lambda: state.guests.write_file(vm.vmid, request.params["file"], data))
    return None


def _read_window(state, vmid: int, path: str, offset: int, count: Optional[int]) -> tuple:
    """(content, truncated) of COUNT bytes from OFFSET. A backend whose
    read_file takes offset and count (guest.py) reads the window itself;
    for another the window is cut from its whole read (up to 16 MiB)."""
    read_file = state.guests.read_file
    if "offset" in inspect.signature(read_file).parameters:
        return read_file(vmid, path, offset=offset, count=count)
    whole, capped = read_file(vmid, path)
    limit = count if count is not None else FILE_READ_CAP
    window = whole[offset:offset + limit]
    return window, capped or len(whole) - offset >= limit


# ---- tasks ---------------------------------------------------------------------------------


def _task(state, request):
    """pve-manager PVE/API2/Tasks.pm: a UPID that does not parse is a 400 on
    `upid` (pve-common Tools.pm upid_decode); one whose log file is not on
    this node is "no such task" (400, read_task_status)."""
    upid = request.params["upid"]
    if not UPID_RE.fullmatch(upid):
        raise param_error("upid", "unable to parse worker upid")
    task = state.tasks.find(request.params["node"], upid)
    if task is None:
        raise param_error("upid", "no such task")
    _check_task_user(state, request, task.user)
    return task


def _check_task_user(state, request, owner: str) -> None:
    """pve-manager API2/Tasks.pm $check_task_user: a token sees its own
    tasks, a user its own and its tokens'; anyone else needs Sys.Audit on
    /nodes/NODE."""
    user = request.user
    owner_user, owner_token = access.split_tokenid(owner)
    if user == owner or (owner_token is not None and user == owner_user):
        return
    state.access.check(user, f"/nodes/{request.params['node']}", ["Sys.Audit"])


def get_task_status(state, request):
    return _task(state, request).status()


def get_task_log(state, request):
    """pve-manager API2/Tasks.pm read_task_log -> pve-common Tools.pm
    dump_logfile: lines {n: line number from 1, t: text}, skipping `start`
    lines, at most `limit` (default 50; 0: all); `total` is the number of
    lines of the whole log; an empty log reads as one line "no content"."""
    task = _task(state, request)
    start, limit = request.integer("start", 0), request.integer("limit", 50)
    lines = list(task.log)
    if not lines:
        request.total = 1
        return [{"n": 1, "t": "no content"}]
    request.total = len(lines)
    chosen = lines[start:] if limit == 0 else lines[start:start + limit]
    return [{"n": start + i + 1, "t": text} for i, text in enumerate(chosen)]


# ---- access ---------------------------------------------------------------------------------


def get_permissions(state, request):
    """pve-access-control API2/AccessControl.pm permissions: one's own (or
    one's own tokens') privileges, anyone else's with Sys.Audit on /access;
    with `path` that path alone (even when empty), else every path
    get_effective_permissions lists."""
    authid = request.user
    userid = request.params.get("userid") or authid
    owner, _ = access.split_tokenid(userid)
    if userid != authid and owner != authid:
        state.access.check(authid, "/access", ["Sys.Audit"])
    path = request.params.get("path")
    if path:
        return {path: state.access.permissions(userid, path)}
    return state.access.effective_permissions(userid)


ROUTES = {
    ("GET", "/version"): get_version,
    ("GET", "/access/permissions"): get_permissions,
    ("GET", "/nodes"): get_nodes,
    ("GET", "/nodes/{node}/status"): get_node_status,
    ("GET", "/cluster/resources"): get_resources,
    ("GET", "/cluster/nextid"): get_nextid,
    ("GET", "/nodes/{node}/storage"): get_storages,
    ("GET", "/nodes/{node}/storage/{storage}/content"): get_storage_content,
    ("GET", "/nodes/{node}/storage/{storage}/content/{volume}"): get_volume_attributes,
    ("GET", "/nodes/{node}/qemu/{vmid}/pending"): get_pending,
    ("GET", "/nodes/{node}/qemu"): get_vms,
    ("POST", "/nodes/{node}/qemu"): create_vm,
    ("GET", "/nodes/{node}/qemu/{vmid}"): get_vm_index,
    ("DELETE", "/nodes/{node}/qemu/{vmid}"): delete_vm,
    ("GET", "/nodes/{node}/qemu/{vmid}/config"): get_config,
    ("POST", "/nodes/{node}/qemu/{vmid}/config"): post_config,
    ("PUT", "/nodes/{node}/qemu/{vmid}/config"): put_config,
    ("GET", "/nodes/{node}/qemu/{vmid}/status/current"): get_status,
    ("POST", "/nodes/{node}/qemu/{vmid}/status/start"): start_vm,
    ("POST", "/nodes/{node}/qemu/{vmid}/status/stop"): stop_vm,
    ("POST", "/nodes/{node}/qemu/{vmid}/status/shutdown"): shutdown_vm,
    ("POST", "/nodes/{node}/qemu/{vmid}/clone"): clone_vm,
    ("POST", "/nodes/{node}/qemu/{vmid}/template"): make_template,
    ("PUT", "/nodes/{node}/qemu/{vmid}/resize"): resize_disk,
    ("POST", "/nodes/{node}/qemu/{vmid}/monitor"): monitor,
    ("POST", "/nodes/{node}/qemu/{vmid}/agent/ping"): agent_ping,
    ("POST", "/nodes/{node}/qemu/{vmid}/agent/exec"): agent_exec,
    ("GET", "/nodes/{node}/qemu/{vmid}/agent/exec-status"): agent_exec_status,
    ("GET", "/nodes/{node}/qemu/{vmid}/agent/file-read"): agent_file_read,
    ("POST", "/nodes/{node}/qemu/{vmid}/agent/file-write"): agent_file_write,
    ("GET", "/nodes/{node}/tasks/{upid}/status"): get_task_status,
    ("GET", "/nodes/{node}/tasks/{upid}/log"): get_task_log,
}

# Handlers that relay to the machine (monitor, guest agent): the server calls
# them without its state lock; they take it for the state they read.
RELAY_HANDLERS = frozenset({monitor, agent_ping, agent_exec, agent_exec_status, agent_file_read, agent_file_write})

