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
import json
import time
from dataclasses import dataclass
from typing import Optional

from cluster import (GIB, ApiError, Vm, format_size, info_block, param_error, parse_size, print_drive,
                     split_drive)
from guest import HARDWARE_FILE, AgentError
from schema import ApiMethod
from tasks import ForcedOutcome, TaskFailed

PVE_VERSION = {"version": "8.4.1", "release": "8.4", "repoid": "2a5fa54a8503f96d"}


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


def start_task(state, request: Request, node: str, kind: str, object_id, work, on_failure=lambda: None) -> str:
    return state.tasks.start(node, kind, str(object_id), request.user, work, on_failure, request.forced_task)


# ---- cluster and nodes ------------------------------------------------------------------


def get_version(state, request):
    return dict(PVE_VERSION)


def get_nodes(state, request):
    return [{"node": node, "status": "online", "cpu": 0.02, "maxcpu": 2, "mem": 2 * GIB, "maxmem": 24 * GIB,
             "uptime": 86400, "level": "", "ssl_fingerprint": state.fingerprint} for node in state.cluster.nodes]


def get_node_status(state, request):
    state.cluster.check_node(request.params["node"])
    return {"cpu": 0.02, "loadavg": ["0.10", "0.05", "0.01"], "pveversion": "pve-manager/8.4.1/2a5fa54a8503f96d",
            "boot-info": {"mode": "efi", "secureboot": 0},
            "cpuinfo": {"cores": 2, "cpus": 2, "model": "pve_fake CPU", "sockets": 1},
            "current-kernel": {"machine": "x86_64", "release": "6.8.12-9-pve", "sysname": "Linux",
                               "version": "#1 SMP PREEMPT_DYNAMIC PMX 6.8.12-9"},
            "memory": {"free": 22 * GIB, "total": 24 * GIB, "used": 2 * GIB},
            "rootfs": {"avail": 50 * GIB, "free": 50 * GIB, "total": 100 * GIB, "used": 50 * GIB}}


def get_resources(state, request):
    return state.cluster.resources(request.params.get("type"))


def get_nextid(state, request):
    return state.cluster.next_id(request.params.get("vmid"))


def get_storages(state, request):
    node = request.params["node"]
    state.cluster.check_node(node)
    wanted = request.params.get("content")
    return [state.cluster.storage_summary(node, s) for s in state.cluster.storages.values()
            if s.on(node) and request.params.get("storage", s.id) == s.id
            and (wanted is None or set(wanted.replace(";", ",").split(",")) & set(s.content))]


def get_storage_content(state, request):
    node, storage = request.params["node"], request.params["storage"]
    state.cluster.check_node(node)
    if storage not in state.cluster.storages:
        raise ApiError(500, f"storage '{storage}' does not exist")
    vmid = request.integer("vmid")
    return [_volume_entry(v) for v in sorted(state.cluster.volumes.values(), key=lambda v: v.volid)
            if v.storage == storage and (vmid is None or v.vmid == vmid)]


def _volume_entry(volume):
    entry = {"volid": volume.volid, "format": volume.format, "size": volume.size, "vmid": volume.vmid,
             "content": "images", "ctime": int(time.time())}
    if volume.parent:
        entry["parent"] = volume.parent.split(":", 1)[1]
    return entry


# ---- VMs --------------------------------------------------------------------------------


def _vm(state, request) -> Vm:
    return state.cluster.vm(request.params["node"], request.params["vmid"])


def _unlocked(state, request) -> Vm:
    vm = _vm(state, request)
    if vm.lock and not request.flag("skiplock"):
        raise ApiError(500, f"VM is locked ({vm.lock})")
    return vm


def _refuse_root_only_keys(request: Request) -> None:
    """An API token is never root@pam: PVE refuses the keys only root may set."""
    for key in ("args", "lock"):
        if key in request.params:
            raise ApiError(500, f"only root can set '{key}' config")


def get_vms(state, request):
    node = request.params["node"]
    state.cluster.check_node(node)
    return [state.cluster.vm_summary(vm) for vm in sorted(state.cluster.vms.values(), key=lambda v: v.vmid)
            if vm.node == node]


def get_vm_index(state, request):
    _vm(state, request)
    return [{"subdir": name} for name in ("config", "pending", "status", "agent", "clone", "template",
                                          "resize", "monitor", "rrd", "firewall")]


