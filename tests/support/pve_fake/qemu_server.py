"""A VM config -> the QEMU command line qemu-server 8.3 (PVE 8.4) or 9.2 (PVE 9.1) builds for it.

This is a re-implementation, from reading qemu-server at c2287c17 (8.3.13)
and at e6352be6 (9.2.6), of the part of `config_to_command` that a disk benchmark's
VMs reach: i440fx (`pc`) machines with SeaBIOS, disks on ide/scsi/virtio/sata,
the guest agent, serial sockets, vga, virtio/e1000 NICs and `args`. Anything
else it is given (q35, OVMF, hostpci, usbN, numa, hotplug of cpu/memory, a
`cpu:` model, ...) raises UnsupportedConfig instead of being silently wrong.

Contract: `config_to_command(conf, vmid, storages, environment)` returns the
argv PVE would exec, byte for byte, for a host described by `environment`
(QEMU version, iSCSI initiator name, KVM available). Volume ids are resolved
to PVE's own paths (/dev/VG/NAME, /var/lib/vz/images/...): making those paths
exist on this machine is the adaptation step's job (`adapt_for_this_machine`),
kept separate so that tests can compare the PVE-faithful argv with qemu-server's
cfg2cmd expectations (tests/data/pve/cfg2cmd, cfg2cmd_test.py).

Each rule names the qemu-server function it follows, e.g.
`# QemuServer.pm print_drive_commandline_full`; file names are relative to
qemu-server's PVE/ directory (8.3) or src/PVE/QemuServer/ (9.2: Blockdev.pm,
DriveDevice.pm, Drive.pm, Cfg2Cmd/Timer.pm) unless another repository is named.

The version: `environment.qemu_server_version` and `qemu_version`
(PVE_VERSIONS, environment_for). qemu-server 9.2 keeps 8.3's output for
machine versions below 10.0, with few exceptions (host_mtu, marked where they
are); from 10.0 on every drive is a throttle-group object plus a -blockdev
chain (throttle node `drive-<id>` > format node > file node) and its device
line gains device_id= and write-cache= (the "9.2:" section below).
"""

import hashlib
import json
import os
import re
import shlex
from dataclasses import dataclass, field
from typing import Callable, Optional


class UnsupportedConfig(Exception):
    """A config key or value this translation does not model."""


class StartError(Exception):
    """A config qemu-server itself refuses to start; the text is PVE's message."""


@dataclass
class StorageConfig:
    """The fields of /etc/pve/storage.cfg that decide a volume's path and format."""
    id: str
    type: str                   # dir, lvmthin, lvm, btrfs, ...
    path: str = ""              # dir-like storages
    vgname: str = ""            # lvm, lvmthin


# The storages of qemu-server's test/run_config2command_tests.pl ($base_env),
# the two a default PVE install has.
DEFAULT_STORAGES = {
    "local": StorageConfig("local", "dir", path="/var/lib/vz"),
    "local-lvm": StorageConfig("local-lvm", "lvmthin", vgname="pve"),
}


@dataclass
class HostEnvironment:
    """What config_to_command reads from the host rather than the config.
    `qemu_server_version` selects the rules where qemu-server 8.3 and 9.2
    differ for the same machine version (most 9.2 rules are gated by the
    machine version instead, which 8.3's QEMU 9.2 never reaches)."""
    qemu_version: str = "9.2.0"          # PVE 8.4 ships pve-qemu-kvm 9.2
    qemu_server_version: str = "8.3.13"
    kvm_available: bool = True           # QemuServer.pm kvm_version()
    initiator_name: Optional[str] = None  # QemuServer.pm get_initiator_name (/etc/iscsi/initiatorname.iscsi)
    host_cpus: int = 1024                # $cpuinfo->{cpus}
    kvm_binary: str = "/usr/bin/kvm"
    storages: dict = field(default_factory=lambda: dict(DEFAULT_STORAGES))
    qmp_socket: Callable[[int], str] = lambda vmid: f"/var/run/qemu-server/{vmid}.qmp"
    qga_socket: Callable[[int], str] = lambda vmid: f"/var/run/qemu-server/{vmid}.qga"
    pidfile: Callable[[int], str] = lambda vmid: f"/var/run/qemu-server/{vmid}.pid"
    vnc_socket: Callable[[int], str] = lambda vmid: f"/var/run/qemu-server/{vmid}.vnc"
    serial_socket: Callable[[int, int], str] = lambda vmid, i: f"/var/run/qemu-server/{vmid}.serial{i}"


# What each simulated PVE version runs (environment_for):
# * 8.4: qemu-server 8.3.13 (its commit c2287c17 "bump version to 8.3.13") with
#   pve-qemu-kvm 9.2.0 (PVE 8.4's release notes: QEMU 9.2.0);
# * 9.1: qemu-server 9.2.6 (commit e6352be6 "bump version to 9.2.6", the newest
#   of PVE 9.1's repository; its debian/control requires pve-qemu-kvm >= 10.1~)
#   with pve-qemu-kvm 10.1.2 (PVE 9.1's release notes: QEMU 10.1.2).
PVE_VERSIONS = {
    "8.4": {"qemu_server_version": "8.3.13", "qemu_version": "9.2.0"},
    "9.1": {"qemu_server_version": "9.2.6", "qemu_version": "10.1.2"},
}


def environment_for(pve_version: str, **overrides) -> "HostEnvironment":
    """The HostEnvironment of a PVE version of PVE_VERSIONS; other fields as given."""
    if pve_version not in PVE_VERSIONS:
        raise ValueError(f"PVE version {pve_version} is not simulated (known: {', '.join(PVE_VERSIONS)})")
    return HostEnvironment(**PVE_VERSIONS[pve_version], **overrides)


# ---- versions (QemuServer/Helpers.pm min_version, QemuServer/Machine.pm) ----------------

# Machine.pm $PVE_MACHINE_VERSION: the highest +pveN per QEMU machine version.
# (qemu-server 9.2.6 adds 10.0+pve1, host_mtu always set, and 11.0.)
PVE_MACHINE_REVISIONS = {"4.1": 2, "9.2": 1, "10.0": 1, "11.0": 2}


def _version_tuple(text: str) -> tuple:
    match = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?(?:\+pve(\d+))?", text)
    if not match:
        raise UnsupportedConfig(f"cannot parse version '{text}'")
    major, minor, micro, pve = match.groups()
    return int(major), int(minor), int(micro or 0), int(pve or 0)


def min_version(version: str, major: int, minor: int, pve: int = 0) -> bool:
    """Helpers.pm min_version: major.minor(+pveN) at least; the micro version is ignored."""
    have_major, have_minor, _, have_pve = _version_tuple(version)
    return (have_major, have_minor, have_pve) >= (major, minor, pve)


def machine_version(machine_type: str, qemu_version: str) -> str:
    """Machine.pm extract_version: the version in a versioned type, else the
    QEMU version with its highest +pveN (get_pve_version)."""
    match = re.match(r"^(?:pc(?:-i440fx|-q35)?|virt)-(\d+)\.(\d+)(?:\.\d+)?(\+pve\d+)?", machine_type)
    if match:
        return f"{match.group(1)}.{match.group(2)}{match.group(3) or ''}"
    major, minor = _version_tuple(qemu_version)[:2]
    return f"{major}.{minor}+pve{PVE_MACHINE_REVISIONS.get(f'{major}.{minor}', 0)}"


