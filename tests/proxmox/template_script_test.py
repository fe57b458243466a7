#!/usr/bin/env python3
"""scripts/pve-make-template.sh, checked against PVE 8.4's API schema.

The script runs with --dry-run (it prints its commands), once per mode: the
cloud image (--image, --agent) and the project's own image (--from-image,
with a stand-in image directory). Each `qm` command that maps to an API call
is validated with the fake PVE API's own schema checker
(tests/support/pve_fake/schema.py), as pvesh/qm would pass it:
  qm create VMID OPTS   -> POST /nodes/{node}/qemu
  qm set VMID OPTS      -> POST /nodes/{node}/qemu/{vmid}/config
  qm template VMID      -> POST /nodes/{node}/qemu/{vmid}/template
(`qm importdisk` is a CLI-only command of qm, with no API call to check.)
For --from-image it also checks what the template must hold for the image
to boot: `args` with direct kernel boot of the files the script installs,
disksweep.guest=qga on the kernel command line, the imported root.img on
scsi0 with serial disksweep-root, agent enabled=1, virtio-scsi-single; and
that an image without qemu-guest-agent, or --agent with --from-image, is
refused.
Exit status 0 when every check passes, 1 otherwise, 77 without a schema.

Usage: template_script_test.py SCRIPT SCHEMA
"""

import os
import shlex
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support", "pve_fake"))
from schema import ApiSchema, Validator  # noqa: E402

API_OF = {
    "create": ("/nodes/{node}/qemu", "POST"),
    "set": ("/nodes/{node}/qemu/{vmid}/config", "POST"),
    "template": ("/nodes/{node}/qemu/{vmid}/template", "POST"),
}
INPUT_HASH = "ab" * 32
BOOT_DIR = "/var/lib/vz/snippets"


def options_of(words: list) -> dict:
    options = {}
    index = 0
    while index < len(words):
        key = words[index].removeprefix("--")
        options[key] = words[index + 1]
        index += 2
    return options


def dry_run(script: str, args: list) -> subprocess.CompletedProcess:
    return subprocess.run([script, *args, "--vmid", "9000", "--storage", "local-lvm", "--dry-run"],
                          capture_output=True, text=True)


def printed_commands(script: str, args: list, problems: list) -> list:
    """The dry run's commands, each as its list of words."""
    result = dry_run(script, args)
    if result.returncode != 0:
        problems.append(f"{' '.join(args)}: exit {result.returncode}: {result.stderr.strip()}")
        return []
    return [shlex.split(line) for line in result.stdout.splitlines() if line.strip()]


def check_qm_schema(validator: Validator, mode: str, commands: list, problems: list) -> None:
    schema = validator._schema
    checked = set()
    for words in commands:
        if words[:1] != ["qm"] or words[1] not in API_OF:
            continue
        path, verb = API_OF[words[1]]
        params = {"node": "pve1", "vmid": words[2], **options_of(words[3:])}
        errors = validator.validate(schema.method(path, verb), params)
        checked.add(words[1])
        if errors:
            problems.append(f"{mode}: {shlex.join(words)}: {errors}")
    missing = set(API_OF) - checked
    if missing:
        problems.append(f"{mode}: the script printed no qm {', '.join(sorted(missing))}")
    if commands and commands[-1][:2] != ["qm", "template"]:
        problems.append(f"{mode}: the last command is not qm template: {shlex.join(commands[-1])}")


def make_image_dir(root: str, with_qga: bool) -> str:
    """A stand-in of guest/build-image.sh's output: the files and the
    manifest lines the script reads."""
    image = os.path.join(root, "qga" if with_qga else "noqga")
    os.makedirs(image)
    for name in ("vmlinux", "vmlinuz", "initrd.img", "root.img"):
        open(os.path.join(image, name), "w").close()
    qga_line = '    "qemu-guest-agent": "1:7.2+dfsg-7+deb12u18+b3",\n' if with_qga else ""
    with open(os.path.join(image, "manifest.json"), "w") as manifest:
        manifest.write('{\n  "format": 1,\n'
                       f'  "input_hash": "{INPUT_HASH}",\n'
                       '  "packages": {\n'
                       '    "fio": "3.33-3",\n'
                       f'{qga_line}'
                       '    "busybox-static": "1:1.35.0-4+b3"\n'
                       '  }\n}\n')
    return image


