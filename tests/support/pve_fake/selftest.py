#!/usr/bin/env python3
"""Self-test of the fake PVE server (ctest: proxmox/pve_fake_selftest).

    selftest.py SCHEMA_JSON [unittest options]

Starts pve_fake.py as a process, as the C++ tests do, and talks HTTPS to it
with the test CA. Checks that a good clone / config / start sequence passes,
that what the schema forbids fails with PVE's 400 errors map under the right
key, and the fault injection, tasks and guest agent semantics. Exits 77
(skipped) when the schema file or the openssl CLI is missing.
"""

import json
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request

# No __pycache__ in the source tree.
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
SKIP_EXIT_CODE = 77
# How long a test waits for something that takes a fraction of a second on
# an idle machine (a task, the agent, a command): generous, for loaded CI hosts.
PATIENCE_SECONDS = 60
TOKEN_USER = "root@pam!disksweep"
SECRET = "8d1f1c0e-0000-4000-8000-selftest0001"
SCHEMA = None     # set by main()
CERT_DIR = None   # one set of test certificates for every case, made by main()


class ApiClient:
    """HTTPS calls to a fake on `port`, trusting the test CA."""

    def __init__(self, port: int):
        self.port = port
        self.context = ssl.create_default_context(cafile=os.path.join(CERT_DIR, "ca.pem"))

    def call(self, method: str, path: str, params=None, token: str = SECRET, timeout: float = 30):
        """(status, body as JSON or None, reason) of an API call."""
        body = urllib.parse.urlencode(params or {}, doseq=True)
        url = f"https://127.0.0.1:{self.port}/api2/json{path}"
        if method in ("GET", "DELETE") and body:
            url, body = f"{url}?{body}", ""
        request = urllib.request.Request(url, data=body.encode() if body else None, method=method)
        if token is not None:
            request.add_header("Authorization", f"PVEAPIToken={TOKEN_USER}={token}")
        return self._send(request, timeout)

    def control(self, method: str, what: str, body=None):
        request = urllib.request.Request(f"https://127.0.0.1:{self.port}/_fake/{what}", method=method,
                                         data=json.dumps(body).encode() if body is not None else None)
        return self._send(request, 30)[1]["data"]

    def _send(self, request, timeout):
        try:
            with urllib.request.urlopen(request, context=self.context, timeout=timeout) as answer:
                return answer.status, _json_or_none(answer.read()), answer.reason
        except urllib.error.HTTPError as error:
            return error.code, _json_or_none(error.read()), error.reason

    def data(self, method: str, path: str, params=None):
        status, body, reason = self.call(method, path, params)
        if status != 200:
            raise AssertionError(f"{method} {path} -> {status} {reason}: {body}")
        return body["data"]

    def wait_task(self, upid: str, node: str = "pve1") -> dict:
        quoted = urllib.parse.quote(upid, safe="")
        return eventually(lambda: _if(lambda status: status["status"] == "stopped",
                                      self.data("GET", f"/nodes/{node}/tasks/{quoted}/status")),
                          f"task {upid} did not end")

    def task_log(self, upid: str, node: str = "pve1") -> list:
        quoted = urllib.parse.quote(upid, safe="")
        return [line["t"] for line in self.data("GET", f"/nodes/{node}/tasks/{quoted}/log")]


class FakeProcess(ApiClient):
    """pve_fake.py in a child process on a fresh directory."""

    def __init__(self, *extra: str):
        self.directory = tempfile.mkdtemp(prefix="pve-fake-selftest-")
        port_file = os.path.join(self.directory, "port")
        self.log = open(os.path.join(self.directory, "log"), "w+")
        self.process = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "pve_fake.py"), "--schema", SCHEMA, "--cert-dir", CERT_DIR,
             "--guest-root", os.path.join(self.directory, "guests"), "--port-file", port_file,
             "--token", f"{TOKEN_USER}={SECRET}", "--task-seconds", "0.1", "--agent-delay", "0.1", "--quiet",
             *extra],
            stdout=self.log, stderr=subprocess.STDOUT)
        super().__init__(self._wait_for_port(port_file))

    def _wait_for_port(self, port_file: str) -> int:
        deadline = time.monotonic() + PATIENCE_SECONDS
        while time.monotonic() < deadline:
            if os.path.exists(port_file):
                with open(port_file, encoding="ascii") as handle:
                    return int(handle.read())
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        self.log.seek(0)
        raise RuntimeError(f"pve_fake did not start: {self.log.read()}")

    def close(self):
        self.process.terminate()
        self.process.wait(timeout=10)
        self.log.close()
        shutil.rmtree(self.directory, ignore_errors=True)


