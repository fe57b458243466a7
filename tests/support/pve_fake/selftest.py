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
PVE_VERSION = None  # the schema's release (server.schema_release), set by main()
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

    def raw(self, method: str, path: str, body: bytes, content_type: str = "application/x-www-form-urlencoded",
            query: str = ""):
        """(status, body as JSON or None, reason) of a call with a body sent as it is."""
        url = f"https://127.0.0.1:{self.port}/api2/json{path}" + (f"?{query}" if query else "")
        request = urllib.request.Request(url, data=body, method=method)
        request.add_header("Authorization", f"PVEAPIToken={TOKEN_USER}={SECRET}")
        request.add_header("Content-Type", content_type)
        return self._send(request, 30)

    def json_call(self, method: str, path: str, params: dict):
        return self.raw(method, path, json.dumps(params).encode(), "application/json")

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
             "--pve-version", PVE_VERSION, *extra],
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

    def __init__(self, guest_command_handler=None, machines=None):
        from server import FakePve, Options
        self.directory = tempfile.mkdtemp(prefix="pve-fake-selftest-")
        options = Options(schema_path=SCHEMA, cert_dir=CERT_DIR, token=f"{TOKEN_USER}={SECRET}",
                          guest_root=os.path.join(self.directory, "guests"), task_seconds=0.1, agent_delay=0.1,
                          quiet=True, pve_version=PVE_VERSION)
        self.fake = FakePve(options, guest_command_handler=guest_command_handler, machines=machines)
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
        # qemu-server clone_vm dies (500), it raises no parameter error.
        status, _, reason = self.fake.call("POST", "/nodes/pve1/qemu/9000/clone",
                                           {"newid": 101, "storage": "local-lvm"})
        self.assertEqual((status, reason), (500, "parameter 'storage' not allowed for linked clones"))

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

    def test_unknown_storage_is_refused_before_the_task(self):
        # qemu-server $check_storage_access runs before fork_worker.
        self.fake.wait_task(self.clone())
        status, _, reason = self.fake.call("POST", "/nodes/pve1/qemu/101/config", {"scsi1": "nowhere:4"})
        self.assertEqual((status, reason), (500, "storage 'nowhere' does not exist"))

    def test_a_format_the_storage_cannot_hold_fails_the_task(self):
        self.fake.wait_task(self.clone())
        upid = self.fake.data("POST", "/nodes/pve1/qemu/101/config", {"scsi1": "local-lvm:1,format=qcow2"})
        self.assertEqual(self.fake.wait_task(upid)["exitstatus"],
                         "unsupported format 'qcow2' at /usr/share/perl5/PVE/Storage/LvmThinPlugin.pm line 88.")


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
                         {"content": "{}\n", "bytes-read": 3})
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


# ---- PVE's code paths (issue 16) -------------------------------------------------------------


def config_of(fake: ApiClient, vmid: int = 101, **params) -> dict:
    return fake.data("GET", f"/nodes/pve1/qemu/{vmid}/config", params or None)


