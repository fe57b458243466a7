"""One real QEMU process behind the simulated PVE: spawn, monitor, guest agent, kill.

Contract:
  * Machine(vmid, argv, run_dir).start(timeout) spawns QEMU as our child (no
    -daemonize), in its own session, with PR_SET_PDEATHSIG so that it dies with
    the fake even on SIGKILL; it returns once the QMP socket answers. The
    "parent" of PR_SET_PDEATHSIG is the *thread* that forked (prctl(2)), and
    the fake starts VMs from short-lived HTTP request threads, so every QEMU
    is forked by one spawner thread that lives as long as the process. Its
    stdout/stderr go to RUN_DIR/VMID.log; a QEMU that exits early raises
    MachineError with the log's tail.
  * qmp(command, **arguments) runs a QMP command (one connection, kept open,
    serialised by a lock); hmp(text) runs an HMP command through
    human-monitor-command, as PVE's monitor API does (PVE/API2/Qemu.pm monitor).
  * agent(command, arguments, timeout) is one QGA call over the VM's qga
    socket, framed as PVE frames it (PVE/QMPClient.pm: a guest-sync-delimited
    with a fresh id before each command; the answer follows the 0xFF the agent
    writes, and answers to earlier ids are skipped). It returns the
    `return` value or raises AgentReply (the agent's own error) or AgentTimeout.
  * stop() asks QEMU to quit, kills it if it does not within a second, reaps
    it and removes its sockets, pidfile and log; safe to call twice.
"""

import concurrent.futures
import ctypes
import json
import queue
import os
import signal
import socket
import subprocess
import threading
import time
from typing import Optional

PR_SET_PDEATHSIG = 1


class MachineError(Exception):
    """QEMU did not start, or its monitor failed."""


class AgentReply(Exception):
    """The guest agent answered with an error; the text is its `desc`."""


class AgentTimeout(Exception):
    """No answer from the guest agent in time (PVE: "got timeout")."""


def _die_with_parent() -> None:
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class _Spawner:
    """One thread, alive until the process ends, that runs every Popen (see
    the module doc: a QEMU must not die with the request thread that started it)."""

    def __init__(self):
        self._work = queue.Queue()
        threading.Thread(target=self._serve, name="qemu-spawner", daemon=True).start()

    def _serve(self) -> None:
        while True:
            job, future = self._work.get()
            try:
                future.set_result(job())
            except BaseException as error:  # noqa: BLE001 (handed to the caller)
                future.set_exception(error)

    def popen(self, *args, **kwargs) -> subprocess.Popen:
        future = concurrent.futures.Future()
        self._work.put((lambda: subprocess.Popen(*args, **kwargs), future))
        return future.result()


_SPAWNER_LOCK = threading.Lock()
_SPAWNER: Optional[_Spawner] = None


def _spawner() -> _Spawner:
    global _SPAWNER
    with _SPAWNER_LOCK:
        if _SPAWNER is None:
            _SPAWNER = _Spawner()
        return _SPAWNER


class _JsonLines:
    """A unix stream socket read as JSON lines, with a deadline per read."""

    def __init__(self, path: str, timeout: float):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.buffer = b""

    def send(self, message: dict) -> None:
        self.sock.sendall(json.dumps(message).encode() + b"\n")

    def read_until(self, marker: bytes, deadline: float) -> None:
        """Drops everything up to and including `marker`."""
        while marker not in self.buffer:
            self._fill(deadline)
        self.buffer = self.buffer.split(marker, 1)[1]

    def read_json(self, deadline: float) -> dict:
        while b"\n" not in self.buffer:
            self._fill(deadline)
        line, self.buffer = self.buffer.split(b"\n", 1)
        line = line.strip()
        if not line:
            return self.read_json(deadline)
        value = json.loads(line)
        if not isinstance(value, dict):
            raise ValueError(f"not a JSON object: {line[:100]!r}")
        return value

    def _fill(self, deadline: float) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise socket.timeout("deadline")
        self.sock.settimeout(remaining)
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("socket closed")
        self.buffer += chunk

    def close(self) -> None:
        self.sock.close()


