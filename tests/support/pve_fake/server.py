"""The fake PVE API over HTTPS: request pipeline, control endpoints, TLS.

Every request below /api2/json goes through the same steps as on pveproxy:
  1. fault rules (faults.py): delay, dropped connection;
  2. authentication: `Authorization: PVEAPIToken=USER@REALM!TOKENID=SECRET`,
     else 401 "No ticket" / "authentication failure" with an empty body;
  3. a fault rule's status (401, 403, 500, ...), if any;
  4. body rules: none on GET/DELETE (501 "Unexpected content for method"),
     at most max_post bytes (501 "for data too large"), form-urlencoded or
     JSON;
  5. the path and method must exist in the schema (501 "Method 'M /path' not
     implemented"), the method must allow API tokens, and the token must
     pass the method's `permissions` (access.py: PVE's privileges, roles,
     ACLs and privilege-separated tokens of the release given by
     --pve-version; 403 "Permission check failed (PATH, PRIV)");
  6. parameters (path, query, body; a repeated key is an array parameter's
     items, or NUL-joined for a scalar as PVE does) verified against the
     schema: 400 {"data": null, "errors": {param: message}, "message":
     "Parameter verification failed.\n"};
  7. the simulation (api.py), under one state lock; its answer is checked
     against the method's `returns` schema, so the fake cannot answer in a
     shape the real API does not have (a mismatch is a 500 naming it);
  8. {"data": ...} (+ "total" where PVE adds it); errors carry PVE's message
     in the reason phrase and as "message" in the body.

Control endpoints (no authentication, for tests), below /_fake/:
  GET    /_fake/health                 "ok"
  GET    /_fake/requests               what was asked and answered, in order (with
                                       "at": epoch seconds received, "seconds": time taken)
  GET    /_fake/state                  VMs, volumes, tasks, unchecked formats, and
                                       "processes": {vmid: pid} of real QEMUs
  GET    /_fake/faults                 the fault rules
  POST   /_fake/faults                 add rule(s): a JSON object or array
  DELETE /_fake/faults                 remove every rule
  POST   /_fake/tls                    {"serve": "primary" | "alternate"}
  GET    /_fake/inject                 the real backend's injected QEMU options
  POST   /_fake/inject                 set them: {"cache": "writeback", ...} or null
                                       (real guests only; for VMs started afterwards)
"""

import hmac
import inspect
import json
import os
import re
import ssl
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Optional
from urllib.parse import unquote, urlsplit

import access
import api
import certs
import template_script
from cluster import ApiError, Cluster, Storage, Volume, format_size, parse_size, split_drive
from faults import FaultRule, Faults
from guest import Guests, subprocess_handler
from machines import load_machines
from schema import ApiSchema, Validator, handler_params, normalize_legacy_param_formats, return_problems
from tasks import TaskLog, TaskRegistry

API_PREFIX = "/api2/json"
CONTROL_PREFIX = "/_fake/"
TASK_TICK_SECONDS = 0.02
DRAIN_LIMIT = 16 * 1024 * 1024
DEFAULT_TEMPLATE = {
    "name": "disksweep-template", "template": "1", "agent": "1", "memory": "1024", "cores": "1",
    "ostype": "l26", "scsihw": "virtio-scsi-single", "boot": "order=scsi0", "serial0": "socket",
    "scsi0": "local-lvm:base-{vmid}-disk-0,size=2G",
}