class FormDecoding(FakeTestCase):
    """pve-http-server AnyEvent.pm decode_urlencoded / extract_params and
    pve-manager HTTPServer.pm rest_handler, as a client meets them."""

    def test_an_empty_value_is_dropped_so_a_required_parameter_is_missing(self):
        start_vm_101(self.fake)
        status, body, _ = self.fake.raw("POST", "/nodes/pve1/qemu/101/agent/file-write",
                                        b"file=/run/disksweep-agent.jsonl&content=")
        self.assertEqual(status, 400, body)
        self.assertEqual(body["errors"], {"content": "property is missing and it is not optional"})

    def test_a_json_body_keeps_an_empty_value(self):
        start_vm_101(self.fake)
        status, body, _ = self.fake.json_call("POST", "/nodes/pve1/qemu/101/agent/file-write",
                                              {"file": "/run/empty", "content": ""})
        self.assertEqual(status, 200, body)
        self.assertEqual(self.fake.data("GET", "/nodes/pve1/qemu/101/agent/file-read", {"file": "/run/empty"}),
                         {"content": "", "bytes-read": 0})

    def test_a_semicolon_separates_pairs(self):
        status, body, _ = self.fake.raw("POST", "/nodes/pve1/qemu/9000/clone", b"newid=101;name=ds-run")
        self.assertEqual(status, 200, body)
        self.fake.wait_task(body["data"])
        self.assertEqual(config_of(self.fake)["name"], "ds-run")

    def test_a_repeated_key_is_an_array_not_a_joined_string(self):
        status, body, _ = self.fake.raw("POST", "/nodes/pve1/qemu/9000/clone", b"newid=101&name=a&name=b")
        self.assertEqual(status, 400, body)
        self.assertEqual(body["errors"], {"name": "type check ('string') failed - got ARRAY"})

    def test_a_repeated_key_of_a_list_format_is_joined_with_commas(self):
        self.fake.wait_task(self.clone())
        status, body, _ = self.fake.raw("POST", "/nodes/pve1/qemu/101/config",
                                        b"delete=description&delete=tags&name=x")
        self.assertEqual(status, 200, body)
        self.assertIn("-delete description,tags", self.fake.task_log(body["data"])[0])

    def test_plus_and_percent_escapes_are_decoded(self):
        self.fake.wait_task(self.clone())
        status, body, _ = self.fake.raw("POST", "/nodes/pve1/qemu/101/config",
                                        b"description=a+b%2Cc%C3%A9%3D")
        self.fake.wait_task(body["data"])
        self.assertEqual(config_of(self.fake)["description"], "a b,c\u00e9=")

    def test_what_follows_a_second_equals_sign_is_lost(self):
        status, body, _ = self.fake.raw("POST", "/nodes/pve1/qemu/9000/clone", b"newid=101&name=ds=run")
        self.fake.wait_task(body["data"])
        self.assertEqual(config_of(self.fake)["name"], "ds")

    def test_an_empty_pair_is_an_unknown_parameter(self):
        status, body, _ = self.fake.raw("POST", "/nodes/pve1/qemu/9000/clone", b"newid=101&&name=x")
        self.assertEqual((status, list(body["errors"])), (400, ["_root"]))

    def test_the_query_replaces_the_body(self):
        status, body, _ = self.fake.raw("POST", "/nodes/pve1/qemu/9000/clone", b"newid=101&name=frombody",
                                        query="name=fromquery")
        self.fake.wait_task(body["data"])
        self.assertEqual(config_of(self.fake)["name"], "fromquery")

    def test_json_types(self):
        status, body, _ = self.fake.json_call("POST", "/nodes/pve1/qemu/9000/clone", {"newid": 101, "name": True})
        self.assertEqual((status, body["errors"]), (400, {"name": "type check ('string') failed - got "
                                                                  "JSON::PP::Boolean"}))
        status, body, _ = self.fake.json_call("POST", "/nodes/pve1/qemu/9000/clone",
                                              {"newid": 101.0, "full": False, "name": "j"})
        self.assertEqual(status, 200, body)

    def test_a_malformed_json_body_is_a_500(self):
        status, _, reason = self.fake.raw("POST", "/nodes/pve1/qemu/9000/clone", b"{newid", "application/json")
        self.assertEqual(status, 500)
        self.assertTrue(reason.startswith("malformed JSON string"), reason)

    def test_another_content_type_is_a_506(self):
        status, _, reason = self.fake.raw("POST", "/nodes/pve1/qemu/9000/clone", b"newid=101", "text/plain")
        self.assertEqual((status, reason), (506, "upload 'Content-Type 'text/plain' not implemented"))

    def test_a_path_parameter_may_repeat_only_with_its_value(self):
        status, body, _ = self.fake.raw("POST", "/nodes/pve1/qemu/9000/clone", b"newid=101&vmid=9001")
        self.assertEqual((status, body["errors"]),
                         (400, {"vmid": "duplicate parameter (already defined in URI) with conflicting values!"}))
        self.assertEqual(self.fake.raw("POST", "/nodes/pve1/qemu/9000/clone", b"newid=101&vmid=9000")[0], 200)

    def test_requires_names_the_property(self):
        self.assert_rejected("POST", "/nodes/pve1/qemu/9000/config", {"force": 1, "name": "x"},
                             "delete", "missing property - 'force' requires this property")


