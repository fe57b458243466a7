"""The simulated cluster: nodes, storages, volumes, VMs and their configs.

Each behaviour follows PVE's code (PVE 8.4: qemu-server 8.3.13, pve-storage
8.3.6, pve-guest-common 5.2.2, pve-common 8.3.1); the comment beside it names
repository, file and function. What it models:
  * storages as pve-storage's plugins allocate on them (StoragePlugin below):
    volume names per storage type, default and allowed formats, base volumes
    of templates, linked clones, volume sizes;
  * VM configs as qemu-server writes them: drive property strings printed as
    print_drive prints them, `STORAGE:SIZE` allocating a volume
    (create_disks: `format` dropped, `size=` added), replaced and deleted
    disks becoming `unusedN`, the [PENDING] section of an update and when it
    is applied;
  * linked and full clones (clone_vm), VM ids from /cluster/nextid;
  * checks PVE makes beyond the schema that a client is likely to hit, with
    PVE's messages.
Everything runs under the server's state lock; failures raise ApiError
(synchronous answers) or TaskFailed (inside a task).
"""

import hashlib
import re
import time
from dataclasses import dataclass, field
from typing import Optional

from tasks import TaskFailed

GIB = 1024 ** 3
DRIVE_KEY = re.compile(r"(ide|sata|scsi|virtio|unused)(\d+)|efidisk0|tpmstate0")
DISK_BUSES = ("ide", "sata", "scsi", "virtio")
# qemu-server PVE/QemuServer/Drive.pm, $NEW_DISK_RE: [STORAGE:]SIZE_IN_GIB.
NEW_DISK = re.compile(r"(([^/:\s]+):)?(\d+(\.\d+)?)")
MAX_VOLUMES_PER_GUEST = 1024   # pve-storage Plugin.pm, $MAX_VOLUMES_PER_GUEST
MAX_UNUSED_DISKS = 256         # qemu-server QemuConfig.pm, __config_max_unused_disks


class ApiError(Exception):
    """An answer other than 200: status, message (the HTTP reason phrase) and,
    for 400, PVE's errors map."""

    def __init__(self, status: int, message: str, errors: Optional[dict] = None, raw_body: bool = False):
        super().__init__(message)
        self.status = status
        self.message = message
        self.errors = errors
        # True for pveproxy's own errors before any API handler runs
        # (pve-http-server AnyEvent.pm, error): the body is the message as
        # text, not the JSON formatter's {"data": null, ...}.
        self.raw_body = raw_body


def param_error(name: str, message: str) -> ApiError:
    return ApiError(400, "Parameter verification failed.", {name: message})


# ---- storages --------------------------------------------------------------------------------

# pve-storage src/PVE/Storage/*Plugin.pm, plugindata: the formats a storage
# type accepts and its default (Plugin.pm default_format: the storage's own
# `format` option, else the plugin's default). Types without a format entry
# hold raw volumes only.
PLUGIN_FORMATS = {
    "dir": (("qcow2", "raw", "subvol", "vmdk"), "raw"),
    "nfs": (("qcow2", "raw", "vmdk"), "raw"),
    "cifs": (("qcow2", "raw", "vmdk"), "raw"),
    "glusterfs": (("qcow2", "raw", "vmdk"), "raw"),
    "zfspool": (("raw", "subvol"), "raw"),
    "btrfs": (("raw", "subvol"), "raw"),
}
# Storage types whose volumes are files under PATH/images/VMID/ (Plugin.pm
# alloc_image, clone_image, create_base; btrfs, which keeps a subvolume per
# image, is not modelled).
FILE_STORAGE_TYPES = ("dir", "nfs", "cifs", "glusterfs")
# Linked clones: LvmThinPlugin.pm clone_image names the new LV only
# (vm-ID-disk-N); RBDPlugin.pm and ZFSPoolPlugin.pm clone_image answer
# BASE/vm-ID-disk-N; LVMPlugin.pm cannot clone (volume_has_feature).
CLONE_KEEPS_BASE_PREFIX = ("rbd", "zfspool")
CANNOT_LINK = ("lvm",)


