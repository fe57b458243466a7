#!/usr/bin/env python3
"""The fake's permission model and its two releases (ctest: proxmox/pve_fake_access).

    access_test.py PVE84_SCHEMA PVE91_SCHEMA [unittest options]

Checks access.py against pve-access-control's rules (propagation, the most
specific ACL, NoAccess, privilege-separated tokens, root@pam, the privilege
lists of 8.4 and 9.1), and a running fake of each release: a token with the
least-privilege role of its release runs a whole sweep's calls; the same role
without any one privilege gets PVE's 403 naming it (or PVE's bare 403 where
PVE names nothing); the 9.1 monitor's per-command rule; agent/file-read's
offset and count (9.1 only); GET /access/permissions; the version checks of
pve_fake.py. Exits 77 (skipped) when a schema or the openssl CLI is missing.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import urllib.parse
import urllib.request

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import access  # noqa: E402 (after the path set-up)
import selftest  # noqa: E402
from server import DEFAULT_TEMPLATE, FakePve, Options  # noqa: E402

SKIP_EXIT_CODE = 77
SCHEMAS = {}      # release -> schema path, set by main()
USER = "disksweep@pve"
SECRET = "7c0a1d2e-0000-4000-8000-accesstest01"

# The least-privilege role of a disksweep sweep per release (docs/proxmox.md
# gives it to users): each privilege is needed by a call of SWEEP below.
COMMON_PRIVILEGES = ["VM.Allocate", "VM.Clone", "VM.Config.Disk", "VM.Config.CPU", "VM.Config.Memory",
                     "VM.Config.HWType", "VM.Config.Options", "VM.PowerMgmt", "VM.Audit",
                     "Datastore.AllocateSpace", "Datastore.Audit", "SDN.Use"]
ROLES = {"8.4": COMMON_PRIVILEGES + ["VM.Monitor"],
         "9.1": COMMON_PRIVILEGES + ["VM.GuestAgent.Unrestricted", "Sys.Audit"]}
# Where the role is granted (propagating), to the user and to its token.
ROLE_PATHS = ["/vms", "/storage/local-lvm", "/sdn/zones/localnetwork/vmbr0"]

# What PVE answers when the role lacks one privilege: (step, message part).
# VM.Allocate: clone's `or` (newid or pool) fails as a whole, and
# exec_api2_perm_check's `or` raises raise_perm_exc() without words.
MISSING = {
    "VM.Allocate": ("clone", "Permission check failed\n"),
    "VM.Clone": ("clone", "(/vms/9000, VM.Clone)"),
    "Datastore.AllocateSpace": ("clone", "(/storage/local-lvm, Datastore.AllocateSpace)"),
    "SDN.Use": ("clone", "(/sdn/zones/localnetwork/vmbr0, SDN.Use)"),
    "VM.Config.CPU": ("config", "(/vms/{vmid}, VM.Config.CPU)"),
    "VM.Config.Memory": ("config", "(/vms/{vmid}, VM.Config.Memory)"),
    "VM.Config.HWType": ("config", "(/vms/{vmid}, VM.Config.HWType)"),
    "VM.Config.Options": ("config", "(/vms/{vmid}, VM.Config.Options)"),
    "VM.Config.Disk": ("config", "(/vms/{vmid}, VM.Config.Disk)"),
    "VM.Audit": ("read config", "(/vms/{vmid}, VM.Audit)"),
    "VM.PowerMgmt": ("start", "(/vms/{vmid}, VM.PowerMgmt)"),
    "VM.Monitor": ("agent ping", "(/vms/{vmid}, VM.Monitor)"),
    "VM.GuestAgent.Unrestricted": ("agent ping", "(/vms/{vmid}, VM.GuestAgent.Audit|VM.GuestAgent.Unrestricted)"),
    "Datastore.Audit": ("volume", "(/storage/local-lvm, Datastore.Audit)"),
    "Sys.Audit": ("monitor", "(/vms/{vmid}, Sys.Audit|Sys.Modify)"),
}


def sweep(vmid: int) -> list:
    """A disksweep run's calls, in order: (step, method, path, params, is a task)."""
    vm = f"/nodes/pve1/qemu/{vmid}"
    disk = "local-lvm:1,cache=none,discard=on,iothread=1,ssd=1"
    return [
        ("version", "GET", "/version", {}, False),
        ("nodes", "GET", "/nodes", {}, False),
        ("resources", "GET", "/cluster/resources", {"type": "vm"}, False),
        ("nextid", "GET", "/cluster/nextid", {"vmid": vmid}, False),
        ("storage", "GET", "/nodes/pve1/storage", {"storage": "local-lvm"}, False),
        ("clone", "POST", "/nodes/pve1/qemu/9000/clone", {"newid": vmid, "name": f"ds-{vmid}"}, True),
        ("config", "POST", f"{vm}/config", {"cores": 2, "memory": 2048, "scsihw": "virtio-scsi-single",
                                            "tags": "disksweep", "scsi1": disk}, True),
        ("read config", "GET", f"{vm}/config", {}, False),
        ("start", "POST", f"{vm}/status/start", {}, True),
        ("agent ping", "POST", f"{vm}/agent/ping", {}, False),
        ("agent write", "POST", f"{vm}/agent/file-write", {"file": "/tmp/job", "content": "job"}, False),
        ("agent exec", "POST", f"{vm}/agent/exec", {"command": ["echo", "hi"]}, False),
        ("agent read", "GET", f"{vm}/agent/file-read", {"file": "/tmp/job"}, False),
        ("monitor", "POST", f"{vm}/monitor", {"command": "info block"}, False),
        ("volume", "GET", f"/nodes/pve1/storage/local-lvm/content/local-lvm:vm-{vmid}-disk-1", {}, False),
        ("status", "GET", f"{vm}/status/current", {}, False),
        ("stop", "POST", f"{vm}/status/stop", {}, True),
        ("delete", "DELETE", vm, {"purge": 1, "destroy-unreferenced-disks": 1}, True),
    ]