@dataclass
class Options:
    schema_path: str
    cert_dir: str
    token: str                                  # USER@REALM!TOKENID=SECRET
    # The PVE release simulated (api.PVE_RELEASES): its privileges, its
    # /version; the schema must be that release's.
    pve_version: str = "8.4"
    # What GET /version answers instead of the release's own "X.Y.Z" (a
    # release clients must refuse); the rules stay pve_version's.
    version_override: Optional[str] = None
    # Users, tokens, roles and ACLs (access.py); None: the token may do
    # everything its user may, and its user is root@pam or an Administrator.
    access_file: Optional[str] = None
    nodes: list = field(default_factory=lambda: ["pve1"])
    state_file: Optional[str] = None            # initial nodes/storages/VMs (JSON), replaces the defaults
    template_vmid: Optional[int] = 9000         # None: no template VM
    task_seconds: float = 0.3
    agent_delay: float = 0.2
    nextid_range: tuple = (100, 999999999)
    guest_root: Optional[str] = None
    guest_exec: Optional[str] = None
    faults: list = field(default_factory=list)  # rule dicts
    tls_fault: bool = False
    max_post: int = 64 * 1024                   # pveproxy's limit before libpve-http-server-perl 5.2.1
    unauthorized_delay: float = 0.0             # pveproxy waits 3 s; tests need not
    host: str = "127.0.0.1"
    port: int = 0
    quiet: bool = False
    # IMAGE_DIR: real QEMU guests behind the fake (machines.py, real_backend.py);
    # None: the in-process simulation.
    real_guests: Optional[str] = None
    real_work_dir: Optional[str] = None         # the real backend's volumes and sockets (default: a temp dir)
    # The template VM from `scripts/pve-make-template.sh --dry-run`'s output
    # (template_script.py); it replaces a VM of the same id.
    template_script: Optional[str] = None
    # QEMU -drive options the real backend uses instead of the config's
    # (real_backend.inject_drive_options), e.g. {"cache": "writeback"}.
    inject_qemu: Optional[dict] = None


class FakeState:
    """Everything the simulation keeps; `lock` guards cluster and tasks."""

    def __init__(self, options: Options, guest_handler: Optional[Callable], machines=None):
        self.lock = threading.RLock()
        self.version = options.pve_version
        self.release = api.release(options.pve_version)
        if options.version_override:
            self.release = {**self.release, "version": options.version_override,
                            "release": options.version_override.rpartition(".")[0] or options.version_override}
        self.schema = ApiSchema.load(options.schema_path)
        _check_schema_release(self.schema, options.pve_version)
        self.unchecked_formats = set()
        self.validator = Validator(self.schema, self._note_unchecked)
        self.cluster = _initial_cluster(options)
        template = template_script.load(self.cluster, options.template_script) if options.template_script else None
        self.tasks = TaskRegistry(options.task_seconds)
        root = options.guest_root or os.path.join(options.cert_dir, "guests")
        handler = guest_handler or (subprocess_handler(options.guest_exec) if options.guest_exec else None)
        guests = Guests(root, handler)
        # `machines`: a factory (cluster, guests) -> Machines, for tests of the seam.
        self.machines = machines(self.cluster, guests) if machines else _load_machines(options, self.cluster, guests)
        self.guests = self.machines.guests
        self.cluster.machines = self.machines
        map_node_file = getattr(self.machines, "map_node_file", None)
        if template and map_node_file:
            for node_path, host_path in template.installed.items():
                map_node_file(node_path, host_path)
        _announce_initial_volumes(self.cluster, self.machines, template.files_by_volid() if template else {})
        self.faults = Faults()
        for rule in options.faults:
            self.faults.add(FaultRule.from_json(rule))
        self.token_user, _, self.token_secret = options.token.partition("=")
        self.access = access.Rpc(access.load(options.access_file, options.pve_version, self.token_user)
                                 if options.access_file else access.default_config(options.pve_version, self.token_user))
        self.fingerprint = certs.fingerprint(os.path.join(options.cert_dir, "server.pem"))
        self.requests = []
        self.quiet = options.quiet

    def _note_unchecked(self, name: str) -> None:
        if name not in self.unchecked_formats:
            self.unchecked_formats.add(name)
            if not self.quiet:
                print(f"pve_fake: format '{name}' is not checked (value accepted as a string)", file=sys.stderr)

    @staticmethod
    def discard_log() -> TaskLog:
        return TaskLog()

    def secret_of(self, tokenid: str) -> Optional[str]:
        """The secret a token authenticates with: the --token's, or one the
        access file gives."""
        return self.token_secret if tokenid == self.token_user else self.access.authenticate(tokenid)


