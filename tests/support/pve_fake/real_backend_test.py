#!/usr/bin/env python3
"""Boots one real guest through RealBackend and checks it at the QEMU and guest level.

The guest: IMAGE_DIR/pve (vmlinux or vmlinuz, initrd.img, root.img if present),
IMAGE_DIR from DISKSWEEP_TEST_IMAGE_DIR (default /var/lib/disksweep/images);
PVE_FAKE_GUEST_DIR names such a pve/ directory directly. Exit 77 (skip)
without qemu-system-x86_64 or without the image.

Checks:
  * `info block` (HMP through the monitor relay) shows the data disk with the
    config's cache mode (unsafe: "Cache mode: writeback, ignore flushes") and
    detect-zeroes (discard=on -> "Detect zeroes: unmap");
  * a QGA guest-exec relayed through RealGuests reads the data disk's
    queue/rotational (0: ssd=1 -> rotation_rate=1) and discard support, and
    exec-status answers exited once, then fails as the agent forgets the pid;
  * file-write then file-read round-trips, including an empty file;
  * with injection (cache=writeback) `info block` shows the injected mode;
  * after stop() and close() no QEMU process of ours is left.
Prints the time from start() to QMP ready and to the first guest-ping answer.
"""

import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from real_backend import AgentFailure, RealBackend  # noqa: E402

SKIP = 77
DATA_DISK_BYTES = 1024 ** 3
AGENT_TIMEOUT = 240.0


class FakeVm:
    def __init__(self, vmid: int, config: dict):
        self.vmid, self.config = vmid, config


def guest_dir() -> str:
    if os.environ.get("PVE_FAKE_GUEST_DIR"):
        return os.environ["PVE_FAKE_GUEST_DIR"]
    return os.path.join(os.environ.get("DISKSWEEP_TEST_IMAGE_DIR", "/var/lib/disksweep/images"), "pve")


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
                "-append 'console=ttyS0 panic=-1'",
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


def info_block_line(text: str, drive: str) -> str:
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(f"{drive} "):
            return "\n".join(lines[i:i + 6])
    return ""


def boot_and_check(directory: str, inject, failures: list) -> tuple:
    root = os.path.join(directory, "root.img")
    backend = RealBackend(directory, inject=inject)
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
        print(f"start -> QMP ready {qmp_ready - started:.2f} s, start -> guest agent ready "
              f"{agent_ready - started:.2f} s (inject={inject}, warnings={warnings})")
        block = info_block_line(backend.monitor(901, "info block"), "drive-scsi1")
        print(block)
        want_cache = "writeback" if inject else "writeback, ignore flushes"
        if f"Cache mode:       {want_cache}\n" not in block + "\n":
            failures.append(f"info block cache mode is not '{want_cache}':\n{block}")
        if "Detect zeroes:    unmap" not in block:
            failures.append(f"info block lacks 'Detect zeroes: unmap':\n{block}")
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


def main() -> int:
    if shutil.which("qemu-system-x86_64") is None:
        print("real_backend_test: SKIP: no qemu-system-x86_64")
        return SKIP
    directory = guest_dir()
    if not kernel_of(directory) or not os.path.exists(os.path.join(directory, "initrd.img")):
        print(f"real_backend_test: SKIP: no guest image in {directory} (vmlinux|vmlinuz, initrd.img)")
        return SKIP
    tempfile.tempdir = os.environ.get("TMPDIR", "/tmp")
    failures = []
    boot_and_check(directory, None, failures)
    boot_and_check(directory, {"cache": "writeback"}, failures)
    for failure in failures:
        print("FAIL: " + failure)
    print(f"real_backend_test: {'FAILED' if failures else 'passed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