class CreateDisks(FakeTestCase):
    """qemu-server API2/Qemu.pm create_disks and pve-storage's alloc_image."""

    def setUp(self):
        super().setUp()
        self.fake.wait_task(self.clone())

    def configure(self, **params) -> dict:
        upid = self.fake.data("POST", "/nodes/pve1/qemu/101/config", params)
        self.assertEqual(self.fake.wait_task(upid)["exitstatus"], "OK")
        self.upid = upid
        return config_of(self.fake)

    def test_lvmthin_drops_format_and_adds_size(self):
        config = self.configure(scsi1="local-lvm:4,format=raw,cache=none,iothread=1")
        self.assertEqual(config["scsi1"], "local-lvm:vm-101-disk-1,cache=none,iothread=1,size=4G")
        self.assertIn("scsi1: successfully created disk 'local-lvm:vm-101-disk-1,cache=none,iothread=1,size=4G'",
                      self.fake.task_log(self.upid))
        self.assertEqual(self.fake.data("GET", "/nodes/pve1/storage/local-lvm/content/local-lvm:vm-101-disk-1"),
                         {"path": "/dev/pve/vm-101-disk-1", "size": 4 * 1024 ** 3, "used": 0, "format": "raw"})

    def test_dir_names_the_file_by_format_and_defaults_to_raw(self):
        config = self.configure(scsi1="local:0.5,format=qcow2", scsi2="local:1")
        self.assertEqual(config["scsi1"], "local:101/vm-101-disk-0.qcow2,size=512M")
        self.assertEqual(config["scsi2"], "local:101/vm-101-disk-0.raw,size=1G")
        info = self.fake.data("GET", "/nodes/pve1/storage/local/content/101/vm-101-disk-0.qcow2")
        self.assertEqual((info["format"], info["size"], info["path"]),
                         ("qcow2", 512 * 1024 ** 2, "/var/lib/vz/images/101/vm-101-disk-0.qcow2"))

    def test_an_existing_volume_keeps_its_format_and_gets_its_size(self):
        config = self.configure(scsi1="local-lvm:1")
        upid = self.fake.data("POST", "/nodes/pve1/qemu/101/config",
                              {"scsi2": "local-lvm:vm-101-disk-1,format=qcow2"})
        self.assertEqual(self.fake.wait_task(upid)["exitstatus"],
                         "drive 'scsi2' - volume 'local-lvm:vm-101-disk-1' - 'format=qcow2' option different "
                         "from storage format 'raw'")
        self.assertEqual(config["scsi1"], "local-lvm:vm-101-disk-1,size=1G")

    def test_volume_info_errors(self):
        status, body, _ = self.fake.call("GET", "/nodes/pve1/storage/local/content/local-lvm:vm-101-disk-0")
        self.assertEqual((status, body["errors"]), (400, {"volume": "storage ID mismatch (local-lvm != local)\n"}))
        status, _, reason = self.fake.call("GET", "/nodes/pve1/storage/local/content/101/vm-101-disk-7.raw")
        self.assertEqual((status, reason), (500, "volume_size_info on 'local:101/vm-101-disk-7.raw' failed - no format"))

    def test_a_replaced_disk_becomes_unused_and_a_changed_option_does_not(self):
        self.configure(scsi1="local-lvm:1")
        config = self.configure(scsi1="local-lvm:vm-101-disk-1,cache=unsafe")
        self.assertNotIn("unused0", config)
        config = self.configure(scsi1="local-lvm:2")
        self.assertEqual((config["scsi1"], config["unused0"]), ("local-lvm:vm-101-disk-2,size=2G",
                                                                "local-lvm:vm-101-disk-1"))


