#!/usr/bin/env python3
"""The guest of a simulated Proxmox VM, for whole sweeps through the fake PVE API.

The fake PVE API (tests/support/pve_fake) runs this for the daemon's
agent/exec, as `standin_guest.py AGENT --job-file JOB --progress-file PROGRESS
--result-file RESULT`, in the VM's guest root (guest paths map below it). It
stands in for what PVE cannot give this machine, a booted guest, and speaks
the agent's one-shot protocol as disksweep-agent does
(docs/agent-protocol.md): hello in the progress file, then, once the job
file has content, a progress message (the progress file replaced whole:
hello and it) and the result in the result file, each file written to a
temporary file and renamed over its name.

What is real and what is simulated:
  * the measurement is real: fio runs on this machine, in the guest root
    (a short fixed job: randrw, 4 KiB, psync, 1 s; capped at the data disk's
    iops= and mbps= as QEMU's throttle would cap it), and its JSON output is
    the result's output, from which the host derives the metrics;
  * the guest's view of its data disk is simulated from the VM's config as
    PVE holds it (guest.py's HARDWARE_FILE), the way Linux shows the devices
    QEMU makes from it: the driver of the bus, rotational from ssd=,
    discard_max_bytes from discard=, the write cache from cache=, the serial.
    The filesystem fields echo the job. So the host's checks of the result
    run in full, against what PVE was asked for.

Exit status: 0 after a result, 1 when the job never came (60 s) or the
arguments are wrong.
"""

import json
import os
import subprocess
import sys
import time

PROTOCOL = 2
HARDWARE_FILE = "/etc/pve-fake/vm-config.json"
DRIVE_KEYS = ("scsi1", "virtio1", "sata1")
GIB = 1 << 30


def guest_path(path: str) -> str:
    return os.path.join(os.getcwd(), os.path.normpath("/" + path).lstrip("/"))