# How each release's schema shows itself: the privilege agent/exec checks
# (8.4: VM.Monitor; 9.x: VM.GuestAgent.Unrestricted, qemu-server "api: agent:
# use more specific guest agent privileges").
_RELEASE_MARKERS = {"8.4": "VM.Monitor", "9.1": "VM.GuestAgent.Unrestricted"}
_MARKER_METHOD = ("/nodes/{node}/qemu/{vmid}/agent/exec", "POST")


def _marker_check(schema: ApiSchema) -> str:
    method = schema.method(*_MARKER_METHOD)
    return json.dumps((method.info.get("permissions") or {}).get("check")) if method else ""


def schema_release(schema: ApiSchema) -> Optional[str]:
    """The release whose schema this is (by _RELEASE_MARKERS), or None."""
    check = _marker_check(schema)
    return next((version for version, marker in _RELEASE_MARKERS.items() if marker in check), None)


def _check_schema_release(schema: ApiSchema, version: str) -> None:
    """A schema of another release than --pve-version is refused: its
    permissions would name privileges the release does not have."""
    if schema_release(schema) != version:
        raise ValueError(f"the schema is not PVE {version}'s: agent/exec's permissions "
                         f"{_marker_check(schema) or 'missing'} do not name {_RELEASE_MARKERS[version]}")


def _load_machines(options: Options, cluster: Cluster, guests: Guests):
    """machines.load_machines, told the release where it takes `pve_version`
    (the drive -> QEMU rules differ: qemu-server 8.3's -drive, 9.2's -blockdev)."""
    extra = {"pve_version": options.pve_version} \
        if "pve_version" in inspect.signature(load_machines).parameters else {}
    return load_machines(options.real_guests, cluster, guests, options.real_work_dir, options.inject_qemu, **extra)


def _initial_cluster(options: Options) -> Cluster:
    if options.state_file:
        with open(options.state_file, encoding="utf-8") as handle:
            return _cluster_from_json(json.load(handle), options)
    storages = [Storage("local", "dir", ["iso", "vztmpl", "backup", "snippets", "images"]),
                Storage("local-lvm", "lvmthin", ["images", "rootdir"])]
    cluster = Cluster(options.nodes, storages, options.nextid_range, options.agent_delay)
    if options.template_vmid is not None:
        config = {k: v.format(vmid=options.template_vmid) for k, v in DEFAULT_TEMPLATE.items()}
        _add_vm_with_volumes(cluster, options.template_vmid, options.nodes[0], config, "stopped")
    return cluster


def _cluster_from_json(data: dict, options: Options) -> Cluster:
    """{"nodes": [...], "storages": [{"id", "type", "content", "shared", "nodes",
        "total", "format", "path"}], "vms": [{"vmid", "node", "config": {...},
        "status"}]}; volumes named in the VMs' configs are created with the
    size their `size=` says."""
    storages = [Storage(s["id"], s["type"], s.get("content", ["images", "rootdir"]), s.get("shared", False),
                        s.get("total", 100 * 1024 ** 3), s.get("nodes"), s.get("format"), s.get("path"))
                for s in data.get("storages", [])]
    cluster = Cluster(data.get("nodes", options.nodes), storages, options.nextid_range, options.agent_delay)
    for vm in data.get("vms", []):
        _add_vm_with_volumes(cluster, int(vm["vmid"]), vm["node"], vm["config"], vm.get("status", "stopped"))
    return cluster