class FakeInProcess(ApiClient):
    """The fake as a Python object (how a test plugs in a guest command handler)."""

    def __init__(self, guest_command_handler):
        from server import FakePve, Options
        self.directory = tempfile.mkdtemp(prefix="pve-fake-selftest-")
        options = Options(schema_path=SCHEMA, cert_dir=CERT_DIR, token=f"{TOKEN_USER}={SECRET}",
                          guest_root=os.path.join(self.directory, "guests"), task_seconds=0.1, agent_delay=0.1,
                          quiet=True)
        self.fake = FakePve(options, guest_command_handler=guest_command_handler)
        super().__init__(self.fake.start())

    def close(self):
        self.fake.stop()
        shutil.rmtree(self.directory, ignore_errors=True)


def eventually(probe, failure: str):
    """The first truthy answer of probe(), polled for up to PATIENCE_SECONDS."""
    deadline = time.monotonic() + PATIENCE_SECONDS
    while time.monotonic() < deadline:
        answer = probe()
        if answer:
            return answer
        time.sleep(0.05)
    raise AssertionError(failure)


def _if(condition, value):
    return value if condition(value) else None


def _json_or_none(raw: bytes):
    try:
        return json.loads(raw)
    except ValueError:
        return None


DATA_DISK = "local-lvm:4,cache=unsafe,discard=on,ssd=1,iothread=1"


class FakeTestCase(unittest.TestCase):
    extra_args = ()

    def setUp(self):
        self.fake = FakeProcess(*self.extra_args)

    def tearDown(self):
        self.fake.close()

    def clone(self, newid: int = 101, **extra) -> str:
        return self.fake.data("POST", "/nodes/pve1/qemu/9000/clone", {"newid": newid, "name": "ds-run", **extra})

    def assert_rejected(self, method: str, path: str, params: dict, key: str, fragment: str):
        status, body, _ = self.fake.call(method, path, params)
        self.assertEqual(status, 400, body)
        self.assertIsNone(body["data"])
        self.assertIn(key, body["errors"], body)
        self.assertIn(fragment, body["errors"][key])


class GoodSequence(FakeTestCase):
    def test_clone_config_start_passes_and_reads_back_as_pve_prints_it(self):
        self.assertEqual(self.fake.data("GET", "/cluster/nextid"), 100)
        self.assertEqual(self.fake.wait_task(self.clone())["exitstatus"], "OK")
        upid = self.fake.data("POST", "/nodes/pve1/qemu/101/config",
                              {"scsihw": "virtio-scsi-single", "scsi1": DATA_DISK + ",mbps_rd=100,iops_wr=500"})
        self.assertRegex(upid, r"^UPID:pve1:[0-9A-F]{8}:[0-9A-F]{8}:[0-9A-F]{8}:qmconfig:101:root@pam!disksweep:$")
        self.assertEqual(self.fake.wait_task(upid)["exitstatus"], "OK")
        self.assertEqual(self.fake.wait_task(self.fake.data("POST", "/nodes/pve1/qemu/101/status/start"))
                         ["exitstatus"], "OK")
        config = self.fake.data("GET", "/nodes/pve1/qemu/101/config")
        self.assertEqual(config["scsi1"], "local-lvm:vm-101-disk-1,cache=unsafe,discard=on,iops_wr=500,"
                                          "iothread=1,mbps_rd=100,size=4G,ssd=1")
        self.assertEqual(config["cores"], 1)
        self.assertEqual(self.fake.data("GET", "/nodes/pve1/qemu/101/status/current")["status"], "running")

    def test_byte_limits_pass_the_schema(self):
        self.fake.wait_task(self.clone())
        self.fake.wait_task(self.fake.data("POST", "/nodes/pve1/qemu/101/config",
                                           {"scsi1": DATA_DISK + ",bps_rd=1048576"}))

    def test_nextid_skips_taken_ids_and_refuses_a_taken_one(self):
        self.fake.wait_task(self.clone(newid=100))
        self.assertEqual(self.fake.data("GET", "/cluster/nextid"), 101)
        self.assert_rejected("GET", "/cluster/nextid", {"vmid": 100}, "vmid", "VM 100 already exists")