# ---- property strings --------------------------------------------------------------------

BOOLEAN_TRUE = {"1", "on", "yes", "true"}
BOOLEAN_KEYS = {"iothread", "ssd", "detect_zeroes", "ro", "snapshot", "replicate", "backup", "shared", "scsiblock"}
DRIVE_KEY = re.compile(r"^(ide|scsi|virtio|sata)(\d+)$")
# Drive.pm valid_drive_names: the order foreach_volume walks ("order is important").
BUS_ORDER = ("ide", "scsi", "virtio", "sata")
BUS_MAX = {"ide": 4, "scsi": 31, "virtio": 16, "sata": 6}


def parse_property_string(text: str, default_key: Optional[str]) -> dict:
    """pve-common JSONSchema.pm parse_property_string, enough of it: `k=v` pairs,
    a bare first value is the default key's."""
    result = {}
    for part in filter(None, text.split(",")):
        key, sep, value = part.partition("=")
        if not sep:
            if default_key is None or default_key in result:
                raise UnsupportedConfig(f"value without key in '{text}'")
            result[default_key] = part
        else:
            result[key] = value
    return result


@dataclass
class Drive:
    """Drive.pm parse_drive: a diskN value with its interface and index."""
    interface: str
    index: int
    file: str
    options: dict = field(default_factory=dict)
    bootindex: Optional[int] = None

    @property
    def id(self) -> str:                      # Drive.pm get_drive_id
        return f"{self.interface}{self.index}"

    def flag(self, key: str) -> bool:
        return self.options.get(key, "0").lower() in BOOLEAN_TRUE

    def is_cdrom(self) -> bool:               # Drive.pm drive_is_cdrom
        return self.options.get("media") == "cdrom"


def parse_drive(key: str, text: str) -> Drive:
    match = DRIVE_KEY.match(key)
    options = parse_property_string(text, "file")
    if "volume" in options:
        options["file"] = options.pop("volume")
    file = options.pop("file", "")
    # Drive.pm parse_drive normalises booleans to 1/0 (JSONSchema boolean type).
    for name in BOOLEAN_KEYS & options.keys():
        options[name] = "1" if options[name].lower() in BOOLEAN_TRUE else "0"
    return Drive(match.group(1), int(match.group(2)), file, options)


def config_drives(conf: dict) -> list:
    """PVE::QemuConfig foreach_volume: drives in valid_drive_names order."""
    drives = []
    for bus in BUS_ORDER:
        for index in range(BUS_MAX[bus]):
            key = f"{bus}{index}"
            if conf.get(key):
                drives.append(parse_drive(key, conf[key]))
    return drives


# ---- storage: volume id -> path and format (pve-storage) -----------------------------------

IMAGE_FORMATS = ("raw", "qcow2", "vmdk", "subvol")


def volume_path_and_format(volid: str, storages: dict) -> tuple:
    """(path, format) as PVE::Storage::path and the plugins' parse_volname give them.
    A path (`/dev/sdb`) is used as is, format raw (Drive.pm get_path_and_format)."""
    if volid.startswith("/"):
        return volid, "raw"
    storage_id, sep, volname = volid.partition(":")
    storage = storages.get(storage_id)
    if not sep or storage is None:
        raise StartError(f"storage '{storage_id}' does not exist")
    if storage.type in ("lvmthin", "lvm"):
        # pve-storage LvmThinPlugin.pm / LVMPlugin.pm filesystem_path: /dev/VG/NAME, always raw.
        # (LvmThinPlugin clone_image names a linked clone plainly vm-N-disk-M; the last
        # component is taken so that `base-X/vm-N` names resolve the same way.)
        return f"/dev/{storage.vgname}/{volname.split('/')[-1]}", "raw"
    if storage.type in ("dir", "nfs", "cifs"):      # not btrfs: its raw images are DIR/disk.raw
        # pve-storage Plugin.pm parse_volname + filesystem_path: VMID/NAME or
        # BASEVMID/BASENAME/VMID/NAME (a linked clone), under PATH/images/VMID/;
        # the format is the file extension (parse_name_dir).
        match = re.match(r"^(?:\d+/\S+/)?(\d+)/(\S+)$", volname)
        if not match:
            raise StartError(f"unable to parse directory volume name '{volname}'")
        vmid, name = match.groups()
        extension = name.rsplit(".", 1)[-1]
        if extension not in IMAGE_FORMATS:
            raise StartError(f"unable to parse volume filename '{name}'")
        return f"{storage.path}/images/{vmid}/{name}", extension
    raise UnsupportedConfig(f"storage type '{storage.type}' of {volid}")


# ---- PCI addresses (QemuServer/PCI.pm get_pci_addr_map, print_pci_addr) ---------------------

PCI_ADDRESSES = {
    "piix3": (0, 1), "vga": (0, 2), "balloon0": (0, 3), "watchdog": (0, 4),
    "scsihw0": (0, 5), "pci.3": (0, 5), "scsihw1": (0, 6), "ahci0": (0, 7), "qga0": (0, 8),
    "spice": (0, 9), "pci.1": (0, 30), "pci.2": (0, 31), "xhci": (1, 27), "pci.4": (1, 28),
    "rng0": (1, 29),
}
PCI_ADDRESSES.update({f"virtio{i}": (0, 10 + i) for i in range(6)})
PCI_ADDRESSES.update({f"virtio{i}": (2, i - 5) for i in range(6, 16)})
PCI_ADDRESSES.update({f"net{i}": (0, 18 + i) for i in range(6)})
PCI_ADDRESSES.update({f"net{i}": (1, i - 5) for i in range(6, 32)})
PCI_ADDRESSES.update({f"virtioscsi{i}": (3, i + 1) for i in range(31)})
PCI_ADDRESSES.update({f"scsihw{i}": (4, i - 1) for i in range(2, 5)})


def print_pci_addr(device_id: str, bridges: Optional[set]) -> str:
    """PCI.pm print_pci_addr: `,bus=pci.B,addr=0xA` (hex, sprintf "0x%x"), and the
    bus is recorded so that its bridge is added; '' for an unmapped id."""
    if device_id not in PCI_ADDRESSES:
        return ""
    bus, addr = PCI_ADDRESSES[device_id]
    if bridges is not None:
        bridges.add(bus)
    return f",bus=pci.{bus},addr={addr:#x}"


# ---- disks -----------------------------------------------------------------------------------


def _storage_type(volid: str, storages: dict) -> Optional[str]:
    storage = storages.get(volid.partition(":")[0]) if ":" in volid else None
    return storage.type if storage else None


def _uses_cache_direct(drive: Drive, storage_type: Optional[str]) -> bool:
    """QemuServer.pm drive_uses_cache_direct: an explicit cache none/off/directsync,
    or no cache on a non-cdrom, non-btrfs (cow) disk."""
    if drive.options.get("cache"):
        return drive.options["cache"] in ("off", "none", "directsync")
    return not drive.is_cdrom() and storage_type != "btrfs"


