"""The simulated cluster: nodes, storages, volumes, VMs and their configs.

What it models is what a benchmark orchestrator meets on a real PVE 8:
  * VM configs as PVE stores them: drive property strings normalised as
    PVE prints them (volume first, then the other keys sorted, booleans as
    1/0, `size=` added), `STORAGE:SIZE` allocating a new volume
    `STORAGE:vm-VMID-disk-N`, replaced and deleted disks becoming `unusedN`;
  * linked and full clones of a template, `base-VMID-disk-N` volumes of
    templates;
  * VM ids from /cluster/nextid (lowest free id in the configured range);
  * checks PVE makes beyond the schema that a client is likely to hit
    (unknown storage, VM running on destroy, a template started, `args` set
    by a token, `storage` on a linked clone), with PVE's messages;
  * start-time warnings PVE logs (iothread without virtio-scsi-single).
Everything runs under the server's state lock; failures raise ApiError
(synchronous answers) or TaskFailed (inside a task).
"""

import copy
import hashlib
import re
import time
from dataclasses import dataclass, field
from typing import Optional

from tasks import TaskFailed

GIB = 1024 ** 3
DRIVE_KEY = re.compile(r"(ide|sata|scsi|virtio|unused)(\d+)|efidisk0|tpmstate0")
DISK_BUSES = ("ide", "sata", "scsi", "virtio")
NEW_VOLUME = re.compile(r"(?P<storage>[a-z][a-z0-9\-_.]*[a-z0-9]):(?P<size>\d+(\.\d+)?)", re.I)


