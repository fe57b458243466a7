#!/usr/bin/env python3
"""scripts/pve-make-template.sh, checked against PVE 8.4's API schema.

The script runs with --dry-run (it prints its commands); each `qm` command
that maps to an API call is validated with the fake PVE API's own schema
checker (tests/support/pve_fake/schema.py), as pvesh/qm would pass it:
  qm create VMID OPTS   -> POST /nodes/{node}/qemu
  qm set VMID OPTS      -> POST /nodes/{node}/qemu/{vmid}/config
  qm template VMID      -> POST /nodes/{node}/qemu/{vmid}/template
(`qm importdisk` is a CLI-only command of qm, with no API call to check.)
Exit status 0 when every command is valid, 1 otherwise, 77 without a schema.

Usage: template_script_test.py SCRIPT SCHEMA
"""

import os
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support", "pve_fake"))
from schema import ApiSchema, Validator  # noqa: E402

API_OF = {
    "create": ("/nodes/{node}/qemu", "POST"),
    "set": ("/nodes/{node}/qemu/{vmid}/config", "POST"),
    "template": ("/nodes/{node}/qemu/{vmid}/template", "POST"),
}


def options_of(words: list) -> dict:
    options = {}
    index = 0
    while index < len(words):
        key = words[index].removeprefix("--")
        options[key] = words[index + 1]
        index += 2
    return options


def main(script: str, schema_path: str) -> int:
    if not os.path.exists(schema_path):
        print(f"SKIPPED: no PVE schema at {schema_path}")
        return 77
    validator = Validator(ApiSchema.load(schema_path), lambda name: None)
    schema = validator._schema
    printed = subprocess.run([script, "--image", "/tmp/image.qcow2", "--agent", "/tmp/disksweep-agent",
                              "--vmid", "9000", "--storage", "local-lvm", "--dry-run"],
                             capture_output=True, text=True, check=True).stdout
    checked = set()
    problems = []
    for line in printed.splitlines():
        words = shlex.split(line)
        if words[:1] != ["qm"] or words[1] not in API_OF:
            continue
        path, verb = API_OF[words[1]]
        params = {"node": "pve1", "vmid": words[2], **options_of(words[3:])}
        errors = validator.validate(schema.method(path, verb), params)
        checked.add(words[1])
        if errors:
            problems.append(f"{line.strip()}: {errors}")
    missing = set(API_OF) - checked
    if missing:
        problems.append(f"the script printed no qm {', '.join(sorted(missing))}")
    for problem in problems:
        print("INVALID:", problem)
    print(f"checked qm {', '.join(sorted(checked))} against {schema_path}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