class CloneRules(FakeTestCase):
    """qemu-server API2/Qemu.pm clone_vm and the storages' clone_image."""
    extra_args = ("--node", "pve1", "--node", "pve2")

    def test_a_linked_clone_of_an_lvmthin_template(self):
        self.assertEqual(self.fake.wait_task(self.clone())["exitstatus"], "OK")
        config = config_of(self.fake)
        self.assertEqual(config["scsi0"], "local-lvm:vm-101-disk-0,size=2G")
        self.assertEqual(config["name"], "ds-run")
        self.assertNotIn("template", config)
        self.assertEqual(config.get("meta"), config_of(self.fake, 9000).get("meta"))  # copied, not made anew

    def test_a_full_clone_to_dir_storage_in_qcow2(self):
        upid = self.clone(full=1, storage="local", format="qcow2")
        self.assertEqual(self.fake.wait_task(upid)["exitstatus"], "OK")
        self.assertIn("create full clone of drive scsi0 (local-lvm:base-9000-disk-0)", self.fake.task_log(upid))
        self.assertEqual(config_of(self.fake)["scsi0"], "local:101/vm-101-disk-0.qcow2,size=2G")

    def test_the_default_name(self):
        self.fake.wait_task(self.fake.data("POST", "/nodes/pve1/qemu/9000/clone", {"newid": 101}))
        self.assertEqual(config_of(self.fake)["name"], "Copy-of-VM-disksweep-template")

    def test_a_linked_clone_of_a_vm_that_is_no_template(self):
        self.fake.wait_task(self.clone())
        status, _, reason = self.fake.call("POST", "/nodes/pve1/qemu/101/clone", {"newid": 102, "full": 0})
        self.assertEqual((status, reason),
                         (500, "Linked clone feature is not supported for 'local-lvm:vm-101-disk-0' (scsi0)"))

    def test_another_node_needs_shared_storage(self):
        status, _, reason = self.fake.call("POST", "/nodes/pve1/qemu/9000/clone", {"newid": 101, "target": "pve2"})
        self.assertEqual((status, reason), (500, "can't clone VM to node 'pve2' (VM uses local storage)"))
        status, _, reason = self.fake.call("POST", "/nodes/pve1/qemu/9000/clone",
                                           {"newid": 101, "target": "pve2", "full": 1, "storage": "local"})
        self.assertEqual((status, reason), (500, "can't clone to non-shared storage 'local'"))

    def test_the_clone_is_locked_while_the_task_runs(self):
        self.fake.control("POST", "faults", {"path": "/nodes/*/qemu/*/clone", "task": {"exitstatus": "OK",
                                                                                       "seconds": 3}})
        upid = self.clone()
        self.assertEqual(self.fake.data("GET", "/nodes/pve1/qemu/101/status/current")["lock"], "clone")
        # qemu-server's temporary config: the lock only, until the first disk is copied.
        self.assertEqual(set(config_of(self.fake)), {"lock", "digest"})
        resources = {r["id"]: r for r in self.fake.data("GET", "/cluster/resources", {"type": "vm"})}
        self.assertEqual((resources["qemu/101"]["name"], resources["qemu/101"]["lock"]), ("VM 101", "clone"))
        status, _, reason = self.fake.call("POST", "/nodes/pve1/qemu/101/config", {"name": "x"})
        self.assertEqual((status, reason), (500, "VM is locked (clone)"))
        self.fake.wait_task(upid)
        self.assertNotIn("lock", self.fake.data("GET", "/nodes/pve1/qemu/101/status/current"))


