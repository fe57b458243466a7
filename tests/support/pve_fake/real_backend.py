"""Real QEMU guests behind the simulated PVE (`pve_fake --real-guests IMAGE_DIR`).

The fake keeps PVE's state (configs, volumes, tasks); this backend makes it
real: volumes are files, `status/start` boots QEMU from the VM's config as
qemu-server would (qemu_server.py), `monitor` answers from that QEMU's HMP and
`agent/*` is relayed to the qemu-guest-agent inside the guest.

Volumes: one directory per storage under WORK_DIR/volumes/STORAGE/, one sparse
file per volume, raw unless the volume's format says otherwise (qemu-img
create for qcow2). A volume of the initial state may *be* a host file
(initial_volume's source_file: the template's imported root.img), which is
never written. A full clone is a sparse copy (cp --sparse=always, reflink
where the file system has it).

A linked clone is a qcow2 overlay backed by its base volume's file (opened
read-only, shared by every clone), made in milliseconds where a copy of the
template's 889 MiB root.img took seconds per run. On lvmthin PVE's linked
clone is a thin snapshot, raw to QEMU (pve-storage LvmThinPlugin.pm
clone_image; parse_volname -> 'raw'), so qemu-server writes format=raw; for
an overlay the adapted argv says format=qcow2 instead (one adaptation note).
What differs from PVE: that drive's `info block` line shows the overlay's
path and "(qcow2)", and writes to it go through qcow2's allocation. Linked
clones are only ever made of the template's disks, i.e. the root disk the
guest mounts read-only; the run's data disk is allocated by create_disks
(volume_created: a raw sparse file, format=raw, as on lvmthin), and only the
data disk's drive is read back and verified, so nothing a run checks or
measures goes through an overlay.

PVE versions (`pve_version`): "8.4" runs qemu-server 8.3.13's -drive argv
on the host's QEMU (7.2 here); "9.1" runs qemu-server 9.2.6's -blockdev argv
on QEMU 10 from the Debian 13 root (tests/support/build-debian13-root.sh;
PVE_FAKE_QEMU10 names another binary). Without that root, constructing a 9.1
backend raises QemuUnavailable, saying how to build it.

Injection (tests): `inject={"cache": "writeback"}` (or PVE_FAKE_INJECT, JSON;
the fake's --inject-qemu and POST /_fake/inject set the `inject` attribute)
makes start() run QEMU with other disk options than the config's, on every
disk or only those selected by "vmid" and/or "drive" (e.g.
{"cache": "writeback", "vmid": 105, "drive": "scsi1"}), and with
"throttled_only": true only on drives whose config has limits (their
throttle group or -drive throttling, the others left as configured). Keys, for both
versions (inject_drive_options):
  * cache: a cache mode (none, writeback, writethrough, directsync, unsafe);
    8.4: -drive cache=; 9.1: the format and file nodes' cache options and the
    device's write-cache, as qemu-server 9.2 writes them for that mode;
  * discard (unmap|ignore), detect-zeroes (on|off|unmap), aio: 8.4: -drive
    options; 9.1: on the chain's nodes where qemu-server puts them;
  * throttle: QEMU throttle limits, e.g. {"throttle": {"iops-total": 250}};
    9.1: they replace the drive's throttle-group limits (the -object),
    8.4: -drive throttling.KEY=VALUE.
PVE's config keeps saying what was asked, so a run's QEMU-, guest- or
effect-level check must fail.

Cleanup: stop() kills and reaps; close() stops every VM (call it on the
fake's SIGTERM; it is also registered with atexit), and each QEMU has
PR_SET_PDEATHSIG, so none outlives the fake. Errors in start() stop the
QEMU they started.
"""

import atexit
import base64
import binascii
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from typing import Optional

import qemu_server
from guest import AgentError, FILE_READ_CAP
from machine import AgentReply, AgentTimeout, Machine, MachineError


