#!/usr/bin/env python3
"""Checks `qm set` lines (one a line, as `hostctl results apply --format qm`
prints them; '#' lines are skipped) against Proxmox VE's API schema, with the
fake PVE API's own validator (tests/support/pve_fake/schema.py): each
`--KEY VALUE` becomes a parameter of PUT /nodes/{node}/qemu/{vmid}/config,
which is what `qm set` calls, and property strings (scsiN, virtioN, sataN)
are parsed against their formats.

usage: check_qm_lines.py PVE_FAKE_DIR SCHEMA(.json[.gz]) LINES_FILE
Prints each problem; exits 1 if there is any, 0 when every line passes.
"""

import shlex
import sys

CONFIG_PATH = "/nodes/{node}/qemu/{vmid}/config"


def line_params(line: str) -> dict:
    words = shlex.split(line)
    if words[:2] != ["qm", "set"] or len(words) < 3:
        raise ValueError(f"not a qm set line: {line}")
    params = {"node": "pve", "vmid": words[2]}
    options = words[3:]
    if len(options) % 2:
        raise ValueError(f"an option without a value: {line}")
    for key, value in zip(options[::2], options[1::2]):
        if not key.startswith("--"):
            raise ValueError(f"'{key}' is not an option: {line}")
        params[key[2:]] = value
    return params


def main() -> int:
    fake_dir, schema_path, lines_path = sys.argv[1:4]
    sys.path.insert(0, fake_dir)
    import schema  # the fake's validator: its own rules, not restated here

    api = schema.ApiSchema.load(schema_path)
    method = api.method(CONFIG_PATH, "PUT")
    if method is None:
        print(f"the schema has no PUT {CONFIG_PATH}")
        return 1
    unchecked = set()
    validator = schema.Validator(api, unchecked.add)
    problems = 0
    checked = 0
    with open(lines_path, encoding="utf-8") as handle:
        for line in handle:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            checked += 1
            errors = validator.validate(method, line_params(line))
            for parameter, message in sorted(errors.items()):
                print(f"{line}\n  {parameter}: {message.strip()}")
                problems += 1
    if unchecked:
        print(f"formats without a rule in the fake (passed unchecked): {sorted(unchecked)}")
    print(f"{checked} lines checked, {problems} problems")
    return 1 if problems or not checked else 0


if __name__ == "__main__":
    sys.exit(main())