class SharedStorageClone(FakeTestCase):
    def setUp(self):
        state = {"nodes": ["pve1", "pve2"],
                 "storages": [{"id": "ceph", "type": "rbd", "shared": True}],
                 "vms": [{"vmid": 9000, "node": "pve1", "config": {"name": "t", "template": "1", "agent": "1",
                                                                   "scsi0": "ceph:base-9000-disk-0,size=2G"}}]}
        self.state_dir = tempfile.mkdtemp(prefix="pve-fake-state-")
        path = os.path.join(self.state_dir, "state.json")
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(state, handle)
        self.extra_args = ("--state", path)
        super().setUp()

    def tearDown(self):
        super().tearDown()
        shutil.rmtree(self.state_dir, ignore_errors=True)

    def test_a_linked_clone_onto_another_node(self):
        upid = self.clone(target="pve2")
        self.assertEqual(self.fake.wait_task(upid)["exitstatus"], "OK")
        self.assertEqual(self.fake.data("GET", "/nodes/pve2/qemu/101/config")["scsi0"],
                         "ceph:base-9000-disk-0/vm-101-disk-0,size=2G")


class PendingConfig(FakeTestCase):
    """GET config, current or pending, around an asynchronous POST config."""
    extra_args = ("--task-seconds", "1.5")

    def test_pending_values_show_until_applied(self):
        self.fake.wait_task(self.clone())
        upid = self.fake.data("POST", "/nodes/pve1/qemu/101/config", {"description": "new", "cores": 2})
        self.assertEqual(config_of(self.fake)["description"], "new")
        self.assertNotIn("description", config_of(self.fake, current=1))
        pending = {e["key"]: e for e in self.fake.data("GET", "/nodes/pve1/qemu/101/pending")}
        self.assertEqual((pending["cores"]["value"], pending["cores"]["pending"]), ("1", "2"))
        self.assertEqual(self.fake.wait_task(upid)["exitstatus"], "OK")
        self.assertEqual(config_of(self.fake, current=1)["cores"], 2)

    def test_a_running_vm_keeps_what_needs_a_restart_pending(self):
        start_vm_101(self.fake)
        self.fake.wait_task(self.fake.data("POST", "/nodes/pve1/qemu/101/config", {"cores": 2, "name": "renamed"}))
        current = config_of(self.fake, current=1)
        self.assertEqual((current["cores"], current["name"]), (1, "renamed"))
        self.assertEqual(config_of(self.fake)["cores"], 2)

    def test_snapshot_and_current(self):
        self.fake.wait_task(self.clone())
        status, body, _ = self.fake.call("GET", "/nodes/pve1/qemu/101/config", {"snapshot": "s1", "current": 1})
        self.assertEqual((status, sorted(body["errors"])), (400, ["current", "snapshot"]))
        status, _, reason = self.fake.call("GET", "/nodes/pve1/qemu/101/config", {"snapshot": "s1"})
        self.assertEqual((status, reason), (500, "snapshot 's1' does not exist"))

    def test_a_stale_digest(self):
        self.fake.wait_task(self.clone())
        status, _, reason = self.fake.call("POST", "/nodes/pve1/qemu/101/config", {"name": "x", "digest": "0" * 40})
        self.assertEqual((status, reason), (500, "checksum mismatch (file change by other user?)"))


