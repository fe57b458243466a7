#!/usr/bin/env python3
"""Boots real guests through RealBackend and checks them at the QEMU and guest level,
for each simulated PVE version: 8.4 (qemu-server 8.3's -drive, the host's
QEMU 7.2) and 9.1 (qemu-server 9.2's -blockdev chains, QEMU 10 from the
Debian 13 root; that part reports itself skipped when the root is not built:
tests/support/build-debian13-root.sh).

The guest: the project's base image in IMAGE_DIR (vmlinux or vmlinuz,
initrd.img, root.img), the one scripts/pve-make-template.sh --from-image
makes the Proxmox template of, booted with its kernel option
disksweep.guest=qga (qemu-guest-agent in the guest); IMAGE_DIR from
DISKSWEEP_TEST_IMAGE_DIR (default /var/lib/disksweep/images). Exit 77 (skip)
without the image, or when neither version's QEMU is there.

Checks, per version (CACHE_VIEW says where each shows the cache mode):
  * `info block` (HMP through the monitor relay) shows the data disk with the
    config's cache mode (unsafe: 8.4 "Cache mode: writeback, ignore flushes"
    on the drive; 9.1 the same on its format node in `info block -n`) and
    detect-zeroes (discard=on -> "Detect zeroes: unmap");
  * a QGA guest-exec relayed through RealGuests reads the data disk's
    queue/rotational (0: ssd=1 -> rotation_rate=1) and discard support, and
    exec-status answers exited once, then fails as the agent forgets the pid;
  * file-write then file-read round-trips, including an empty file;
  * with injection (cache=writeback) `info block` shows the injected mode;
    on 9.1 also a throttle injection (iops-total 250): the throttle group's
    limits, read back by QMP qom-get, are the injected ones, not the config's;
  * the root disk is a linked clone of root.img (a qcow2 overlay; root.img
    itself is not changed);
  * after stop() and close() no QEMU process of ours is left;
  * the fake as a process (pve_fake.py --real-guests --template-from-script,
    the template from scripts/pve-make-template.sh --from-image --dry-run):
    a VM cloned and started through the API runs QEMU, which outlives the
    HTTP request threads that started it, and the fake's SIGTERM, or its
    SIGKILL, leaves no QEMU behind (needs openssl and the PVE schema,
    DISKSWEEP_PVE_SCHEMA or tests/data/pve/pve-api-schema.json.gz).
Prints the time from start() to QMP ready and to the first guest-ping answer.
"""

import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from real_backend import AgentFailure, QemuUnavailable, RealBackend  # noqa: E402

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
TOKEN = "root@pam!disksweep=0d6c0e8a-real-backend-test"
DATA_DISK_BYTES = 1024 ** 3
AGENT_TIMEOUT = 240.0


class FakeVm:
    def __init__(self, vmid: int, config: dict):
        self.vmid, self.config = vmid, config


def guest_dir() -> str:
    return os.environ.get("DISKSWEEP_TEST_IMAGE_DIR", "/var/lib/disksweep/images")


def kernel_of(directory: str) -> str:
    for name in ("vmlinux", "vmlinuz"):
        if os.path.exists(os.path.join(directory, name)):
            return os.path.join(directory, name)
    return ""


def vm_config(directory: str, with_root: bool) -> dict:
    config = {
        "name": "realguest", "memory": "1024", "cores": "1", "ostype": "l26", "agent": "enabled=1",
        "scsihw": "virtio-scsi-single", "serial0": "socket", "vga": "serial0", "kvm": "1",
        "net0": "virtio=BC:24:11:00:00:01,bridge=vmbr0",
        "scsi1": "local-lvm:vm-901-disk-1,cache=unsafe,discard=on,iothread=1,size=1G,ssd=1",
        "args": f"-kernel {kernel_of(directory)} -initrd {os.path.join(directory, 'initrd.img')} "
                "-append 'console=ttyS0 panic=-1 quiet no_timer_check disksweep.guest=qga'",
    }
    if with_root:
        config["scsi0"] = "local-lvm:vm-901-disk-0,serial=disksweep-root,size=4G"
        config["boot"] = "order=scsi0"
    return config


def our_qemu_pids(run_dir: str) -> list:
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                if run_dir.encode() in handle.read():
                    pids.append(int(entry))
        except OSError:
            continue
    return pids


