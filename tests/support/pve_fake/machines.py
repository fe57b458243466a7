"""What runs behind the simulated PVE: the machines of its VMs.

The fake keeps PVE's state (configs, volumes, tasks: cluster.py, api.py) and
asks a Machines object for everything a real PVE would get from QEMU, its
disks and the guest agent. Two implementations:
  * SimulatedMachines (here, the default): nothing is started; `info block`,
    `info kvm` and `info version` are derived from the VM's config as
    qemu-server would turn it into QEMU options, and guest.Guests plays the
    guest agent in-process. Per PVE version: 8.4 answers as QEMU 9.2 does for
    qemu-server 8.3's -drive lines, 9.1 as QEMU 10 does for qemu-server 9.2's
    -blockdev chains (also `info block -n`; cfg2cmd_test.py checks this text
    against tests/data/hmp/qemu10/);
  * real_backend.RealBackend (`pve_fake --real-guests IMAGE_DIR`, Options
    .real_guests; helper module of its own): real QEMU processes booted from
    the config, their HMP, their qemu-guest-agent. Imported only when asked
    for (load_machines), so the fake works without it.

The interface (Machines below) is what the fake calls; every method runs
under the server's state lock except the `guests` relay, which the agent
endpoints call under it as well (keep calls short: a relay call waits for
the guest at most a few seconds, as PVE's own QMP timeouts do).
"""

import json
import re
from typing import Optional

import qemu_server
from cluster import BOOLEAN_WORDS, split_drive


class Machines:
    """The interface. Volumes: told of each volume PVE's storage creates,
    clones and frees (volids as PVE names them); VMs: start, stop, state,
    HMP; `guests`: the guest-agent relay with guest.Guests' interface
    (write_file, read_file, exec, exec_status, forget, erase; optionally
    ping, which then decides whether the agent answers)."""

    guests = None

    def volume_created(self, volid: str, size_bytes: int, fmt: str) -> None:
        """A new, empty volume (vdisk_alloc)."""
        raise NotImplementedError

    def initial_volume(self, volid: str, size_bytes: int, fmt: str, source_file: Optional[str] = None) -> None:
        """A volume of the fake's initial state. `source_file`: a host file
        whose content the volume is (the template's imported root.img,
        template_script.py), never to be written; a backend that boots
        guests uses it as the volume. The default is an empty volume."""
        self.volume_created(volid, size_bytes, fmt)

    def volume_cloned(self, source_volid: str, target_volid: str, linked: bool) -> None:
        """target is a copy (full clone) or a linked clone of source."""
        raise NotImplementedError

    def volume_renamed(self, old_volid: str, new_volid: str) -> None:
        """The same volume under a new name (create_base: vm- becomes base-)."""
        self.volume_cloned(old_volid, new_volid, linked=False)
        self.volume_deleted(old_volid)

    def map_node_file(self, node_path: str, host_path: str) -> None:
        """A file installed on the node (the template's kernel and initrd,
        named in `args`) is `host_path` on this machine. The default ignores it."""

    def volume_deleted(self, volid: str) -> None:
        raise NotImplementedError

    def volume_path(self, volid: str) -> Optional[str]:
        """Where the volume lives on this host, or None (simulated)."""
        raise NotImplementedError

    def start(self, vm, node: str) -> list:
        """Boots `vm` (cluster.Vm: vmid, config) on `node`. Returns the warnings
        PVE would log (with or without a "WARN: " prefix); raises an exception
        whose text becomes the start task's failure."""
        raise NotImplementedError

    def stop(self, vm) -> None:
        raise NotImplementedError

    def is_running(self, vmid: int) -> bool:
        raise NotImplementedError

    def monitor(self, vmid: int, command: str) -> str:
        """The HMP command's output (QEMU's \\r\\n line ends)."""
        raise NotImplementedError


# ---- the simulation ------------------------------------------------------------------------