class TaskLogs(FakeTestCase):
    """pve-manager API2/Tasks.pm read_task_log / read_task_status."""

    def test_start_limit_and_total(self):
        self.fake.control("POST", "faults", {"path": "/nodes/*/qemu/*/clone",
                                             "task": {"exitstatus": "OK", "log": ["a", "b", "c"]}})
        upid = self.clone()
        self.fake.wait_task(upid)
        quoted = urllib.parse.quote(upid, safe="")
        _, body, _ = self.fake.call("GET", f"/nodes/pve1/tasks/{quoted}/log", {"start": 1, "limit": 2})
        self.assertEqual((body["data"], body["total"]), ([{"n": 2, "t": "b"}, {"n": 3, "t": "c"}], 5))
        _, body, _ = self.fake.call("GET", f"/nodes/pve1/tasks/{quoted}/log", {"limit": 0})
        self.assertEqual([line["t"] for line in body["data"]],
                         ["a", "b", "c", "create linked clone of drive scsi0 (local-lvm:base-9000-disk-0)", "TASK OK"])

    def test_unknown_and_malformed_upids(self):
        status, body, _ = self.fake.call("GET", "/nodes/pve1/tasks/nonsense/status")
        self.assertEqual((status, body["errors"]), (400, {"upid": "unable to parse worker upid"}))
        upid = urllib.parse.quote("UPID:pve1:00001234:00001234:00001234:qmstart:101:root@pam:", safe="")
        status, body, _ = self.fake.call("GET", f"/nodes/pve1/tasks/{upid}/status")
        self.assertEqual((status, body["errors"]), (400, {"upid": "no such task"}))

    def test_a_plain_warn_is_no_warning(self):
        self.fake.wait_task(self.clone())
        # (Not `hookscript`: deleting it is root@pam's alone, $check_vm_modify_config_perm.)
        upid = self.fake.data("POST", "/nodes/pve1/qemu/101/config", {"delete": "description"})
        self.assertEqual(self.fake.wait_task(upid)["exitstatus"], "OK")
        self.assertIn("cannot delete 'description' - not set in current configuration!", self.fake.task_log(upid))


class AgentErrors(FakeTestCase):
    """qemu-server QemuServer/Agent.pm and API2/Qemu/Agent.pm."""

    def start_with(self, **config):
        self.fake.wait_task(self.clone())
        self.fake.wait_task(self.fake.data("POST", "/nodes/pve1/qemu/101/config", config))
        self.fake.wait_task(self.fake.data("POST", "/nodes/pve1/qemu/101/status/start"))
        time.sleep(0.3)

    def test_no_agent_key(self):
        self.start_with(delete="agent")
        status, _, reason = self.fake.call("POST", "/nodes/pve1/qemu/101/agent/ping")
        self.assertEqual((status, reason), (500, "No QEMU guest agent configured"))

    def test_agent_disabled(self):
        self.start_with(agent="0")
        status, _, reason = self.fake.call("POST", "/nodes/pve1/qemu/101/agent/ping")
        self.assertEqual((status, reason), (500, "QEMU guest agent is not running"))

    def test_a_program_that_cannot_be_spawned(self):
        start_vm_101(self.fake)
        status, body, _ = self.fake.call("POST", "/nodes/pve1/qemu/101/agent/exec", {"command": ["fio"]})
        # The body carries the message whole (the reason phrase is Latin-1).
        self.assertEqual((status, body["message"]),
                         (500, "Agent error: Guest agent command failed, error was 'Failed to execute child "
                               "process \u201cfio\u201d (No such file or directory)'\n"))

    def test_file_errors(self):
        start_vm_101(self.fake)
        status, _, reason = self.fake.call("GET", "/nodes/pve1/qemu/101/agent/file-read", {"file": "/nope"})
        self.assertEqual((status, reason), (500, "Agent error: failed to open file '/nope' (mode: 'r'): "
                                                 "No such file or directory"))
        status, _, reason = self.fake.call("POST", "/nodes/pve1/qemu/101/agent/file-write",
                                           {"file": "/x", "content": "not base64!", "encode": 0})
        self.assertEqual((status, reason), (500, "Agent error: Base64 data is not valid"))

    def test_file_read_stops_at_16_mib(self):
        start_vm_101(self.fake)
        self.assertEqual(run_in_guest(self.fake, ["sleep", "0"])["exitcode"], 0)
        # The simulated guest's files are files of this machine (guest.py).
        guests = os.path.join(self.fake.directory, "guests", "101")
        with open(os.path.join(guests, "big"), "wb") as handle:
            handle.truncate(16 * 1024 * 1024)
        answer = self.fake.data("GET", "/nodes/pve1/qemu/101/agent/file-read", {"file": "/big"})
        self.assertEqual((answer["bytes-read"], answer.get("truncated")), (16 * 1024 * 1024, 1))