def wait_for_agent(backend: RealBackend, vmid: int) -> float:
    deadline = time.monotonic() + AGENT_TIMEOUT
    while time.monotonic() < deadline:
        try:
            backend.guests.ping(vmid)
            return time.monotonic()
        except AgentFailure:
            time.sleep(0.5)
    machine = backend.machine(vmid)
    raise AssertionError(f"guest agent not ready after {AGENT_TIMEOUT:.0f} s; QEMU log: "
                         f"{machine.log_tail() if machine else ''}")


def run_exec(backend: RealBackend, vmid: int, argv: list) -> dict:
    pid = backend.guests.exec(vmid, argv, None)
    for _ in range(200):
        status = backend.guests.exec_status(vmid, pid)
        if status.get("exited") == 1:
            try:
                backend.guests.exec_status(vmid, pid)
                raise AssertionError("exec-status answered exited twice")
            except Exception as error:     # the agent forgot the pid: its own error
                if isinstance(error, AssertionError):
                    raise
            return status
        time.sleep(0.1)
    raise AssertionError(f"{argv} did not exit")


DISK_REPORT = ("for d in /sys/block/sd*; do echo $(basename $d) $(cat $d/size) $(cat $d/queue/rotational) "
               "$(cat $d/queue/discard_max_bytes); done")


def check_guest(backend: RealBackend, vmid: int, failures: list) -> None:
    status = run_exec(backend, vmid, ["/bin/sh", "-c", DISK_REPORT])
    lines = [line.split() for line in status.get("out-data", "").splitlines()]
    data = [fields for fields in lines if len(fields) == 4 and int(fields[1]) * 512 == DATA_DISK_BYTES]
    if not data:
        failures.append(f"no {DATA_DISK_BYTES}-byte disk in the guest: {lines} {status}")
        return
    name, _, rotational, discard_max = data[0]
    print(f"guest: data disk /dev/{name}: rotational={rotational} discard_max_bytes={discard_max}")
    if rotational != "0":
        failures.append(f"ssd=1 but /sys/block/{name}/queue/rotational is {rotational}")
    if int(discard_max) == 0:
        failures.append(f"discard=on but /sys/block/{name}/queue/discard_max_bytes is 0")
    backend.guests.write_file(vmid, "/tmp/relay-test", b"")
    content, truncated = backend.guests.read_file(vmid, "/tmp/relay-test")
    if (content, truncated) != (b"", False):
        failures.append(f"empty file read back as {(content, truncated)}")
    backend.guests.write_file(vmid, "/tmp/relay-test", b"line\n\xff\x00end")
    content, truncated = backend.guests.read_file(vmid, "/tmp/relay-test")
    if (content, truncated) != (b"line\n\xff\x00end", False):
        failures.append(f"file read back as {(content, truncated)}")


def info_block_line(text: str, name: str) -> str:
    """The paragraph of a drive (8.4 `drive-scsi1 (#block..):`, 9.1 `drive-scsi1: json:`) or node."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith((f"{name} ", f"{name}:")):
            return "\n".join(lines[i:i + 6]).split("\n\n")[0]
    return ""


def data_disk_cache_view(backend: RealBackend, pve_version: str) -> str:
    """Where the data disk's effective cache flags show: 8.4 the drive in
    `info block`; 9.1 its format node in `info block -n` (the device line
    carries only the write cache: tests/data/hmp/qemu10/README.md)."""
    if pve_version == "8.4":
        return info_block_line(backend.monitor(901, "info block"), "drive-scsi1")
    import qemu_server  # noqa: PLC0415
    return info_block_line(backend.monitor(901, "info block -n"),
                           qemu_server.node_name("fmt", "scsi1", "local-lvm:vm-901-disk-1"))


def check_throttle(backend: RealBackend, inject, failures: list) -> None:
    """9.1: the throttle group's limits as QEMU holds them (QMP qom-get)."""
    limits = backend.machine(901).qmp("qom-get", path="throttle-drive-scsi1", property="limits")
    wanted = (inject or {}).get("throttle", {})
    got = {k: v for k, v in limits.items() if v and not k.endswith("-max-length")}
    print(f"throttle-drive-scsi1 limits (non-zero): {got}")
    if got != wanted:
        failures.append(f"throttle group limits {got}, wanted {wanted}")