def replace_file(path: str, text: str) -> None:
    """Writes PATH.tmp and renames it over PATH: a reader sees the old or the new file."""
    with open(path + ".tmp", "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(path + ".tmp", path)


def line(message_type: str, payload: dict) -> str:
    return json.dumps({"v": PROTOCOL, "type": message_type, **payload}) + "\n"


def wait_for_job(job_file: str, timeout_s: float = 60.0) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with open(job_file, encoding="utf-8") as handle:
                text = handle.read()
            if text.strip():
                return json.loads(text.splitlines()[0])
        except FileNotFoundError:
            pass
        time.sleep(0.05)
    raise TimeoutError(f"no job in {job_file} within {timeout_s} s")


def data_drive(config: dict) -> tuple:
    """(bus key, {option: value}) of the data disk in the VM's config."""
    for key in DRIVE_KEYS:
        if key in config:
            items = config[key].split(",")
            options = dict(item.split("=", 1) for item in items[1:] if "=" in item)
            return key, options
    raise KeyError("the VM has no data disk (scsi1, virtio1 or sata1)")


def device_view(config: dict) -> dict:
    """The data disk as Linux in the guest would show it."""
    key, drive = data_drive(config)
    bus = key.rstrip("0123456789")
    device = "vdb" if bus == "virtio" else "sdb"
    driver = {"virtio": "virtio_blk", "scsi": "virtio_scsi", "sata": "ahci"}[bus]
    cache = drive.get("cache", "none")
    cpus = int(config.get("cores", 1)) * int(config.get("sockets", 1))
    return {
        "device": device,
        "driver": driver,
        "serial": drive.get("serial", ""),
        "rotational": 0 if drive.get("ssd") == "1" else 1,
        "discard_max_bytes": GIB if drive.get("discard") == "on" else 0,
        "write_cache": "write through" if cache in ("writethrough", "directsync") else "write back",
        "logical_block_size": 512,
        "online_cpus": cpus,
        "hw_queues": min(int(drive.get("queues", cpus)), cpus),
        "mount_source": "/dev/" + device,
    }


def filesystem_view(job: dict) -> dict:
    filesystem = job.get("filesystem", {})
    block = job.get("block", {})
    options = filesystem.get("mount_options", "")
    steps = filesystem.get("post_format", [])
    view = {
        "fs_type": filesystem.get("type", ""),
        "mount_options": "rw," + options if options else "rw,relatime",
        "scheduler": block.get("scheduler", "mq-deadline"),
        "read_ahead_kb": block.get("read_ahead_kb", 128),
        "nr_requests": block.get("nr_requests", 256),
        "nocow": "nocow" in steps,
        "work_dir_attributes": "---------------C------" if "nocow" in steps else "----------------------",
    }
    if view["fs_type"] == "btrfs":
        profile = "single" if "single" in steps else "dup"
        view["btrfs"] = {"data": "single", "metadata": profile, "system": profile}
    return view


BLOCK_SIZE = 4096  # the fio job's bs


def rate_options(config: dict) -> list:
    """fio's cap for the data disk's iops= and mbps= (totals, reads and
    writes together, as QEMU's throttle group enforces them), as one byte
    rate (fio takes rate or rate_iops, not both; the job's block size is
    fixed), half to each direction of the even randrw mix."""
    _, drive = data_drive(config)
    limits = []
    if drive.get("iops"):
        limits.append(int(drive["iops"]) * BLOCK_SIZE)
    if drive.get("mbps"):
        limits.append(int(float(drive["mbps"]) * 1024 * 1024))
    if not limits:
        return []
    half = max(BLOCK_SIZE, min(limits) // 2)
    return [f"--rate={half},{half}"]


def run_fio(directory: str, config: dict) -> tuple:
    """(fio's JSON output, fio's version, seconds) of a short real job,
    throttled as the VM's config throttles its data disk."""
    os.makedirs(directory, exist_ok=True)
    started = time.monotonic()
    completed = subprocess.run(
        ["fio", "--name=standin", "--directory=" + directory, "--size=8M", "--rw=randrw", "--bs=4k",
         "--ioengine=psync", "--runtime=1", "--time_based", "--output-format=json"] + rate_options(config),
        capture_output=True, text=True, check=True)
    seconds = time.monotonic() - started
    version = subprocess.run(["fio", "--version"], capture_output=True, text=True, check=True).stdout.strip()
    return json.loads(completed.stdout), version, seconds


def main(argv: list) -> int:
    options = argv[2:]  # argv[1] is the agent program the host asked for
    arguments = dict(zip(options[0::2], options[1::2]))
    if not {"--job-file", "--progress-file", "--result-file"} <= set(arguments):
        print("usage: standin_guest.py AGENT --job-file JOB --progress-file PROGRESS --result-file RESULT",
              file=sys.stderr)
        return 1
    progress = guest_path(arguments["--progress-file"])
    result = guest_path(arguments["--result-file"])
    os.makedirs(os.path.dirname(progress), exist_ok=True)
    os.makedirs(os.path.dirname(result), exist_ok=True)
    kernel = os.uname().release
    hello = line("hello", {"agent_version": "standin", "protocol": PROTOCOL, "kernel": kernel,
                           "fio_version": "", "capabilities": ["fio", "ext4", "xfs", "btrfs", "block"]})
    replace_file(progress, hello)
    job = wait_for_job(guest_path(arguments["--job-file"]))
    with open(guest_path(HARDWARE_FILE), encoding="utf-8") as handle:
        hardware = json.load(handle)
    replace_file(progress, hello + line("progress", {"phase": "bench", "message": "fio (stand-in guest)",
                                                     "elapsed_s": 0.0}))
    fio_output, fio_version, bench_s = run_fio(guest_path("/mnt/disksweep/work"), hardware)
    replace_file(result, line("result", {
        "run_id": job.get("run_id", ""),
        "output": fio_output,
        "timings": {"format_s": 0.0, "mount_s": 0.0, "post_format_s": 0.0, "bench_s": bench_s},
        "readback": {**device_view(hardware), **filesystem_view(job)},
        "versions": {"kernel": kernel, "fio": fio_version, "agent": "standin"},
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
