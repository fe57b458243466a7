"""The QEMU guest agent of each simulated VM, as PVE's agent API shows it.

Files: each VM's guest file system is a real directory, GUEST_ROOT/VMID;
a guest path /a/b is GUEST_ROOT/VMID/a/b (never outside it). agent/file-write
writes there, agent/file-read reads there, and a command handler (below)
can read and write the same files.

Commands (agent/exec): PVE starts `command` (an array, no shell) and answers
a pid; agent/exec-status answers {"exited": 0} while it runs and, once it
has ended, {"exited": 1, "exitcode": N, "out-data": ..., "err-data": ...}
exactly once: the agent then forgets the pid, and asking again is an error.
Each captured stream is capped at 16 MiB with "out-truncated"/"err-truncated".
What runs:
  * with no handler: a few built-in commands emulated in Python, nothing is
    started on this machine: echo, cat FILE..., sleep SECONDS, true, false;
    any other program fails as QGA fails to spawn it;
  * with a subprocess handler (--guest-exec "PROGRAM ARGS..."): PROGRAM ARGS...
    followed by the guest's command, run on this machine with the VM's guest
    root as working directory and PVE_FAKE_GUEST_ROOT, PVE_FAKE_VMID in the
    environment, input-data on stdin;
  * with a Python callable (FakePve(..., guest_command_handler=f)):
    f(GuestCall) -> (exitcode, stdout bytes, stderr bytes), in a thread; a
    negative exitcode means killed by that signal (reported as "signal").
"""

import os
import shlex
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import Callable, Optional

# Written into the guest before each agent/exec: the VM's config as JSON, so a
# simulated guest program can see its hardware as a real guest sees the
# devices QEMU made from that config (tests/proxmox/standin_guest.py).
HARDWARE_FILE = "/etc/pve-fake/vm-config.json"

STREAM_CAP = 16 * 1024 * 1024
FILE_READ_CAP = 16 * 1024 * 1024


class AgentError(Exception):
    """A QGA failure; the API answers 500 "Agent error: MESSAGE"."""


@dataclass
class GuestCall:
    vmid: int
    argv: list
    input_data: Optional[bytes]
    root: str            # the VM's guest root directory

    def host_path(self, guest_path: str) -> str:
        return map_guest_path(self.root, guest_path)


@dataclass
class _Process:
    thread: threading.Thread
    result: Optional[tuple] = None      # (exitcode, out, err) once ended


def map_guest_path(root: str, guest_path: str) -> str:
    relative = os.path.normpath("/" + guest_path).lstrip("/")
    return os.path.join(root, relative)