def boot_and_check(directory: str, inject, failures: list, pve_version: str = "8.4") -> tuple:
    root = os.path.join(directory, "root.img")
    root_stamp = os.stat(root).st_mtime_ns if os.path.exists(root) else None
    backend = RealBackend(directory, inject=inject, pve_version=pve_version)
    run_dir = backend.run_dir
    try:
        backend.volume_created("local-lvm:vm-901-disk-1", DATA_DISK_BYTES, "raw")
        if os.path.exists(root):
            backend.add_volume_file("local-lvm:base-900-disk-0", root)
            backend.volume_cloned("local-lvm:base-900-disk-0", "local-lvm:vm-901-disk-0", linked=True)
        vm = FakeVm(901, vm_config(directory, os.path.exists(root)))
        started = time.monotonic()
        warnings = backend.start(vm, "node1")
        qmp_ready = time.monotonic()
        agent_ready = wait_for_agent(backend, 901)
        print(f"PVE {pve_version} (QEMU {backend.qemu_version}): start -> QMP ready {qmp_ready - started:.2f} s, "
              f"start -> guest agent ready {agent_ready - started:.2f} s (inject={inject}, warnings={warnings})")
        block = data_disk_cache_view(backend, pve_version)
        print(block)
        want_cache = "writeback" if inject else "writeback, ignore flushes"
        if f"Cache mode:       {want_cache}\n" not in block + "\n":
            failures.append(f"PVE {pve_version}: data disk cache mode is not '{want_cache}':\n{block}")
        if "Detect zeroes:    unmap" not in block:
            failures.append(f"PVE {pve_version}: data disk lacks 'Detect zeroes: unmap':\n{block}")
        if pve_version == "9.1":
            check_throttle(backend, inject, failures)
        if not inject:
            check_guest(backend, 901, failures)
        backend.stop(vm)
        if backend.is_running(901) or our_qemu_pids(run_dir):
            failures.append(f"QEMU still running after stop: {our_qemu_pids(run_dir)}")
        return qmp_ready - started, agent_ready - started
    finally:
        backend.close()
        if our_qemu_pids(run_dir):
            failures.append(f"QEMU left after close: {our_qemu_pids(run_dir)}")
        if root_stamp is not None and os.stat(root).st_mtime_ns != root_stamp:
            failures.append(f"{root} was written (a linked clone must not change its base)")


class FakeProcess:
    """pve_fake.py with real guests and the script's template, in a child process."""

    def __init__(self, image: str, work: str):
        commands = subprocess.run(["bash", os.path.join(SOURCE_ROOT, "scripts", "pve-make-template.sh"),
                                   "--from-image", image, "--dry-run"], capture_output=True, text=True, check=True)
        with open(os.path.join(work, "template.txt"), "w", encoding="utf-8") as handle:
            handle.write(commands.stdout)
        schema = os.environ.get("DISKSWEEP_PVE_SCHEMA",
                                os.path.join(SOURCE_ROOT, "tests", "data", "pve", "pve-api-schema.json.gz"))
        self.work = work
        self.log = open(os.path.join(work, "fake.log"), "w+")
        self.process = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "pve_fake.py"), "--schema", schema, "--cert-dir",
             os.path.join(work, "certs"), "--port-file", os.path.join(work, "port"), "--token", TOKEN,
             "--task-seconds", "0.1", "--quiet", "--real-guests", image, "--real-work-dir",
             os.path.join(work, "real"), "--template-from-script", os.path.join(work, "template.txt")],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while not os.path.exists(os.path.join(work, "port")):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.log.seek(0)
                raise AssertionError(f"pve_fake did not start: {self.log.read()}")
            time.sleep(0.05)
        with open(os.path.join(work, "port"), encoding="ascii") as handle:
            self.port = int(handle.read())
        self.context = ssl.create_default_context(cafile=os.path.join(work, "certs", "ca.pem"))
        self.context.check_hostname = False

    def call(self, method: str, path: str, params=None):
        """One request on a connection of its own (so a request thread of the fake ends with it)."""
        prefix = "" if path.startswith("/_fake/") else "/api2/json"
        request = urllib.request.Request(f"https://127.0.0.1:{self.port}{prefix}{path}", method=method,
                                         data=json.dumps(params).encode() if params is not None else None,
                                         headers={"Authorization": f"PVEAPIToken={TOKEN}",
                                                  "Content-Type": "application/json"})
        with urllib.request.urlopen(request, context=self.context, timeout=60) as answer:
            return json.loads(answer.read())["data"]

    def task(self, upid: str) -> str:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            status = self.call("GET", f"/nodes/pve1/tasks/{urllib.request.quote(upid, safe='')}/status")
            if status["status"] == "stopped":
                return status["exitstatus"]
            time.sleep(0.05)
        raise AssertionError(f"task {upid} did not end")


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().split(") ", 1)[1].split()[0] != "Z"
    except OSError:
        return False


FAKE_VMS = (101, 102, 103)