def _add_vm_with_volumes(cluster: Cluster, vmid: int, node: str, config: dict, status: str) -> None:
    """A VM of the initial state; its drives' volumes exist (format from the
    file name's extension, else raw), owned by the VMID their name says."""
    vm = cluster.add_vm(vmid, node, {k: str(v) for k, v in config.items()})
    vm.status = status
    for key, value in vm.config.items():
        volume, options = split_drive(value)
        if ":" in volume and (key.startswith(("ide", "sata", "scsi", "virtio", "unused", "efidisk", "tpmstate"))):
            size = parse_size(options.get("size", "1G"))
            name = volume.split(":", 1)[1].rsplit("/", 1)[-1]
            owner = re.search(r"-(\d+)-", name)
            fmt = name.rsplit(".", 1)[1] if re.search(r"\.(raw|qcow2|vmdk)$", name) else "raw"
            cluster.volumes[volume] = Volume(volume, volume.split(":", 1)[0], node,
                                             int(owner.group(1)) if owner else vmid, size, fmt)
            vm.config[key] = value if "size" in options else f"{value},size={format_size(size)}"


def _announce_initial_volumes(cluster: Cluster, machines, files: dict) -> None:
    """The backend learns of the initial state's volumes (initial_volume if it
    has one, else as new empty volumes); `files`: volid -> the host file that
    is its content (the template's imported disk)."""
    initial = getattr(machines, "initial_volume", None)
    for volume in cluster.volumes.values():
        if initial:
            initial(volume.volid, volume.size, volume.format, files.get(volume.volid))
        else:
            machines.volume_created(volume.volid, volume.size, volume.format)


# ---- HTTP ------------------------------------------------------------------------------------


class FakePveServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, options: Options, state: FakeState):
        super().__init__((options.host, options.port), RequestHandler)
        self.options, self.state = options, state
        self.contexts = {name: _tls_context(options.cert_dir, name) for name in ("server", "other")}
        self.serving = "other" if options.tls_fault else "server"

    def get_request(self):
        """Each connection gets the certificate being served at accept time."""
        sock, address = self.socket.accept()
        wrapped = self.contexts[self.serving].wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return wrapped, address


def _tls_context(cert_dir: str, name: str) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(os.path.join(cert_dir, f"{name}.pem"), os.path.join(cert_dir, f"{name}.key"))
    return context


class RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "pve-api-daemon/3.0"
    sys_version = ""
    timeout = 30

    def setup(self):
        super().setup()
        try:
            self.connection.do_handshake()
        except (ssl.SSLError, OSError):
            self.close_connection = True
            self.handshake_failed = True
        else:
            self.handshake_failed = False

    def handle(self):
        if not self.handshake_failed:
            super().handle()

    def log_message(self, format, *args):  # noqa: A002 (BaseHTTPRequestHandler's name)
        if not self.server.state.quiet:
            super().log_message(format, *args)

    do_GET = do_POST = do_PUT = do_DELETE = lambda self: self._dispatch()

    def _dispatch(self):
        url = urlsplit(self.path)
        if url.path.startswith(CONTROL_PREFIX):
            self._control(url.path[len(CONTROL_PREFIX):])
        elif url.path.startswith(API_PREFIX + "/"):
            self._api(url.path[len(API_PREFIX):], url.query)
        else:
            self._reply_raw(501, "no such uri", b"no such uri")

    # ---- the API pipeline -------------------------------------------------------------

    def _api(self, path: str, query: str):
        state = self.server.state
        plan = state.faults.plan(self.command, path)
        if plan.delay:
            time.sleep(plan.delay)
        if plan.drop:
            self.close_connection = True
            return
        started = time.monotonic()
        record = {"method": self.command, "path": path, "status": None, "at": time.time()}
        try:
            user = self._authenticate()
            if plan.status:
                raise ApiError(plan.status, plan.message or _DEFAULT_FAULT_MESSAGES.get(plan.status, "injected fault"))
            body = self._read_body()
            request = self._verified_request(path, query, body, user, record)
            request.forced_task = plan.task
            data = self._simulate(request)
            record["status"] = 200
            self._reply_json(200, "OK", _envelope(data, request.total))
        except ApiError as error:
            record["status"] = error.status
            record["message"] = error.message
            if error.errors:
                record["errors"] = error.errors
            self._reply_error(error)
        except Exception as error:  # a bug of the fake: answer it, loudly, instead of dropping the connection
            traceback.print_exc()
            record["status"] = 500
            self._reply_error(ApiError(500, f"pve_fake internal error: {error!r}"))
        finally:
            record["seconds"] = round(time.monotonic() - started, 4)
            with state.lock:
                state.requests.append(record)

    def _authenticate(self) -> str:
        state = self.server.state
        header = self.headers.get("Authorization")
        if not header:
            self._unauthorized_pause()
            raise ApiError(401, "No ticket")
        scheme, _, value = header.partition("=")
        user, _, secret = value.partition("=")
        expected = state.secret_of(user) if scheme == "PVEAPIToken" else None
        if expected is None or not hmac.compare_digest(secret.encode(), expected.encode()):
            self._unauthorized_pause()
            raise ApiError(401, "authentication failure")
        return user

    def _unauthorized_pause(self):
        time.sleep(self.server.options.unauthorized_delay)

    def _read_body(self) -> bytes:
        """pve-http-server AnyEvent.pm, the request reader (after
        authentication): content only on PUT/POST, at most max_post bytes,
        and of no type, a form or JSON; other types are a 506."""
        length = int(self.headers.get("Content-Length") or 0)
        if not length:
            return b""
        if self.command not in ("POST", "PUT"):
            raise ApiError(501, f"Unexpected content for method '{self.command}'", raw_body=True)
        if length > self.server.options.max_post:
            # pveproxy answers before reading, so a sender still writing may see a
            # reset instead; the fake reads (a bounded amount) first, so the 501
            # always arrives.
            self.rfile.read(min(length, DRAIN_LIMIT))
            self.close_connection = True
            raise ApiError(501, "for data too large", raw_body=True)
        raw = self.rfile.read(length)
        header = self.headers.get("Content-Type")
        if content_type_of(header) not in (None, "application/x-www-form-urlencoded", "application/json"):
            raise ApiError(506, f"upload 'Content-Type '{header}' not implemented", raw_body=True)
        return raw

    def _verified_request(self, path: str, query: str, body: bytes, user: str, record: dict) -> api.Request:
        state = self.server.state
        # pve-http-server AnyEvent.pm, handle_api2_request: the parameters are
        # decoded first (a malformed JSON body is a 500 whatever the path) ...
        sent = extract_params(self.command, content_type_of(self.headers.get("Content-Type")), body, query)
        # ... then pve-manager PVE/HTTPServer.pm, rest_handler, finds the method.
        segments = api_path_segments(path)
        resolved = state.schema.resolve(segments)
        method = state.schema.method(resolved[0], self.command) if resolved else None
        if method is None:
            raise ApiError(501, f"Method '{self.command} {API_PREFIX}{path}' not implemented")
        template, path_params = resolved
        params = merge_uri_params(path_params, sent)
        record["params"] = {name: value for name, value in params.items()}
        # pve-manager PVE/HTTPServer.pm, rest_handler: a token on a method
        # without `allowtoken` is a permission error (403), after the merge.
        if not method.info.get("allowtoken"):
            raise ApiError(403, f"Permission check failed (URI '{path}' not available with API token, "
                                "need proper ticket.)")
        # ... then RPCEnvironment.pm check_api2_permissions, on the parameters
        # as sent (before they are verified).
        state.access.check_api2_permissions(method.info.get("permissions"), user, params)
        params = normalize_legacy_param_formats(method, params)
        errors = state.validator.validate(method, params)
        if errors:
            raise ApiError(400, "Parameter verification failed.", errors)
        return api.Request(self.command, path, template, handler_params(params), user)

    def _simulate(self, request: api.Request):
        state = self.server.state
        handler = api.ROUTES.get((request.method, request.template))
        if handler is None:
            raise ApiError(501, f"pve_fake: {request.method} {request.template} is in the schema but not simulated")
        with state.lock:
            state.tasks.advance()
            if handler not in api.RELAY_HANDLERS:
                data = handler(state, request)
        if handler in api.RELAY_HANDLERS:
            # They take the lock for the state themselves: a real guest's
            # answer may take seconds, and other requests must not wait for it.
            data = handler(state, request)
        method = state.schema.method(request.template, request.method)
        problems = return_problems(method.returns, data)
        if problems:
            print(f"pve_fake BUG: {request.method} {request.template}: {problems}", file=sys.stderr)
            raise ApiError(500, "pve_fake: the answer breaks the schema's returns: " + "; ".join(problems))
        return data

    # ---- control endpoints --------------------------------------------------------------

    def _control(self, what: str):
        state = self.server.state
        routes = {
            ("GET", "health"): lambda: "ok",
            ("GET", "requests"): lambda: list(state.requests),
            ("GET", "state"): self._state_dump,
            ("GET", "faults"): state.faults.rules,
            ("POST", "faults"): self._add_faults,
            ("DELETE", "faults"): state.faults.clear,
            ("POST", "tls"): self._set_tls,
            ("GET", "inject"): lambda: getattr(state.machines, "inject", None),
            ("POST", "inject"): self._set_inject,
        }
        action = routes.get((self.command, what))
        if action is None:
            self._reply_json(404, "Not Found", {"error": f"no control endpoint {self.command} /_fake/{what}"})
            return
        try:
            with state.lock:
                self._reply_json(200, "OK", {"data": action()})
        except (ValueError, KeyError, TypeError) as error:
            self._reply_json(400, "Bad Request", {"error": str(error)})

    def _control_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length) or b"null")

    def _add_faults(self):
        body = self._control_body()
        for rule in body if isinstance(body, list) else [body]:
            self.server.state.faults.add(FaultRule.from_json(rule))
        return self.server.state.faults.rules()

    def _set_inject(self):
        """The real backend's injection (real_backend.py): a JSON object of
        QEMU -drive options (optionally "vmid", "drive"), or null for none;
        it applies to VMs started from now on."""
        machines = self.server.state.machines
        if not hasattr(machines, "inject"):
            raise ValueError("injection needs real guests (--real-guests IMAGE_DIR)")
        body = self._control_body()
        if body is not None and not isinstance(body, dict):
            raise ValueError("inject: a JSON object or null")
        machines.inject = body
        return body

    def _set_tls(self):
        serve = self._control_body().get("serve")
        if serve not in ("primary", "alternate"):
            raise ValueError("serve must be 'primary' or 'alternate'")
        self.server.serving = "server" if serve == "primary" else "other"
        return serve

    def _state_dump(self):
        state = self.server.state
        state.tasks.advance()
        return {
            "vms": {vm.vmid: {"node": vm.node, "status": vm.status, "lock": vm.lock, "config": vm.config,
                              "pending": vm.pending, "pending_delete": vm.pending_delete}
                    for vm in state.cluster.vms.values()},
            "volumes": sorted(state.cluster.volumes),
            "tasks": [{**t.status(), "log": t.log} for t in state.tasks.all()],
            "unchecked_formats": sorted(state.unchecked_formats),
            # The processes behind the VMs ({vmid: pid} of real QEMUs; empty when simulated).
            "processes": {str(vmid): pid for vmid, pid in getattr(state.machines, "processes", dict)().items()},
        }

    # ---- answers -------------------------------------------------------------------------

    def _reply_error(self, error: ApiError):
        if error.status == 401:
            self._reply_raw(401, error.message, b"")
            return
        if error.raw_body:
            # pve-http-server AnyEvent.pm, error: the message is the body too.
            self._reply_raw(error.status, error.message, error.message.encode("utf-8"))
            return
        body = {"data": None, "message": error.message + "\n"}
        if error.errors:
            body["errors"] = error.errors
        self._reply_json(error.status, error.message, body)

    def _reply_json(self, status: int, reason: str, body) -> None:
        self._reply_raw(status, reason, json.dumps(body).encode("utf-8"), "application/json;charset=UTF-8")

    def _reply_raw(self, status: int, reason: str, payload: bytes, content_type: str = "text/plain") -> None:
        # A status line is Latin-1 and one line; the body keeps the message whole.
        self.send_response(status, " ".join(reason.split()).encode("latin-1", "replace").decode("latin-1"))
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("Cache-Control", "max-age=0")
        self.end_headers()
        self.wfile.write(payload)