def _io_uring_allowed(storage_type: Optional[str]) -> bool:
    """QemuServer.pm storage_allows_io_uring_default: not on lvm or cifs (krbd not modelled)."""
    return storage_type not in ("lvm", "cifs")


def _throttling_options(drive: Drive) -> str:
    """QemuServer.pm print_drive_commandline_full: mbps* are MiB/s, int(v*1024*1024)
    bytes/s; iops* as given; total, then read, then write."""
    text = ""
    for suffix, qemu_name in (("", "-total"), ("_rd", "-read"), ("_wr", "-write")):
        options = drive.options
        if options.get(f"mbps{suffix}") and float(options[f"mbps{suffix}"]):
            text += f",throttling.bps{qemu_name}={int(float(options[f'mbps{suffix}']) * 1024 * 1024)}"
        if options.get(f"mbps{suffix}_max") and float(options[f"mbps{suffix}_max"]):
            text += f",throttling.bps{qemu_name}-max={int(float(options[f'mbps{suffix}_max']) * 1024 * 1024)}"
        if options.get(f"bps{suffix}_max_length"):
            text += f",throttling.bps{qemu_name}-max-length={options[f'bps{suffix}_max_length']}"
        for key, qemu_key in ((f"iops{suffix}", ""), (f"iops{suffix}_max", "-max"),
                              (f"iops{suffix}_max_length", "-max-length")):
            if options.get(key) and options[key] != "0":
                text += f",throttling.iops{qemu_name}{qemu_key}={options[key]}"
    return text


def print_drive_commandline(drive: Drive, storages: dict, qemu_version: str) -> str:
    """QemuServer.pm print_drive_commandline_full (no live restore)."""
    storage_type = _storage_type(drive.file, storages)
    path, volume_format = ("", None) if drive.file in ("", "none", "cdrom") else \
        volume_path_and_format(drive.file, storages)
    volume_format = drive.options.get("format", volume_format)
    options = ""
    for key in ("heads", "secs", "cyls", "trans", "media", "cache", "rerror", "werror", "aio", "discard"):
        if key in drive.options:
            options += f",{key}={drive.options[key]}"
    if "snapshot" in drive.options:
        options += ",snapshot=" + ("on" if drive.flag("snapshot") else "off")
    if "ro" in drive.options:
        options += ",readonly=" + ("on" if drive.flag("ro") else "off")
    options += _throttling_options(drive)
    if volume_format:
        options += f",format={volume_format}"
    cache_direct = _uses_cache_direct(drive, storage_type)
    if not drive.options.get("cache") and cache_direct:
        options += ",cache=none"
    if not drive.options.get("aio"):
        # io_uring is the default from QEMU 6.0 on (config_to_command passes min_version($kvmver, 6, 0)).
        if min_version(qemu_version, 6, 0) and _io_uring_allowed(storage_type):
            options += ",aio=io_uring"
        else:
            options += ",aio=native" if cache_direct else ",aio=threads"  # native needs O_DIRECT
    if not drive.is_cdrom():
        if "detect_zeroes" in drive.options and not drive.flag("detect_zeroes"):
            detect_zeroes = "off"
        elif drive.options.get("discard"):
            detect_zeroes = "unmap" if drive.options["discard"] == "on" else "on"
        else:
            detect_zeroes = "on"        # "This used to be our default with discard not being specified"
        options += f",detect-zeroes={detect_zeroes}"
    path_info = f"file={path}," if path else ""
    return f"{path_info}if=none,id=drive-{drive.id}{options}"


# ---- qemu-server 9.2: drives as -blockdev chains (machine version >= 10.0) ------------------
# QemuServer.pm config_to_command ("for the switch to -blockdev"): per drive an
# `-object` throttle group (on the command line before the devices) and a
# `-blockdev` throttle filter node `drive-<id>` over a format node over a file
# node. File names below are qemu-server 9.2.6's src/PVE/QemuServer/.


def blockdev_json(value: dict) -> str:
    """QemuServer.pm to_json($obj, { canonical => 1 }): sorted keys, no spaces."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def node_name(kind: str, drive_id: str, volid: str) -> str:
    """Blockdev.pm get_node_name (no snapshot, fleecing or TPM backup): a prefix
    letter for the node type, then the first 30 hex digits of
    sha256("drive=<id>,volid=<volid>") (node names must start with a letter
    and have at most 31 characters)."""
    prefix = {"alloc-track": "a", "file": "e", "fmt": "f", "zeroinit": "z"}[kind]
    return prefix + hashlib.sha256(f"drive={drive_id},volid={volid}".encode()).hexdigest()[:30]


def top_node_name(drive_id: str) -> str:
    """Blockdev.pm top_node_name: the throttle node keeps the -drive era's id."""
    return f"drive-{drive_id}"


def throttle_group_id(drive_id: str) -> str:
    """Blockdev.pm throttle_group_id."""
    return f"throttle-drive-{drive_id}"


# Blockdev.pm generate_throttle_group: (config key suffix, QOM name) per direction;
# per direction mbps, mbps_max, bps_max_length, iops, iops_max, iops_max_length.
THROTTLE_DIRECTIONS = (("", "-total"), ("_rd", "-read"), ("_wr", "-write"))


def generate_throttle_group(drive: Drive) -> dict:
    """Blockdev.pm generate_throttle_group: mbps* -> bps* as int(v*1024*1024),
    iops* and *_max_length as int; a 0 or missing value is left out (Perl truth)."""
    limits, options = {}, drive.options

    def set_limit(key: str, name: str, scale: int = 1) -> None:
        value = options.get(key)
        if value and float(value):
            limits[name] = int(float(value) * scale)

    for suffix, qom in THROTTLE_DIRECTIONS:
        set_limit(f"mbps{suffix}", f"bps{qom}", 1024 * 1024)
        set_limit(f"mbps{suffix}_max", f"bps{qom}-max", 1024 * 1024)
        set_limit(f"bps{suffix}_max_length", f"bps{qom}-max-length")
        set_limit(f"iops{suffix}", f"iops{qom}")
        set_limit(f"iops{suffix}_max", f"iops{qom}-max")
        set_limit(f"iops{suffix}_max_length", f"iops{qom}-max-length")
    return {"id": throttle_group_id(drive.id), "limits": limits, "qom-type": "throttle-group"}


def _add_common_options(blockdev: dict, drive: Drive, read_only: bool) -> None:
    """Blockdev.pm add_common_options: set on all three nodes of the chain."""
    if not drive.is_cdrom():
        blockdev["discard"] = "unmap" if drive.options.get("discard") == "on" else "ignore"
        blockdev["detect-zeroes"] = detect_zeroes_option(drive)
    # read_only_json_option: ro, a cdrom, or the caller's read-only (a template)
    blockdev["read-only"] = drive.flag("ro") or drive.is_cdrom() or read_only