@dataclass
class Storage:
    id: str
    type: str                          # lvmthin, dir, rbd ...
    content: list = field(default_factory=lambda: ["images", "rootdir"])
    shared: bool = False
    total: int = 100 * GIB
    nodes: Optional[list] = None       # None: every node
    format: Optional[str] = None       # storage.cfg `format` (file storages)
    path: Optional[str] = None         # storage.cfg `path` (file storages)
    vgname: str = "pve"                # storage.cfg `vgname` (LVM)

    def on(self, node: str) -> bool:
        return self.nodes is None or node in self.nodes

    @property
    def is_file_based(self) -> bool:
        return self.type in FILE_STORAGE_TYPES

    def default_format(self) -> tuple:
        """pve-storage src/PVE/Storage/Plugin.pm, default_format: (default, valid formats)."""
        if self.type not in PLUGIN_FORMATS:
            return "raw", ("raw",)
        valid, default = PLUGIN_FORMATS[self.type]
        return self.format or default, valid

    def base_path(self) -> str:
        return self.path or ("/var/lib/vz" if self.id == "local" else f"/mnt/pve/{self.id}")


@dataclass
class Volume:
    volid: str
    storage: str
    node: str
    vmid: int
    size: int
    format: str = "raw"
    parent: Optional[str] = None       # the base volume's volid (linked clones)
    used: int = 0                      # what volume_size_info reports as used

    @property
    def volname(self) -> str:
        return self.volid.split(":", 1)[1]

    @property
    def is_base(self) -> bool:
        """Plugin parse_volname's isBase: the volume's own name starts with base-."""
        return self.volname.rsplit("/", 1)[-1].startswith("base-")


def disk_number_pattern(vmid: int, suffix: str) -> "re.Pattern":
    """pve-storage Plugin.pm, $get_vm_disk_number: (vm|base)-VMID-disk-N
    followed by the suffix, unanchored, and the suffix's '.' matches any
    character (the regex is built from the string)."""
    return re.compile(rf"(vm|base)-{vmid}-disk-(\d+){suffix}")


@dataclass
class Vm:
    vmid: int
    node: str
    config: dict
    status: str = "stopped"
    lock: Optional[str] = None
    started_at: float = 0.0
    agent_ready_at: float = 0.0
    # qemu-server's [PENDING] section: values not yet applied, and keys to
    # delete (key -> force), as PVE::QemuConfig keeps them.
    pending: dict = field(default_factory=dict)
    pending_delete: dict = field(default_factory=dict)
    # What the running QEMU reports (status/current running-qemu/-machine).
    running_qemu: Optional[str] = None
    running_machine: Optional[str] = None

    @property
    def name(self) -> str:
        return self.config.get("name", f"VM {self.vmid}")

    @property
    def is_template(self) -> bool:
        return str(self.config.get("template", "0")) == "1"

    def agent_enabled(self) -> bool:
        """qemu-server QemuServer/Agent.pm / QemuServer.pm get_qga_key(conf,
        'enabled'): the agent property string's default key."""
        value = self.config.get("agent", "0")
        first = value.split(",")[0]
        enabled = first.split("=", 1)[1] if first.startswith("enabled=") else first
        return enabled.lower() in ("1", "on", "yes", "true")

    def with_pending(self) -> dict:
        """pve-guest-common src/PVE/AbstractConfig.pm, load_current_config
        (current=0): the config with pending values taken in and pending
        deletions taken out."""
        merged = {**self.config, **self.pending}
        for key in self.pending_delete:
            merged.pop(key, None)
        return merged


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
    """qemu-server PVE/QemuServer/Drive.pm print_drive -> pve-common
    JSONSchema.pm print_property_string: the default key's value (the
    volume) first, then the other keys sorted; booleans as parse_boolean
    left them (1/0), `size` through format_size."""
    normalised = {k: BOOLEAN_WORDS.get(v.lower(), v) if k in DRIVE_BOOLEAN_KEYS else v for k, v in options.items()}
    if "size" in normalised:
        normalised["size"] = format_size(parse_size(normalised["size"]))
    return ",".join([volume] + [f"{k}={normalised[k]}" for k in sorted(normalised)])


def parse_size(text: str) -> int:
    """pve-common JSONSchema.pm, parse_size: a number with an optional K, M,
    G or T (1024-based), truncated to an integer."""
    units = {"K": 1024, "M": 1024 ** 2, "G": GIB, "T": 1024 ** 4}
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(float(text))