class TokenClient(selftest.ApiClient):
    """API calls as one token of the access file."""

    def __init__(self, port: int, tokenid: str):
        super().__init__(port)
        self.tokenid = tokenid

    def call(self, method, path, params=None, token=SECRET, timeout=30):
        body = urllib.parse.urlencode(params or {}, doseq=True)
        url = f"https://127.0.0.1:{self.port}/api2/json{path}"
        if method in ("GET", "DELETE") and body:
            url, body = f"{url}?{body}", ""
        request = urllib.request.Request(url, data=body.encode() if body else None, method=method)
        request.add_header("Authorization", f"PVEAPIToken={self.tokenid}={token}")
        return self._send(request, timeout)

    def run(self, steps: list):
        """None when every step passed, else (step, status, message) of the first failure."""
        for step, method, path, params, is_task in steps:
            status, body, reason = self.call(method, path, params)
            if step == "agent ping":   # as the daemon does, until the guest's agent is up
                status, body, reason = selftest.eventually(
                    lambda: _if_not_starting(self.call(method, path, params)), "the agent did not come up")
            if status != 200:
                return step, status, (body or {}).get("message", reason)
            if is_task:
                exitstatus = self.wait_task(body["data"])["exitstatus"]
                if exitstatus != "OK":
                    return step, "task", exitstatus
        return None


def _if_not_starting(answer: tuple):
    """The answer, unless it says the guest agent is not up yet (None: ask again)."""
    starting = answer[0] == 500 and "guest agent is not running" in (answer[1] or {}).get("message", "")
    return None if starting else answer


def access_file(directory: str, version: str, token_roles: dict, extra: dict = None) -> str:
    """The user has the release's role on ROLE_PATHS; each token (name ->
    privileges) a role of its own on the same paths (privsep=1)."""
    data = {"users": [USER], "roles": {"DiskSweep": ROLES[version]}, "tokens": [], "acls": []}
    for path in ROLE_PATHS:
        data["acls"].append({"path": path, "type": "user", "ugid": USER, "role": "DiskSweep"})
    for name, privileges in token_roles.items():
        tokenid = f"{USER}!{name}"
        data["tokens"].append({"tokenid": tokenid, "privsep": 1, "secret": SECRET})
        data["roles"][f"R-{name}"] = privileges
        for path in ROLE_PATHS:
            data["acls"].append({"path": path, "type": "token", "ugid": tokenid, "role": f"R-{name}"})
    for key, value in (extra or {}).items():
        data[key] = data.get(key, []) + value
    path = os.path.join(directory, "access.json")
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(data, handle)
    return path


