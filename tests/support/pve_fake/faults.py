"""Fault injection: rules that make chosen requests fail or slow down.

A rule (JSON, from --fault or POST /_fake/faults) matches requests by method
and API path (fnmatch glob on the path below /api2/json, e.g.
"/nodes/*/qemu/*/status/start"), optionally only `times` times, and does one
or more of:
  "delay": SECONDS      wait before answering (a slow server; a client with a
                        shorter timeout sees a timeout)
  "drop": true          close the connection without an answer
  "status": CODE        answer CODE (401, 403, 500, ...) with "message" as
                        PVE would (reason phrase; {"data": null})
  "task": {"exitstatus": "OK" | "WARNINGS: N" | "any error message",
           "log": ["line", ...], "seconds": S}
                        the task this request starts ends that way
Examples:
  {"path": "/version", "status": 403, "message": "Permission check failed"}
  {"method": "POST", "path": "/nodes/*/qemu/*/clone", "task": {"exitstatus": "clone failed: disk full"}}
  {"path": "/cluster/nextid", "delay": 5, "times": 1}

TLS failures are per connection, not per path (the certificate is sent
before the path): --tls-fault or POST /_fake/tls {"serve": "alternate"}
makes the server present its alternate certificate (see certs.py).
"""

import fnmatch
import threading
from dataclasses import dataclass
from typing import Optional

from tasks import ForcedOutcome

RULE_KEYS = {"method", "path", "times", "delay", "drop", "status", "message", "task"}


@dataclass
class FaultRule:
    method: str = "*"
    path: str = "*"
    times: Optional[int] = None
    delay: float = 0.0
    drop: bool = False
    status: Optional[int] = None
    message: Optional[str] = None
    task: Optional[ForcedOutcome] = None

    @classmethod
    def from_json(cls, data: dict) -> "FaultRule":
        unknown = set(data) - RULE_KEYS
        if unknown:
            raise ValueError(f"unknown fault rule keys: {', '.join(sorted(unknown))}")
        task = data.get("task")
        return cls(method=data.get("method", "*").upper(), path=data.get("path", "*"), times=data.get("times"),
                   delay=float(data.get("delay", 0)), drop=bool(data.get("drop", False)),
                   status=data.get("status"), message=data.get("message"),
                   task=ForcedOutcome(task["exitstatus"], list(task.get("log", [])), task.get("seconds"))
                   if task else None)

    def matches(self, method: str, path: str) -> bool:
        return self.method in ("*", method) and fnmatch.fnmatchcase(path, self.path)

    def to_json(self) -> dict:
        data = {"method": self.method, "path": self.path, "times": self.times, "delay": self.delay,
                "drop": self.drop, "status": self.status, "message": self.message}
        if self.task:
            data["task"] = {"exitstatus": self.task.exitstatus, "log": self.task.log, "seconds": self.task.seconds}
        return data


@dataclass
class FaultPlan:
    """What the matching rules ask of one request, merged."""
    delay: float = 0.0
    drop: bool = False
    status: Optional[int] = None
    message: Optional[str] = None
    task: Optional[ForcedOutcome] = None


class Faults:
    def __init__(self):
        self._rules = []
        self._lock = threading.Lock()

    def add(self, rule: FaultRule) -> None:
        with self._lock:
            self._rules.append(rule)

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()

    def rules(self) -> list:
        with self._lock:
            return [rule.to_json() for rule in self._rules]

    def plan(self, method: str, path: str) -> FaultPlan:
        """Merges every matching rule (first one wins per field) and uses up one
        of each one's `times`."""
        plan = FaultPlan()
        with self._lock:
            for rule in [r for r in self._rules if r.matches(method, path)]:
                _merge(plan, rule)
                if rule.times is not None:
                    rule.times -= 1
                    if rule.times <= 0:
                        self._rules.remove(rule)
        return plan


def _merge(plan: FaultPlan, rule: FaultRule) -> None:
    plan.delay += rule.delay
    plan.drop = plan.drop or rule.drop
    if plan.status is None and rule.status is not None:
        plan.status, plan.message = rule.status, rule.message
    if plan.task is None:
        plan.task = rule.task