class Rejections(FakeTestCase):
    def test_unknown_key_in_a_property_string(self):
        self.assert_rejected("POST", "/nodes/pve1/qemu/9000/config", {"scsi1": "local-lvm:4,bogus=1"},
                             "scsi1", "invalid key in comma-separated list property: bogus")

    def test_wrong_enum_in_a_property_string(self):
        self.assert_rejected("POST", "/nodes/pve1/qemu/9000/config", {"scsi1": "local-lvm:4,cache=fast"},
                             "scsi1", "scsi1.cache: value 'fast' does not have a value in the enumeration")

    def test_missing_required_parameter(self):
        self.assert_rejected("POST", "/nodes/pve1/qemu/9000/clone", {"name": "x"},
                             "newid", "property is missing and it is not optional")

    def test_made_up_parameter(self):
        self.assert_rejected("POST", "/nodes/pve1/qemu/9000/config", {"bogus": "1"},
                             "bogus", "property is not defined in schema")

    def test_form_boolean_is_0_or_1(self):
        self.assert_rejected("POST", "/nodes/pve1/qemu/9000/clone", {"newid": 101, "full": "true"},
                             "full", "type check ('boolean') failed - got 'true'")

    def test_ssd_is_not_a_virtio_key(self):
        self.assert_rejected("POST", "/nodes/pve1/qemu/9000/config", {"virtio1": "local-lvm:4,ssd=1"},
                             "virtio1", "invalid key in comma-separated list property: ssd")

    def test_index_beyond_the_range(self):
        self.assert_rejected("POST", "/nodes/pve1/qemu/9000/config", {"scsi31": "local-lvm:4"},
                             "scsi31", "property is not defined in schema")

    def test_path_parameter_checked(self):
        self.assert_rejected("GET", "/nodes/pve1/qemu/99/config", {}, "vmid", "valid VM ID")

    def test_storage_on_a_linked_clone(self):
        self.assert_rejected("POST", "/nodes/pve1/qemu/9000/clone", {"newid": 101, "storage": "local-lvm"},
                             "storage", "not allowed for linked clones")

    def test_unknown_path_is_not_implemented(self):
        status, _, reason = self.fake.call("GET", "/nodes/pve1/bogus")
        self.assertEqual(status, 501)
        self.assertIn("not implemented", reason)

    def test_no_body_on_get(self):
        request = urllib.request.Request(f"https://127.0.0.1:{self.fake.port}/api2/json/version", data=b"a=1",
                                         method="GET", headers={"Authorization": f"PVEAPIToken={TOKEN_USER}={SECRET}"})
        self.assertEqual(self.fake._send(request, 10)[0], 501)

    def test_body_over_the_post_limit(self):
        status, _, reason = self.fake.call("POST", "/nodes/pve1/qemu/9000/config", {"description": "x" * 70000})
        self.assertEqual((status, reason), (501, "for data too large"))


class Authentication(FakeTestCase):
    def test_token_required_and_checked(self):
        self.assertEqual(self.fake.call("GET", "/version")[0], 200)
        self.assertEqual(self.fake.call("GET", "/version", token=None)[:3:2], (401, "No ticket"))
        self.assertEqual(self.fake.call("GET", "/version", token="wrong")[:3:2], (401, "authentication failure"))