def create_vm(state, request):
    node, vmid = request.params["node"], int(request.params["vmid"])
    state.cluster.check_node(node)
    _refuse_root_only_keys(request)
    config = {"meta": f"creation-qemu=7.2.0,ctime={int(time.time())}"}
    vm = state.cluster.add_vm(vmid, node, config, lock="create")

    def work(log):
        state.cluster.apply_config(vm, request.params, log)
        vm.lock = None

    def undo():
        for volume in state.cluster.volumes_of(vm):
            del state.cluster.volumes[volume]
        state.cluster.vms.pop(vmid, None)

    return start_task(state, request, node, "qmcreate", vmid, work, undo)


def delete_vm(state, request):
    vm = _unlocked(state, request)
    if vm.status == "running":
        raise ApiError(500, f"VM {vm.vmid} is running - destroy failed")
    if vm.config.get("protection") == "1":
        raise ApiError(500, f"can't remove VM {vm.vmid} - protection mode enabled")

    def work(log):
        for volume in state.cluster.volumes_of(vm):
            log.info(f"Removing image: 100% complete...done.  ({volume})")
        state.cluster.destroy(vm)
        state.guests.erase(vm.vmid)

    return start_task(state, request, vm.node, "qmdestroy", vm.vmid, work)


def get_config(state, request):
    vm = _vm(state, request)
    if "snapshot" in request.params:
        raise ApiError(500, f"snapshot '{request.params['snapshot']}' does not exist")
    answer_schema = ApiMethod.from_info(request.template, "GET", {"parameters": state.schema.method(
        request.template, "GET").returns})
    typed = {key: _typed(answer_schema.schema_of(key), value) for key, value in vm.config.items()}
    return {**typed, "digest": state.cluster.config_digest(vm)}


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
    if "digest" in request.params and request.params["digest"] != state.cluster.config_digest(vm):
        raise ApiError(500, "detected modified configuration - file changed by other user? Try again.")


def post_config(state, request):
    vm = _unlocked(state, request)
    _refuse_root_only_keys(request)
    _check_digest(state, request, vm)
    return start_task(state, request, vm.node, "qmconfig", vm.vmid,
                      lambda log: state.cluster.apply_config(vm, request.params, log))


def put_config(state, request):
    vm = _unlocked(state, request)
    _refuse_root_only_keys(request)
    _check_digest(state, request, vm)
    try:
        state.cluster.apply_config(vm, request.params, state.discard_log())
    except TaskFailed as failure:
        raise ApiError(500, str(failure)) from None
    return None


def get_status(state, request):
    vm = _vm(state, request)
    status = {**state.cluster.vm_summary(vm), "qmpstatus": vm.status, "agent": int(vm.agent_enabled()),
              "ha": {"managed": 0}}
    if vm.status == "running":
        status["running-qemu"], status["running-machine"] = "7.2.0", "pc-i440fx-7.2+pve0"
    return status


def start_vm(state, request):
    vm = _unlocked(state, request)
    return start_task(state, request, vm.node, "qmstart", vm.vmid, lambda log: state.cluster.start(vm, log))


def stop_vm(state, request):
    vm = _unlocked(state, request)

    def work(log):
        state.cluster.stop(vm)
        state.guests.forget(vm.vmid)

    return start_task(state, request, vm.node, "qmstop", vm.vmid, work)


def shutdown_vm(state, request):
    vm = _unlocked(state, request)
    if vm.status != "running":
        raise ApiError(500, f"VM {vm.vmid} not running")

    def work(log):
        state.cluster.stop(vm)
        state.guests.forget(vm.vmid)

    return start_task(state, request, vm.node, "qmshutdown", vm.vmid, work)


def clone_vm(state, request):
    source = _vm(state, request)
    newid, target_node = int(request.params["newid"]), request.params.get("target", source.node)
    state.cluster.check_node(target_node)
    linked = source.is_template and request.params.get("full", "0") != "1"
    _check_clone_parameters(state, request, source, linked, target_node)
    config = state.cluster.clone_config(source, request.params)
    clone = state.cluster.add_vm(newid, target_node, config, lock="clone")

    def work(log):
        state.cluster.copy_disks(clone, linked, request.params.get("storage"), log)
        clone.lock = None

    def undo():
        for volume in state.cluster.volumes_of(clone):
            if state.cluster.volumes[volume].vmid == newid:
                del state.cluster.volumes[volume]
        state.cluster.vms.pop(newid, None)

    return start_task(state, request, source.node, "qmclone", source.vmid, work, undo)


def _check_clone_parameters(state, request, source: Vm, linked: bool, target_node: str) -> None:
    for name in ("storage", "format"):
        if linked and name in request.params:
            raise param_error(name, f"parameter '{name}' not allowed for linked clones")
    if int(request.params["newid"]) in state.cluster.vms:
        raise ApiError(500, f"unable to create VM {request.params['newid']}: config file already exists")
    if target_node != source.node:
        local = [v for v in state.cluster.volumes_of(source)
                 if not state.cluster.storages[state.cluster.volumes[v].storage].shared]
        if local:
            raise ApiError(500, f"can't clone VM to node '{target_node}' (VM uses local storage)")


