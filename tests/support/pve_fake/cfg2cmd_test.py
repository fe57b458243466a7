#!/usr/bin/env python3
"""Our cfg2cmd cases: tests/data/pve/cfg2cmd/NAME.conf -> the QEMU argv of
qemu_server.config_to_command, compared with NAME.conf.cmd, as qemu-server's
test/run_config2command_tests.pl does. Two sets, one per simulated PVE
version (SETS): the top folder is PVE 8.4 (qemu-server 8.3.13, QEMU 9.2:
-drive), pve9/ is PVE 9.1 (qemu-server 9.2.6, QEMU 10.1: -blockdev chains),
with the same configurations. Host mocks as upstream's: the iSCSI
initiator name iqn.1993-08.org.debian:01:aabbccddeeff, KVM available, the
storages `local` (dir /var/lib/vz) and `local-lvm` (lvmthin, VG pve), VM id
from the file's first disk). Comment lines: `# TEST:` describes the case,
`# FACTS:` / `# FROM CODE:` say where each expected line comes from,
`# EXPECT_WARN:` is a warning PVE logs for the config.

The adaptation step (qemu_server.adapt_for_this_machine) is checked too, on the
scsi-single case of each set: each of its changes, and nothing else. And the
simulated PVE 9.1's HMP (machines.info_block_blockdev) must give, for the
record_hmp.py cases, exactly what real QEMU 10 answered to the argv of the
same rules (tests/data/hmp/qemu10/).

  python3 tests/support/pve_fake/cfg2cmd_test.py [--write-missing] [DATA_DIR]
"""

import difflib
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import machines  # noqa: E402
import qemu_server  # noqa: E402
import record_hmp  # noqa: E402

DEFAULT_DATA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "data", "pve", "cfg2cmd")


def read_case(path: str) -> tuple:
    """(config dict, expected warnings) of a .conf as PVE stores it (`key: value`)."""
    config, warnings = {}, []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            line = line.rstrip("\n")
            if line.startswith("# EXPECT_WARN:"):
                warnings.append(line.split(":", 1)[1].strip())
            if not line.strip() or line.startswith("#"):
                continue
            key, _, value = line.partition(":")
            config[key.strip()] = value.strip()
    return config, warnings


def vmid_of(config: dict) -> int:
    for value in config.values():
        match = re.search(r"vm-(\d+)-disk", value)
        if match:
            return int(match.group(1))
    return 8006


# PVE version -> its cases' folder, relative to the data dir.
SETS = {"8.4": ".", "9.1": "pve9"}


def test_environment(pve_version: str) -> qemu_server.HostEnvironment:
    return qemu_server.environment_for(pve_version, kvm_available=True,
                                       initiator_name="iqn.1993-08.org.debian:01:aabbccddeeff")


def check_case(conf_path: str, write_missing: bool, pve_version: str) -> list:
    config, expected_warnings = read_case(conf_path)
    warnings = []
    command = qemu_server.config_to_command(config, vmid_of(config), test_environment(pve_version), warnings)
    failures = []
    if warnings != expected_warnings:
        failures.append(f"warnings {warnings} != expected {expected_warnings}")
    cmd_path = conf_path + ".cmd"
    if not os.path.exists(cmd_path):
        if write_missing:
            with open(cmd_path, "w", encoding="utf-8") as handle:
                handle.write(qemu_server.command_to_text(command))
            return [f"wrote {cmd_path}: review it line by line before trusting it"]
        return [f"missing {cmd_path}"]
    with open(cmd_path, encoding="utf-8") as handle:
        expected = qemu_server.text_to_command(handle.read())
    if command != expected:
        diff = difflib.unified_diff(expected, command, "expected", "generated", lineterm="", n=1)
        failures.append("argv differs:\n" + "\n".join(diff))
    # Round trip: our pretty printer writes what the .cmd parser reads back.
    if qemu_server.text_to_command(qemu_server.command_to_text(command)) != command:
        failures.append("command_to_text does not round-trip")
    return failures


# Per PVE version: the QEMU this machine runs it with, and how the data disk reads after adaptation.
ADAPTED = {
    "8.4": ("7.2.0", "file=/tmp/run/local-lvm/vm-101-disk-1.raw,if=none,id=drive-scsi1,cache=unsafe,discard=on,"
                     "format=raw,aio=io_uring,detect-zeroes=unmap"),
    "9.1": ("10.0.13", '{"detect-zeroes":"unmap","discard":"unmap","driver":"throttle","file":{"cache":'
                       '{"direct":false,"no-flush":true},"detect-zeroes":"unmap","discard":"unmap","driver":"raw",'
                       '"file":{"aio":"io_uring","cache":{"direct":false,"no-flush":true},"detect-zeroes":"unmap",'
                       '"discard":"unmap","driver":"file","filename":"/tmp/run/local-lvm/vm-101-disk-1.raw",'
                       '"node-name":"ebe355edf82b812d4595bbd981693d4","read-only":false},'
                       '"node-name":"fbe355edf82b812d4595bbd981693d4","read-only":false},'
                       '"node-name":"drive-scsi1","read-only":false,"throttle-group":"throttle-drive-scsi1"}'),
}