class QemuUnavailable(Exception):
    """The QEMU a simulated PVE version runs on is not on this machine."""


ROOT_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build-debian13-root.sh")
# The QEMU each PVE version's guests run on here (qemu_for): PVE's own is
# pve-qemu-kvm (qemu_server.PVE_VERSIONS); these are the nearest Debian builds.
MIN_QEMU = {"8.4": (7, 2), "9.1": (10, 0)}


def qemu_for(pve_version: str) -> str:
    """8.4: the host's qemu-system-x86_64; 9.1: PVE_FAKE_QEMU10, else the
    Debian 13 root's wrapper (build-debian13-root.sh --find, which builds
    nothing). Raises QemuUnavailable."""
    if pve_version == "8.4":
        return "qemu-system-x86_64"
    if pve_version != "9.1":
        raise QemuUnavailable(f"PVE {pve_version} is not simulated")
    if os.environ.get("PVE_FAKE_QEMU10"):
        return os.environ["PVE_FAKE_QEMU10"]
    found = subprocess.run(["bash", ROOT_SCRIPT, "--find"], capture_output=True, text=True, check=False)
    if found.returncode != 0 or not found.stdout.strip():
        raise QemuUnavailable("PVE 9.1's guests need QEMU 10 from the Debian 13 root, which is not built: run "
                              "tests/support/build-debian13-root.sh (about 70 s) or set PVE_FAKE_QEMU10")
    return found.stdout.strip()


class AgentFailure(Exception):
    """A guest-agent failure PVE reports with its own message, not as
    "Agent error: ..." (the API answers 500 with str(self))."""


# PVE/API2/Qemu/Agent.pm file-read: `$read_size = 1024*1024`, at most $MAX_READ_SIZE (16 MiB).
READ_CHUNK = 1024 * 1024