class ApiError(Exception):
    """An answer other than 200: status, message (the HTTP reason phrase) and,
    for 400, PVE's errors map."""

    def __init__(self, status: int, message: str, errors: Optional[dict] = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.errors = errors


def param_error(name: str, message: str) -> ApiError:
    return ApiError(400, "Parameter verification failed.", {name: message})


@dataclass
class Storage:
    id: str
    type: str                          # lvmthin, dir, rbd ...
    content: list = field(default_factory=lambda: ["images", "rootdir"])
    shared: bool = False
    total: int = 100 * GIB
    nodes: Optional[list] = None       # None: every node

    def on(self, node: str) -> bool:
        return self.nodes is None or node in self.nodes


@dataclass
class Volume:
    volid: str
    storage: str
    node: str
    vmid: int
    size: int
    format: str = "raw"
    parent: Optional[str] = None


@dataclass
class Vm:
    vmid: int
    node: str
    config: dict
    status: str = "stopped"
    lock: Optional[str] = None
    started_at: float = 0.0
    agent_ready_at: float = 0.0

    @property
    def name(self) -> str:
        return self.config.get("name", f"VM {self.vmid}")

    @property
    def is_template(self) -> bool:
        return str(self.config.get("template", "0")) == "1"

    def agent_enabled(self) -> bool:
        value = self.config.get("agent", "0")
        first = value.split(",")[0]
        enabled = first.split("=", 1)[1] if first.startswith("enabled=") else first
        return enabled.lower() in ("1", "on", "yes", "true")


def split_drive(text: str) -> tuple:
    """(volume, {key: value}) of a drive property string, keys in order."""
    volume, options = "", {}
    for part in text.split(","):
        if not part:
            continue
        key, sep, value = part.partition("=")
        if not sep:
            volume = part
        elif key in ("file", "volume"):
            volume = value
        else:
            options[key] = value
    return volume, options


BOOLEAN_WORDS = {"1": "1", "on": "1", "yes": "1", "true": "1", "0": "0", "off": "0", "no": "0", "false": "0"}
# Drive keys whose values are booleans (PVE prints them as 1/0).
DRIVE_BOOLEAN_KEYS = {"backup", "detect_zeroes", "iothread", "ro", "replicate", "shared", "snapshot", "ssd",
                      "scsiblock"}


def print_drive(volume: str, options: dict) -> str:
    """As PVE's print_property_string: the default key's value, then the rest sorted."""
    normalised = {k: BOOLEAN_WORDS.get(v.lower(), v) if k in DRIVE_BOOLEAN_KEYS else v for k, v in options.items()}
    return ",".join([volume] + [f"{k}={normalised[k]}" for k in sorted(normalised)])


def parse_size(text: str) -> int:
    """PVE's disk sizes: a number with an optional K, M, G or T (1024-based)."""
    units = {"K": 1024, "M": 1024 ** 2, "G": GIB, "T": 1024 ** 4}
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(float(text))


def format_size(size: int) -> str:
    """PVE's format_size: the largest unit that divides the size."""
    for unit, factor in (("T", 1024 ** 4), ("G", GIB), ("M", 1024 ** 2), ("K", 1024)):
        if size % factor == 0:
            return f"{size // factor}{unit}"
    return str(size)


class Cluster:
    def __init__(self, nodes: list, storages: list, nextid_range: tuple, agent_delay: float):
        self.nodes = list(nodes)
        self.storages = {s.id: s for s in storages}
        self.volumes = {}
        self.vms = {}
        self.nextid_range = nextid_range
        self.agent_delay = agent_delay

    # ---- look-ups ------------------------------------------------------------

    def check_node(self, node: str) -> None:
        if node not in self.nodes:
            raise ApiError(500, f"hostname lookup '{node}' failed - failed to get address info for: "
                                f"{node}: Name or service not known")

    def vm(self, node: str, vmid) -> Vm:
        self.check_node(node)
        found = self.vms.get(int(vmid))
        if not found or found.node != node:
            raise ApiError(500, f"Configuration file 'nodes/{node}/qemu-server/{vmid}.conf' does not exist")
        return found

    def storage_on(self, node: str, storage_id: str) -> Storage:
        storage = self.storages.get(storage_id)
        if not storage or not storage.on(node):
            raise TaskFailed(f"storage '{storage_id}' does not exist")
        return storage

    def next_id(self, asked: Optional[str]) -> int:
        if asked is not None:
            if int(asked) in self.vms:
                raise param_error("vmid", f"VM {asked} already exists")
            return int(asked)
        low, high = self.nextid_range
        for vmid in range(low, high + 1):
            if vmid not in self.vms:
                return vmid
        raise ApiError(500, f"unable to get any free VMID in range [{low}, {high}]")

    def config_digest(self, vm: Vm) -> str:
        text = "".join(f"{k}: {v}\n" for k, v in sorted(vm.config.items()))
        return hashlib.sha1(text.encode()).hexdigest()

    # ---- VM config ------------------------------------------------------------

    def add_vm(self, vmid: int, node: str, config: dict, lock: Optional[str] = None) -> Vm:
        if vmid in self.vms:
            raise ApiError(500, f"unable to create VM {vmid}: config file already exists")
        vm = Vm(vmid, node, dict(config), lock=lock)
        self.vms[vmid] = vm
        return vm

    def apply_config(self, vm: Vm, params: dict, log) -> None:
        """Sets and deletes config keys as PVE's update_vm does: new volumes
        for STORAGE:SIZE, displaced volumes to unusedN."""
        for key in _listed(params.get("delete", "")):
            self._delete_key(vm, key, force=params.get("force") == "1")
        for key, value in params.items():
            if key in CONFIG_CALL_PARAMETERS:
                continue
            if DRIVE_KEY.fullmatch(key):
                value = self._attach_drive(vm, key, value, log)
            vm.config[key] = value

    def _attach_drive(self, vm: Vm, key: str, text: str, log) -> str:
        volume, options = split_drive(text)
        allocation = NEW_VOLUME.fullmatch(volume)
        if allocation:
            size = int(float(allocation.group("size")) * GIB)
            volume = self.allocate(vm, allocation.group("storage"), size)
            options["size"] = format_size(size)
            log.info(f"{key}: successfully created disk '{volume},size={format_size(size)}'")
        elif volume in self.volumes:
            options.setdefault("size", format_size(self.volumes[volume].size))
        elif volume not in ("none", "cdrom") and not volume.startswith("/"):
            raise TaskFailed(f"unable to parse volume ID '{volume}' - volume does not exist")
        self._displace(vm, key, volume)
        return print_drive(volume, options)

    def allocate(self, vm: Vm, storage_id: str, size: int, prefix: str = "vm") -> str:
        storage = self.storage_on(vm.node, storage_id)
        if "images" not in storage.content:
            raise TaskFailed(f"storage '{storage_id}' does not support content-type 'images'")
        taken = {re.split(r"[:/]", v)[-1] for v in self.volumes if v.startswith(f"{storage_id}:")}
        number = 0
        while f"{prefix}-{vm.vmid}-disk-{number}" in taken or f"base-{vm.vmid}-disk-{number}" in taken:
            number += 1
        volid = f"{storage_id}:{prefix}-{vm.vmid}-disk-{number}"
        self.volumes[volid] = Volume(volid, storage_id, vm.node, vm.vmid, size)
        return volid

    def _displace(self, vm: Vm, key: str, new_volume: str) -> None:
        old = vm.config.get(key)
        if not old:
            return
        old_volume, _ = split_drive(old)
        if old_volume != new_volume and old_volume in self.volumes:
            self._park_unused(vm, old_volume)

    def _park_unused(self, vm: Vm, volume: str) -> None:
        index = 0
        while f"unused{index}" in vm.config:
            index += 1
        vm.config[f"unused{index}"] = volume

    def _delete_key(self, vm: Vm, key: str, force: bool) -> None:
        old = vm.config.pop(key, None)
        if old is None or not DRIVE_KEY.fullmatch(key):
            return
        volume, _ = split_drive(old)
        if volume not in self.volumes:
            return
        if key.startswith("unused") or force:
            del self.volumes[volume]
        else:
            self._park_unused(vm, volume)

    def volumes_of(self, vm: Vm) -> list:
        return [split_drive(v)[0] for k, v in vm.config.items()
                if DRIVE_KEY.fullmatch(k) and split_drive(v)[0] in self.volumes]

    # ---- life cycle ---------------------------------------------------------------

    @staticmethod
    def clone_config(source: Vm, params: dict) -> dict:
        """The clone's config: the source's without its template flag, unused
        volumes and digest; its disks are still the source's (copy_disks)."""
        config = {k: v for k, v in copy.deepcopy(source.config).items()
                  if k not in ("template", "digest") and not k.startswith("unused")}
        config["name"] = params.get("name", f"Copy-of-VM-{source.name}")
        if "description" in params:
            config["description"] = params["description"]
        config["meta"] = f"creation-qemu=7.2.0,ctime={int(time.time())}"
        return config

    def copy_disks(self, target: Vm, linked: bool, storage: Optional[str], log) -> None:
        """Gives `target` its own volumes: linked clones of a template's base
        volumes, or full copies (on `storage` if given)."""
        for key, value in list(target.config.items()):
            if not DRIVE_KEY.fullmatch(key) or key.startswith("unused"):
                continue
            volume, options = split_drive(value)
            base = self.volumes.get(volume)
            if base is None:
                continue
            new = self._clone_volume(target, base, linked, storage)
            log.info(f"{'create linked clone of' if linked else 'create full clone of'} drive {key} ({volume})")
            target.config[key] = print_drive(new, options)

    def _clone_volume(self, target: Vm, base: Volume, linked: bool, storage: Optional[str]) -> str:
        if linked:
            volid = self.allocate(target, base.storage, base.size)
            linked_id = f"{base.storage}:{base.volid.split(':', 1)[1]}/{volid.split(':', 1)[1]}"
            self.volumes[linked_id] = self.volumes.pop(volid)
            self.volumes[linked_id].volid, self.volumes[linked_id].parent = linked_id, base.volid
            return linked_id
        return self.allocate(target, storage or base.storage, base.size)

    def make_template(self, vm: Vm) -> None:
        for key, value in list(vm.config.items()):
            volume, options = split_drive(value) if DRIVE_KEY.fullmatch(key) else ("", {})
            if volume in self.volumes and "/vm-" not in volume and ":vm-" in volume:
                renamed = volume.replace(":vm-", ":base-", 1)
                self.volumes[renamed] = self.volumes.pop(volume)
                self.volumes[renamed].volid = renamed
                vm.config[key] = print_drive(renamed, options)
        vm.config["template"] = "1"

    def start(self, vm: Vm, log) -> None:
        if vm.is_template:
            raise TaskFailed("you can't start a vm if it's a template")
        if vm.status == "running":
            raise TaskFailed(f"VM {vm.vmid} already running")
        for warning in start_warnings(vm.config):
            log.warn(warning)
        vm.status, vm.started_at = "running", time.time()
        vm.agent_ready_at = time.monotonic() + self.agent_delay

    @staticmethod
    def stop(vm: Vm) -> None:
        vm.status = "stopped"

    def destroy(self, vm: Vm) -> None:
        for volume in self.volumes_of(vm):
            del self.volumes[volume]
        del self.vms[vm.vmid]

    # ---- listings -------------------------------------------------------------

    def vm_summary(self, vm: Vm) -> dict:
        summary = {"vmid": vm.vmid, "name": vm.name, "status": vm.status, "template": int(vm.is_template),
                   "maxmem": int(vm.config.get("memory", "512").split(",")[0].split("=")[-1]) * 1024 ** 2,
                   "cpus": int(vm.config.get("cores", "1")), "uptime": self.uptime(vm)}
        if vm.lock:
            summary["lock"] = vm.lock
        if "tags" in vm.config:
            summary["tags"] = vm.config["tags"]
        if vm.status == "running":
            summary["pid"] = 10000 + vm.vmid
        return summary

    @staticmethod
    def uptime(vm: Vm) -> int:
        return int(time.time() - vm.started_at) if vm.status == "running" else 0

    def storage_summary(self, node: str, storage: Storage) -> dict:
        used = sum(v.size for v in self.volumes.values() if v.storage == storage.id
                   and (storage.shared or v.node == node))
        return {"storage": storage.id, "type": storage.type, "content": ",".join(storage.content),
                "shared": int(storage.shared), "active": 1, "enabled": 1, "total": storage.total,
                "used": used, "avail": storage.total - used, "used_fraction": used / storage.total}

    def resources(self, kind: Optional[str]) -> list:
        entries = []
        if kind in (None, "node"):
            entries += [{"id": f"node/{n}", "type": "node", "node": n, "status": "online", "maxcpu": 2,
                         "maxmem": 24 * GIB, "level": ""} for n in self.nodes]
        if kind in (None, "storage"):
            entries += [self._storage_resource(n, s) for n in self.nodes for s in self.storages.values() if s.on(n)]
        if kind in (None, "vm"):
            entries += [{**self.vm_summary(vm), "id": f"qemu/{vm.vmid}", "type": "qemu", "node": vm.node}
                        for vm in sorted(self.vms.values(), key=lambda v: v.vmid)]
        return entries

    def _storage_resource(self, node: str, storage: Storage) -> dict:
        summary = self.storage_summary(node, storage)
        return {"id": f"storage/{node}/{storage.id}", "type": "storage", "node": node, "storage": storage.id,
                "status": "available", "plugintype": storage.type, "content": summary["content"],
                "shared": summary["shared"], "disk": summary["used"], "maxdisk": storage.total}


# Parameters of the config calls that are not config keys.
CONFIG_CALL_PARAMETERS = {"node", "vmid", "delete", "revert", "force", "digest", "skiplock", "background_delay",
                          "import-working-storage", "storage", "start", "archive", "unique", "pool",
                          "live-restore", "bwlimit"}


def _listed(text: str) -> list:
    return [item for item in re.split(r"[,;\s\0]+", text) if item]


def start_warnings(config: dict) -> list:
    """What PVE logs as WARN when it starts a VM with this config."""
    warnings = []
    controller = config.get("scsihw", "lsi")
    for key, value in sorted(config.items()):
        bus = re.match(r"(scsi|virtio|sata|ide)\d+$", key)
        _, options = split_drive(value) if bus else ("", {})
        if bus and bus.group(1) == "scsi" and BOOLEAN_WORDS.get(options.get("iothread", "0").lower()) == "1" \
                and controller != "virtio-scsi-single":
            warnings.append(f"iothread is only valid with virtio disk or virtio-scsi-single controller, "
                            f"ignoring iothread for {key}")
    return warnings


# ---- QEMU's view of the drives (the monitor's `info block`) --------------------------------

DRIVE_KEY = re.compile(r"^(ide|sata|scsi|virtio)\d+$")
# qemu-server's cache default is none (direct + writeback); HMP prints the flags.
CACHE_FLAGS = {"none": "writeback, direct", "writeback": "writeback", "writethrough": "writethrough",
               "directsync": "writethrough, direct", "unsafe": "writeback, ignore flushes"}


def _detect_zeroes(options: dict) -> str:
    """As qemu-server: on unless detect_zeroes=0, unmap when discard=on."""
    if BOOLEAN_WORDS.get(options.get("detect_zeroes", "1").lower(), "1") == "0":
        return "off"
    return "unmap" if options.get("discard") == "on" else "on"


def _throttling(options: dict, key: str) -> str:
    bps = int(float(options.get("mbps", "0")) * 1024 * 1024)
    iops = int(options.get("iops", "0"))
    if not bps and not iops:
        return ""
    return (f"    I/O throttling:   bps={bps} bps_rd=0 bps_wr=0 bps_max=0 bps_rd_max=0 bps_wr_max=0 "
            f"iops={iops} iops_rd=0 iops_wr=0 iops_max=0 iops_rd_max=0 iops_wr_max=0 iops_size=0 "
            f"group=drive-{key}\r\n")


def info_block(cluster, vm) -> str:
    """HMP `info block` of a running VM as QEMU 7.2 prints it (\\r\\n line ends, a
    blank line between devices), from the drives of its config as qemu-server
    turns them into -drive options."""
    paragraphs = []
    for index, key in enumerate(sorted(k for k in vm.config if DRIVE_KEY.match(k))):
        volume, options = split_drive(vm.config[key])
        if volume in ("", "none", "cdrom"):
            paragraphs.append(f"drive-{key}: [not inserted]\r\n    Attached to:      {key}\r\n"
                              "    Removable device: not locked, tray closed\r\n")
            continue
        stored = cluster.volumes.get(volume)
        image_format = options.get("format", stored.format if stored else "raw")
        text = (f"drive-{key} (#block{100 + 17 * index}): /dev/fake/{volume.replace(':', '/')} "
                f"({image_format})\r\n    Attached to:      {key}\r\n"
                f"    Cache mode:       {CACHE_FLAGS.get(options.get('cache', 'none'), 'writeback')}\r\n")
        zeroes = _detect_zeroes(options)
        if zeroes != "off":
            text += f"    Detect zeroes:    {zeroes}\r\n"
        paragraphs.append(text + _throttling(options, key))
    return "\r\n".join(paragraphs)