def state_file(directory: str) -> str:
    """The default state, but the template has a NIC on vmbr0 (as
    scripts/pve-make-template.sh makes it), so cloning needs SDN.Use."""
    template = {**{k: v.format(vmid=9000) for k, v in DEFAULT_TEMPLATE.items()},
                "net0": "virtio=BC:24:11:00:00:01,bridge=vmbr0"}
    data = {"nodes": ["pve1"],
            "storages": [{"id": "local", "type": "dir", "content": ["iso", "vztmpl", "backup", "images"]},
                         {"id": "local-lvm", "type": "lvmthin", "content": ["images", "rootdir"]}],
            "vms": [{"vmid": 9000, "node": "pve1", "config": template}]}
    path = os.path.join(directory, "state.json")
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(data, handle)
    return path


class Server:
    """A fake of one release in this process, with an access file."""

    def __init__(self, version: str, token_roles: dict, extra: dict = None):
        self.directory = tempfile.mkdtemp(prefix="pve-fake-access-")
        options = Options(schema_path=SCHEMAS[version], cert_dir=selftest.CERT_DIR,
                          token=f"{USER}!{next(iter(token_roles))}={SECRET}", pve_version=version,
                          access_file=access_file(self.directory, version, token_roles, extra),
                          state_file=state_file(self.directory), guest_root=os.path.join(self.directory, "g"),
                          task_seconds=0.05, agent_delay=0.05, quiet=True)
        self.fake = FakePve(options)
        self.port = self.fake.start()

    def client(self, name: str) -> TokenClient:
        return TokenClient(self.port, f"{USER}!{name}")

    def close(self):
        self.fake.stop()
        shutil.rmtree(self.directory, ignore_errors=True)


# ---- the model alone ---------------------------------------------------------------------------