class MonitorAndStatus(FakeTestCase):
    def test_info_kvm_follows_the_config(self):
        start_vm_101(self.fake)
        self.assertEqual(self.fake.data("POST", "/nodes/pve1/qemu/101/monitor", {"command": "info kvm"}),
                         "kvm support: enabled\r\n")
        from machines import SIMULATED_QEMU
        qemu = SIMULATED_QEMU[PVE_VERSION]
        self.assertEqual(self.fake.data("POST", "/nodes/pve1/qemu/101/monitor", {"command": "info version"}),
                         f"{qemu['version']}{qemu['package']}\r\n")

    def test_kvm_0_is_disabled(self):
        self.fake.wait_task(self.clone())
        self.fake.wait_task(self.fake.data("POST", "/nodes/pve1/qemu/101/config", {"kvm": 0}))
        self.fake.wait_task(self.fake.data("POST", "/nodes/pve1/qemu/101/status/start"))
        self.assertEqual(self.fake.data("POST", "/nodes/pve1/qemu/101/monitor", {"command": "info kvm"}),
                         "kvm support: disabled\r\n")

    def test_a_stopped_vm_answers_an_error_text(self):
        self.fake.wait_task(self.clone())
        self.assertEqual(self.fake.data("POST", "/nodes/pve1/qemu/101/monitor", {"command": "info block"}),
                         "ERROR: VM 101 not running\n")

    def test_status_of_a_running_vm(self):
        from machines import SIMULATED_QEMU
        start_vm_101(self.fake)
        status = self.fake.data("GET", "/nodes/pve1/qemu/101/status/current")
        self.assertEqual((status["qmpstatus"], status["running-qemu"], status["running-machine"], status["agent"]),
                         ("running", SIMULATED_QEMU[PVE_VERSION]["version"], SIMULATED_QEMU[PVE_VERSION]["machine"], 1))


class TemplateFromScript(unittest.TestCase):
    """--template-from-script: the template is what scripts/pve-make-template.sh
    --from-image makes (its --dry-run output replayed, template_script.py)."""

    def _image(self) -> str:
        image = os.path.join(self.directory, "image")
        os.makedirs(image)
        for name, size in (("vmlinux", 0), ("initrd.img", 0), ("root.img", 3 * 1024 * 1024)):
            with open(os.path.join(image, name), "wb") as handle:
                handle.truncate(size)
        with open(os.path.join(image, "manifest.json"), "w", encoding="ascii") as handle:
            handle.write('{\n  "input_hash": "' + "ab" * 32 + '",\n  "packages": {\n'
                         '    "qemu-guest-agent": "1:7.2"\n  }\n}\n')
        return image

    def _fake_with_template(self, storage: str) -> FakeProcess:
        self.directory = tempfile.mkdtemp(prefix="pve-fake-template-")
        script = os.path.join(HERE, "..", "..", "..", "scripts", "pve-make-template.sh")
        commands = subprocess.run(["bash", script, "--from-image", self._image(), "--dry-run", "--storage", storage],
                                  capture_output=True, text=True, check=True).stdout
        path = os.path.join(self.directory, "commands.txt")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(commands)
        return FakeProcess("--template-from-script", path)

    def tearDown(self):
        self.fake.close()
        shutil.rmtree(self.directory, ignore_errors=True)

    def test_the_scripts_template_on_lvmthin(self):
        self.fake = self._fake_with_template("local-lvm")
        config = self.fake.data("GET", "/nodes/pve1/qemu/9000/config")
        self.assertEqual(config["scsi0"], "local-lvm:base-9000-disk-0,serial=disksweep-root,size=3M")
        self.assertEqual(config["template"], 1)
        self.assertEqual(config["agent"], "enabled=1")
        self.assertEqual(config["scsihw"], "virtio-scsi-single")
        self.assertIn("disksweep.guest=qga", config["args"])
        self.assertIn("-kernel /var/lib/vz/snippets/disksweep-abababababababab-vmlinux", config["args"])
        self.assertNotIn("unused0", config)
        self.assertEqual(self.fake.control("GET", "state")["volumes"], ["local-lvm:base-9000-disk-0"])
        # A linked clone of it starts (simulated machines).
        self.fake.wait_task(self.fake.data("POST", "/nodes/pve1/qemu/9000/clone", {"newid": 101, "name": "r"}))
        self.assertEqual(self.fake.data("GET", "/nodes/pve1/qemu/101/config")["scsi0"],
                         "local-lvm:vm-101-disk-0,serial=disksweep-root,size=3M")

    def test_a_dir_storage_names_the_imported_volume_as_pve_does(self):
        self.fake = self._fake_with_template("local")
        self.assertEqual(self.fake.data("GET", "/nodes/pve1/qemu/9000/config")["scsi0"],
                         "local:9000/base-9000-disk-0.raw,serial=disksweep-root,size=3M")