class Tasks(FakeTestCase):
    def test_iothread_without_single_controller_warns(self):
        self.fake.wait_task(self.clone())
        self.fake.wait_task(self.fake.data("POST", "/nodes/pve1/qemu/101/config",
                                           {"scsihw": "virtio-scsi-pci", "scsi1": DATA_DISK}))
        upid = self.fake.data("POST", "/nodes/pve1/qemu/101/status/start")
        self.assertEqual(self.fake.wait_task(upid)["exitstatus"], "WARNINGS: 1")
        self.assertIn("WARN: iothread is only valid", self.fake.task_log(upid)[0])

    def test_a_failing_task_logs_its_error_and_undoes_the_clone(self):
        self.fake.control("POST", "faults", {"method": "POST", "path": "/nodes/*/qemu/*/clone",
                                             "task": {"exitstatus": "clone failed: out of space",
                                                      "log": ["copying scsi0"]}})
        upid = self.clone()
        self.assertEqual(self.fake.wait_task(upid)["exitstatus"], "clone failed: out of space")
        self.assertEqual(self.fake.task_log(upid), ["copying scsi0", "TASK ERROR: clone failed: out of space"])
        self.assertEqual(self.fake.call("GET", "/nodes/pve1/qemu/101/config")[0], 500)

    def test_unknown_storage_fails_the_task(self):
        self.fake.wait_task(self.clone())
        upid = self.fake.data("POST", "/nodes/pve1/qemu/101/config", {"scsi1": "nowhere:4"})
        self.assertEqual(self.fake.wait_task(upid)["exitstatus"], "storage 'nowhere' does not exist")


class Faults(FakeTestCase):
    def test_status_faults_and_times(self):
        self.fake.control("POST", "faults", [{"path": "/version", "status": 403, "times": 1},
                                             {"path": "/nodes", "status": 500, "message": "boom"}])
        self.assertEqual(self.fake.call("GET", "/version")[0], 403)
        self.assertEqual(self.fake.call("GET", "/version")[0], 200)
        status, body, reason = self.fake.call("GET", "/nodes")
        self.assertEqual((status, reason, body["message"]), (500, "boom", "boom\n"))

    def test_injected_401_and_dropped_connection(self):
        self.fake.control("POST", "faults", [{"path": "/version", "status": 401, "times": 1},
                                             {"path": "/nodes", "drop": True, "times": 1}])
        self.assertEqual(self.fake.call("GET", "/version")[:3:2], (401, "authentication failure"))
        with self.assertRaises((urllib.error.URLError, ConnectionError, OSError)):
            self.fake.call("GET", "/nodes")
        self.assertEqual(self.fake.call("GET", "/nodes")[0], 200)

    def test_delay_makes_a_client_time_out(self):
        self.fake.control("POST", "faults", {"path": "/version", "delay": 2})
        with self.assertRaises(OSError):
            self.fake.call("GET", "/version", timeout=0.5)

    def test_tls_fault_serves_the_other_certificate(self):
        self.fake.control("POST", "tls", {"serve": "alternate"})
        with self.assertRaises(urllib.error.URLError):
            self.fake.call("GET", "/version")


def start_vm_101(fake: ApiClient) -> None:
    """Clones the template to VM 101, starts it, waits for its agent."""
    fake.wait_task(fake.data("POST", "/nodes/pve1/qemu/9000/clone", {"newid": 101}))
    fake.wait_task(fake.data("POST", "/nodes/pve1/qemu/101/status/start"))
    eventually(lambda: fake.call("POST", "/nodes/pve1/qemu/101/agent/ping")[0] == 200, "the agent never answered")


def run_in_guest(fake: ApiClient, command: list, **extra) -> dict:
    """agent/exec, then exec-status until it reports the exit."""
    pid = fake.data("POST", "/nodes/pve1/qemu/101/agent/exec", {"command": command, **extra})["pid"]
    status = eventually(lambda: _if(lambda answer: answer["exited"],
                                    fake.data("GET", "/nodes/pve1/qemu/101/agent/exec-status", {"pid": pid})),
                        f"{command} did not end")
    return {**status, "pid": pid}


