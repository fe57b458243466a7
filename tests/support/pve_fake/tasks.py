"""PVE worker tasks: a UPID at once, the outcome later.

Each task-starting API call returns a UPID at once; the task "runs" for a
short configurable time, as PVE's forked worker does (pve-common
src/PVE/RESTEnvironment.pm, fork_worker): an optional first step runs at
once (what a real worker has done before a client can look again, e.g.
qemu-server's update writing the [PENDING] section), the rest of the work
when the time is up. Work may raise TaskFailed (the task ends with that
message) or log warnings (log_warn: "WARN: ..." lines, counted; the task
ends "WARNINGS: N"). A fault rule may force the outcome instead (faults.py).

UPID as pve-common src/PVE/Tools.pm upid_encode writes it:
    UPID:NODE:PID(8 hex):PSTART(8 hex):STARTTIME(8 hex):TYPE:ID:USER:
The log is what the worker printed, then fork_worker's last line "TASK OK",
"TASK WARNINGS: N" or "TASK ERROR: MESSAGE" (the error chomped, its
newlines made blanks); the exit status is what upid_read_status reads back
from that line: "OK", "WARNINGS: N" or the message.

Not thread-safe on its own: the server calls it under its state lock.
"""

import itertools
import re
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

UPID_RE = re.compile(r"UPID:([a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?):([0-9A-Fa-f]{8}):([0-9A-Fa-f]{8,9}):"
                     r"([0-9A-Fa-f]{8}):([^:\s/]+):([^:\s/]*):([^:\s/]+):")


class TaskFailed(Exception):
    """The task's work failed; str() is the message after "TASK ERROR: "."""


class TaskLog:
    """What a task's work writes; counts warnings as PVE's log_warn does."""

    def __init__(self):
        self.lines = []
        self.warnings = 0

    def info(self, text: str) -> None:
        """A line the worker prints (also Perl's plain `warn`: not counted)."""
        self.lines.extend(text.splitlines() or [""])

    def warn(self, text: str) -> None:
        """RESTEnvironment.pm warn (log_warn): chomped, "WARN: " in front, counted."""
        self.warnings += 1
        self.info(f"WARN: {text.rstrip(chr(10))}")


@dataclass
class ForcedOutcome:
    """An outcome a fault rule imposes: exitstatus "OK", "WARNINGS: N" or an
    error message; `log` lines are added before the end line."""
    exitstatus: str
    log: list = field(default_factory=list)
    seconds: Optional[float] = None


@dataclass
class Task:
    upid: str
    node: str
    type: str
    id: str
    user: str
    pid: int
    pstart: int
    starttime: int
    ends_at: float
    work: Callable[[TaskLog], None]
    on_failure: Callable[[], None]
    forced: Optional[ForcedOutcome]
    log: list = field(default_factory=list)
    exitstatus: Optional[str] = None
    first_log: Optional[TaskLog] = None       # what the first step logged
    failure_prefix: str = ""

    def status(self) -> dict:
        answer = {"upid": self.upid, "node": self.node, "pid": self.pid, "pstart": self.pstart,
                  "starttime": self.starttime, "type": self.type, "id": self.id, "user": self.user,
                  "status": "running" if self.exitstatus is None else "stopped"}
        if self.exitstatus is not None:
            answer["exitstatus"] = self.exitstatus
        return answer


class TaskRegistry:
    def __init__(self, default_seconds: float):
        self._default_seconds = default_seconds
        self._tasks = {}
        self._pids = itertools.count(0x1000)
        self._pstart = int(time.monotonic() * 100) & 0x7FFFFFFF

    def start(self, node: str, kind: str, object_id: str, user: str, work: Callable[[TaskLog], None],
              on_failure: Callable[[], None] = lambda: None,
              forced: Optional[ForcedOutcome] = None, first_step: Optional[Callable[[TaskLog], None]] = None,
              failure_prefix: str = "") -> str:
        """`failure_prefix` goes before the message of a TaskFailed from the
        work (qemu-server's clone: "clone failed: ..."), not before a forced one."""
        pid, starttime = next(self._pids), int(time.time())
        upid = f"UPID:{node}:{pid:08X}:{self._pstart:08X}:{starttime:08X}:{kind}:{object_id}:{user}:"
        seconds = forced.seconds if forced and forced.seconds is not None else self._default_seconds
        task = Task(upid, node, kind, object_id, user, pid, self._pstart, starttime,
                    time.monotonic() + seconds, work, on_failure, forced, failure_prefix=failure_prefix)
        if first_step:
            task.first_log = TaskLog()
            first_step(task.first_log)
            task.log = list(task.first_log.lines)
        self._tasks[upid] = task
        return upid

    def advance(self) -> None:
        """Ends every task whose time has come, in the order they started."""
        now = time.monotonic()
        for task in list(self._tasks.values()):
            if task.exitstatus is None and task.ends_at <= now:
                self._finish(task)

    def find(self, node: str, upid: str) -> Optional[Task]:
        task = self._tasks.get(upid)
        return task if task and task.node == node else None

    def running(self) -> list:
        return [t for t in self._tasks.values() if t.exitstatus is None]

    def all(self) -> list:
        return list(self._tasks.values())

    @staticmethod
    def _finish(task: Task) -> None:
        log = task.first_log or TaskLog()
        if task.forced:
            log.lines.extend(task.forced.log)
            exitstatus = _forced_end(task, log)
        else:
            exitstatus = _run_work(task, log)
        task.log = log.lines + [f"TASK {exitstatus}" if exitstatus == "OK" or exitstatus.startswith("WARNINGS")
                                else f"TASK ERROR: {exitstatus}"]
        task.exitstatus = exitstatus


def _run_work(task: Task, log: TaskLog) -> str:
    try:
        task.work(log)
    except TaskFailed as failure:
        task.on_failure()
        return _exit_message(task.failure_prefix + str(failure))
    return f"WARNINGS: {log.warnings}" if log.warnings else "OK"


def _exit_message(message: str) -> str:
    """fork_worker: `chomp $err; $err =~ s/\\n/ /mg`."""
    chomped = message[:-1] if message.endswith("\n") else message
    return chomped.replace("\n", " ")


def _forced_end(task: Task, log: TaskLog) -> str:
    """A forced OK or WARNINGS still does the work; a forced error does not."""
    wanted = task.forced.exitstatus
    if wanted == "OK" or wanted.startswith("WARNINGS:"):
        try:
            task.work(log)
        except TaskFailed as failure:
            task.on_failure()
            return _exit_message(task.failure_prefix + str(failure))
        return wanted
    task.on_failure()
    return wanted