def make_template(state, request):
    vm = _unlocked(state, request)
    if vm.status == "running":
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
        if wanted < volume.size:
            raise TaskFailed("shrinking disks is not supported")
        volume.size = wanted
        vm.config[disk] = print_drive(volume_id, {**options, "size": format_size(wanted)})

    return start_task(state, request, vm.node, "resize", vm.vmid, work)


# ---- the QEMU monitor --------------------------------------------------------------------


def monitor(state, request):
    """PVE runs the HMP command through QMP's human-monitor-command; commands
    other than `info *` and `help` need Sys.Modify, which a token of ours lacks."""
    vm = _vm(state, request)
    command = request.params["command"].strip()
    if not (command.startswith("info ") or command == "help"):
        raise ApiError(403, "Permission check failed (/, Sys.Modify)")
    if vm.status != "running":
        raise ApiError(500, f"VM {vm.vmid} not running")
    return info_block(state.cluster, vm) if command == "info block" else ""


# ---- the guest agent ---------------------------------------------------------------------


def _agent_vm(state, request) -> Vm:
    vm = _vm(state, request)
    if vm.status != "running":
        raise ApiError(500, f"VM {vm.vmid} is not running")
    if not vm.agent_enabled():
        raise ApiError(500, "No QEMU guest agent configured")
    if time.monotonic() < vm.agent_ready_at:
        raise ApiError(500, "QEMU guest agent is not running")
    return vm


def _agent_call(call):
    try:
        return call()
    except AgentError as error:
        raise ApiError(500, f"Agent error: {error}") from None


def agent_ping(state, request):
    _agent_vm(state, request)
    return {"result": {}}


def agent_exec(state, request):
    vm = _agent_vm(state, request)
    command = request.params["command"]
    data = request.params.get("input-data")
    # What a real guest learns from its virtual hardware, a simulated one
    # reads from here: the VM's config as PVE has it (guest.py, HARDWARE_FILE).
    state.guests.write_file(vm.vmid, HARDWARE_FILE, json.dumps(vm.config).encode())
    pid = _agent_call(lambda: state.guests.exec(vm.vmid, command, data.encode() if data is not None else None))
    return {"pid": pid}


def agent_exec_status(state, request):
    vm = _agent_vm(state, request)
    return _agent_call(lambda: state.guests.exec_status(vm.vmid, int(request.params["pid"])))


def agent_file_read(state, request):
    vm = _agent_vm(state, request)
    content, truncated = _agent_call(lambda: state.guests.read_file(vm.vmid, request.params["file"]))
    # PVE hands the bytes to its JSON encoder as they are: each byte one character.
    answer = {"content": content.decode("latin-1")}
    if truncated:
        answer["truncated"] = 1
    return answer


def agent_file_write(state, request):
    vm = _agent_vm(state, request)
    content = request.params["content"]
    if request.params.get("encode", "1") == "1":
        data = content.encode("utf-8")
    else:
        try:
            data = base64.b64decode(content, validate=True)
        except (binascii.Error, ValueError):
            raise ApiError(500, "Agent error: Guest agent command failed, error was 'Invalid parameter type "
                                "for 'buf-b64', expected: base64'") from None
    _agent_call(lambda: state.guests.write_file(vm.vmid, request.params["file"], data))
    return None


# ---- tasks ---------------------------------------------------------------------------------


def _task(state, request):
    task = state.tasks.find(request.params["node"], request.params["upid"])
    if task is None:
        raise ApiError(500, f"unable to read task status for '{request.params['upid']}' - no such task")
    return task


def get_task_status(state, request):
    return _task(state, request).status()


def get_task_log(state, request):
    task = _task(state, request)
    start, limit = request.integer("start", 0), request.integer("limit", 50)
    lines = task.log or []
    request.total = len(lines)
    return [{"n": start + i + 1, "t": text} for i, text in enumerate(lines[start:start + limit])]


ROUTES = {
    ("GET", "/version"): get_version,
    ("GET", "/nodes"): get_nodes,
    ("GET", "/nodes/{node}/status"): get_node_status,
    ("GET", "/cluster/resources"): get_resources,
    ("GET", "/cluster/nextid"): get_nextid,
    ("GET", "/nodes/{node}/storage"): get_storages,
    ("GET", "/nodes/{node}/storage/{storage}/content"): get_storage_content,
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
