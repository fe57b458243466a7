#!/usr/bin/env python3
"""Our cfg2cmd cases: tests/data/pve/cfg2cmd/NAME.conf -> the QEMU argv of
qemu_server.config_to_command, compared with NAME.conf.cmd, as qemu-server's
test/run_config2command_tests.pl does (same host mocks: QEMU 9.2, the iSCSI
initiator name iqn.1993-08.org.debian:01:aabbccddeeff, KVM available, the
storages `local` (dir /var/lib/vz) and `local-lvm` (lvmthin, VG pve), VM id
from the file's first disk). Comment lines: `# TEST:` describes the case,
`# FACTS:` / `# FROM CODE:` say where each expected line comes from,
`# EXPECT_WARN:` is a warning PVE logs for the config.

The adaptation step (qemu_server.adapt_for_this_machine) is checked too, on the
scsi-single case: each of its changes, and nothing else.

  python3 tests/support/pve_fake/cfg2cmd_test.py [--write-missing] [DATA_DIR]
"""

import difflib
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qemu_server  # noqa: E402

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


def test_environment() -> qemu_server.HostEnvironment:
    return qemu_server.HostEnvironment(qemu_version="9.2.0", kvm_available=True,
                                       initiator_name="iqn.1993-08.org.debian:01:aabbccddeeff")


def check_case(conf_path: str, write_missing: bool) -> list:
    config, expected_warnings = read_case(conf_path)
    warnings = []
    command = qemu_server.config_to_command(config, vmid_of(config), test_environment(), warnings)
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


def check_adaptation(data_dir: str) -> list:
    """Every change adapt_for_this_machine makes to the scsi-single case, and only those."""
    config, _ = read_case(os.path.join(data_dir, "scsi-single-iothread-ssd-discard-unsafe.conf"))
    pve_argv = qemu_server.config_to_command(config, 101, test_environment())
    host_paths = {"/dev/pve/vm-101-disk-0": "/tmp/run/local-lvm/vm-101-disk-0.raw",
                  "/dev/pve/vm-101-disk-1": "/tmp/run/local-lvm/vm-101-disk-1.raw"}
    adapted, notes = qemu_server.adapt_for_this_machine(
        pve_argv, 101, qemu_server.Adaptation(run_dir="/tmp/run", host_paths=host_paths, kvm_works=False,
                                              qemu_binary="qemu-system-x86_64", qemu_version="7.2.0"))
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
    expect("type=pc-i440fx-7.2" in adapted[adapted.index("-machine") + 1], "upstream machine type")
    expect("accel=tcg" in adapted[adapted.index("-machine") + 1], "TCG when KVM does not work")
    expect(adapted[adapted.index("-cpu") + 1] == "qemu64", "the kvm: 0 CPU under TCG")
    expect(not any(a.startswith("type=tap") or "netdev=" in a for a in adapted), "net devices dropped")
    expect("file=/tmp/run/local-lvm/vm-101-disk-1.raw,if=none,id=drive-scsi1,cache=unsafe,discard=on,"
           "format=raw,aio=io_uring,detect-zeroes=unmap" in adapted, "data disk at its host path, options kept")
    expect("splash=" not in text, "missing splash file dropped")
    untouched = [a for a in pve_argv if a.startswith(("-device", "scsi-hd", "virtio-scsi-pci", "iothread,"))]
    expect(all(a in adapted for a in untouched), "disk devices and iothreads unchanged")
    expect(len(notes) >= 6, f"each change explained ({notes})")
    return failures


def main(argv: list) -> int:
    write_missing = "--write-missing" in argv
    arguments = [a for a in argv[1:] if not a.startswith("--")]
    data_dir = arguments[0] if arguments else DEFAULT_DATA_DIR
    cases = sorted(f for f in os.listdir(data_dir) if f.endswith(".conf"))
    if not cases:
        print(f"cfg2cmd_test: no .conf in {data_dir}")
        return 1
    failed = 0
    for name in cases:
        failures = check_case(os.path.join(data_dir, name), write_missing)
        print(f"{'ok' if not failures else 'FAIL'} {name}")
        for failure in failures:
            print("  " + failure.replace("\n", "\n  "))
        failed += bool(failures)
    failures = check_adaptation(data_dir)
    print(f"{'ok' if not failures else 'FAIL'} adaptation")
    for failure in failures:
        print("  " + failure)
    failed += bool(failures)
    print(f"cfg2cmd_test: {len(cases) + 1 - failed}/{len(cases) + 1} passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