class RealBackend:
    def __init__(self, image_dir: str, work_dir: Optional[str] = None, storages: Optional[dict] = None,
                 inject: Optional[dict] = None, kvm_works: Optional[bool] = None,
                 qemu_binary: Optional[str] = None, start_timeout: float = 60.0, pve_version: str = "8.4"):
        """storages: {storage id: type} or {id: object with .type} (the fake's Storage);
        default local-lvm (lvmthin) and local (dir). kvm_works: None reads
        PVE_FAKE_KVM=1 (default: TCG, as /dev/kvm on this host runs no guest).
        qemu_binary: default qemu_for(pve_version). Raises QemuUnavailable."""
        qemu_binary = qemu_binary or qemu_for(pve_version)
        qemu_version = _qemu_version(qemu_binary)
        if qemu_server._version_tuple(qemu_version)[:2] < MIN_QEMU.get(pve_version, (99, 0)):
            raise QemuUnavailable(f"PVE {pve_version} needs QEMU {'.'.join(map(str, MIN_QEMU[pve_version]))} or "
                                  f"newer; {qemu_binary} is {qemu_version}")
        self.pve_version = pve_version
        self.image_dir = image_dir
        self._own_work_dir = work_dir is None
        self.work_dir = work_dir or tempfile.mkdtemp(prefix="pve-fake-real-")
        self.run_dir = os.path.join(self.work_dir, "run")
        os.makedirs(self.run_dir, exist_ok=True)
        self.storages = self._storage_configs(storages)
        self.inject = inject if inject is not None else json.loads(os.environ.get("PVE_FAKE_INJECT", "null"))
        self.kvm_works = kvm_works if kvm_works is not None else os.environ.get("PVE_FAKE_KVM") == "1"
        self.qemu_binary = qemu_binary
        self.qemu_version = qemu_version
        self.start_timeout = start_timeout
        self._volumes = {}                          # volid -> host path
        self._external = set()                      # volids whose file is not ours (never written, never removed)
        self._overlays = set()                      # volids that are qcow2 overlays (linked clones)
        self._node_files = {}                       # a node path (the template's boot files) -> host path
        self._machines = {}                         # vmid -> Machine
        self._lock = threading.Lock()
        self.last_argv = {}                         # vmid -> (PVE argv, adapted argv, notes), for tests
        self.guests = RealGuests(self)
        atexit.register(self.close)

    def _storage_configs(self, storages: Optional[dict]) -> dict:
        storages = storages or {"local-lvm": "lvmthin", "local": "dir"}
        configs = {}
        for storage_id, kind in storages.items():
            kind = getattr(kind, "type", kind)
            configs[storage_id] = qemu_server.StorageConfig(storage_id, kind, path=f"/var/lib/vz/{storage_id}"
                                                            if storage_id != "local" else "/var/lib/vz",
                                                            vgname="pve")
        return configs

    # ---- volumes ------------------------------------------------------------------------

    def _new_path(self, volid: str, fmt: str) -> str:
        storage, _, name = volid.partition(":")
        directory = os.path.join(self.work_dir, "volumes", storage)
        os.makedirs(directory, exist_ok=True)
        base = name.replace("/", "--")
        return os.path.join(directory, base if base.endswith(f".{fmt}") else f"{base}.{fmt}")

    def volume_created(self, volid: str, size_bytes: int, fmt: str = "raw") -> None:
        path = self._new_path(volid, fmt)
        if fmt == "raw":
            with open(path, "wb") as handle:
                handle.truncate(size_bytes)         # sparse, as a thin LV
        else:
            subprocess.run(["qemu-img", "create", "-q", "-f", fmt, path, str(size_bytes)], check=True,
                           capture_output=True)
        with self._lock:
            self._volumes[volid] = path

    def add_volume_file(self, volid: str, path: str) -> None:
        """A volume whose file exists already (the template's root.img): used
        as it is, never written (base volumes are read-only) nor removed."""
        with self._lock:
            self._volumes[volid] = path
            self._external.add(volid)

    def initial_volume(self, volid: str, size_bytes: int, fmt: str, source_file: Optional[str] = None) -> None:
        """machines.Machines.initial_volume: the source file is the volume itself."""
        if source_file:
            self.add_volume_file(volid, os.path.abspath(source_file))
        else:
            self.volume_created(volid, size_bytes, fmt)

    def map_node_file(self, node_path: str, host_path: str) -> None:
        with self._lock:
            self._node_files[node_path] = os.path.abspath(host_path)

    @staticmethod
    def _file_format(path: str) -> str:
        name = os.path.basename(path)
        return name.rsplit(".", 1)[1] if name.endswith((".qcow2", ".vmdk")) else "raw"

    def volume_cloned(self, source_volid: str, target_volid: str, linked: bool) -> None:
        """Linked: a qcow2 overlay on the source's file; full: a sparse copy (module doc)."""
        source = self.volume_path(source_volid)
        if source is None:
            raise FileNotFoundError(f"no file for volume {source_volid}")
        if linked:
            target = self._new_path(target_volid, "qcow2")
            subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", "-b", source, "-F",
                            self._file_format(source), target], check=True, capture_output=True)
        else:
            target = self._new_path(target_volid, self._file_format(source))
            subprocess.run(["cp", "--sparse=always", "--reflink=auto", source, target], check=True,
                           capture_output=True)
        with self._lock:
            self._volumes[target_volid] = target
            if linked:
                self._overlays.add(target_volid)

    def volume_renamed(self, old_volid: str, new_volid: str) -> None:
        """create_base: the same file under the new name (no copy)."""
        with self._lock:
            path = self._volumes.pop(old_volid, None)
            if path is None:
                return
            self._volumes[new_volid] = path
            for kind in (self._external, self._overlays):
                if old_volid in kind:
                    kind.discard(old_volid)
                    kind.add(new_volid)

    def volume_deleted(self, volid: str) -> None:
        with self._lock:
            path = self._volumes.pop(volid, None)
            external = volid in self._external
            self._external.discard(volid)
            self._overlays.discard(volid)
        if path and not external and path.startswith(self.work_dir) and os.path.exists(path):
            os.unlink(path)

    def volume_files(self) -> dict:
        """volid -> host file, for tests (every file here is a volume of the fake's state)."""
        with self._lock:
            return dict(self._volumes)

    def volume_path(self, volid: str) -> Optional[str]:
        with self._lock:
            return self._volumes.get(volid)

    # ---- VMs ----------------------------------------------------------------------------

    def build_argv(self, vmid: int, config: dict) -> tuple:
        """(PVE argv, adapted argv, adaptation notes, PVE warnings)."""
        environment = qemu_server.environment_for(self.pve_version, kvm_available=True, storages=self.storages)
        warnings = []
        pve_argv = qemu_server.config_to_command(config, vmid, environment, warnings)
        host_paths, overlays = {}, set()
        for drive in qemu_server.config_drives(config):
            if drive.file in ("", "none", "cdrom"):
                continue
            pve_path, _ = qemu_server.volume_path_and_format(drive.file, self.storages)
            host_path = self.volume_path(drive.file)
            if host_path is None:
                raise qemu_server.StartError(f"volume '{drive.file}' does not exist")
            host_paths[pve_path] = host_path
            with self._lock:
                if drive.file in self._overlays:
                    overlays.add(host_path)
        adaptation = qemu_server.Adaptation(run_dir=self.run_dir, host_paths=host_paths, kvm_works=self.kvm_works,
                                            qemu_binary=self.qemu_binary, qemu_version=self.qemu_version)
        argv, notes = qemu_server.adapt_for_this_machine(pve_argv, vmid, adaptation)
        argv, overlay_notes = open_overlays_as_qcow2(argv, overlays)
        notes += overlay_notes
        argv = [self._image_path(a) for a in argv]
        argv, injected = inject_drive_options(argv, vmid, self.inject)
        notes += injected
        return pve_argv, argv, notes, warnings

    def _image_path(self, arg: str) -> str:
        """`args` of the template name the kernel and initrd by their node path
        (/var/lib/vz/snippets/...): a file the template's script installed
        there is read from where it came from (map_node_file); else a file of
        that name in IMAGE_DIR is used."""
        with self._lock:
            if arg in self._node_files:
                return self._node_files[arg]
        if arg.startswith("/") and not os.path.exists(arg):
            candidate = os.path.join(self.image_dir, os.path.basename(arg))
            if os.path.exists(candidate):
                return candidate
        return arg

    def start(self, vm, node: str = "") -> list:
        """Boots the VM; returns PVE's start warnings. Raises with PVE's message
        (config refused) or QEMU's (it did not start)."""
        vmid = int(vm.vmid)
        with self._lock:
            if vmid in self._machines and self._machines[vmid].is_running():
                raise qemu_server.StartError(f"VM {vmid} already running")
        pve_argv, argv, notes, warnings = self.build_argv(vmid, dict(vm.config))
        self.last_argv[vmid] = (pve_argv, argv, notes)
        machine = Machine(vmid, argv, self.run_dir)
        try:
            machine.start(self.start_timeout)
        except MachineError as error:
            raise qemu_server.StartError(f"start failed: QEMU exited with code 1: {error}") from None
        with self._lock:
            self._machines[vmid] = machine
        return [f"WARN: {w}" for w in warnings]

    def machine(self, vmid: int) -> Optional[Machine]:
        with self._lock:
            return self._machines.get(int(vmid))

    def stop(self, vm) -> None:
        vmid = int(getattr(vm, "vmid", vm))
        with self._lock:
            machine = self._machines.pop(vmid, None)
        if machine is not None:
            machine.stop()

    def is_running(self, vmid: int) -> bool:
        machine = self.machine(vmid)
        return machine is not None and machine.is_running()

    def monitor(self, vmid: int, command: str) -> str:
        """PVE/API2/Qemu.pm monitor: human-monitor-command over QMP."""
        machine = self.machine(vmid)
        if machine is None or not machine.is_running():
            raise AgentFailure(f"VM {vmid} not running")
        try:
            return machine.hmp(command)
        except MachineError as error:
            raise AgentFailure(str(error)) from None

    def processes(self) -> dict:
        """{vmid: pid} of the QEMU processes running now."""
        with self._lock:
            machines = dict(self._machines)
        return {vmid: m.process.pid for vmid, m in machines.items() if m.is_running()}

    def close(self) -> None:
        with self._lock:
            machines = list(self._machines.values())
            self._machines.clear()
        for machine in machines:
            machine.stop()
        if self._own_work_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)


