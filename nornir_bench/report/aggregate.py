"""The report page's numbers, read from records files: per run and step, the hosts counted
(ok, failed, changed), the failures grouped by a folded cause with their count and hosts, each
host's times for the timeline and the distribution, its changes, checks and compliance.

Kept as numbers and short lists as the records stream by, so a file of 100,000 hosts makes a
small model; :mod:`nornir_bench.report.page` turns it into HTML.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nornir_bench.core.wording import shortened
from nornir_bench.processors.host_record import HostRecord
from nornir_bench.processors.records_file import RecordsRead, each_record
from nornir_bench.report.checks import CheckTable
from nornir_bench.report.compliance import ComplianceTable

__all__ = [
    "MAX_CHANGES_SHOWN", "MAX_DIFF_CHARS", "Cause", "RunView", "StepView", "fold_cause",
    "load_run",
]

MAX_CHANGES_SHOWN = 2_000
"""Change records whose diffs the page holds at most (the others are counted)."""

MAX_DIFF_CHARS = 20_000
"""A diff's characters the page holds at most."""
_HOSTS_NAMED = 20  # hosts named per failure cause
_KINDS = 200  # platforms and groups whose times are kept, at most (the first seen)


@dataclass
class Cause:
    """One cause of failure of a step: its exception's type name, its message folded
    (:func:`fold_cause`) and one as it was, how many hosts failed so, and the first of them."""

    exception: str
    folded: str
    example: str
    hosts: list[str] = field(default_factory=list)
    count: int = 0


@dataclass
class StepView:
    """One step of one run, as the page shows it: :meth:`add` each of its records."""

    label: str
    hosts: int = 0
    ok: int = 0
    failed: int = 0
    changed: int = 0
    elapsed: list[float] = field(default_factory=list)
    starts: list[float] = field(default_factory=list)
    ends: list[float] = field(default_factory=list)
    outcome: list[int] = field(default_factory=list)  # 0 ok, 1 failed, 2 ok after retries
    attempts: list[tuple[int, float, float]] = field(default_factory=list)  # row, ran, wait
    batches: dict[int, float] = field(default_factory=dict)  # batch -> its first start
    causes: dict[tuple[str, str], Cause] = field(default_factory=dict)
    changes: list[dict[str, Any]] = field(default_factory=list)
    checks: CheckTable = field(default_factory=CheckTable)
    compliance: ComplianceTable = field(default_factory=ComplianceTable)
    change_states: dict[str, int] = field(default_factory=dict)
    slowest: list[tuple[float, str]] = field(default_factory=list)
    by_kind: dict[str, list[float]] = field(default_factory=dict)  # "platform ios" -> times

    def add(self, record: HostRecord) -> None:
        self.hosts += 1
        failed = record.failed
        self.failed += failed
        self.ok += not failed
        self.changed += record.changed
        elapsed = record.elapsed
        if elapsed is not None:
            self.elapsed.append(elapsed)
            self.slowest.append((elapsed, record.host))
            if len(self.slowest) > 200:
                self.slowest = sorted(self.slowest, reverse=True)[:10]
            kinds = [f"platform {record.platform}"] if record.platform else []
            kinds += [f"group {g}" for g in record.groups[:10]]
            for kind in kinds:
                if kind in self.by_kind or len(self.by_kind) < _KINDS:
                    self.by_kind.setdefault(kind, []).append(elapsed)
        start, end = record.start, record.end
        if start is not None and end is not None:
            row = len(self.starts)
            self.starts.append(start)
            self.ends.append(end)
            tried = record.failed_attempts
            self.outcome.append(1 if failed else 2 if tried else 0)
            at = start
            for attempt in tried:
                if attempt.seconds is None:
                    break
                self.attempts.append((row, at, attempt.seconds))
                at += attempt.seconds + (attempt.wait or 0.0)
            if record.batch is not None:
                self.batches[record.batch] = min(self.batches.get(record.batch, start), start)
        if failed:
            self._cause(record)
        self.checks.add(record)
        self.compliance.add(record)
        state = record.change_state
        if state is not None:
            self.change_states[state] = self.change_states.get(state, 0) + 1
            if len(self.changes) < MAX_CHANGES_SHOWN:
                diff = record.diff or ""
                self.changes.append({
                    "host": record.host, "state": state,
                    "backup": (record.change or {}).get("backup"), "message": record.message,
                    "diff": diff[:MAX_DIFF_CHARS] + ("\n... cut" if len(diff) > MAX_DIFF_CHARS
                                                     else ""),
                })

    def _cause(self, record: HostRecord) -> None:
        exception = record.exception or "failed"
        message = shortened(" ".join((record.message or "").split()))
        folded = fold_cause(message, record.host)
        cause = self.causes.get((exception, folded))
        if cause is None:
            cause = self.causes[(exception, folded)] = Cause(exception, folded, message)
        cause.count += 1
        if len(cause.hosts) < _HOSTS_NAMED:
            cause.hosts.append(record.host)


_ADDRESS = re.compile(
    r"\b(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?\b|\b(?:[0-9a-f]{0,4}:){2,7}[0-9a-f]{0,4}\b", re.I
)
_NUMBER = re.compile(r"\b\d+(?:\.\d+)?\b")
_PID = re.compile(r"\b(pid|process|worker process) \d+", re.I)


def fold_cause(message: str, host: str) -> str:
    """``message`` with what differs from host to host folded: the host's own name, addresses
    (IPv4, IPv6, with a port) and numbers."""
    if host:
        message = message.replace(host, "<host>")
    message = _ADDRESS.sub("<address>", message)
    message = _PID.sub(lambda m: f"{m.group(1)} <n>", message)
    return _NUMBER.sub("<n>", message)


@dataclass
class RunView:
    """One records file: the run's job, start and overrides, and its steps in order."""

    path: Path
    read: RecordsRead
    job: str | None = None
    run_start: str | None = None
    overrides: str | None = None  # what the command line changed in the job (run --limit ...)
    steps: dict[int | str | None, StepView] = field(default_factory=dict)


def load_run(path: Path) -> RunView:
    """The page's numbers of the records file ``path``.

    Raises:
        RecordsFileError: it cannot be read or is not a records file.
    """
    run = RunView(path, RecordsRead(path))
    for record in each_record(path, read=run.read):
        step = record.step
        if step not in run.steps:
            label = f"step {step} {record.task}" if step is not None else (record.task or "run")
            run.steps[step] = StepView(label)
        run.steps[step].add(record)
        run.job = run.job or record.job
        run.run_start = run.run_start or record.run_start
        if run.overrides is None and record.overrides:
            run.overrides = ", ".join(f"{key} {value}" for key, value in record.overrides.items())
    return run