# What the simulated QEMU of each PVE version calls itself: the version is
# qemu_server.PVE_VERSIONS' (8.4: pve-qemu-kvm 9.2.0, 9.1: 10.1.2); the
# package's Debian revision is illustrative. The machine is the default
# i440fx one pinned with PVE's +pveN suffix (qemu-server Machine.pm
# get_current_qemu_machine / current_from_query_machines; 10.1 has no PVE
# revision in 9.2.6's $PVE_MACHINE_VERSION, hence +pve0).
SIMULATED_QEMU = {
    "8.4": {"version": qemu_server.PVE_VERSIONS["8.4"]["qemu_version"], "package": "pve-qemu-kvm_9.2.0-5",
            "machine": "pc-i440fx-9.2+pve1"},
    "9.1": {"version": qemu_server.PVE_VERSIONS["9.1"]["qemu_version"], "package": "pve-qemu-kvm_10.1.2-4",
            "machine": "pc-i440fx-10.1+pve0"},
}
# The 8.4 values under their old names (the API's defaults).
SIMULATED_QEMU_VERSION = SIMULATED_QEMU["8.4"]["version"]
SIMULATED_QEMU_PACKAGE = SIMULATED_QEMU["8.4"]["package"]
SIMULATED_MACHINE = SIMULATED_QEMU["8.4"]["machine"]


class SimulatedMachines(Machines):
    """The default: QEMU's answers derived from the config (module doc)."""

    def __init__(self, cluster, guests, pve_version: str = "8.4"):
        if pve_version not in SIMULATED_QEMU:
            raise ValueError(f"PVE version {pve_version} is not simulated")
        self._cluster = cluster
        self.guests = guests
        self.pve_version = pve_version
        self._qemu = SIMULATED_QEMU[pve_version]
        self._running = set()

    def volume_created(self, volid: str, size_bytes: int, fmt: str) -> None:
        pass

    def volume_cloned(self, source_volid: str, target_volid: str, linked: bool) -> None:
        pass

    def volume_deleted(self, volid: str) -> None:
        pass

    def volume_renamed(self, old_volid: str, new_volid: str) -> None:
        pass

    def volume_path(self, volid: str) -> Optional[str]:
        return None

    def start(self, vm, node: str) -> list:
        self._running.add(vm.vmid)
        return []

    def stop(self, vm) -> None:
        self._running.discard(vm.vmid)

    def is_running(self, vmid: int) -> bool:
        return vmid in self._running

    def monitor(self, vmid: int, command: str) -> str:
        vm = self._cluster.vms.get(vmid)
        words = command.split()
        if vm is None or words[:1] != ["info"] or len(words) < 2:
            return ""
        if self.pve_version == "8.4":
            block = lambda: info_block(self._cluster, vm)          # noqa: E731
        else:   # qemu-server 9.2's -blockdev chains; `info block -n` lists their nodes
            block = lambda: info_block_blockdev(self._cluster, vm, nodes="-n" in words[2:])  # noqa: E731
        answers = {"block": block, "kvm": lambda: info_kvm(vm.config),
                   "version": lambda: info_version(self._qemu)}
        return answers.get(words[1], lambda: "")()

    def qemu_version(self, vmid: int) -> str:
        return self._qemu["version"]

    def machine_type(self, vmid: int) -> str:
        return self._qemu["machine"]


def kvm_enabled(config: dict) -> bool:
    """qemu-server QemuServer.pm config_to_command: `my $kvm = $conf->{kvm};
    ... $kvm //= 1` (confdesc kvm: default 1); with kvm off QEMU runs TCG."""
    return BOOLEAN_WORDS.get(str(config.get("kvm", "1")).lower(), "1") == "1"


def info_kvm(config: dict) -> str:
    """HMP `info kvm` (QEMU hmp_info_kvm): "kvm support: enabled|disabled"."""
    return f"kvm support: {'enabled' if kvm_enabled(config) else 'disabled'}\r\n"


def info_version(qemu: Optional[dict] = None) -> str:
    """HMP `info version` (QEMU hmp_info_version): MAJOR.MINOR.MICRO followed
    directly by the package string. `qemu`: an entry of SIMULATED_QEMU (8.4's by default)."""
    qemu = qemu or SIMULATED_QEMU["8.4"]
    return f"{qemu['version']}{qemu['package']}\r\n"


DRIVE_KEY = re.compile(r"^(ide|sata|scsi|virtio)\d+$")
# qemu-server QemuServer.pm print_drive_commandline: cache defaults to none
# (cache.direct=on, writeback); HMP `info block` prints the flags.
CACHE_FLAGS = {"none": "writeback, direct", "writeback": "writeback", "writethrough": "writethrough",
               "directsync": "writethrough, direct", "unsafe": "writeback, ignore flushes"}


