#!/usr/bin/env python3
"""A fake Proxmox VE API server for disksweep's contract tests.

It simulates PVE 8.4 or 9.1 (--pve-version), validates every request
against that release's own API schema (--schema: pve-api-schema.json for
8.4, pve9-api-schema.json for 9.1; a mismatch is refused at start), checks
its permissions as that release's code does (access.py; --access FILE: users,
tokens, roles, ACLs) and simulates what a benchmark orchestrator uses:
nodes, storages, VMs and their configs, a template to clone, /cluster/nextid
and /cluster/resources, worker tasks with real UPIDs, and the guest agent
(ping, exec/exec-status, file-read/file-write). See docs/proxmox.md and the
modules' docs: schema.py (validation), api.py (simulation), faults.py
(fault injection), guest.py (guest commands), certs.py (test certificates),
server.py (HTTP pipeline, control endpoints).

    pve_fake.py --schema PVE-API-SCHEMA.json --cert-dir DIR --port-file FILE
                --token 'root@pam!disksweep=SECRET' [options]

It binds 127.0.0.1 on a free port (unless --port), then writes the port to
--port-file (atomically), so tests never collide, and serves until SIGTERM
or SIGINT.
"""

import argparse
import json
import os
import signal
import sys

# No __pycache__ in the source tree.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from access import VERSIONS  # noqa: E402 (after the path set-up)
from server import FakePve, Options  # noqa: E402


def parse_arguments(argv: list) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--schema", required=True, help="pve-api-schema.json")
    parser.add_argument("--cert-dir", required=True,
                        help="server.pem/key, other.pem/key, ca.pem; missing ones are generated (certs.py)")
    parser.add_argument("--token", required=True, help="the API token: USER@REALM!TOKENID=SECRET")
    parser.add_argument("--pve-version", default="8.4",
                        help="the PVE release simulated: " + " or ".join(VERSIONS) + " (default 8.4)")
    parser.add_argument("--access", help="users, tokens, roles and ACLs as JSON (access.py); default: the "
                                         "token may do everything")
    parser.add_argument("--version-override", metavar="X.Y.Z",
                        help="GET /version answers this version (a release a client must refuse); "
                             "everything else follows --pve-version")
    parser.add_argument("--port-file", help="written with the bound port once the server listens")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: any free port (default)")
    parser.add_argument("--node", action="append", dest="nodes", help="a cluster node (repeatable; default pve1)")
    parser.add_argument("--state", help="initial nodes, storages and VMs as JSON (replaces the defaults)")
    parser.add_argument("--template-vmid", type=int, default=9000,
                        help="id of the template VM on the first node (default 9000); 0 for none")
    parser.add_argument("--task-seconds", type=float, default=0.3, help="how long a task runs (default 0.3)")
    parser.add_argument("--agent-delay", type=float, default=0.2,
                        help="seconds after start until the guest agent answers (default 0.2)")
    parser.add_argument("--nextid-range", default="100:999999999", help="LOW:HIGH for /cluster/nextid")
    parser.add_argument("--guest-root", help="directory of the guests' file systems (default CERT_DIR/guests)")
    parser.add_argument("--guest-exec", help="run agent/exec commands on this machine as: GUEST_EXEC ARGV...")
    parser.add_argument("--fault", action="append", default=[], help="a fault rule as JSON (faults.py; repeatable)")
    parser.add_argument("--tls-fault", action="store_true", help="present the alternate certificate (other.pem)")
    parser.add_argument("--max-post", type=int, default=64 * 1024, help="largest request body (default 65536)")
    parser.add_argument("--unauthorized-delay", type=float, default=0.0, help="pause before a 401 (pveproxy: 3)")
    parser.add_argument("--quiet", action="store_true", help="no request log on stderr")
    parser.add_argument("--real-guests", metavar="IMAGE_DIR",
                        help="boot real QEMU guests from IMAGE_DIR behind the fake (real_backend.py)")
    parser.add_argument("--real-work-dir", help="the real backend's volumes and sockets (default: a temp dir)")
    parser.add_argument("--template-from-script", metavar="FILE",
                        help="the template VM from `scripts/pve-make-template.sh --dry-run`'s output "
                             "(template_script.py); replaces a VM of the same id")
    parser.add_argument("--inject-qemu", metavar="JSON",
                        help="real guests: start QEMU with these -drive options instead of the config's, "
                             "e.g. '{\"cache\": \"writeback\"}' (optionally \"vmid\", \"drive\")")
    arguments = parser.parse_args(argv)
    if arguments.pve_version not in VERSIONS:
        parser.error(f"--pve-version {arguments.pve_version}: not simulated; give one of " + ", ".join(VERSIONS))
    return arguments


def options_from(arguments: argparse.Namespace) -> Options:
    low, _, high = arguments.nextid_range.partition(":")
    return Options(
        schema_path=arguments.schema, cert_dir=arguments.cert_dir, token=arguments.token,
        pve_version=arguments.pve_version, version_override=arguments.version_override,
        access_file=arguments.access,
        nodes=arguments.nodes or ["pve1"], state_file=arguments.state,
        template_vmid=arguments.template_vmid or None, task_seconds=arguments.task_seconds,
        agent_delay=arguments.agent_delay, nextid_range=(int(low), int(high)), guest_root=arguments.guest_root,
        guest_exec=arguments.guest_exec, faults=[json.loads(rule) for rule in arguments.fault],
        tls_fault=arguments.tls_fault, max_post=arguments.max_post,
        unauthorized_delay=arguments.unauthorized_delay, host=arguments.host, port=arguments.port,
        quiet=arguments.quiet, real_guests=arguments.real_guests, real_work_dir=arguments.real_work_dir,
        template_script=arguments.template_from_script,
        inject_qemu=json.loads(arguments.inject_qemu) if arguments.inject_qemu else None)


def write_port_file(path: str, port: int) -> None:
    temporary = f"{path}.tmp{os.getpid()}"
    with open(temporary, "w", encoding="ascii") as handle:
        handle.write(f"{port}\n")
    os.replace(temporary, path)


def _stop_serving(signum, frame):
    raise KeyboardInterrupt


def main(argv: list) -> int:
    arguments = parse_arguments(argv)
    try:
        fake = FakePve(options_from(arguments))
    except ValueError as error:   # a schema of another release, a bad --access file
        print(f"pve_fake: {error}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _stop_serving)
    if arguments.port_file:
        write_port_file(arguments.port_file, fake.port)
    try:
        fake.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        fake.server.server_close()
        fake.close_machines()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