def detect_zeroes_option(drive: Drive) -> str:
    """Drive.pm detect_zeroes_cmdline_option (the same rule as 8.3's -drive)."""
    if "detect_zeroes" in drive.options and not drive.flag("detect_zeroes"):
        return "off"
    if drive.options.get("discard"):
        return "unmap" if drive.options["discard"] == "on" else "on"
    return "on"     # "This used to be our default with discard not being specified"


def aio_option(drive: Drive, storage_type: Optional[str], cache_direct: bool) -> str:
    """Drive.pm aio_cmdline_option with storage_allows_io_uring_default
    (krbd not modelled)."""
    if drive.options.get("aio"):
        return drive.options["aio"]
    if _io_uring_allowed(storage_type):
        return "io_uring"
    return "native" if cache_direct else "threads"      # "aio native works only with O_DIRECT"


def file_driver(path: str, storage_type: Optional[str]) -> str:
    """pve-storage Plugin.pm qemu_blockdev_options: `host_device` for a block or
    character device (PVE stats the path; lvm and lvmthin volumes are block
    devices), `file` otherwise."""
    return "host_device" if storage_type in ("lvm", "lvmthin") or path.startswith("/dev/") else "file"


def blockdev_cache(drive: Drive, storage_type: Optional[str]) -> dict:
    """Blockdev.pm generate_blockdev_drive_cache: the format and file nodes'
    cache options (the throttle node has none)."""
    return {"direct": _uses_cache_direct(drive, storage_type), "no-flush": drive.options.get("cache") == "unsafe"}


def device_write_cache(drive: Drive) -> bool:
    """DriveDevice.pm print_drivedevice_full (machine >= 10.0): the guest-visible
    write cache, off for writethrough and directsync."""
    return drive.options.get("cache") not in ("writethrough", "directsync")


def generate_file_blockdev(drive: Drive, storages: dict, read_only: bool) -> dict:
    """Blockdev.pm generate_file_blockdev for a path or a storage volume."""
    storage_type = _storage_type(drive.file, storages)
    if drive.file == "cdrom":
        raise UnsupportedConfig("a host CD-ROM drive")
    path, _ = volume_path_and_format(drive.file, storages)
    blockdev = {"driver": file_driver(path, storage_type), "filename": path}
    blockdev["cache"] = blockdev_cache(drive, storage_type)
    blockdev["aio"] = aio_option(drive, storage_type, blockdev["cache"]["direct"])  # file/host_device have aio
    blockdev["node-name"] = node_name("file", drive.id, drive.file)
    _add_common_options(blockdev, drive, read_only)
    return blockdev


def generate_format_blockdev(drive: Drive, storages: dict, child: dict, read_only: bool) -> dict:
    """Blockdev.pm generate_format_blockdev: the storage's format (a differing
    `format=` option is an error), `raw` for an unmanaged path; the cache
    options repeated from the file node ("like libvirt")."""
    _, volume_format = volume_path_and_format(drive.file, storages)
    if ":" in drive.file and drive.options.get("format", volume_format) != volume_format:
        raise StartError(f"drive '{drive.id}' - volume '{drive.file}' - 'format={drive.options['format']}'"
                         f" option different from storage format '{volume_format}'")
    if ":" not in drive.file:
        volume_format = drive.options.get("format", "raw")
    blockdev = {"node-name": node_name("fmt", drive.id, drive.file), "driver": volume_format,
                "file": child, "cache": child["cache"]}
    _add_common_options(blockdev, drive, read_only)
    return blockdev


def generate_drive_blockdev(drive: Drive, storages: dict, read_only: bool = False) -> dict:
    """Blockdev.pm generate_drive_blockdev + generate_throttle_blockdev, without
    live restore, NBD, zeroinit and scsiblock (not modelled)."""
    if drive.flag("snapshot"):
        raise StartError("'snapshot' option is not yet supported for '-blockdev'")
    if drive.flag("scsiblock"):
        raise UnsupportedConfig("scsiblock")
    child = generate_format_blockdev(drive, storages, generate_file_blockdev(drive, storages, read_only),
                                     read_only)
    blockdev = {"driver": "throttle", "node-name": top_node_name(drive.id),
                "throttle-group": throttle_group_id(drive.id), "file": child}
    _add_common_options(blockdev, drive, read_only)
    return blockdev


def blockdev_device_options(drive: Drive) -> str:
    """DriveDevice.pm print_drivedevice_full, the machine >= 10.0 tail: the
    guest-visible write cache (off for writethrough and directsync: the
    -blockdev nodes carry no cache= mode), then rerror/werror."""
    text = ""
    if not drive.is_cdrom():                    # hd: has_write_cache (no scsi-block modelled)
        text += ",write-cache=" + ("on" if device_write_cache(drive) else "off")
    for key in ("rerror", "werror"):
        if key in drive.options:
            text += f",{key}={drive.options[key]}"
    return text


def scsihw_infos(conf: dict, drive: Drive) -> tuple:
    """QemuServer.pm scsihw_infos: (devices per controller, controller number, id prefix)."""
    scsihw = conf.get("scsihw")
    if not scsihw or scsihw.startswith("lsi"):
        per_controller = 7
    elif scsihw == "virtio-scsi-single":
        per_controller = 1
    else:
        per_controller = 256
    prefix = "virtioscsi" if scsihw == "virtio-scsi-single" else "scsihw"
    return per_controller, drive.index // per_controller, prefix


def print_drivedevice(conf: dict, drive: Drive, bridges: set, blockdev: bool = False) -> str:
    """QemuServer.pm print_drivedevice_full (8.3), DriveDevice.pm print_drivedevice_full
    (9.2; `blockdev`: machine version >= 10.0): then an empty drive (`none`)
    gets no drive=, a SCSI hd/cd gets device_id=drive-<id>, and the tail of
    blockdev_device_options follows."""
    drive_option = "" if blockdev and drive.file == "none" else f",drive=drive-{drive.id}"
    if drive.interface == "virtio":
        device = f"virtio-blk-pci{drive_option},id={drive.id}{print_pci_addr(drive.id, bridges)}"
        if drive.flag("iothread"):
            device += f",iothread=iothread-{drive.id}"
    elif drive.interface == "scsi":
        per_controller, controller, prefix = scsihw_infos(conf, drive)
        # Drive.pm get_scsi_device_type: cd for a cdrom, hd otherwise (no passthrough modelled).
        device_type = "cd" if drive.is_cdrom() else "hd"
        scsihw = conf.get("scsihw")
        if not scsihw or scsihw.startswith("lsi") or scsihw == "pvscsi":
            device = f"scsi-{device_type},bus={prefix}{controller}.0,scsi-id={drive.index % per_controller}"
        else:
            device = f"scsi-{device_type},bus={prefix}{controller}.0,channel=0,scsi-id=0,lun={drive.index}"
        device += f"{drive_option},id={drive.id}"
        if blockdev:
            device += f",device_id=drive-{drive.id}"
        if drive.flag("ssd") and device_type == "hd":
            device += ",rotation_rate=1"
        device += _optional(drive, "wwn")
        if device_type in ("hd", "cd"):
            device += _optional(drive, "vendor") + _optional(drive, "product")
    else:  # ide, sata
        per_controller = BUS_MAX["sata"] if drive.interface == "sata" else 2
        controller, unit = drive.index // per_controller, drive.index % per_controller
        device_type = "cd" if drive.is_cdrom() else "hd"
        # 9.2 DriveDevice.pm: "$device_type = 'cd' if $conf->{template};" (not in 8.3; a
        # 9.2 template always starts with the newest machine, so `blockdev` marks 9.2 here).
        if blockdev and _flag(conf, "template", False):
            device_type = "cd"
        bus = f"ide.{controller},unit={unit}" if drive.interface == "ide" else f"ahci{controller}.{unit}"
        device = f"ide-{device_type},bus={bus}{drive_option},id={drive.id}"
        if device_type == "hd":
            device += _optional(drive, "model")
            if drive.flag("ssd"):
                device += ",rotation_rate=1"
        device += _optional(drive, "wwn")
    if drive.bootindex:
        device += f",bootindex={drive.bootindex}"
    device += _optional(drive, "serial")          # uri_unescape'd; our serials are plain
    if blockdev:
        device += blockdev_device_options(drive)
    return device