class MachinesSeam(unittest.TestCase):
    """The Machines interface (machines.py): the fake delegates to it."""

    def test_the_fake_tells_the_backend_and_uses_its_answers(self):
        from machines import SimulatedMachines
        calls = []

        class Recording(SimulatedMachines):
            def volume_created(self, volid, size_bytes, fmt):
                calls.append(("created", volid, size_bytes, fmt))

            def volume_cloned(self, source_volid, target_volid, linked):
                calls.append(("cloned", source_volid, target_volid, linked))

            def volume_deleted(self, volid):
                calls.append(("deleted", volid))

            def start(self, vm, node):
                calls.append(("start", vm.vmid, node))
                super().start(vm, node)
                return ["WARN: from the backend"]

            def monitor(self, vmid, command):
                return f"backend says {command}"

        fake = FakeInProcess(machines=lambda cluster, guests: Recording(cluster, guests))
        try:
            fake.wait_task(fake.data("POST", "/nodes/pve1/qemu/9000/clone", {"newid": 101}))
            fake.wait_task(fake.data("POST", "/nodes/pve1/qemu/101/config", {"scsi1": "local-lvm:1"}))
            upid = fake.data("POST", "/nodes/pve1/qemu/101/status/start")
            self.assertEqual(fake.wait_task(upid)["exitstatus"], "WARNINGS: 1")
            self.assertIn("WARN: from the backend", fake.task_log(upid))
            self.assertEqual(fake.data("POST", "/nodes/pve1/qemu/101/monitor", {"command": "info block"}),
                             "backend says info block")
            fake.wait_task(fake.data("POST", "/nodes/pve1/qemu/101/status/stop"))
            fake.wait_task(fake.data("DELETE", "/nodes/pve1/qemu/101"))
        finally:
            fake.close()
        self.assertEqual(calls, [("created", "local-lvm:base-9000-disk-0", 2 * 1024 ** 3, "raw"),
                                 ("cloned", "local-lvm:base-9000-disk-0", "local-lvm:vm-101-disk-0", True),
                                 ("created", "local-lvm:vm-101-disk-1", 1024 ** 3, "raw"),
                                 ("start", 101, "pve1"),
                                 ("deleted", "local-lvm:vm-101-disk-0"), ("deleted", "local-lvm:vm-101-disk-1")])
        self.assertNotIn("real_backend", sys.modules)


def main() -> int:
    global SCHEMA, CERT_DIR, PVE_VERSION
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
    from schema import ApiSchema
    from server import schema_release
    PVE_VERSION = schema_release(ApiSchema.load(SCHEMA))
    if PVE_VERSION is None:
        print(f"selftest.py: {SCHEMA} is no schema of a simulated PVE release", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="pve-fake-certs-") as CERT_DIR:
        certs.ensure_certificates(CERT_DIR)
        result = unittest.main(exit=False, verbosity=2).result
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