_DEFAULT_FAULT_MESSAGES = {401: "authentication failure", 403: "Permission check failed",
                           500: "injected internal error", 503: "Service Unavailable"}


def _envelope(data, total: Optional[int]) -> dict:
    answer = {"data": data}
    if total:
        answer["total"] = total
    return answer


# ---- request parameters as pveproxy decodes them ---------------------------------------------
#
# A decoded parameter is what PVE's Perl code holds after decoding: a string,
# None (Perl's undef: the key was sent without a value), a list (a repeated
# key, or a JSON array), or, from a JSON body, a bool (JSON::PP::Boolean) or
# a dict. Validation (schema.py) sees these as PVE's validator does.

_PERCENT_ESCAPE = re.compile(rb"%([0-9a-fA-F]{2})")


def _unescape(raw: bytes) -> bytes:
    return _PERCENT_ESCAPE.sub(lambda m: bytes([int(m.group(1), 16)]), raw.replace(b"+", b" "))


def _perl_split(separator: "re.Pattern", raw: bytes) -> list:
    """Perl's split(/RE/, STRING) without a limit: trailing empty fields are
    dropped (leading ones are kept), and an empty string gives no field."""
    fields = separator.split(raw)
    while fields and fields[-1] == b"":
        fields.pop()
    return fields