def _optional(drive: Drive, key: str) -> str:
    return f",{key}={drive.options[key]}" if drive.options.get(key) else ""


# ---- boot order (QemuServer.pm device_bootorder, bootorder_from_legacy) -----------------------


def device_bootorder(conf: dict, drives: list) -> dict:
    boot = conf.get("boot")
    if boot is not None:
        parsed = parse_property_string(boot, "legacy")
        if "order" in parsed:
            # "start at 100 to allow user to insert devices before us with -args"
            return {name: 100 + i for i, name in enumerate(filter(None, re.split(r"[;, ]", parsed["order"])))}
        if "legacy" not in parsed:
            return {}                           # `boot:` set, but neither legacy nor order
        legacy = parsed["legacy"]
    else:
        legacy = "cdn"                          # $boot_fmt->{legacy}->{default}
    index = {letter: (i + 1) * 100 for i, letter in enumerate(legacy)}
    order = {}
    for drive in drives:
        if drive.is_cdrom():
            if "d" in index:
                order[drive.id] = index["d"]
                index["d"] += 1
        elif "c" in index:
            if conf.get("bootdisk") == drive.id:
                order[drive.id] = index["c"]
            index["c"] += 1
    if "n" in index:
        for i in range(32):
            if conf.get(f"net{i}"):
                order[f"net{i}"] = index["n"]
                index["n"] += 1
    return order


# ---- the whole command ---------------------------------------------------------------------

# Keys config_to_command reads that change nothing for our VMs, or that we model.
MODELLED_KEYS = {"name", "cores", "sockets", "memory", "kvm", "args", "agent", "scsihw", "boot", "bootdisk",
                 "ostype", "vga", "smbios1", "vmgenid", "balloon", "tablet", "template", "description",
                 "tags", "numa", "meta", "onboot", "digest", "vcpus", "acpi", "reboot", "localtime",
                 "protection", "lock"}
IGNORED_PREFIXES = ("unused", "net", "serial", "ide", "scsi", "virtio", "sata")


def _check_supported(conf: dict) -> None:
    for key, value in conf.items():
        if key in MODELLED_KEYS or (key.startswith(IGNORED_PREFIXES) and re.match(r"^[a-z]+\d+$", key)):
            continue
        if key == "hotplug" and value in ("0", "network,disk,usb", "disk,network,usb", "1"):
            continue
        if key == "machine" and re.match(r"^(pc|pc-i440fx-\d+\.\d+(\+pve\d+)?)$", value):
            continue
        raise UnsupportedConfig(f"config key '{key}: {value}' is not modelled")
    if str(conf.get("numa", "0")) != "0":
        raise UnsupportedConfig("numa is not modelled")


def _template_config(conf: dict) -> dict:
    """config_to_command: a template starts (for backup) with a minimal config."""
    reduced = {"template": "1", "kvm": "0", "vga": "none", "scsihw": conf.get("scsihw"), "name": conf.get("name")}
    reduced.update({k: v for k, v in conf.items() if DRIVE_KEY.match(k)})
    return {k: v for k, v in reduced.items() if v is not None}


def _flag(conf: dict, key: str, default: bool) -> bool:
    return str(conf[key]).lower() in BOOLEAN_TRUE if key in conf else default


def _memory_mib(conf: dict) -> int:
    """QemuServer/Memory.pm get_current_memory: `memory: N` or `current=N`, default 512."""
    value = str(conf.get("memory", "512"))
    return int(parse_property_string(value, "current").get("current", 512))


def _agent(conf: dict) -> dict:
    """QemuServer.pm parse_guest_agent: {} unless enabled."""
    parsed = parse_property_string(str(conf.get("agent", "0")), "enabled")
    return parsed if parsed.get("enabled", "0").lower() in BOOLEAN_TRUE else {}


def _cpu_option(kvm: bool, machine: str) -> str:
    """CPUConfig.pm get_cpu_options, default CPU only: kvm64 with PVE's flags
    (get_pve_cpu_flags, `enforce` in $pve_forced_flags) under KVM, plain qemu64 without."""
    if not kvm:
        return "qemu64"
    flags = ["enforce", "+kvm_pv_eoi", "+kvm_pv_unhalt", "+lahf_lm", "+sep"] if min_version(machine, 2, 3) \
        else ["enforce", "+lahf_lm", "+sep"]
    return "kvm64," + ",".join(flags)


NET_MODELS = ("virtio", "e1000", "e1000e", "rtl8139", "vmxnet3")


def _net_devices(vmid: int, conf: dict, bootorder: dict, bridges: set, machine: str,
                 qemu_server_version: str = "8.3.13") -> list:
    """QemuServer.pm parse_net, print_netdev_full, print_netdevice_full."""
    args = []
    for i in range(32):
        text = conf.get(f"net{i}")
        if not text:
            continue
        net = parse_property_string(text, "model")
        model = net.get("model") or next((m for m in NET_MODELS if m in net), None)
        if model not in NET_MODELS:
            raise UnsupportedConfig(f"net{i}: {text}")
        # parse_net: `MODEL=MAC`; a missing MAC is random there (random_ether_addr), fixed here.
        mac, netid = net.get(model) or net.get("macaddr") or f"BC:24:11:00:{vmid % 256:02X}:{i:02X}", f"net{i}"
        if net.get("bridge"):
            netdev = (f"type=tap,id={netid},ifname=tap{vmid}i{i},script=/usr/libexec/qemu-server/pve-bridge"
                      f",downscript=/usr/libexec/qemu-server/pve-bridgedown" + (",vhost=on" if model == "virtio" else ""))
        else:
            netdev = f"type=user,id={netid},hostname={conf.get('name') or f'vm{vmid}'}"
        queues = int(net.get("queues", "0"))
        if queues and model == "virtio":
            netdev += f",queues={queues}"
        device = ("virtio-net-pci" if model == "virtio" else model) + \
            f",mac={mac},netdev={netid}{print_pci_addr(netid, bridges)},id={netid}"
        if queues > 1 and model == "virtio":
            device += f",vectors={queues * 2 + 2},mq=on" + (",packed=on" if min_version(machine, 7, 1) else "")
        if min_version(machine, 7, 1) and model == "virtio":
            device += ",rx_queue_size=1024,tx_queue_size=256"
        if bootorder.get(netid):
            device += f",bootindex={bootorder[netid]}"
        device += _host_mtu(net, model, machine, qemu_server_version)
        # 9.2 print_netdevice_full: host_tunnel=off by default from 11.0+pve1 on; from
        # 10.2 on only when `host-tunnel=0` is set.
        if model == "virtio" and min_version(machine, 11, 0, 1) and not _flag(net, "host-tunnel", False):
            device += ",host_tunnel=off"
        elif model == "virtio" and min_version(machine, 10, 2) and not _flag(net, "host-tunnel", True):
            device += ",host_tunnel=off"
        args += ["-netdev", netdev, "-device", device]
    return args