def _chain_nodes(blockdev: dict) -> list:
    """The nodes of a -blockdev chain, top first (throttle, format, file)."""
    nodes, node = [], blockdev
    while isinstance(node, dict):
        nodes.append(node)
        node = node.get("file")
    return nodes


def open_overlays_as_qcow2(argv: list, overlays: set) -> tuple:
    """(argv, notes): a -drive whose file is a linked clone's overlay says
    format=qcow2 instead of qemu-server's format=raw (module doc); in a
    -blockdev chain, the format node over that file says driver qcow2."""
    result, notes = list(argv), []
    for i in range(1, len(result)):
        if result[i - 1] == "-drive" and result[i].startswith("file="):
            path = result[i][len("file="):].split(",", 1)[0]
            if path in overlays:
                result[i] = result[i].replace(",format=raw", ",format=qcow2")
                notes.append(f"linked clone {os.path.basename(path)}: a qcow2 overlay, format=qcow2")
        elif result[i - 1] == "-blockdev":
            nodes = _chain_nodes(json.loads(result[i]))
            if len(nodes) >= 2 and nodes[-1].get("filename") in overlays and nodes[-2]["driver"] == "raw":
                nodes[-2]["driver"] = "qcow2"
                result[i] = qemu_server.blockdev_json(nodes[0])
                notes.append(f"linked clone {os.path.basename(nodes[-1]['filename'])}: a qcow2 overlay, "
                             "format node driver qcow2")
    return result, notes