def _detect_zeroes(options: dict) -> str:
    """qemu-server QemuServer.pm print_drive_commandline: detect-zeroes on
    unless detect_zeroes=0, unmap when discard=on."""
    if BOOLEAN_WORDS.get(options.get("detect_zeroes", "1").lower(), "1") == "0":
        return "off"
    return "unmap" if options.get("discard") == "on" else "on"


def _throttle_value(options: dict, key: str, megabytes: bool) -> int:
    value = options.get(key)
    if not value:
        return 0
    return int(float(value) * 1024 * 1024) if megabytes else int(value)


def _throttling(options: dict, key: str) -> str:
    """qemu-server QemuServer.pm print_drive_commandline: mbps[_rd|_wr][_max]
    become throttling.bps-total|read|write[-max] (MiB/s * 1024 * 1024),
    iops[_rd|_wr][_max] throttling.iops-...; HMP prints them all, the group
    being the drive's id."""
    values = []
    for name, source, megabytes in (("bps", "mbps", True), ("bps_rd", "mbps_rd", True),
                                    ("bps_wr", "mbps_wr", True), ("bps_max", "mbps_max", True),
                                    ("bps_rd_max", "mbps_rd_max", True), ("bps_wr_max", "mbps_wr_max", True),
                                    ("iops", "iops", False), ("iops_rd", "iops_rd", False),
                                    ("iops_wr", "iops_wr", False), ("iops_max", "iops_max", False),
                                    ("iops_rd_max", "iops_rd_max", False), ("iops_wr_max", "iops_wr_max", False)):
        values.append((name, _throttle_value(options, source, megabytes)))
    if not any(value for _, value in values):
        return ""
    text = " ".join(f"{name}={value}" for name, value in values)
    return f"    I/O throttling:   {text} iops_size=0 group=drive-{key}\r\n"


def attached_to(drive_id: str) -> str:
    """QEMU's `Attached to:` (hmp_info_block_entry): the device's id, or for
    virtio-blk-pci, whose block backend belongs to its id-less inner
    virtio-blk device, that device's QOM path (tests/data/hmp/qemu72 and
    qemu10, virtio-blk)."""
    if drive_id.startswith("virtio"):
        return f"/machine/peripheral/{drive_id}/virtio-backend"
    return drive_id


def info_block(cluster, vm) -> str:
    """HMP `info block` of a running VM (\\r\\n line ends, a blank line between
    devices), from the drives of its config as qemu-server turns them into
    -drive options; the format is the volume's own (the config has none)."""
    paragraphs = []
    for index, key in enumerate(sorted(k for k in vm.config if DRIVE_KEY.match(k))):
        volume, options = split_drive(vm.config[key])
        if volume in ("", "none", "cdrom"):
            paragraphs.append(f"drive-{key}: [not inserted]\r\n    Attached to:      {key}\r\n"
                              "    Removable device: not locked, tray closed\r\n")
            continue
        stored = cluster.volumes.get(volume)
        image_format = options.get("format", stored.format if stored else "raw")
        path = cluster.volume_path(stored) if stored else volume
        text = (f"drive-{key} (#block{100 + 17 * index}): {path} ({image_format})\r\n"
                f"    Attached to:      {attached_to(key)}\r\n"
                f"    Cache mode:       {CACHE_FLAGS.get(options.get('cache', 'none'), 'writeback')}\r\n")
        zeroes = _detect_zeroes(options)
        if zeroes != "off":
            text += f"    Detect zeroes:    {zeroes}\r\n"
        paragraphs.append(text + _throttling(options, key))
    return "\r\n".join(paragraphs)


# ---- PVE 9.1: QEMU 10's text for qemu-server 9.2's -blockdev chains ----------------------
# As tests/data/hmp/qemu10/ records it (README there): the device's line is the
# throttle node, named by QEMU's JSON of the chain, its `Cache mode:` the
# device's write cache alone and never an `I/O throttling:` line; `info block
# -n` lists each chain's throttle, format and file nodes, newest drive first,
# the lower two with the cache flags qemu-server gave them.

CACHE_FLAG_WORDS = (("direct", "direct"), ("no-flush", "ignore flushes"))