BRIDGE_MTU = 1500      # PVE::Network::read_bridge_mtu: the bridges here are assumed at 1500


def _host_mtu(net: dict, model: str, machine: str, qemu_server_version: str) -> str:
    """print_netdevice_full, host_mtu of a virtio NIC on a bridge (mtu=1: the
    bridge's MTU). 8.3: only when `mtu` is set. 9.2: always from machine
    10.0+pve1 on ("for migration compatibility"), else when it is not 1500."""
    if model != "virtio" or not net.get("bridge"):
        return ""
    mtu = BRIDGE_MTU if net.get("mtu") in (None, "1") else int(net["mtu"])
    if not min_version(qemu_server_version, 9, 0):
        return f",host_mtu={mtu}" if net.get("mtu") else ""
    if min_version(machine, 10, 0, 1) or mtu != BRIDGE_MTU:
        return f",host_mtu={mtu}"
    return ""


def _serial_devices(vmid: int, conf: dict, environment: HostEnvironment) -> list:
    """config_to_command, serial devices: `socket` becomes a unix socket + isa-serial."""
    args = []
    for i in range(4):
        path = conf.get(f"serial{i}")
        if not path:
            continue
        if path != "socket":
            raise UnsupportedConfig(f"serial{i}: {path} (a host device)")
        args += ["-chardev", f"socket,id=serial{i},path={environment.serial_socket(vmid, i)},server=on,wait=off",
                 "-device", f"isa-serial,chardev=serial{i}"]
    return args


def disk_arguments(conf: dict, environment: HostEnvironment, blockdev: bool) -> tuple:
    """(objects, devices, bridges): the disk part of config_to_command alone, for
    tools that start a minimal machine with a config's disks (record_hmp.py):
    the -object arguments (iothreads, throttle groups), the controller, drive
    and device arguments, and the PCI bridge numbers they need."""
    objects, bridges = [], set()
    drives = config_drives(conf)
    bootorder = device_bootorder(conf, drives)
    for drive in drives:
        drive.bootindex = bootorder.get(drive.id)
    devices = _disk_devices(conf, drives, bridges, objects, environment, [], blockdev)
    if (conf.get("scsihw") or "").startswith("virtio-scsi-single"):
        bridges.add(3)
    return objects, devices, bridges


def _disk_devices(conf: dict, drives: list, bridges: set, cmd: list, environment: HostEnvironment,
                  warnings: list, blockdev: bool = False) -> list:
    """config_to_command's foreach_volume: controllers, iothread objects, -drive
    (or, `blockdev` for machine versions >= 10.0, throttle-group objects appended
    to `cmd` and -blockdev chains), -device. Returns the device arguments."""
    args, scsi_controllers, ahci_controllers = [], set(), set()
    scsihw = conf.get("scsihw") or "lsi"          # $defaults->{scsihw}
    template = _flag(conf, "template", False)
    for drive in drives:
        if drive.interface == "virtio" and drive.flag("iothread"):
            cmd += ["-object", f"iothread,id=iothread-{drive.id}"]
        if drive.interface == "scsi":
            _, controller, prefix = scsihw_infos(conf, drive)
            if drive.index > 13:
                raise UnsupportedConfig("more than 14 SCSI disks (needs the 4.1+pve2 version guard)")
            pci = print_pci_addr(f"{prefix}{controller}", bridges)
            device_type = "virtio-scsi-pci" if scsihw.startswith("virtio-scsi-single") else scsihw
            iothread = ""
            if conf.get("scsihw") == "virtio-scsi-single" and drive.flag("iothread"):
                iothread = f",iothread=iothread-{prefix}{controller}"
                cmd += ["-object", f"iothread,id=iothread-{prefix}{controller}"]
            elif drive.flag("iothread"):
                warnings.append("iothread is only valid with virtio disk or virtio-scsi-single controller, ignoring")
            queues = ""
            if conf.get("scsihw") == "virtio-scsi-single" and drive.options.get("queues"):
                queues = f",num_queues={drive.options['queues']}"
            if controller not in scsi_controllers:
                args += ["-device", f"{device_type},id={prefix}{controller}{pci}{iothread}{queues}"]
            scsi_controllers.add(controller)
        if drive.interface == "sata":
            controller = drive.index // BUS_MAX["sata"]
            if controller not in ahci_controllers:
                args += ["-device", f"ahci,id=ahci{controller},multifunction=on{print_pci_addr(f'ahci{controller}', bridges)}"]
            ahci_controllers.add(controller)
        if blockdev:
            # "for the switch to -blockdev": no backend at all for an empty drive;
            # a template's nodes are read-only ($extra_blockdev_options).
            if drive.file != "none":
                cmd += ["-object", blockdev_json(generate_throttle_group(drive))]
                args += ["-blockdev", blockdev_json(generate_drive_blockdev(drive, environment.storages, template))]
        else:
            drive_text = print_drive_commandline(drive, environment.storages, environment.qemu_version)
            # Drive.pm drive_is_read_only: "extra protection for templates, but SATA and IDE don't support it"
            if template and drive.interface not in ("sata", "ide"):
                drive_text += ",readonly=on"
            args += ["-drive", drive_text]
        args += ["-device", print_drivedevice(conf, drive, bridges, blockdev)]
    return args