# inject keys that are not disk options.
INJECT_SELECTORS = ("vmid", "drive", "throttled_only")


def _throttled(option: str, value: str) -> bool:
    """Whether qemu-server gave this drive limits: 9.1's throttle-group
    -object has non-empty limits (Blockdev.pm generate_throttle_group), 8.4's
    -drive has throttling.* options (QemuServer.pm print_drive_commandline_full)."""
    if option == "-object":
        return bool(json.loads(value).get("limits"))
    return option == "-drive" and ",throttling." in value


def inject_drive_options(argv: list, vmid: int, inject: Optional[dict]) -> tuple:
    """(argv, notes): the injection hook (module doc); not part of the adaptation."""
    if not inject or ("vmid" in inject and int(inject["vmid"]) != vmid):
        return argv, []
    options = {k: v for k, v in inject.items() if k not in INJECT_SELECTORS}
    result, notes = list(argv), []
    for i in range(1, len(result)):
        change = INJECTORS.get(result[i - 1])
        drive_id = _injected_drive(result[i - 1], result[i]) if change else None
        if not drive_id or (inject.get("drive") and inject["drive"] != drive_id):
            continue
        # "throttled_only": only drives the config throttles (a wrong limit
        # in force, while the unthrottled twin of the same sweep runs free).
        if inject.get("throttled_only") and result[i - 1] in ("-object", "-drive") \
                and not _throttled(result[i - 1], result[i]):
            continue
        changed = change(result[i], options)
        if changed != result[i]:
            result[i] = changed
            notes.append(f"INJECTED on {drive_id} ({result[i - 1]}): {options}")
    return result, notes