class Guests:
    def __init__(self, root: str, handler: Optional[Callable[[GuestCall], tuple]]):
        self._root = root
        self._handler = handler or builtin_commands
        self._processes = {}
        self._pids = iter(range(1000, 1 << 30))
        self._lock = threading.Lock()

    def root_of(self, vmid: int) -> str:
        path = os.path.join(self._root, str(vmid))
        os.makedirs(path, exist_ok=True)
        return path

    # ---- files -------------------------------------------------------------------

    def write_file(self, vmid: int, guest_path: str, content: bytes) -> None:
        path = map_guest_path(self.root_of(vmid), guest_path)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as handle:
                handle.write(content)
        except OSError as error:
            raise AgentError(_open_failure(guest_path, "wb", error)) from None

    def read_file(self, vmid: int, guest_path: str, offset: int = 0, count: Optional[int] = None) -> tuple:
        """(content, truncated) of a guest file as qemu-server API2/Qemu/Agent.pm
        file-read gets it: after a guest-file-seek to `offset` (qemu-server 9),
        1 MiB guest-file-reads until one reports EOF or `count` (default 16
        MiB) bytes were read. QGA reports EOF only after a read that hit the
        end (feof), so exactly `count` bytes left or more read as truncated."""
        path = map_guest_path(self.root_of(vmid), guest_path)
        limit = FILE_READ_CAP if count is None else count
        try:
            with open(path, "rb") as handle:
                handle.seek(offset)
                content = handle.read(limit)
        except OSError as error:
            raise AgentError(_open_failure(guest_path, "r", error)) from None
        return content, len(content) >= limit

    # ---- commands -----------------------------------------------------------------

    def exec(self, vmid: int, argv: list, input_data: Optional[bytes]) -> int:
        if self._handler is builtin_commands and os.path.basename(argv[0]) not in BUILTINS:
            # QGA qmp_guest_exec: g_spawn's error in QERR_QGA_COMMAND_FAILED.
            raise AgentError("Guest agent command failed, error was 'Failed to execute child process "
                             f"\u201c{argv[0]}\u201d (No such file or directory)'")
        call = GuestCall(vmid, list(argv), input_data, self.root_of(vmid))
        with self._lock:
            pid = next(self._pids)
            process = _Process(threading.Thread(target=self._run, args=(pid, call), daemon=True))
            self._processes[(vmid, pid)] = process
        process.thread.start()
        return pid

    def _run(self, pid: int, call: GuestCall) -> None:
        try:
            result = self._handler(call)
        except Exception as error:  # a handler bug must show, not hang the caller
            result = (127, b"", f"pve_fake guest handler failed: {error}\n".encode())
        with self._lock:
            process = self._processes.get((call.vmid, pid))
            if process:
                process.result = result

    def exec_status(self, vmid: int, pid: int) -> dict:
        with self._lock:
            process = self._processes.get((vmid, pid))
            if process is None:
                raise AgentError("Invalid parameter 'pid'")
            if process.result is None:
                return {"exited": 0}
            del self._processes[(vmid, pid)]
        return _exited(*process.result)

    def forget(self, vmid: int) -> None:
        """The VM stopped: its agent's processes are gone."""
        with self._lock:
            for key in [k for k in self._processes if k[0] == vmid]:
                del self._processes[key]

    def erase(self, vmid: int) -> None:
        """The VM was destroyed: its disks, and the guest's files with them, are gone
        (a later VM of the same id starts from its own clone)."""
        self.forget(vmid)
        shutil.rmtree(os.path.join(self._root, str(vmid)), ignore_errors=True)


def _open_failure(guest_path: str, mode: str, error: OSError) -> str:
    """QGA guest-file-open (qga/commands-posix.c): error_setg_errno(...,
    "failed to open file '%s' (mode: '%s')"): the errno's text follows."""
    return f"failed to open file '{guest_path}' (mode: '{mode}'): {error.strerror}"


def _exited(exitcode: int, out: bytes, err: bytes) -> dict:
    """A negative exitcode means "killed by signal -exitcode", as subprocess says."""
    answer = {"exited": 1, "exitcode": exitcode} if exitcode >= 0 else {"exited": 1, "signal": -exitcode}
    for name, data in (("out", out), ("err", err)):
        if data:
            answer[f"{name}-data"] = data[:STREAM_CAP].decode("latin-1")
        if len(data) > STREAM_CAP:
            answer[f"{name}-truncated"] = 1
    return answer


# ---- what runs a command -----------------------------------------------------------


def _echo(call: GuestCall) -> tuple:
    return 0, (" ".join(call.argv[1:]) + "\n").encode(), b""


def _cat(call: GuestCall) -> tuple:
    out, err, code = b"", b"", 0
    for name in call.argv[1:]:
        try:
            with open(call.host_path(name), "rb") as handle:
                out += handle.read()
        except OSError as error:
            err, code = err + f"cat: {name}: {error.strerror}\n".encode(), 1
    return code, out, err


def _sleep(call: GuestCall) -> tuple:
    time.sleep(float(call.argv[1]) if len(call.argv) > 1 else 0)
    return 0, b"", b""


BUILTINS = {
    "echo": _echo,
    "cat": _cat,
    "sleep": _sleep,
    "true": lambda call: (0, b"", b""),
    "false": lambda call: (1, b"", b""),
}


def builtin_commands(call: GuestCall) -> tuple:
    return BUILTINS[os.path.basename(call.argv[0])](call)


def subprocess_handler(command: str) -> Callable[[GuestCall], tuple]:
    """Runs `command` + the guest's argv on this machine (see the module doc)."""
    prefix = shlex.split(command)

    def run(call: GuestCall) -> tuple:
        environment = dict(os.environ, PVE_FAKE_GUEST_ROOT=call.root, PVE_FAKE_VMID=str(call.vmid))
        completed = subprocess.run(prefix + call.argv, input=call.input_data or b"", capture_output=True,
                                   cwd=call.root, env=environment, check=False)
        return completed.returncode, completed.stdout, completed.stderr

    return run