_PAIR_SEPARATOR = re.compile(rb"[&;]")
_KEY_VALUE_SEPARATOR = re.compile(rb"=")


def decode_urlencoded(raw: bytes) -> dict:
    """pve-http-server src/PVE/APIServer/AnyEvent.pm, decode_urlencoded (the
    query string and a form body alike):
      * pairs are separated by '&' OR ';';
      * each pair is split(/=/): the key is the first field, the value the
        second, the rest is lost ("a=b=c" gives a "b"), and Perl's split drops
        trailing empty fields, so "content=" (and "content") has NO value: the
        key maps to undef, which the validator treats as missing ("property
        is missing and it is not optional" for a required parameter);
      * an empty pair ("a=1&&b=2", a leading '&') is the key "" (an unknown
        parameter: the validator reports it under "_root");
      * '+' is a blank and %XX a byte, in key and value; only the value is
        then decoded as UTF-8 (lax: a malformed byte becomes U+FFFD);
      * a repeated key with a value collects the values in a list (an array;
        a scalar parameter then fails "type check ('string') failed - got
        ARRAY"); a repeated key without a value replaces what came before
        with undef;
      * an empty (or "0") body decodes to nothing (`return $res if !$data`)."""
    decoded = {}
    if not raw or raw == b"0":
        return decoded
    for pair in _PAIR_SEPARATOR.split(raw):
        fields = _perl_split(_KEY_VALUE_SEPARATOR, pair)
        key = _unescape(fields[0]).decode("latin-1") if fields else ""
        value = _unescape(fields[1]).decode("utf-8", "replace") if len(fields) > 1 else None
        if value is not None and decoded.get(key) is not None:
            old = decoded[key]
            value = old + [value] if isinstance(old, list) else [old, value]
        decoded[key] = value
    return decoded


def content_type_of(header: Optional[str]) -> Optional[str]:
    """pve-http-server AnyEvent.pm, parse_content_type: the media type is
    what comes before the first ';' or ',' (compared case-sensitively)."""
    if not header:
        return None
    return re.split(r"\s*[;,]\s*", header.strip())[0]