def format_size(size: int) -> str:
    """pve-common JSONSchema.pm, format_size: the largest unit that divides the size."""
    for unit, factor in (("T", 1024 ** 4), ("G", GIB), ("M", 1024 ** 2), ("K", 1024)):
        if size % factor == 0:
            return f"{size // factor}{unit}"
    return str(size)


def gib_to_kib(text: str) -> int:
    """pve-common src/PVE/Tools.pm, convert_size(SIZE, 'gb' => 'kb'): rounded
    up to a whole KiB."""
    kib = float(text) * 1024 * 1024
    return int(kib) + (1 if kib > int(kib) else 0)


class Cluster:
    def __init__(self, nodes: list, storages: list, nextid_range: tuple, agent_delay: float):
        self.nodes = list(nodes)
        self.storages = {s.id: s for s in storages}
        self.volumes = {}
        self.vms = {}
        self.nextid_range = nextid_range
        self.agent_delay = agent_delay
        # The machines behind the simulation (machines.Machines); the server
        # sets it. Told of every volume created, cloned and freed.
        self.machines = None

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

    def storage_config(self, storage_id: str) -> Storage:
        """pve-storage src/PVE/Storage.pm, storage_config."""
        storage = self.storages.get(storage_id)
        if storage is None:
            raise TaskFailed(f"storage '{storage_id}' does not exist")
        return storage

    def storage_on(self, node: str, storage_id: str) -> Storage:
        """storage_config, then pve-storage Storage.pm storage_check_node."""
        storage = self.storage_config(storage_id)
        if not storage.on(node):
            raise TaskFailed(f"storage '{storage_id}' is not available on node '{node}'")
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
        """PVE's digest is the SHA-1 of the config file, [PENDING] section included."""
        text = "".join(f"{k}: {v}\n" for k, v in sorted(vm.config.items()))
        text += "[PENDING]\n" + "".join(f"{k}: {v}\n" for k, v in sorted(vm.pending.items()))
        text += "delete: " + ",".join(("!" if force else "") + key for key, force in sorted(vm.pending_delete.items()))
        return hashlib.sha1(text.encode()).hexdigest()

    # ---- storage: what pve-storage's plugins do -------------------------------------------

    def _owned_volids(self, storage: Storage, node: str, vmid: int) -> list:
        """The plugin's list_images(STORAGE, VMID): the volumes of that owner
        on that storage (on this node's copy of a local storage)."""
        return [v.volid for v in self.volumes.values()
                if v.storage == storage.id and v.vmid == vmid and (storage.shared or v.node == node)]

    def find_free_diskname(self, storage: Storage, node: str, vmid: int, fmt: Optional[str],
                           add_fmt_suffix: bool) -> str:
        """pve-storage Plugin.pm, find_free_diskname / get_next_vm_diskname:
        the lowest N no volume of the owner uses; file storages count only
        names with the same format suffix."""
        suffix = f".{fmt}" if add_fmt_suffix else ""
        prefix = "subvol" if fmt == "subvol" else "vm"
        pattern = disk_number_pattern(vmid, suffix)
        taken = {int(m.group(2)) for m in (pattern.search(v) for v in self._owned_volids(storage, node, vmid)) if m}
        for number in range(MAX_VOLUMES_PER_GUEST):
            if number not in taken:
                return f"{prefix}-{vmid}-disk-{number}{suffix}"
        raise TaskFailed(f"unable to allocate an image name for VM {vmid} in storage '{storage.id}'")

    def alloc_image(self, storage: Storage, node: str, vmid: int, fmt: str, size_kib: int) -> str:
        """pve-storage src/PVE/Storage.pm, vdisk_alloc (format defaults to the
        storage's), then the plugin's alloc_image:
          * file storages (Plugin.pm): VMID/vm-VMID-disk-N.FMT, any of
            raw|qcow2|vmdk|subvol (parse_name_dir refuses other names);
          * lvmthin (LvmThinPlugin.pm) and lvm (LVMPlugin.pm): vm-VMID-disk-N,
            raw only (a die without newline: Perl appends the location);
          * rbd (RBDPlugin.pm) and the rest: vm-VMID-disk-N, raw whatever asked."""
        fmt = fmt or storage.default_format()[0]
        if storage.is_file_based:
            name = self.find_free_diskname(storage, node, vmid, fmt, True)
            if fmt not in ("raw", "qcow2", "vmdk", "subvol"):
                raise TaskFailed(f"unable to parse volume filename '{name}'")
            if fmt == "subvol" and size_kib != 0:
                raise TaskFailed("storage does not support subvol quotas")
            volname = f"{vmid}/{name}"
        else:
            if storage.type in ("lvmthin", "lvm") and fmt != "raw":
                plugin = "LvmThinPlugin" if storage.type == "lvmthin" else "LVMPlugin"
                line = 88 if storage.type == "lvmthin" else 369
                raise TaskFailed(f"unsupported format '{fmt}' at /usr/share/perl5/PVE/Storage/{plugin}.pm "
                                 f"line {line}.")
            fmt = "raw"
            volname = self.find_free_diskname(storage, node, vmid, None, False)
        volid = f"{storage.id}:{volname}"
        # qemu-img create: a qcow2 file starts with its header and tables.
        used = 200704 if fmt == "qcow2" else 0
        self.volumes[volid] = Volume(volid, storage.id, node, vmid, size_kib * 1024, fmt, used=used)
        if self.machines:
            self.machines.volume_created(volid, size_kib * 1024, fmt)
        return volid

    def create_base(self, volid: str) -> str:
        """pve-storage Storage.pm vdisk_create_base -> the plugin's create_base:
        vm-... renamed base-... (file storages keep VMID/ in front); LVM (thick)
        cannot."""
        volume = self.volumes[volid]
        storage = self.storages[volume.storage]
        if storage.type == "lvm":
            raise TaskFailed("can't create base images in lvm storage")
        if volume.is_base:
            raise TaskFailed("create_base not possible with base image")
        head, _, name = volume.volname.rpartition("/")
        renamed = f"{storage.id}:{head + '/' if head else ''}{re.sub(r'^vm-', 'base-', name)}"
        self._rename_volume(volid, renamed)
        return renamed

    def _rename_volume(self, old: str, new: str) -> None:
        volume = self.volumes.pop(old)
        volume.volid = new
        self.volumes[new] = volume
        if self.machines:
            self.machines.volume_renamed(old, new)

    def can_link(self, volid: str) -> bool:
        """pve-storage volume_has_feature(..., 'clone', ...): base volumes,
        not on LVM (thick); file storages only for raw, qcow2, vmdk."""
        volume = self.volumes.get(volid)
        if volume is None or not volume.is_base:
            return False
        storage = self.storages[volume.storage]
        return storage.type not in CANNOT_LINK and volume.format in ("raw", "qcow2", "vmdk")

    def clone_image(self, base_volid: str, node: str, vmid: int) -> str:
        """pve-storage Storage.pm vdisk_clone -> the plugin's clone_image (a
        linked clone of a base volume):
          * file storages (Plugin.pm): BASEVMID/BASENAME/VMID/vm-VMID-disk-N.qcow2
            (always qcow2, backed by the base);
          * lvmthin (LvmThinPlugin.pm): vm-VMID-disk-N (a thin snapshot);
          * rbd, zfspool: BASENAME/vm-VMID-disk-N."""
        base = self.volumes[base_volid]
        storage = self.storages[base.storage]
        if not base.is_base:
            raise TaskFailed("clone_image only works on base images")
        if storage.is_file_based:
            name = self.find_free_diskname(storage, node, vmid, "qcow2", True)
            volname, fmt = f"{base.volname}/{vmid}/{name}", "qcow2"
        else:
            name = self.find_free_diskname(storage, node, vmid, None, False)
            volname = f"{base.volname}/{name}" if storage.type in CLONE_KEEPS_BASE_PREFIX else name
            fmt = "raw"
        volid = f"{storage.id}:{volname}"
        self.volumes[volid] = Volume(volid, storage.id, node, vmid, base.size, fmt, parent=base_volid,
                                     used=200704 if fmt == "qcow2" else 0)
        if self.machines:
            self.machines.volume_cloned(base_volid, volid, linked=True)
        return volid

    def copy_volume(self, source_volid: str, node: str, vmid: int, storage_id: Optional[str],
                    fmt: Optional[str]) -> str:
        """qemu-server QemuServer.pm clone_disk (full): a new volume on the
        target storage (default the source's) in resolve_dst_disk_format's
        format (the asked one, else the source's, if the storage supports
        it, else the storage's default), then qemu-img convert."""
        source = self.volumes[source_volid]
        storage = self.storage_on(node, storage_id or source.storage)
        default, valid = storage.default_format()
        wanted = fmt or source.format
        target_format = wanted if wanted in valid else default
        size_kib = source.size // 1024
        volid = self.alloc_image(storage, node, vmid, target_format, size_kib)
        if self.machines:
            self.machines.volume_cloned(source_volid, volid, linked=False)
        return volid

    def free_volume(self, volid: str) -> None:
        """pve-storage Storage.pm, vdisk_free."""
        if self.volumes.pop(volid, None) is not None and self.machines:
            self.machines.volume_deleted(volid)

    def volume_path(self, volume: Volume) -> str:
        """The plugin's path / filesystem_path."""
        storage = self.storages[volume.storage]
        name = volume.volname.rsplit("/", 1)[-1]
        if storage.is_file_based:
            return f"{storage.base_path()}/images/{volume.vmid}/{name}"
        if storage.type in ("lvmthin", "lvm"):
            return f"/dev/{storage.vgname}/{name}"
        if storage.type == "zfspool":
            return f"/dev/zvol/rpool/data/{name}"
        return f"/dev/rbd/{storage.id}/{name}"

    def volume_attributes(self, storage_id: Optional[str], volume: str) -> dict:
        """pve-storage src/PVE/API2/Storage/Content.pm, info (GET
        .../content/{volume}): $real_volume_id, then volume_size_info's size,
        format and used, and the volume's path."""
        if ":" in volume:
            sid = volume.split(":", 1)[0]
            if storage_id and sid != storage_id:
                raise param_error("volume", f"storage ID mismatch ({sid} != {storage_id})\n")
            volid = volume
        else:
            if not storage_id:
                raise param_error("volume", "no storage specified - incomplete volume ID")
            volid = f"{storage_id}:{volume}"
        try:
            storage = self.storage_config(volid.split(":", 1)[0])
        except TaskFailed as failure:
            raise ApiError(500, str(failure)) from None
        found = self.volumes.get(volid)
        if found is None:
            if storage.type in ("lvmthin", "lvm"):
                path = f"/dev/{storage.vgname}/{volid.split(':', 1)[1]}"
                raise ApiError(500, f"can't get size of '{path}': command '/sbin/lvs --separator : --noheadings "
                                    f"--units b --unbuffered --nosuffix --options lv_size {path}' failed: exit code 5")
            raise ApiError(500, f"volume_size_info on '{volid}' failed - no format")
        return {"path": self.volume_path(found), "size": found.size, "used": found.used, "format": found.format}

    # ---- VM config: qemu-server's update_vm_api ---------------------------------------------

    def add_vm(self, vmid: int, node: str, config: dict, lock: Optional[str] = None) -> Vm:
        if vmid in self.vms:
            raise ApiError(500, f"unable to create VM {vmid}: config file already exists")
        vm = Vm(vmid, node, dict(config), lock=lock)
        self.vms[vmid] = vm
        return vm

    def check_update(self, vm: Vm, params: dict) -> tuple:
        """The synchronous part of qemu-server PVE/API2/Qemu.pm $update_vm_api
        (before the worker): options to set and to delete, checked; errors
        are the call's own answer. Returns (settings, deletions)."""
        settings = {k: v for k, v in params.items() if k not in CONFIG_CALL_PARAMETERS}
        deletions = [("ide2" if key == "cdrom" else key) for key in _listed(params.get("delete", ""))]
        if not deletions and not params.get("revert") and not settings:
            raise ApiError(500, "no options specified")
        for key in deletions:
            if key in settings:
                raise param_error("delete", f"you can't use '-{key}' and -delete {key}' at the same time")
        for key, value in settings.items():
            if DRIVE_KEY.fullmatch(key) and not key.startswith("unused"):
                settings[key] = self._check_storage_access(key, value)
        return settings, deletions

    def _check_storage_access(self, key: str, text: str) -> str:
        """qemu-server API2/Qemu.pm $check_drive_param (the drive re-printed)
        and $check_storage_access: a new disk's storage must exist and hold
        images; an existing volume's storage must exist."""
        volume, options = split_drive(text)
        new = NEW_DISK.fullmatch(volume)
        if new:
            if not new.group(2):
                raise ApiError(500, "no storage ID specified (and no default storage)")
            storage = self.storages.get(new.group(2))
            if storage is None:
                raise ApiError(500, f"storage '{new.group(2)}' does not exist")
            if "images" not in storage.content:
                raise param_error("storage", f"storage '{storage.id}' does not support vm images")
        elif ":" in volume and volume.split(":", 1)[0] not in self.storages:
            raise ApiError(500, f"storage '{volume.split(':', 1)[0]}' does not exist")
        return print_drive(volume, options)

    def write_pending(self, vm: Vm, settings: dict, deletions: list, force: bool, log) -> None:
        """The worker of $update_vm_api, first half: each deletion becomes a
        pending delete (`unused` volumes are freed at once), each other
        option a pending value; drives are left to create_pending_disks."""
        for key in deletions:
            value = vm.config.get(key, vm.pending.get(key))
            if value is None:
                # A plain Perl warn: a log line, not a counted warning (RESTEnvironment.pm warn is not called).
                log.info(f"cannot delete '{key}' - not set in current configuration!")
                continue
            vm.pending.pop(key, None)
            if key.startswith("unused"):
                vm.config.pop(key, None)
                self.free_volume(value)
            elif key == "tags":
                vm.config.pop(key, None)
            else:
                vm.pending_delete[key] = force
        for key, value in settings.items():
            if not DRIVE_KEY.fullmatch(key):
                vm.pending[key] = value
                vm.pending_delete.pop(key, None)

    def create_pending_disks(self, vm: Vm, settings: dict, log) -> None:
        """The worker of $update_vm_api, drives: a drive already pending is
        registered unused first, then create_disks, and the result pending."""
        for key, value in settings.items():
            if not DRIVE_KEY.fullmatch(key):
                continue
            if key in vm.pending:
                self.register_unused(vm, vm.pending[key])
            vm.pending[key] = self.create_disk(vm, key, value, log)
            vm.pending_delete.pop(key, None)
        self.drop_unused_in_use(vm)

    def create_disk(self, vm: Vm, key: str, text: str, log) -> str:
        """qemu-server PVE/API2/Qemu.pm, create_disks, for one drive:
          * none/cdrom/empty: printed without `size`;
          * STORAGE:SIZE (GiB): vdisk_alloc in the drive's `format`, else the
            storage's default; a template's becomes a base volume; then
            `delete $disk->{format}; # no longer needed`, `size=` set to the
            allocated bytes (printed through format_size), and the task logs
            "KEY: successfully created disk 'DRIVE'";
          * an existing volume: a `format=` other than the volume's is an
            error, `size=` becomes the volume's size, `format` stays."""
        volume, options = split_drive(text)
        new = NEW_DISK.fullmatch(volume)
        if not volume or volume in ("none", "cdrom"):
            options.pop("size", None)
            return print_drive(volume, options)
        if new:
            storage = self.storage_on(vm.node, new.group(2))
            size_kib = gib_to_kib(new.group(3))
            volid = self.alloc_image(storage, vm.node, vm.vmid, options.get("format"), size_kib)
            if vm.is_template:
                volid = self.create_base(volid)
            options.pop("format", None)
            options["size"] = str(size_kib * 1024)
            drive = print_drive(volid, options)
            log.info(f"{key}: successfully created disk '{drive}'")
            return drive
        found = self.volumes.get(volume)
        if found is None:
            raise TaskFailed(f"volume {volume} does not exist")
        if options.get("format") and options["format"] != found.format:
            raise TaskFailed(f"drive '{key}' - volume '{volume}' - 'format={options['format']}' option different "
                             f"from storage format '{found.format}'")
        options["size"] = str(found.size)
        return print_drive(volume, options)

    def register_unused(self, vm: Vm, drive: str) -> None:
        """qemu-server QemuServer.pm vmconfig_register_unused_drive ->
        pve-guest-common AbstractConfig.pm add_unused_volume: a volume the VM
        owns becomes unusedN (the lowest free N; never twice)."""
        volume, _ = split_drive(drive)
        found = self.volumes.get(volume)
        if found is None or found.vmid != vm.vmid:
            return
        if volume in [v for k, v in vm.config.items() if k.startswith("unused")]:
            return
        for index in range(MAX_UNUSED_DISKS):
            if f"unused{index}" not in vm.config:
                vm.config[f"unused{index}"] = volume
                return
        raise TaskFailed("Too many unused volumes - please delete them first.")

    def drop_unused_in_use(self, vm: Vm) -> None:
        """qemu-server QemuServer.pm write_vm_config: "remove 'unusedX'
        settings if we re-add a volume" (in use by a drive, current or pending)."""
        used = {split_drive(v)[0] for k, v in list(vm.config.items()) + list(vm.pending.items())
                if DRIVE_KEY.fullmatch(k) and not k.startswith("unused")}
        for key in [k for k, v in vm.config.items() if k.startswith("unused") and v in used]:
            del vm.config[key]

    def cleanup_pending(self, vm: Vm) -> None:
        """pve-guest-common AbstractConfig.pm, cleanup_pending: a pending
        value equal to the current one, and the deletion of a key not set,
        are dropped."""
        for key in [k for k, v in vm.pending.items() if vm.config.get(k) == v]:
            del vm.pending[key]
        for key in [k for k in vm.pending_delete if k not in vm.config]:
            del vm.pending_delete[key]

    def apply_pending(self, vm: Vm) -> None:
        """qemu-server QemuServer.pm, vmconfig_apply_pending (a VM that is not
        running): deletions first (a drive is freed with force, else becomes
        unusedN), then every pending value replaces the current one (a
        replaced drive's volume becomes unusedN)."""
        for key, force in sorted(vm.pending_delete.items()):
            value = vm.config.get(key)
            if value is not None and DRIVE_KEY.fullmatch(key):
                if force:
                    self.free_volume(split_drive(value)[0])
                else:
                    self.register_unused(vm, value)
            vm.config.pop(key, None)
        vm.pending_delete.clear()
        self.cleanup_pending(vm)
        for key, value in list(vm.pending.items()):
            if key in vm.config and DRIVE_KEY.fullmatch(key):
                self.register_unused(vm, vm.config[key])
            vm.config[key] = value
        vm.pending.clear()
        self.drop_unused_in_use(vm)

    def hotplug_pending(self, vm: Vm) -> None:
        """qemu-server QemuServer.pm, vmconfig_hotplug_pending (a running VM),
        reduced to what the fake models: the options that need no device
        ($fast_plug_option: name, description, tags, onboot, protection ...)
        are applied, everything else stays pending until the VM restarts."""
        for key in [k for k in vm.pending if k in FAST_PLUG_OPTIONS]:
            vm.config[key] = vm.pending.pop(key)
        for key in [k for k in vm.pending_delete if k in FAST_PLUG_OPTIONS]:
            vm.config.pop(key, None)
            del vm.pending_delete[key]

    def volumes_of(self, vm: Vm) -> list:
        """The volumes a VM's drives (current and pending) and unusedN name."""
        found = []
        for key, value in list(vm.config.items()) + list(vm.pending.items()):
            volume = split_drive(value)[0] if DRIVE_KEY.fullmatch(key) else None
            if volume in self.volumes and volume not in found:
                found.append(volume)
        return found

    def owned_volumes(self, vm: Vm) -> list:
        return [v for v in self.volumes_of(vm) if self.volumes[v].vmid == vm.vmid]

    # ---- life cycle ---------------------------------------------------------------

    def clone_plan(self, source: Vm, full: bool, running: bool) -> tuple:
        """qemu-server PVE/API2/Qemu.pm clone_vm, $load_and_check: the new
        config (every key but snapshot data, `unusedN` and drives) and the
        drives to clone. A linked clone needs a base volume that can be
        linked ("Linked clone feature is not supported for ...")."""
        config, drives = {}, {}
        for key in sorted(source.config):
            value = source.config[key]
            if key in ("parent", "snaptime", "vmstate", "snapstate") or key.startswith("unused"):
                continue
            if DRIVE_KEY.fullmatch(key):
                volume, options = split_drive(value)
                if options.get("media") == "cdrom" or volume in ("", "none", "cdrom"):
                    config[key] = value
                    continue
                if not full and not self.can_link(volume):
                    raise ApiError(500, f"Linked clone feature is not supported for '{volume}' ({key})")
                drives[key] = value
            elif re.fullmatch(r"net\d+", key):
                config[key] = _with_new_mac(value)
            else:
                config[key] = value
        return config, drives

    def clone_disks(self, clone: Vm, drives: dict, full: bool, storage: Optional[str], fmt: Optional[str],
                    log) -> None:
        """qemu-server QemuServer.pm clone_disk, for each drive in order: the
        task logs "create full|linked clone of drive KEY (VOLUME)", the drive
        loses `format` and gets the new volume's size."""
        for key in sorted(drives):
            volume, options = split_drive(drives[key])
            log.info(f"create {'full' if full else 'linked'} clone of drive {key} ({volume})")
            if full:
                new = self.copy_volume(volume, clone.node, clone.vmid, storage, fmt)
            else:
                new = self.clone_image(volume, clone.node, clone.vmid)
            options.pop("format", None)
            options["size"] = str(self.volumes[new].size)
            clone.config[key] = print_drive(new, options)

    def make_template(self, vm: Vm) -> None:
        """qemu-server QemuServer.pm template_create: each disk's volume
        becomes a base volume; then `template: 1`."""
        for key, value in list(vm.config.items()):
            if not DRIVE_KEY.fullmatch(key) or key.startswith("unused"):
                continue
            volume, options = split_drive(value)
            if volume in self.volumes and not self.volumes[volume].is_base:
                vm.config[key] = print_drive(self.create_base(volume), options)
        vm.config["template"] = "1"

    def destroy(self, vm: Vm) -> None:
        for volume in self.owned_volumes(vm):
            self.free_volume(volume)
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
                          "live-restore", "bwlimit", "skip_cloud_init"}