class Machine:
    def __init__(self, vmid: int, argv: list, run_dir: str):
        self.vmid = vmid
        self.argv = argv
        self.run_dir = run_dir
        self.qmp_path = os.path.join(run_dir, f"{vmid}.qmp")
        self.qga_path = os.path.join(run_dir, f"{vmid}.qga")
        self.log_path = os.path.join(run_dir, f"{vmid}.log")
        self.process: Optional[subprocess.Popen] = None
        self.started_at = 0.0
        self._qmp: Optional[_JsonLines] = None
        self._qmp_lock = threading.Lock()
        self._qga: Optional[_JsonLines] = None
        self._qga_lock = threading.Lock()
        self._sync_id = int(time.time()) % 100000 * 1000

    # ---- process ------------------------------------------------------------------------

    def start(self, timeout: float = 30.0) -> None:
        self._remove_files()
        self.started_at = time.monotonic()
        with open(self.log_path, "wb") as log:
            self.process = _spawner().popen(self.argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                            start_new_session=True, preexec_fn=_die_with_parent)
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                tail = self.log_tail()
                self.stop()
                raise MachineError(f"QEMU exited with status {self.process.returncode}: {tail}")
            try:
                self._connect_qmp()
                return
            except (OSError, ValueError):
                if time.monotonic() > deadline:
                    self.stop()
                    raise MachineError(f"QEMU's monitor did not answer within {timeout:.0f} s") from None
                time.sleep(0.05)

    def is_running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_tail(self, size: int = 2000) -> str:
        try:
            with open(self.log_path, "rb") as handle:
                return handle.read()[-size:].decode("utf-8", "replace").strip()
        except OSError:
            return ""

    def stop(self) -> None:
        process = self.process
        if process is not None and process.poll() is None:
            try:
                self.qmp("quit", timeout=1.0)
            except (MachineError, OSError):
                pass
            try:
                process.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for channel in (self._qmp, self._qga):
            if channel is not None:
                channel.close()
        self._qmp = self._qga = None
        self._remove_files()

    def _remove_files(self) -> None:
        for suffix in ("qmp", "qga", "pid", "vnc", "serial0", "serial1", "serial2", "serial3"):
            path = os.path.join(self.run_dir, f"{self.vmid}.{suffix}")
            if os.path.lexists(path):
                os.unlink(path)

    # ---- QMP ----------------------------------------------------------------------------

    def _connect_qmp(self) -> None:
        channel = _JsonLines(self.qmp_path, 1.0)
        try:
            deadline = time.monotonic() + 5.0
            greeting = channel.read_json(deadline)
            if "QMP" not in greeting:
                raise ValueError(f"no QMP greeting: {greeting}")
            channel.send({"execute": "qmp_capabilities"})
            self._read_qmp_answer(channel, deadline)
        except BaseException:
            channel.close()
            raise
        self._qmp = channel

    @staticmethod
    def _read_qmp_answer(channel: _JsonLines, deadline: float):
        while True:
            message = channel.read_json(deadline)
            if "event" in message:
                continue
            if "error" in message:
                raise MachineError(str(message["error"].get("desc", message["error"])))
            return message.get("return")

    def qmp(self, command: str, timeout: float = 5.0, **arguments):
        """The default 5 s is PVE's (PVE/QMPClient.pm cmd: `$timeout = 5; # default`)."""
        with self._qmp_lock:
            if self._qmp is None:
                raise MachineError(f"VM {self.vmid} not running")
            try:
                self._qmp.send({"execute": command, "arguments": arguments})
                return self._read_qmp_answer(self._qmp, time.monotonic() + timeout)
            except (OSError, ValueError) as error:
                self._qmp.close()
                self._qmp = None
                raise MachineError(f"VM {self.vmid} qmp command '{command}' failed - {error}") from None

    def hmp(self, command_line: str) -> str:
        answer = self.qmp("human-monitor-command", **{"command-line": command_line})
        return answer if isinstance(answer, str) else ""

    # ---- QGA ----------------------------------------------------------------------------

    def agent(self, command: str, arguments: Optional[dict] = None, timeout: float = 5.0):
        """One QGA command; see the module doc. The connection is kept and
        reopened after a failure (a late answer is then skipped by its sync id)."""
        with self._qga_lock:
            self._sync_id += 1
            sync_id = self._sync_id
            deadline = time.monotonic() + timeout
            try:
                if self._qga is None:
                    self._qga = _JsonLines(self.qga_path, timeout)
                self._qga.send({"execute": "guest-sync-delimited", "arguments": {"id": sync_id}})
                self._qga.send({"execute": command, "arguments": arguments or {}})
                while True:
                    self._qga.read_until(b"\xff", deadline)
                    synced = self._qga.read_json(deadline)
                    if synced.get("return") == sync_id:
                        break                   # answers to earlier ids are skipped (QMPClient.pm)
                answer = self._qga.read_json(deadline)
            except (OSError, ValueError) as error:
                if self._qga is not None:
                    self._qga.close()
                self._qga = None
                if isinstance(error, socket.timeout):
                    raise AgentTimeout("got timeout") from None
                raise AgentTimeout(f"{error}") from None
        if "error" in answer:
            error = answer["error"]
            raise AgentReply(str(error.get("desc", error)) if isinstance(error, dict) else str(error))
        return answer.get("return")