class Model(unittest.TestCase):
    """access.py against AccessControl.pm roles and RPCEnvironment.pm permissions."""

    def rpc(self, acls: list, privsep: bool = True, version: str = "9.1") -> access.Rpc:
        config = access.AccessConfig(version, roles=access.builtin_roles(version))
        config.users.add("u@pve")
        config.tokens["u@pve!t"] = {"privsep": privsep, "secret": None}
        config.tokens["root@pam!t"] = {"privsep": True, "secret": None}
        config.add_role("Aud", ["VM.Audit"])
        config.acls = [access.Acl(*acl) for acl in acls]
        return access.Rpc(config)

    def test_propagation_and_the_most_specific_path(self):
        rpc = self.rpc([("/vms", "user", "u@pve", "PVEVMAdmin", True),
                        ("/vms/100", "user", "u@pve", "Aud", False)])
        self.assertIn("VM.Allocate", rpc.permissions("u@pve", "/vms/101"))
        self.assertEqual(rpc.permissions("u@pve", "/vms/100"), {"VM.Audit": 0})
        self.assertEqual(rpc.permissions("u@pve", "/storage"), {})

    def test_a_non_propagating_acl_counts_on_its_path_alone(self):
        rpc = self.rpc([("/vms", "user", "u@pve", "Aud", False)])
        self.assertEqual(rpc.permissions("u@pve", "/vms"), {"VM.Audit": 0})
        self.assertEqual(rpc.permissions("u@pve", "/vms/100"), {})

    def test_no_access_wins_over_every_other_role_on_the_path(self):
        rpc = self.rpc([("/", "user", "u@pve", "Administrator", True),
                        ("/vms/100", "user", "u@pve", "NoAccess", True),
                        ("/vms/100", "user", "u@pve", "PVEVMAdmin", True)])
        self.assertEqual(rpc.permissions("u@pve", "/vms/100"), {})
        self.assertIn("VM.Allocate", rpc.permissions("u@pve", "/vms/101"))

    def test_a_privsep_token_gets_the_intersection_with_its_user(self):
        acls = [("/vms", "user", "u@pve", "Aud", True), ("/vms", "token", "u@pve!t", "PVEVMAdmin", True)]
        self.assertEqual(self.rpc(acls).permissions("u@pve!t", "/vms/100"), {"VM.Audit": 1})
        self.assertEqual(self.rpc(acls, privsep=False).permissions("u@pve!t", "/vms/100"), {"VM.Audit": 1})
        no_token_acl = [("/vms", "user", "u@pve", "PVEVMAdmin", True)]
        self.assertEqual(self.rpc(no_token_acl).permissions("u@pve!t", "/vms/100"), {})
        self.assertIn("VM.Allocate", self.rpc(no_token_acl, privsep=False).permissions("u@pve!t", "/vms/100"))

    def test_root_has_everything_but_its_privsep_token_only_its_acls(self):
        rpc = self.rpc([("/vms", "token", "root@pam!t", "Aud", True)])
        self.assertEqual(set(rpc.permissions("root@pam", "/x")), access.valid_privileges("9.1"))
        self.assertEqual(rpc.permissions("root@pam!t", "/vms/5"), {"VM.Audit": 1})
        self.assertEqual(rpc.permissions("nobody@pve!t", "/vms/5"), {})

    def test_check_any_names_every_privilege_asked(self):
        rpc = self.rpc([])
        with self.assertRaises(access.ApiError) as caught:
            rpc.check_any("u@pve!t", "/vms/100", ["VM.GuestAgent.Audit", "VM.GuestAgent.Unrestricted"])
        self.assertEqual((caught.exception.status, caught.exception.message),
                         (403, "Permission check failed (/vms/100, VM.GuestAgent.Audit|VM.GuestAgent.Unrestricted)"))

    def test_the_privileges_of_each_release(self):
        for version, gone, new in (("8.4", "VM.GuestAgent.Unrestricted", "VM.Monitor"),
                                   ("9.1", "VM.Monitor", "VM.GuestAgent.Unrestricted")):
            config = access.AccessConfig(version, roles=access.builtin_roles(version))
            with self.assertRaisesRegex(ValueError, f"^create role failed: invalid privilege '{gone}'$"):
                config.add_role("DiskSweep", ["VM.Audit", gone])
            config.add_role("DiskSweep", ROLES[version])
            self.assertIn(new, config.roles["PVEVMAdmin"])
        nine = access.builtin_roles("9.1")
        self.assertEqual({p for p in nine["PVEVMUser"] if p.startswith("VM.GuestAgent")},
                         {"VM.GuestAgent.Audit", "VM.GuestAgent.FileRead", "VM.GuestAgent.FileWrite",
                          "VM.GuestAgent.FileSystemMgmt"})
        self.assertIn("VM.Replicate", nine["Administrator"])
        self.assertNotIn("VM.Replicate", access.valid_privileges("8.4"))
        self.assertEqual(nine["PVEAuditor"] - access.builtin_roles("8.4")["PVEAuditor"], {"VM.GuestAgent.Audit"})


# ---- a running fake of each release ------------------------------------------------------------


class LeastPrivilege(unittest.TestCase):
    """The release's role passes a sweep; without any one privilege it fails where PVE does."""

    def check_release(self, version: str):
        role = ROLES[version]
        tokens = {"full": role, **{f"no{i}": [p for p in role if p != missing] for i, missing in enumerate(role)}}
        server = Server(version, tokens)
        try:
            self.assertIsNone(server.client("full").run(sweep(150)))
            for index, missing in enumerate(role):
                with self.subTest(version=version, missing=missing):
                    vmid = 200 + index
                    failure = server.client(f"no{index}").run(sweep(vmid))
                    self.assertIsNotNone(failure, f"the sweep passed without {missing}")
                    step, message = MISSING[missing]
                    self.assertEqual(failure[0], step, failure)
                    self.assertIn(message.format(vmid=vmid), failure[2] if failure[1] == "task" else
                                  failure[2] + "\n")
                    self.assertIn(failure[1], (403, "task"), failure)
        finally:
            server.close()

    def test_pve_8_4(self):
        self.check_release("8.4")

    def test_pve_9_1(self):
        self.check_release("9.1")


