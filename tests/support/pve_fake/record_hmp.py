#!/usr/bin/env python3
"""Records what real QEMU's HMP answers for the disks qemu-server builds.

For each case of CASES, a VM config with a system disk, an empty CD-ROM and
the case's data disk becomes QEMU arguments through qemu_server.py's drive
rules: qemu-server 9.2's -blockdev chains (`--mode blockdev`, what PVE 9 does
for machine versions >= 10.0) or 8.3's -drive lines (`--mode drive`). A
minimal stopped machine (-S, TCG, no guest OS) is started with them, and the
answers of HMP_COMMANDS over QMP's human-monitor-command are written to
OUTDIR/CASE.COMMAND.txt (the decoded "return" string, QEMU's \\r\\n kept),
with the argv in OUTDIR/CASE.argv.txt (one argument per line). The layout is
described in tests/data/hmp/qemu10/README.md.

  record_hmp.py --qemu BINARY --mode blockdev|drive OUTDIR [CASE...]

Volumes live under IMAGE_ROOT (a fixed path, so that a re-recording gives the
same text): the `local` storage's path is IMAGE_ROOT, so PVE's
/var/lib/vz/images/100/... is IMAGE_ROOT/images/100/... here. Nothing else of
PVE's command line (machine type, CPU, bridges other than the disks') is
reproduced: the HMP answers read here depend only on the disks.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qemu_server  # noqa: E402

IMAGE_ROOT = "/tmp/disksweep-hmp"
VMID = 100
DATA_VOLUME = f"local:{VMID}/vm-{VMID}-disk-1.raw"
# The data disk's options shared by the cache cases (issue 32's `scsi1:` line).
SCSI_OPTIONS = "discard=on,iothread=1,ssd=1"

# name -> (config key of the data disk, its options after the volume).
CASES = {
    "scsi-cache-none": ("scsi1", f"cache=none,{SCSI_OPTIONS}"),
    "scsi-cache-writeback": ("scsi1", f"cache=writeback,{SCSI_OPTIONS}"),
    "scsi-cache-writethrough": ("scsi1", f"cache=writethrough,{SCSI_OPTIONS}"),
    "scsi-cache-directsync": ("scsi1", f"cache=directsync,{SCSI_OPTIONS}"),
    "scsi-cache-unsafe": ("scsi1", f"cache=unsafe,{SCSI_OPTIONS}"),
    "scsi-throttle-rd": ("scsi1", f"cache=none,{SCSI_OPTIONS},iops_rd=500,mbps_rd=8"),
    "scsi-throttle-total": ("scsi1", f"cache=none,{SCSI_OPTIONS},iops=500,mbps=8"),
    "scsi-detect-zeroes-off": ("scsi1", f"cache=none,{SCSI_OPTIONS},detect_zeroes=0"),
    "virtio-blk": ("virtio1", "cache=none,discard=on,iothread=1"),
    "sata": ("sata1", "cache=none,discard=on,ssd=1"),
}
HMP_COMMANDS = {"info_block": "info block", "info_block_n": "info block -n",
                "info_qtree": "info qtree", "info_iothreads": "info iothreads",
                "info_version": "info version"}


def case_config(key: str, options: str) -> dict:
    """The VM config of a case: PVE's usual system disk and CD-ROM, and the data disk."""
    return {"scsihw": "virtio-scsi-single", "boot": "order=scsi0",
            "scsi0": f"local:{VMID}/vm-{VMID}-disk-0.raw,iothread=1,size=1G",
            "ide2": "none,media=cdrom",
            key: f"{DATA_VOLUME},{options},size=1G"}


def case_argv(qemu: str, mode: str, config: dict) -> list:
    environment = qemu_server.HostEnvironment(
        storages={"local": qemu_server.StorageConfig("local", "dir", path=IMAGE_ROOT)})
    objects, devices, bridges = qemu_server.disk_arguments(config, environment, mode == "blockdev")
    bridge_args = []
    for bus in sorted(b for b in bridges if b > 0):
        bridge_args += ["-device", f"pci-bridge,id=pci.{bus},chassis_nr={bus}"
                        f"{qemu_server.print_pci_addr(f'pci.{bus}', None)}"]
    return [qemu, "-machine", "pc,accel=tcg", "-nodefaults", "-display", "none", "-S", "-m", "128",
            "-qmp", "stdio"] + objects + bridge_args + devices


def make_images(config: dict) -> None:
    for value in config.values():
        if value.startswith(f"local:{VMID}/"):
            path = f"{IMAGE_ROOT}/images/{VMID}/{value.split('/', 1)[1].split(',')[0]}"
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as handle:
                handle.truncate(1 << 30)


def hmp_answers(argv: list) -> dict:
    """Starts QEMU with QMP on stdio, asks each HMP command, quits."""
    requests = [{"execute": "qmp_capabilities"}]
    requests += [{"execute": "human-monitor-command", "arguments": {"command-line": c}, "id": name}
                 for name, c in HMP_COMMANDS.items()]
    requests.append({"execute": "quit"})
    result = subprocess.run(argv, input="".join(json.dumps(r) + "\n" for r in requests), text=True,
                            capture_output=True, timeout=60, check=False)
    answers = {}
    for line in result.stdout.splitlines():
        message = json.loads(line)
        if message.get("id") in HMP_COMMANDS:
            answers[message["id"]] = message["return"]
    if len(answers) != len(HMP_COMMANDS):
        raise RuntimeError(f"QEMU answered {sorted(answers)} (exit {result.returncode}): {result.stderr.strip()}")
    return answers


def record(qemu: str, mode: str, outdir: str, names: list) -> None:
    os.makedirs(outdir, exist_ok=True)
    for name in names:
        config = case_config(*CASES[name])
        make_images(config)
        argv = case_argv(qemu, mode, config)
        answers = hmp_answers(argv)
        with open(os.path.join(outdir, f"{name}.argv.txt"), "w", encoding="utf-8") as handle:
            handle.write("".join(a + "\n" for a in ["qemu-system-x86_64"] + argv[1:]))
        for command, text in answers.items():
            with open(os.path.join(outdir, f"{name}.{command}.txt"), "w", encoding="utf-8", newline="") as handle:
                handle.write(text)
        print(f"recorded {name}")
    shutil.rmtree(IMAGE_ROOT, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--qemu", required=True)
    parser.add_argument("--mode", choices=("blockdev", "drive"), required=True)
    parser.add_argument("outdir")
    parser.add_argument("cases", nargs="*", default=list(CASES))
    args = parser.parse_args()
    record(args.qemu, args.mode, args.outdir, args.cases)
    return 0


if __name__ == "__main__":
    sys.exit(main())