def config_to_command(conf: dict, vmid: int, environment: HostEnvironment, warnings: Optional[list] = None) -> list:
    """QemuServer.pm config_to_command for the modelled subset (see the module doc).
    `environment.storages` maps storage ids to StorageConfig. Warnings PVE logs
    (log_warn) are appended to `warnings`."""
    warnings = [] if warnings is None else warnings
    _check_supported(conf)
    if _flag(conf, "template", False):
        conf = _template_config(conf)
    machine_type = conf.get("machine", "pc")      # Machine.pm get_vm_machine: 'pc' for non-Windows
    machine = machine_version(machine_type, environment.qemu_version)
    if not min_version(environment.qemu_version, *_version_tuple(machine)[:2]):
        raise StartError(f"Installed QEMU version '{environment.qemu_version}' is too old to run machine type "
                         f"'{machine_type}', please upgrade node")
    kvm = _flag(conf, "kvm", True)
    if kvm and not environment.kvm_available:
        raise StartError("KVM virtualisation configured, but not available. Either disable in VM configuration"
                         " or enable in BIOS.")
    drives = config_drives(conf)
    bootorder = device_bootorder(conf, drives)
    for drive in drives:
        drive.bootindex = bootorder.get(drive.id)
    name = conf.get("name") or f"vm{vmid}"
    # 9.2: "'debug-threads' is unconditionally enabled since QEMU 11 and the option is deprecated."
    if not min_version(environment.qemu_version, 11, 0):
        name += ",debug-threads=on"
    cmd = [environment.kvm_binary, "-id", str(vmid), "-name", name, "-no-shutdown",
           "-chardev", f"socket,id=qmp,path={environment.qmp_socket(vmid)},server=on,wait=off",
           "-mon", "chardev=qmp,mode=control"]
    if min_version(machine, 2, 12):
        # "QEMU 9.2 introduced a new 'reconnect-ms' option" (depends on the binary version)
        reconnect = "reconnect-ms=5000" if min_version(environment.qemu_version, 9, 2) else "reconnect=5"
        cmd += ["-chardev", f"socket,id=qmp-event,path=/var/run/qmeventd.sock,{reconnect}",
                "-mon", "chardev=qmp-event,mode=control"]
    cmd += ["-pidfile", environment.pidfile(vmid), "-daemonize"]
    if conf.get("smbios1"):
        if "base64=" in conf["smbios1"]:
            raise UnsupportedConfig("smbios1 with base64")
        cmd += ["-smbios", f"type=1,{conf['smbios1']}"]
    devices, bridges = [], set()
    if conf.get("vmgenid"):
        devices += ["-device", f"vmgenid,guid={conf['vmgenid']}"]
    # QemuServer/USB.pm get_usb_controllers: i440fx always has the uhci controller.
    devices += ["-device", f"piix3-usb-uhci,id=uhci{print_pci_addr('piix3', bridges)}.0x2"]
    # get_vga_properties: std for a non-Windows guest on machine >= 2.9.
    vga = parse_property_string(conf.get("vga", ""), "type").get("type") or "std"
    if vga not in ("std", "cirrus", "vmware", "none") and not re.match(r"^serial\d$", vga):
        raise UnsupportedConfig(f"vga: {vga}")
    tablet = _flag(conf, "tablet", not vga.startswith("serial"))   # $defaults->{tablet} = 1
    if tablet:
        devices += ["-device", "usb-tablet,id=tablet,bus=uhci.0,port=1"]   # print_tabletdevice_full
    devices += _serial_devices(vmid, conf, environment)
    sockets = int(conf.get("sockets", 1))
    cores = int(conf.get("cores", 1))
    vcpus = int(conf.get("vcpus", sockets * cores))
    if sockets * cores > environment.host_cpus:
        raise StartError(f"MAX {environment.host_cpus} vcpus allowed per VM on this node")
    cmd += ["-smp", f"{vcpus},sockets={sockets},cores={cores},maxcpus={sockets * cores}", "-nodefaults",
            "-boot", "menu=on,strict=on,reboot-timeout=1000,splash=/usr/share/qemu-server/bootsplash.jpg"]
    machine_flags = ["acpi=off"] if conf.get("acpi") == "0" else []
    # 9.2 Cfg2Cmd/Timer.pm generate: a Linux guest on machine >= 10.1 gets hpet=off
    # (machine_supports_flag: i440fx has it); not reachable with 8.3's QEMU 9.2.
    if conf.get("ostype") == "l26" and min_version(machine, 10, 1):
        machine_flags.append("hpet=off")
    if conf.get("reboot") == "0":
        cmd += ["-no-reboot"]
    if vga != "none" and not vga.startswith("serial"):
        vga_device = {"std": "VGA", "cirrus": "cirrus-vga", "vmware": "vmware-svga"}[vga]
        devices += ["-device", f"{vga_device},id=vga{print_pci_addr('vga', bridges)}"]   # print_vga_device
        cmd += ["-vnc", f"unix:{environment.vnc_socket(vmid)},password=on"]
    else:
        cmd += (["-vga", "none"] if vga == "none" else []) + ["-nographic"]
    cmd += ["-cpu", _cpu_option(kvm, machine), "-m", str(_memory_mib(conf))]
    agent = _agent(conf)
    if agent:
        devices += ["-chardev", f"socket,path={environment.qga_socket(vmid)},server=on,wait=off,id=qga0"]
        if agent.get("type", "virtio") == "virtio":
            devices += ["-device", f"virtio-serial,id=qga0{print_pci_addr('qga0', bridges)}",
                        "-device", "virtserialport,chardev=qga0,name=org.qemu.guest_agent.0"]
        else:
            devices += ["-device", "isa-serial,chardev=qga0"]
    if str(conf.get("balloon", "1")) != "0":      # "enable balloon by default, unless explicitly disabled"
        balloon = f"virtio-balloon-pci,id=balloon0{print_pci_addr('balloon0', bridges)}"
        devices += ["-device", balloon + (",free-page-reporting=on" if min_version(machine, 6, 2) else "")]
    if environment.initiator_name:
        devices += ["-iscsi", f"initiator-name={environment.initiator_name}"]
    # 9.2 config_to_command: "if (min_version($machine_version, 10, 0)) { # for the switch to -blockdev"
    devices += _disk_devices(conf, drives, bridges, cmd, environment, warnings, min_version(machine, 10, 0))
    devices += _net_devices(vmid, conf, bootorder, bridges, machine, environment.qemu_server_version)
    # "add pci bridges": pci.1 and pci.2 from machine 2.3 on, pci.3 for virtio-scsi-single;
    # unshifted in descending order, so they end up ascending at the front.
    if min_version(machine, 2, 3):
        bridges |= {1, 2}
    if (conf.get("scsihw") or "").startswith("virtio-scsi-single"):
        bridges.add(3)
    bridge_args = []
    for bus in sorted(b for b in bridges if b > 0):
        bridge_args += ["-device", f"pci-bridge,id=pci.{bus},chassis_nr={bus}{print_pci_addr(f'pci.{bus}', None)}"]
    devices = bridge_args + devices
    if not kvm:
        machine_flags.append("accel=tcg")
    # Machine.pm get_power_state_flags: S3/S4 off by default from 9.2+pve1 on ($version_guard).
    required_pve = 0
    if min_version(machine, 9, 2, 1):
        cmd += ["-global", "PIIX4_PM.disable_s3=1", "-global", "PIIX4_PM.disable_s4=1"]
        if not min_version(machine, 9, 2, PVE_MACHINE_REVISIONS["9.2"] + 1):
            required_pve = 1
    if vga == "none" or vga.startswith("serial"):
        machine_flags.append("smm=off")         # should_disable_smm (SeaBIOS)
    machine_flags.append(f"type={re.sub(r'[+]pve[0-9]+$', '', machine_type)}+pve{required_pve}")
    cmd += devices + ["-machine", ",".join(machine_flags)]
    if _flag(conf, "template", False):
        cmd += ["-snapshot"]                    # "needed to workaround base volumes being read-only"
    if conf.get("args"):
        cmd += shlex.split(conf["args"])        # pve-common Tools.pm split_args (Text::ParseWords::shellwords)
    return cmd