class Release91(unittest.TestCase):
    """What 9.1 adds: the monitor's per-command rule, file-read's window, /access/permissions."""

    @classmethod
    def setUpClass(cls):
        cls.server = Server("9.1", {"full": ROLES["9.1"], "audit": ["VM.Audit"]})
        cls.api = cls.server.client("full")
        assert cls.api.run(sweep(150)[:10]) is None   # cloned, configured, started, agent up

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def monitor(self, command: str):
        return self.api.call("POST", "/nodes/pve1/qemu/150/monitor", {"command": command})

    def test_version(self):
        self.assertEqual(self.api.data("GET", "/version"),
                         {"version": "9.1.19", "release": "9.1", "repoid": "076d7c3c108f0346"})

    def test_info_with_sys_audit_and_the_rest_by_hmp_perms(self):
        status, body, _ = self.monitor("info block")
        self.assertEqual(status, 200, body)
        self.assertIn("drive-scsi0", body["data"])
        self.assertEqual(self.monitor("system_reset")[:2],
                         (403, {"data": None, "message": "Permission check failed (/, Sys.Modify)\n"}))
        self.assertEqual(self.monitor("drive_add 0 x")[1]["message"], "root-only command 'drive_add'\n")
        self.assertIn("non-existent or not assigned", self.monitor("frobnicate")[1]["message"])

    def test_file_read_offset_and_count(self):
        self.api.data("POST", "/nodes/pve1/qemu/150/agent/file-write", {"file": "/tmp/ten", "content": "0123456789"})

        def read(**window):
            return self.api.data("GET", "/nodes/pve1/qemu/150/agent/file-read", {"file": "/tmp/ten", **window})
        self.assertEqual(read(), {"content": "0123456789", "bytes-read": 10})
        self.assertEqual(read(offset=2, count=3), {"content": "234", "bytes-read": 3, "truncated": 1})
        # Exactly COUNT bytes left: QGA saw no EOF, so PVE says truncated.
        self.assertEqual(read(offset=7, count=3), {"content": "789", "bytes-read": 3, "truncated": 1})
        self.assertEqual(read(offset=7, count=4), {"content": "789", "bytes-read": 3})
        self.assertEqual(read(offset=20), {"content": "", "bytes-read": 0})

    def test_access_permissions(self):
        one = self.api.data("GET", "/access/permissions", {"path": "/vms/150"})
        self.assertEqual(set(one), {"/vms/150"})
        # The whole role, propagated from /vms (Datastore.* there too: a role is granted whole).
        self.assertEqual(one["/vms/150"], dict.fromkeys(ROLES["9.1"], 1))
        everything = self.api.data("GET", "/access/permissions")
        self.assertEqual(set(everything), {"/vms", "/storage/local-lvm", "/sdn/zones/localnetwork/vmbr0"})
        self.assertEqual(everything["/sdn/zones/localnetwork/vmbr0"], dict.fromkeys(ROLES["9.1"], 1))
        # Another token's: Sys.Audit on /access (which this one lacks).
        status, body, _ = self.api.call("GET", "/access/permissions", {"userid": f"{USER}!audit"})
        self.assertEqual((status, body["message"]), (403, "Permission check failed (/access, Sys.Audit)\n"))

    def test_lists_show_what_the_token_may_see(self):
        auditor = self.server.client("audit")
        self.assertEqual([e["vmid"] for e in auditor.data("GET", "/cluster/resources", {"type": "vm"})],
                         [150, 9000])
        self.assertEqual(auditor.data("GET", "/nodes/pve1/storage"), [])
        self.assertNotIn("maxmem", auditor.data("GET", "/nodes")[0])
        status, body, _ = auditor.call("POST", "/nodes/pve1/qemu/150/agent/ping")
        self.assertEqual((status, body["message"]),
                         (403, "Permission check failed (/vms/150, VM.GuestAgent.Audit|VM.GuestAgent.Unrestricted)\n"))