def _node_cache(cache: Optional[dict]) -> str:
    """QEMU's `Cache mode:` of a node: writeback (a node's own write cache is
    always on), then `direct` and `ignore flushes` as the options say."""
    words = ["writeback"] + [word for key, word in CACHE_FLAG_WORDS if (cache or {}).get(key)]
    return ", ".join(words)


def _chain(cluster, key: str, text: str) -> Optional[dict]:
    """The parts of drive `key`'s chain that HMP shows, or None for an empty drive."""
    drive = qemu_server.parse_drive(key, text)
    stored = cluster.volumes.get(drive.file)
    if drive.file in ("", "none", "cdrom") and stored is None:
        return None
    storage_type = cluster.storages[stored.storage].type if stored else None
    path = cluster.volume_path(stored) if stored else drive.file
    return {"drive": drive, "path": path, "format": drive.options.get("format", stored.format if stored else "raw"),
            "file_driver": qemu_server.file_driver(path, storage_type),
            "cache": qemu_server.blockdev_cache(drive, storage_type),
            "detect_zeroes": "" if drive.is_cdrom() else qemu_server.detect_zeroes_option(drive)}


def _throttle_line(chain: dict) -> str:
    """QEMU's name of a throttle node: its JSON filename (keys in QEMU's order)."""
    drive = chain["drive"]
    description = {"throttle-group": qemu_server.throttle_group_id(drive.id), "driver": "throttle",
                   "file": {"driver": chain["format"],
                            "file": {"driver": chain["file_driver"], "filename": chain["path"]}}}
    return f"{qemu_server.top_node_name(drive.id)}: json:{json.dumps(description)} (throttle)\r\n"


def _zeroes_line(chain: dict) -> str:
    zeroes = chain["detect_zeroes"]
    return f"    Detect zeroes:    {zeroes}\r\n" if zeroes and zeroes != "off" else ""


def info_block_blockdev(cluster, vm, nodes: bool = False) -> str:
    """HMP `info block` (or `info block -n`) of a VM started by qemu-server 9.2."""
    drives = qemu_server.config_drives(vm.config)     # device (and node) creation order
    chains = [(d, _chain(cluster, d.id, vm.config[d.id])) for d in drives]
    paragraphs = []
    if nodes:
        for drive, chain in reversed(chains):
            if chain is None:
                continue
            zeroes = _zeroes_line(chain)
            paragraphs.append(_throttle_line(chain) + f"    Cache mode:       writeback\r\n{zeroes}")
            for kind, driver in (("fmt", chain["format"]), ("file", chain["file_driver"])):
                paragraphs.append(f"{qemu_server.node_name(kind, drive.id, drive.file)}: {chain['path']} ({driver})\r\n"
                                  f"    Cache mode:       {_node_cache(chain['cache'])}\r\n{zeroes}")
        return "\r\n".join(paragraphs)
    for drive, chain in chains:
        if chain is None:   # an empty drive has no block node; the device's own empty backend shows
            paragraphs.append(f"{drive.id}: [not inserted]\r\n    Attached to:      {drive.id}\r\n"
                              "    Removable device: not locked, tray closed\r\n")
            continue
        write_cache = "writeback" if qemu_server.device_write_cache(drive) else "writethrough"
        paragraphs.append(_throttle_line(chain) + f"    Attached to:      {attached_to(drive.id)}\r\n"
                          f"    Cache mode:       {write_cache}\r\n" + _zeroes_line(chain))
    return "\r\n".join(paragraphs)


def load_machines(real_guests: Optional[str], cluster, guests, work_dir: Optional[str],
                  inject: Optional[dict] = None, pve_version: str = "8.4") -> Machines:
    """SimulatedMachines, or with IMAGE_DIR the real backend (imported here,
    only then: real_backend.RealBackend(image_dir, work_dir=, storages=,
    inject=, pve_version=)). `inject` needs the real backend (it changes
    QEMU's options). `pve_version`: "8.4" or "9.1" (qemu_server.PVE_VERSIONS)."""
    if not real_guests:
        if inject:
            raise ValueError("injecting QEMU options needs real guests (--real-guests IMAGE_DIR)")
        return SimulatedMachines(cluster, guests, pve_version)
    import real_backend  # noqa: PLC0415 (lazy: the module and QEMU are needed only here)
    return real_backend.RealBackend(real_guests, work_dir=work_dir, storages=dict(cluster.storages), inject=inject,
                                    pve_version=pve_version)