def first(commands: list, prefix: list) -> list:
    return next((words for words in commands if words[:len(prefix)] == prefix), [])


def check_from_image(validator: Validator, image: str, commands: list, problems: list) -> None:
    def expect(condition: bool, what: str) -> None:
        if not condition:
            problems.append(f"from-image: {what}")

    installs = {words[-2]: words[-1] for words in commands if words[:1] == ["install"]}
    kernel = f"{BOOT_DIR}/disksweep-{INPUT_HASH[:16]}-vmlinux"
    initrd = f"{BOOT_DIR}/disksweep-{INPUT_HASH[:16]}-initrd.img"
    expect(installs.get(f"{image}/vmlinux") == kernel, f"vmlinux not installed as {kernel}: {installs}")
    expect(installs.get(f"{image}/initrd.img") == initrd, f"initrd.img not installed as {initrd}: {installs}")

    create = options_of(first(commands, ["qm", "create"])[3:])
    expect(create.get("scsihw") == "virtio-scsi-single", f"scsihw: {create.get('scsihw')}")
    expect(create.get("serial0") == "socket", f"serial0: {create.get('serial0')}")
    expect("net0" not in create, "the image has no network driver, yet net0 is set")
    agent = validator.parse_property_string(
        validator._schema.method(*API_OF["create"]).schema_of("agent")["format"], create.get("agent", ""), "agent")
    expect(str(agent.get("enabled")) == "1", f"agent: {create.get('agent')}")
    # qemu-server PVE/QemuServer.pm, config_to_command: args are split with
    # PVE::Tools::split_args (shellwords), as shlex does.
    args = shlex.split(create.get("args", ""))
    expect(args[:4] == ["-kernel", kernel, "-initrd", initrd] and args[4:5] == ["-append"] and len(args) == 6,
           f"args: {args}")
    cmdline = args[5].split() if len(args) == 6 else []
    for word in ("disksweep.guest=qga", "console=ttyS0"):
        expect(word in cmdline, f"kernel command line lacks {word}: {cmdline}")

    importdisk = first(commands, ["qm", "importdisk"])
    expect(importdisk[2:] == ["9000", f"{image}/root.img", "local-lvm", "--format", "raw"],
           f"importdisk: {importdisk}")
    scsi0_text = options_of(first(commands, ["qm", "set"])[3:]).get("scsi0", "")
    scsi0 = validator.parse_property_string(
        validator._schema.method(*API_OF["set"]).schema_of("scsi0")["format"], scsi0_text, "scsi0")
    expect(scsi0.get("file") == "local-lvm:vm-9000-disk-0", f"scsi0 is not the imported disk: {scsi0_text}")
    expect(scsi0.get("serial") == "disksweep-root", f"scsi0 has no serial=disksweep-root: {scsi0_text}")


def check_refusals(script: str, root: str, image: str, problems: list) -> None:
    without_qga = make_image_dir(root, with_qga=False)
    result = dry_run(script, ["--from-image", without_qga])
    if result.returncode == 0 or "qemu-guest-agent" not in result.stderr:
        problems.append(f"an image without qemu-guest-agent was not refused: {result.returncode} {result.stderr}")
    result = dry_run(script, ["--from-image", image, "--agent", "/tmp/disksweep-agent"])
    if result.returncode == 0:
        problems.append("--from-image with --agent was not refused")


def main(script: str, schema_path: str) -> int:
    if not os.path.exists(schema_path):
        print(f"SKIPPED: no PVE schema at {schema_path}")
        return 77
    validator = Validator(ApiSchema.load(schema_path), lambda name: None)
    problems = []
    cloud = printed_commands(script, ["--image", "/tmp/image.qcow2", "--agent", "/tmp/disksweep-agent"], problems)
    check_qm_schema(validator, "cloud image", cloud, problems)
    with tempfile.TemporaryDirectory() as root:
        image = make_image_dir(root, with_qga=True)
        own = printed_commands(script, ["--from-image", image], problems)
        check_qm_schema(validator, "from-image", own, problems)
        if own:
            check_from_image(validator, image, own, problems)
        check_refusals(script, root, image, problems)
    for problem in problems:
        print("INVALID:", problem)
    print(f"checked both modes' qm create, set, template against {schema_path}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