def _injected_drive(option: str, value: str) -> Optional[str]:
    """The drive an -drive, -blockdev, -device or throttle-group -object belongs to."""
    if option == "-drive" and "media=cdrom" not in value:
        return next((p[len("id=drive-"):] for p in value.split(",") if p.startswith("id=drive-")), None)
    if option == "-blockdev":
        return json.loads(value).get("node-name", "")[len("drive-"):] or None
    if option == "-object" and value.startswith('{"id":"throttle-drive-'):
        return json.loads(value)["id"][len("throttle-drive-"):]
    if option == "-device" and ",write-cache=" in value:
        return next((p[len("drive=drive-"):] for p in value.split(",") if p.startswith("drive=drive-")), None)
    return None


def _inject_drive(value: str, options: dict) -> str:
    """8.4: -drive options replaced; throttle limits as throttling.KEY=VALUE."""
    flat = {k: str(v) for k, v in options.items() if k != "throttle"}
    flat.update({f"throttling.{k}": str(v) for k, v in options.get("throttle", {}).items()})
    kept = [p for p in value.split(",") if p.split("=", 1)[0] not in flat]
    return ",".join(kept + [f"{k}={v}" for k, v in flat.items()])


def _inject_blockdev(value: str, options: dict) -> str:
    """9.1: the chain's nodes get what qemu-server 9.2 would write for the
    injected values (Blockdev.pm generate_blockdev_drive_cache, add_common_options)."""
    nodes = _chain_nodes(json.loads(value))
    if "cache" in options:
        cache = qemu_server.blockdev_cache(qemu_server.Drive("scsi", 0, "", {"cache": options["cache"]}), None)
        for node in nodes[1:]:
            node["cache"] = dict(cache)
    for key in ("discard", "detect-zeroes"):
        if key in options:
            for node in nodes:
                node[key] = str(options[key])
    if "aio" in options:
        nodes[-1]["aio"] = str(options["aio"])
    return qemu_server.blockdev_json(nodes[0])


def _inject_throttle_group(value: str, options: dict) -> str:
    """9.1: the throttle group's limits replaced by options["throttle"]."""
    if "throttle" not in options:
        return value
    group = json.loads(value)
    group["limits"] = {k: int(v) for k, v in options["throttle"].items()}
    return qemu_server.blockdev_json(group)


def _inject_device(value: str, options: dict) -> str:
    """9.1: the device's write-cache as qemu-server 9.2 writes it for the injected cache mode."""
    if "cache" not in options:
        return value
    drive = qemu_server.Drive("scsi", 0, "", {"cache": options["cache"]})
    wanted = "on" if qemu_server.device_write_cache(drive) else "off"
    return ",".join(f"write-cache={wanted}" if p.startswith("write-cache=") else p for p in value.split(","))


INJECTORS = {"-drive": _inject_drive, "-blockdev": _inject_blockdev, "-object": _inject_throttle_group,
             "-device": _inject_device}