def command_to_text(cmd: list) -> str:
    """As `qm showcmd --pretty` prints it (test/run_config2command_tests.pl:
    pve-common cmd2string, then " -" -> " \\\\\\n  -")."""
    return " ".join(shell_quote(arg) for arg in cmd).replace(" -", " \\\n  -") + "\n"


def shell_quote(arg: str) -> str:
    """String::ShellQuote shell_quote: bare when only safe characters, else in single quotes."""
    # The expected .cmd files show `=` and spaces quoted, `,` `+` `:` `/` not.
    if arg and re.fullmatch(r"[A-Za-z0-9_!%+,\-./:@^]+", arg):
        return arg
    return "'" + arg.replace("'", "'\\''") + "'"


def text_to_command(text: str) -> list:
    """The inverse of command_to_text (for reading .cmd files)."""
    return shlex.split(text.replace("\\\n", " "))


# ---- adaptation: what this machine cannot run as a PVE node would ---------------------------


@dataclass
class Adaptation:
    """How this machine differs from a PVE node (see adapt_for_this_machine)."""
    run_dir: str                       # sockets and pidfile of our QEMU processes
    host_paths: dict                   # PVE path of a volume (/dev/pve/vm-1-disk-0) -> its file here
    kvm_works: bool
    qemu_binary: str = "qemu-system-x86_64"
    qemu_version: str = "7.2.0"


PVE_RUN_DIR = "/var/run/qemu-server/"


def adapt_for_this_machine(argv: list, vmid: int, adaptation: Adaptation) -> tuple:
    """(argv, notes): the PVE argv changed only where this machine cannot run it as
    it is. Each change is one step below and one line in `notes`; the disks'
    -drive/-device options, iothreads, controllers and the agent channel stay
    exactly as qemu-server wrote them. Raises StartError for a volume that has no
    file here."""
    notes = []
    argv = list(argv)
    # 1. PVE's /usr/bin/kvm is a wrapper around qemu-system-x86_64 (pve-qemu-kvm).
    argv[0] = adaptation.qemu_binary
    notes.append(f"binary: {adaptation.qemu_binary} instead of /usr/bin/kvm")
    # 1b. `-id VMID` is a pve-qemu patch (qmeventd reads it); upstream QEMU refuses it.
    argv = _drop_option_pairs(argv, lambda opt, val: opt == "-id")
    notes.append("no -id (a pve-qemu option)")
    # 2. No -daemonize: we keep QEMU as our child, to reap it and to read its stderr.
    argv = [a for a in argv if a != "-daemonize"]
    notes.append("no -daemonize")
    # 3. No qmeventd here: drop its chardev and monitor (QEMU would retry connecting forever).
    argv = _drop_option_pairs(argv, lambda opt, val: "qmeventd" in val or val == "chardev=qmp-event,mode=control")
    notes.append("no qmeventd chardev/monitor")
    # 4. Sockets and pidfile in our run directory, not /var/run/qemu-server.
    run_prefix = os.path.join(adaptation.run_dir, "")
    argv = [a.replace(PVE_RUN_DIR, run_prefix) for a in argv]
    notes.append(f"sockets and pidfile under {adaptation.run_dir}")
    # 5. No bridges or tap devices here: drop -netdev and the NICs using them.
    argv = _drop_option_pairs(argv, lambda opt, val: opt == "-netdev" or (opt == "-device" and ",netdev=" in val))
    notes.append("network devices dropped (no tap/bridge)")
    # 6. No PVE machine types (+pveN) upstream: the i440fx version of the installed QEMU.
    major, minor = _version_tuple(adaptation.qemu_version)[:2]
    argv = _map_option(argv, "-machine", lambda v: re.sub(r"type=pc(-i440fx-[\d.]+)?\+pve\d+",
                                                          f"type=pc-i440fx-{major}.{minor}", v))
    notes.append(f"machine pc-i440fx-{major}.{minor} (no +pve machine versions upstream)")
    # 7. KVM configured but not working here: TCG, with the CPU qemu-server gives a
    #    kvm: 0 VM (kvm64's `enforce` + KVM paravirt flags cannot run under TCG).
    machine_arg = argv[argv.index("-machine") + 1]
    if not adaptation.kvm_works and "accel=tcg" not in machine_arg:
        argv = _map_option(argv, "-machine", lambda v: "accel=tcg," + v)
        argv = _map_option(argv, "-cpu", lambda v: _cpu_option(False, "9.2"))
        notes.append("TCG instead of KVM, -cpu qemu64")
    # 8. The splash image of the boot menu is a qemu-server file, absent here.
    argv = _map_option(argv, "-boot", lambda v: ",".join(p for p in v.split(",") if not p.startswith("splash=")))
    notes.append("boot splash dropped")
    # 9. Volumes: the PVE path of each volume -> its file here.
    argv = _map_option(argv, "-drive", lambda v: _host_drive(v, adaptation.host_paths))
    #    In a -blockdev chain the file node names the path; a volume that is a block
    #    device on PVE (host_device) is a regular file here, which QEMU's
    #    host_device driver refuses: the file driver, all other options kept.
    argv = _map_option(argv, "-blockdev", lambda v: _host_blockdev(v, adaptation.host_paths))
    notes.append("volume paths mapped to this machine's files (-blockdev: host_device -> file)")
    # 10. QEMU < 9.2 knows `reconnect=` only (qemu-server itself switches on the binary version).
    if not min_version(adaptation.qemu_version, 9, 2):
        argv = [a.replace("reconnect-ms=5000", "reconnect=5") for a in argv]
    return argv, notes


def _drop_option_pairs(argv: list, drop) -> list:
    result, i = [argv[0]], 1
    while i < len(argv):
        option = argv[i]
        value = argv[i + 1] if i + 1 < len(argv) and not argv[i + 1].startswith("-") else None
        if value is not None and drop(option, value):
            i += 2
            continue
        result.append(option)
        i += 1
    return result


def _map_option(argv: list, option: str, change) -> list:
    return [change(a) if i > 0 and argv[i - 1] == option else a for i, a in enumerate(argv)]


def _host_blockdev(value: str, host_paths: dict) -> str:
    blockdev = json.loads(value)
    node = blockdev
    while isinstance(node, dict):
        if "filename" in node:
            if node["filename"] not in host_paths:
                raise StartError(f"volume at '{node['filename']}' does not exist")
            node["filename"] = host_paths[node["filename"]]
            if node.get("driver") == "host_device":
                node["driver"] = "file"
        node = node.get("file")
    return blockdev_json(blockdev)


def _host_drive(value: str, host_paths: dict) -> str:
    if not value.startswith("file="):
        return value
    path, rest = value[len("file="):].split(",", 1)
    if path not in host_paths:
        raise StartError(f"volume at '{path}' does not exist")
    return f"file={host_paths[path]},{rest}"