class Release84(unittest.TestCase):
    """8.4: VM.Monitor for the monitor and the agent; file-read has no window."""

    @classmethod
    def setUpClass(cls):
        cls.server = Server("8.4", {"full": ROLES["8.4"]})
        cls.api = cls.server.client("full")
        assert cls.api.run(sweep(150)[:9]) is None

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def test_version(self):
        self.assertEqual(self.api.data("GET", "/version")["release"], "8.4")

    def test_monitor_info_with_vm_monitor_and_the_rest_with_sys_modify(self):
        path = "/nodes/pve1/qemu/150/monitor"
        self.assertEqual(self.api.call("POST", path, {"command": "info block"})[0], 200)
        status, body, _ = self.api.call("POST", path, {"command": "system_reset"})
        self.assertEqual((status, body["message"]), (403, "Permission check failed (/, Sys.Modify)\n"))

    def test_file_read_has_no_offset(self):
        status, body, _ = self.api.call("GET", "/nodes/pve1/qemu/150/agent/file-read",
                                        {"file": "/tmp/x", "offset": 1})
        self.assertEqual(status, 400, body)
        self.assertIn("offset", body["errors"])


class Startup(unittest.TestCase):
    """pve_fake.py refuses what cannot be simulated, before serving."""

    def start(self, *arguments):
        directory = tempfile.mkdtemp(prefix="pve-fake-access-")
        try:
            return subprocess.run([sys.executable, os.path.join(HERE, "pve_fake.py"), "--cert-dir",
                                   selftest.CERT_DIR, "--token", f"{USER}!full={SECRET}",
                                   "--port-file", os.path.join(directory, "port"), "--quiet", *arguments],
                                  capture_output=True, text=True, timeout=60)
        finally:
            shutil.rmtree(directory, ignore_errors=True)

    def test_a_schema_of_another_release(self):
        answer = self.start("--schema", SCHEMAS["8.4"], "--pve-version", "9.1")
        self.assertEqual(answer.returncode, 2)
        self.assertIn("the schema is not PVE 9.1's", answer.stderr)

    def test_an_unknown_release(self):
        answer = self.start("--schema", SCHEMAS["8.4"], "--pve-version", "7.4")
        self.assertEqual(answer.returncode, 2)
        self.assertIn("--pve-version 7.4: not simulated", answer.stderr)

    def test_the_8_4_role_does_not_load_on_9_1(self):
        directory = tempfile.mkdtemp(prefix="pve-fake-access-")
        try:
            path = access_file(directory, "8.4", {"full": ROLES["8.4"]})
            answer = self.start("--schema", SCHEMAS["9.1"], "--pve-version", "9.1", "--access", path)
        finally:
            shutil.rmtree(directory, ignore_errors=True)
        self.assertEqual(answer.returncode, 2)
        self.assertIn("invalid privilege 'VM.Monitor'", answer.stderr)


def main() -> int:
    if len(sys.argv) < 3:
        print("usage: access_test.py PVE84_SCHEMA PVE91_SCHEMA [unittest options]", file=sys.stderr)
        return 2
    SCHEMAS["8.4"], SCHEMAS["9.1"] = sys.argv.pop(1), sys.argv.pop(1)
    for path in SCHEMAS.values():
        if not os.path.exists(path):
            print(f"SKIPPED: the PVE API schema {path} is not there")
            return SKIP_EXIT_CODE
    if shutil.which("openssl") is None:
        print("SKIPPED: no openssl CLI to make the test certificates")
        return SKIP_EXIT_CODE
    import certs
    with tempfile.TemporaryDirectory(prefix="pve-fake-certs-") as selftest.CERT_DIR:
        certs.ensure_certificates(selftest.CERT_DIR)
        result = unittest.main(exit=False, verbosity=2).result
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