# qemu-server QemuServer.pm, $fast_plug_option: applied to a running VM at once.
FAST_PLUG_OPTIONS = {"lock", "name", "onboot", "shares", "startup", "description", "protection",
                     "vmstatestorage", "hookscript", "tags"}


def _listed(text: str) -> list:
    """pve-common Tools.pm, split_list: NUL, ',', ';' or blanks separate."""
    return [item for item in re.split(r"[,;\s\0]+", text) if item]


_MAC_COUNTER = iter(range(1, 1 << 24))


def _with_new_mac(net: str) -> str:
    """qemu-server API2/Qemu.pm clone_vm: "always change MAC! address" of
    every netN (a new random address with PVE's BC:24:11 prefix)."""
    number = next(_MAC_COUNTER)
    mac = "BC:24:11:{:02X}:{:02X}:{:02X}".format(number >> 16 & 0xFF, number >> 8 & 0xFF, number & 0xFF)
    parts = net.split(",")
    model = parts[0].split("=", 1)
    if len(model) == 2 and model[0] in ("virtio", "e1000", "rtl8139", "vmxnet3", "e1000e"):
        parts[0] = f"{model[0]}={mac}"
    elif not any(p.startswith("macaddr=") for p in parts):
        parts.append(f"macaddr={mac}")
    else:
        parts = [f"macaddr={mac}" if p.startswith("macaddr=") else p for p in parts]
    return ",".join(parts)


def start_warnings(config: dict) -> list:
    """What qemu-server logs as WARN when it starts a VM with this config
    (QemuServer.pm config_to_command: iothread on a SCSI disk without
    virtio-scsi-single is log_warn'ed, once per such disk)."""
    warnings = []
    controller = config.get("scsihw", "lsi")
    for key, value in sorted(config.items()):
        bus = re.match(r"(scsi|virtio|sata|ide)\d+$", key)
        _, options = split_drive(value) if bus else ("", {})
        if bus and bus.group(1) == "scsi" and BOOLEAN_WORDS.get(options.get("iothread", "0").lower()) == "1" \
                and controller != "virtio-scsi-single":
            warnings.append("iothread is only valid with virtio disk or virtio-scsi-single controller, ignoring")
    return warnings