def fake_process_check(image: str, end_signal: int, failures: list) -> None:
    """Through the fake's API: clone and start FAKE_VMS, then end the fake
    with `end_signal`. Whether a start's work runs on a request thread or on
    the fake's task ticker is a race (a QEMU forked by a request thread died
    with it before machine.py's spawner thread), so three VMs are started."""
    work = tempfile.mkdtemp(prefix="pve-fake-real-process-")
    fake = FakeProcess(image, work)
    try:
        for vmid in FAKE_VMS:
            if vmid == FAKE_VMS[-1]:
                # POST /_fake/inject: the last VM's QEMU gets cache=writeback on its disks.
                fake.call("POST", "/_fake/inject", {"cache": "writeback", "vmid": vmid})
            exit_status = fake.task(fake.call("POST", "/nodes/pve1/qemu/9000/clone",
                                              {"newid": vmid, "name": f"r{vmid}"}))
            if exit_status != "OK":
                failures.append(f"clone of the script's template: {exit_status}")
                return
            exit_status = fake.task(fake.call("POST", f"/nodes/pve1/qemu/{vmid}/status/start", {}))
            if exit_status != "OK":
                failures.append(f"start of {vmid}: {exit_status}")
                return
        for vmid, wanted in ((FAKE_VMS[0], "writeback, direct"), (FAKE_VMS[-1], "writeback")):
            block = fake.call("POST", f"/nodes/pve1/qemu/{vmid}/monitor", {"command": "info block"})
            if f"Cache mode:       {wanted}\r\n" not in block:
                failures.append(f"VM {vmid}'s root disk: not 'Cache mode: {wanted}' in {block!r}")
        time.sleep(2.0)             # the request threads that started them are gone by now
        pids = list(fake.call("GET", "/_fake/state")["processes"].values())
        if len(pids) != len(FAKE_VMS) or not all(alive(pid) for pid in pids):
            failures.append(f"QEMUs not running 2 s after their start: {pids}, running: {our_qemu_pids(work)}")
            return
        fake.process.send_signal(end_signal)
        fake.process.wait(timeout=30)
        deadline = time.monotonic() + 10
        while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        if any(alive(pid) for pid in pids) or our_qemu_pids(work):
            failures.append(f"QEMU left after the fake's {signal.Signals(end_signal).name}: "
                            f"{our_qemu_pids(work)}")
        else:
            print(f"fake {signal.Signals(end_signal).name}: its QEMUs {pids} are gone")
    finally:
        if fake.process.poll() is None:
            fake.process.kill()
            fake.process.wait()
        for pid in our_qemu_pids(work):
            os.kill(pid, signal.SIGKILL)
        fake.log.close()
        shutil.rmtree(work, ignore_errors=True)


# Per version: the injected boot's faults (9.1: a wrong throttle as well).
INJECTIONS = {"8.4": {"cache": "writeback"},
              "9.1": {"cache": "writeback", "throttle": {"iops-total": 250}, "drive": "scsi1"}}


def boot_version(directory: str, pve_version: str, failures: list) -> bool:
    """Both boots of a version; False (reported) when its QEMU is not here."""
    try:
        boot_and_check(directory, None, failures, pve_version)
    except QemuUnavailable as error:
        print(f"real_backend_test: PVE {pve_version} part SKIPPED: {error}")
        return False
    boot_and_check(directory, INJECTIONS[pve_version], failures, pve_version)
    return True


def main() -> int:
    directory = guest_dir()
    if not kernel_of(directory) or not os.path.exists(os.path.join(directory, "initrd.img")):
        print(f"real_backend_test: SKIP: no guest image in {directory} (vmlinux|vmlinuz, initrd.img)")
        return SKIP
    tempfile.tempdir = os.environ.get("TMPDIR", "/tmp")
    failures = []
    ran = []
    if shutil.which("qemu-system-x86_64") is None:
        print("real_backend_test: PVE 8.4 part SKIPPED: no qemu-system-x86_64")
    elif boot_version(directory, "8.4", failures):
        ran.append("8.4")
    if boot_version(directory, "9.1", failures):
        ran.append("9.1")
    if not ran:
        print("real_backend_test: SKIP: no QEMU for either PVE version")
        return SKIP
    if "8.4" not in ran:
        print("real_backend_test: the fake-process checks run PVE 8.4's QEMU: not run")
    elif shutil.which("openssl") is None:
        print("real_backend_test: the fake-process checks need the openssl CLI: not run")
    else:
        fake_process_check(directory, signal.SIGTERM, failures)
        fake_process_check(directory, signal.SIGKILL, failures)
    for failure in failures:
        print("FAIL: " + failure)
    print(f"real_backend_test: {'FAILED' if failures else 'passed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