class Agent(FakeTestCase):
    def test_exec_status_reports_the_exit_once(self):
        start_vm_101(self.fake)
        status = run_in_guest(self.fake, ["echo", "hello", "world"])
        self.assertEqual(status, {"exited": 1, "exitcode": 0, "out-data": "hello world\n", "pid": status["pid"]})
        again = self.fake.call("GET", "/nodes/pve1/qemu/101/agent/exec-status", {"pid": status["pid"]})
        self.assertEqual((again[0], again[2]), (500, "Agent error: Invalid parameter 'pid'"))

    def test_file_write_then_read(self):
        start_vm_101(self.fake)
        self.fake.data("POST", "/nodes/pve1/qemu/101/agent/file-write", {"file": "/run/job.json", "content": "{}\n"})
        self.assertEqual(self.fake.data("GET", "/nodes/pve1/qemu/101/agent/file-read", {"file": "/run/job.json"}),
                         {"content": "{}\n"})
        self.assertEqual(run_in_guest(self.fake, ["/bin/cat", "/run/job.json"])["out-data"], "{}\n")

    def test_a_program_the_guest_does_not_have(self):
        start_vm_101(self.fake)
        status, _, reason = self.fake.call("POST", "/nodes/pve1/qemu/101/agent/exec", {"command": ["fio"]})
        self.assertEqual(status, 500)
        self.assertIn("Failed to execute child process", reason)

    def test_agent_of_a_stopped_vm(self):
        self.fake.wait_task(self.clone())
        status, _, reason = self.fake.call("POST", "/nodes/pve1/qemu/101/agent/ping")
        self.assertEqual((status, reason), (500, "VM 101 is not running"))


class SubprocessGuest(FakeTestCase):
    extra_args = ("--guest-exec", "env")

    def test_the_command_runs_here_with_the_guest_root_in_its_environment(self):
        start_vm_101(self.fake)
        self.fake.data("POST", "/nodes/pve1/qemu/101/agent/file-write", {"file": "/job", "content": "J"})
        status = run_in_guest(self.fake, ["sh", "-c", 'echo "$PVE_FAKE_VMID"; cat "$PVE_FAKE_GUEST_ROOT/job"; '
                                                      'cat; exit 3'], **{"input-data": "stdin"})
        self.assertEqual((status["exitcode"], status["out-data"]), (3, "101\nJstdin"))


class CallableGuest(unittest.TestCase):
    def test_a_python_handler_answers_exec(self):
        calls = []

        def handler(call):
            calls.append((call.vmid, call.argv, call.input_data))
            return 0, b"from python\n", b"warning\n"

        fake = FakeInProcess(handler)
        try:
            start_vm_101(fake)
            status = run_in_guest(fake, ["disksweep-agent", "--one-shot"], **{"input-data": "x"})
        finally:
            fake.close()
        self.assertEqual(calls, [(101, ["disksweep-agent", "--one-shot"], b"x")])
        self.assertEqual((status["out-data"], status["err-data"]), ("from python\n", "warning\n"))


def main() -> int:
    global SCHEMA, CERT_DIR
    if len(sys.argv) < 2:
        print("usage: selftest.py SCHEMA_JSON [unittest options]", file=sys.stderr)
        return 2
    SCHEMA = sys.argv.pop(1)
    if not os.path.exists(SCHEMA):
        print(f"SKIPPED: the PVE API schema {SCHEMA} is not there")
        return SKIP_EXIT_CODE
    if shutil.which("openssl") is None:
        print("SKIPPED: no openssl CLI to make the test certificates")
        return SKIP_EXIT_CODE
    sys.path.insert(0, HERE)
    import certs
    with tempfile.TemporaryDirectory(prefix="pve-fake-certs-") as CERT_DIR:
        certs.ensure_certificates(CERT_DIR)
        result = unittest.main(exit=False, verbosity=2).result
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