def decode_json_body(raw: bytes):
    """pve-http-server AnyEvent.pm, extract_params: decode_json of the body.
    A body that is no JSON dies in decode_json, one that is no object dies
    at `delete $params->{_dc}`: both are a 500 from handle_api2_request's eval."""
    try:
        decoded = json.loads(raw, parse_float=_perl_number, parse_int=_perl_number,
                             parse_constant=lambda name: _malformed(raw))
    except ValueError as error:
        raise ApiError(500, f"malformed JSON string, {error}", raw_body=True) from None
    if not isinstance(decoded, dict):
        raise ApiError(500, "Not a HASH reference", raw_body=True)
    return decoded


def _malformed(raw: bytes):
    raise ValueError("neither tag, array, object, number, string or atom")


def _perl_number(text: str) -> str:
    """A JSON number as Perl's validator then sees it: its string form
    (1.0 and 1e3 are the numbers 1 and 1000)."""
    number = float(text)
    if number.is_integer() and abs(number) < 1e15:
        return str(int(number))
    return "%.15g" % number


def extract_params(method: str, content_type: Optional[str], body: bytes, query: str) -> dict:
    """pve-http-server AnyEvent.pm, extract_params: a PUT or POST body is
    JSON when its type is application/json, a form otherwise; the query's
    parameters then REPLACE body parameters of the same name. `_dc` (ExtJS's
    cache buster) is removed (handle_api2_request)."""
    params = {}
    if method in ("PUT", "POST"):
        params = decode_json_body(body) if content_type == "application/json" else decode_urlencoded(body)
    params.update(decode_urlencoded(query.encode("latin-1", "replace")))
    params.pop("_dc", None)
    return params


def api_path_segments(path: str) -> list:
    """pve-http-server AnyEvent.pm: the path is uri_unescape'd first, then
    pve-common RESTHandler.pm find_handler splits it on '/+' (empty parts
    skipped); map_path_to_methods joins what follows a subclass registered
    with fragmentDelimiter '' into one part: pve-storage's
    {storage}/content, "because volume IDs may contain a slash"."""
    segments = [s for s in re.split(r"/+", unquote(path)) if s]
    if len(segments) > 6 and segments[0] == "nodes" and segments[2] == "storage" and segments[4] == "content":
        segments = segments[:5] + ["/".join(segments[5:])]
    return segments


def merge_uri_params(uri_params: dict, params: dict) -> dict:
    """pve-manager PVE/HTTPServer.pm, rest_handler: a parameter may repeat a
    path parameter only with the same value (Perl's `ne`: a list never
    equals a string)."""
    merged = dict(uri_params)
    for name in sorted(params):
        value = params[name]
        if uri_params.get(name) is not None and (not isinstance(value, str) or value != uri_params[name]):
            raise ApiError(400, "Parameter verification failed.",
                           {name: "duplicate parameter (already defined in URI) with conflicting values!"})
        merged[name] = value
    return merged


# ---- running it -------------------------------------------------------------------------------


class FakePve:
    """The fake, for Python callers: FakePve(options).start() serves in a
    thread and returns the port; stop() ends it."""

    def __init__(self, options: Options, guest_command_handler: Optional[Callable] = None, machines=None):
        certs.ensure_certificates(options.cert_dir)
        self.state = FakeState(options, guest_command_handler, machines)
        self.server = FakePveServer(options, self.state)
        self._thread = None
        self._stopping = threading.Event()

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    def start(self) -> int:
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)
        self._thread.start()
        return self.port

    def serve_forever(self) -> None:
        threading.Thread(target=self._end_tasks_on_time, daemon=True).start()
        self.server.serve_forever()

    def stop(self) -> None:
        self._stopping.set()
        self.server.shutdown()
        self.server.server_close()
        self.close_machines()

    def close_machines(self) -> None:
        """Ends what the backend started (real QEMU processes); a no-op for the simulation."""
        close = getattr(self.state.machines, "close", None)
        if close:
            close()

    def _end_tasks_on_time(self) -> None:
        """Tasks end when their time is up, asked about or not (a started VM's
        agent comes up agent_delay after its start task ended)."""
        while not self._stopping.wait(TASK_TICK_SECONDS):
            with self.state.lock:
                self.state.tasks.advance()