def check_adaptation(data_dir: str, pve_version: str) -> list:
    """Every change adapt_for_this_machine makes to the scsi-single case, and only those."""
    config, _ = read_case(os.path.join(data_dir, "scsi-single-iothread-ssd-discard-unsafe.conf"))
    pve_argv = qemu_server.config_to_command(config, 101, test_environment(pve_version))
    host_paths = {"/dev/pve/vm-101-disk-0": "/tmp/run/local-lvm/vm-101-disk-0.raw",
                  "/dev/pve/vm-101-disk-1": "/tmp/run/local-lvm/vm-101-disk-1.raw"}
    qemu_version, data_disk = ADAPTED[pve_version]
    major, minor = qemu_version.split(".")[:2]
    adapted, notes = qemu_server.adapt_for_this_machine(
        pve_argv, 101, qemu_server.Adaptation(run_dir="/tmp/run", host_paths=host_paths, kvm_works=False,
                                              qemu_binary="qemu-system-x86_64", qemu_version=qemu_version))
    failures = []

    def expect(condition: bool, what: str) -> None:
        if not condition:
            failures.append(f"adaptation: {what}")

    text = "\n".join(adapted)
    expect(adapted[0] == "qemu-system-x86_64", "binary")
    expect("-daemonize" not in adapted, "-daemonize dropped")
    expect("/var/run/" not in text, "no path under /var/run left")
    expect("qmeventd" not in text, "qmeventd chardev dropped")
    expect("-pidfile" in adapted and adapted[adapted.index("-pidfile") + 1] == "/tmp/run/101.pid", "pidfile moved")
    expect(f"type=pc-i440fx-{major}.{minor}" in adapted[adapted.index("-machine") + 1], "upstream machine type")
    expect("accel=tcg" in adapted[adapted.index("-machine") + 1], "TCG when KVM does not work")
    expect(adapted[adapted.index("-cpu") + 1] == "qemu64", "the kvm: 0 CPU under TCG")
    expect(not any(a.startswith("type=tap") or "netdev=" in a for a in adapted), "net devices dropped")
    expect(data_disk in adapted, "data disk at its host path, options kept")
    expect("splash=" not in text, "missing splash file dropped")
    untouched = [a for a in pve_argv if a.startswith(("-device", "scsi-hd", "virtio-scsi-pci", "iothread,",
                                                      '{"id":"throttle-drive-'))]
    expect(all(a in adapted for a in untouched), "disk devices and iothreads unchanged")
    expect(len(notes) >= 6, f"each change explained ({notes})")
    return failures


def main(argv: list) -> int:
    write_missing = "--write-missing" in argv
    arguments = [a for a in argv[1:] if not a.startswith("--")]
    data_dir = arguments[0] if arguments else DEFAULT_DATA_DIR
    failed = total = 0
    for pve_version, folder in SETS.items():
        set_dir = os.path.normpath(os.path.join(data_dir, folder))
        cases = sorted(f for f in os.listdir(set_dir) if f.endswith(".conf"))
        if not cases:
            print(f"cfg2cmd_test: no .conf in {set_dir}")
            return 1
        for name in cases:
            failures = check_case(os.path.join(set_dir, name), write_missing, pve_version)
            failed += report(f"PVE {pve_version} {name}", failures)
        failed += report(f"PVE {pve_version} adaptation", check_adaptation(set_dir, pve_version))
        total += len(cases) + 1
    failed += report("PVE 9.1 simulated HMP = QEMU 10's", check_simulated_hmp(data_dir))
    total += 1
    print(f"cfg2cmd_test: {total - failed}/{total} passed")
    return 1 if failed else 0


class CaptureCluster:
    """The part of cluster.Cluster that machines.info_block_blockdev reads, for
    record_hmp.py's volumes (raw files of the `local` dir storage)."""

    class Volume:
        storage, format = "local", "raw"

        def __init__(self, volid: str):
            self.volid = volid

    storages = {"local": qemu_server.StorageConfig("local", "dir", path=record_hmp.IMAGE_ROOT)}

    def __init__(self, config: dict):
        self.volumes = {v.split(",")[0]: self.Volume(v.split(",")[0]) for v in config.values()
                        if v.startswith("local:")}

    @staticmethod
    def volume_path(volume) -> str:
        return f"{record_hmp.IMAGE_ROOT}/images/{volume.volid.split(':')[1]}"


def check_simulated_hmp(data_dir: str) -> list:
    """machines.info_block_blockdev against QEMU 10's recorded answers."""
    capture_dir = os.path.join(data_dir, "..", "..", "hmp", "qemu10")
    failures = []
    for name, (key, options) in record_hmp.CASES.items():
        config = record_hmp.case_config(key, options)
        vm = type("Vm", (), {"config": config})
        for command, nodes in (("info_block", False), ("info_block_n", True)):
            with open(os.path.join(capture_dir, f"{name}.{command}.txt"), encoding="utf-8", newline="") as handle:
                expected = handle.read()
            simulated = machines.info_block_blockdev(CaptureCluster(config), vm, nodes)
            if simulated != expected:
                diff = difflib.unified_diff(expected.split("\r\n"), simulated.split("\r\n"), "QEMU 10",
                                            "simulated", lineterm="", n=1)
                failures.append(f"{name} {command}:\n" + "\n".join(diff))
    return failures


def report(label: str, failures: list) -> bool:
    print(f"{'ok' if not failures else 'FAIL'} {label}")
    for failure in failures:
        print("  " + failure.replace("\n", "\n  "))
    return bool(failures)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