def _qemu_version(binary: str) -> str:
    try:
        text = subprocess.run([binary, "--version"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "7.2.0"
    words = text.split()
    return words[words.index("version") + 1] if "version" in words else "7.2.0"


class RealGuests:
    """guest.Guests' interface, relayed to qemu-guest-agent with PVE's own handling
    around it (PVE/QemuServer/Agent.pm, PVE/API2/Qemu/Agent.pm)."""

    def __init__(self, backend: RealBackend):
        self._backend = backend

    def _machine(self, vmid: int) -> Machine:
        """Agent.pm agent_available: running, then a guest-ping with 3 s timeout
        (QemuServer.pm qga_check_running) before every command."""
        machine = self._backend.machine(vmid)
        if machine is None or not machine.is_running():
            raise AgentFailure(f"VM {vmid} is not running")
        try:
            machine.agent("guest-ping", timeout=3.0)
        except (AgentTimeout, AgentReply):
            raise AgentFailure("QEMU guest agent is not running") from None
        return machine

    @staticmethod
    def _call(machine: Machine, command: str, arguments: dict, timeout: float = 5.0):
        """Agent.pm agent_cmd + check_agent_error: the agent's error becomes
        "Agent error: DESC"; no answer is QMPClient's "... failed - got timeout"."""
        try:
            return machine.agent(command, arguments, timeout)
        except AgentReply as error:
            raise AgentError(str(error)) from None
        except AgentTimeout as error:
            raise AgentFailure(f"VM {machine.vmid} qmp command '{command}' failed - {error}") from None

    def ping(self, vmid: int) -> None:
        self._machine(vmid)

    def write_file(self, vmid: int, guest_path: str, content: bytes) -> None:
        """Agent.pm file-write: open wb, write the base64 (encode_base64, with its
        line breaks), close."""
        machine = self._machine(vmid)
        handle = self._call(machine, "guest-file-open", {"path": guest_path, "mode": "wb"})
        handle = _typed_int(handle, "guest-file-open")
        self._call(machine, "guest-file-write", {"handle": handle,
                                                  "buf-b64": base64.encodebytes(content).decode()})
        self._call(machine, "guest-file-close", {"handle": handle})

    def read_file(self, vmid: int, guest_path: str) -> tuple:
        """Agent.pm file-read: 1 MiB reads until eof or 16 MiB; truncated when no eof
        was seen; a failing close is only warned about."""
        machine = self._machine(vmid)
        handle = _typed_int(self._call(machine, "guest-file-open", {"path": guest_path}), "guest-file-open")
        content, left, eof = b"", FILE_READ_CAP, False
        while left > 0 and not eof:
            answer = self._call(machine, "guest-file-read", {"handle": handle, "count": READ_CHUNK})
            if not isinstance(answer, dict):
                raise AgentError("can't read from file")
            try:
                content += base64.b64decode(answer.get("buf-b64", ""))
            except (binascii.Error, TypeError):
                raise AgentError("can't read from file") from None
            left -= _typed_int(answer.get("count", 0), "guest-file-read count")
            eof = bool(answer.get("eof", False))
        try:
            self._call(machine, "guest-file-close", {"handle": handle})
        except (AgentError, AgentFailure):
            pass
        return content, not eof

    def exec(self, vmid: int, argv: list, input_data: Optional[bytes]) -> int:
        """Agent.pm qemu_exec: path + arg, capture-output, input-data base64."""
        machine = self._machine(vmid)
        arguments = {"path": argv[0], "arg": list(argv[1:]), "capture-output": True}
        if input_data is not None:
            arguments["input-data"] = base64.b64encode(input_data).decode()
        answer = self._call(machine, "guest-exec", arguments)
        return _typed_int(answer.get("pid") if isinstance(answer, dict) else None, "guest-exec pid")

    def exec_status(self, vmid: int, pid: int) -> dict:
        """Agent.pm qemu_exec_status: out-data/err-data base64-decoded (kept as they
        were if that fails), JSON booleans as 1/0. The agent itself answers
        exited once and then forgets the pid (a second ask is its error)."""
        machine = self._machine(vmid)
        answer = self._call(machine, "guest-exec-status", {"pid": int(pid)})
        if not isinstance(answer, dict):
            raise AgentError(f"can't get exec status for '{pid}'")
        result = {}
        for key, value in answer.items():
            if key in ("out-data", "err-data") and isinstance(value, str) and value:
                try:
                    # Perl's decoded bytes reach the JSON encoder one character per byte.
                    value = base64.b64decode(value).decode("latin-1")
                except binascii.Error:
                    pass
            result[key] = int(value) if isinstance(value, bool) else value
        return result

    def forget(self, vmid: int) -> None:
        """The VM stopped: its agent and processes went with it."""

    def erase(self, vmid: int) -> None:
        """The VM was destroyed: its disks go through volume_deleted."""


def _typed_int(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise AgentError(f"unexpected answer to {what}: {value!r}")
    return value
