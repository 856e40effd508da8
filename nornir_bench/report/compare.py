"""Two runs compared from their records files: ``nornir-bench diff OLD.jsonl NEW.jsonl``.

Hosts (in a job of steps: host and step) are matched by name. Each is newly failed, fixed,
still failing (with its cause, old and new), added, missing, or ok in both; and a host whose
output (``result``) differs has a unified diff of it: configuration drift between two
``show running-config`` runs. A host's last record in a file counts. Where both records of a
host hold state checks (``checks``), the checks whose state drifted are named, each with its
value then and now (:func:`nornir_bench.report.checks.drifted`); a host ok in both whose only
difference is that counts as output changed.

The files are streamed: each record is kept as its outcome, cause and a hash of its output,
with where its line is; the lines of the hosts whose output or checks changed are read again
for their diffs. So two files of 100,000 hosts of running configurations are compared in the
memory of their digests.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nornir_bench.core.wording import shortened
from nornir_bench.processors.records_file import RecordsRead, each_record_at, record_at
from nornir_bench.report.checks import CheckDrift, checks_digest, drifted

__all__ = ["Comparison", "HostChange", "compare_runs"]

Key = tuple[str, int | str | None]  # host, step


@dataclass(frozen=True)
class _Seen:
    failed: bool
    cause: str | None
    digest: int
    offset: int
    checks: int | None  # a digest of the checks' states, None: none recorded


@dataclass
class HostChange:
    """A host whose outcome or output differs between the runs, and its checks that drifted."""

    host: str
    step: int | str | None
    kind: str  # newly failed, fixed, still failing, added, missing, output changed
    old_cause: str | None = None
    new_cause: str | None = None
    diff: str = ""
    drift: list[CheckDrift] = field(default_factory=list)

    def label(self) -> str:
        return self.host if self.step in (None, 1) else f"{self.host} (step {self.step})"

    def as_json(self) -> dict[str, Any]:
        return {"host": self.host, "step": self.step, "change": self.kind,
                "old_cause": self.old_cause, "new_cause": self.new_cause, "diff": self.diff,
                "checks": [drift.as_json() for drift in self.drift]}


KINDS = ("newly failed", "fixed", "still failing", "added", "missing", "output changed")


@dataclass
class Comparison:
    """What differs between two runs (``changes``, in :data:`KINDS` order, then host order),
    and how many hosts were the same."""

    old: RecordsRead
    new: RecordsRead
    changes: list[HostChange] = field(default_factory=list)
    same: int = 0

    @property
    def differ(self) -> bool:
        """Whether the runs differ: a host still failing for the same cause, its checks as they
        were, is as it was (a records file compared with itself does not differ)."""
        return any(
            change.kind != "still failing" or change.old_cause != change.new_cause
            or change.drift for change in self.changes
        )

    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys(KINDS, 0)
        for change in self.changes:
            counts[change.kind] += 1
        return counts

    def lines(self, *, diffs: bool = True) -> Iterator[str]:
        """The comparison as text: a line of counts, then each host that differs."""
        counts = self.counts()
        yield (", ".join(f"{kind}: {n:,}" for kind, n in counts.items())
               + f", same: {self.same:,}")
        for change in self.changes:
            line = f"{change.kind}: {change.label()}"
            new, old = _shown(change.new_cause), _shown(change.old_cause)
            if change.kind in ("newly failed", "still failing") and change.new_cause:
                line += f": {new}"
            if change.kind == "still failing" and change.old_cause != change.new_cause:
                line += f" (was: {old})"
            if change.kind == "fixed" and change.old_cause:
                line += f" (was: {old})"
            yield line
            yield from (f"  {change.label()}: {drift.said()}" for drift in change.drift)
            if diffs and change.diff:
                yield from ("    " + row for row in change.diff.splitlines())
        for read in (self.old, self.new):
            note = read.note()
            if note:
                yield note

    def as_json(self) -> dict[str, Any]:
        return {
            "old": str(self.old.path), "new": str(self.new.path), "counts": self.counts(),
            "same": self.same, "changes": [c.as_json() for c in self.changes],
            "skipped_lines": {"old": self.old.skipped, "new": self.new.skipped},
        }


def compare_runs(old: Path, new: Path) -> Comparison:
    """Compare the runs of records files ``old`` and ``new``.

    Raises:
        RecordsFileError: either file cannot be read or is not a records file.
    """
    comparison = Comparison(RecordsRead(old), RecordsRead(new))
    before = _seen(old, comparison.old)
    after = _seen(new, comparison.new)
    changes: dict[str, list[HostChange]] = {kind: [] for kind in KINDS}
    for key, now in after.items():
        was = before.get(key)
        if was is None:
            changes["added"].append(HostChange(*key, "added", new_cause=now.cause))
            continue
        if now.failed and not was.failed:
            kind = "newly failed"
        elif was.failed and not now.failed:
            kind = "fixed"
        elif was.failed:
            kind = "still failing"
        elif was.digest != now.digest or _checks_differ(was, now):
            kind = "output changed"
        else:
            comparison.same += 1
            continue
        change = HostChange(*key, kind, was.cause, now.cause)
        if _checks_differ(was, now):
            change.drift = drifted(record_at(old, was.offset).checks,
                                   record_at(new, now.offset).checks)
        if kind == "output changed":
            if was.digest != now.digest:
                change.diff = _output_diff(old, was, new, now, key[0])
            if not change.diff and not change.drift:  # written otherwise: keys in another order
                comparison.same += 1
                continue
        changes[kind].append(change)
    changes["missing"] = [
        HostChange(*key, "missing", old_cause=was.cause)
        for key, was in before.items() if key not in after
    ]
    comparison.changes = [c for kind in KINDS for c in changes[kind]]
    return comparison


def _seen(path: Path, read: RecordsRead) -> dict[Key, _Seen]:
    seen: dict[Key, _Seen] = {}
    for offset, record in each_record_at(path, read=read):
        cause = None
        if record.failed:
            message = (record.message or "").strip().splitlines()
            cause = (record.exception or "failed") + (f": {message[0]}" if message else "")
        seen[(record.host, record.step)] = _Seen(
            record.failed, cause, _digest(record.result), offset, checks_digest(record.checks),
        )
    return seen


def _checks_differ(was: _Seen, now: _Seen) -> bool:
    """Whether both records hold checks, in states that differ (older records hold none)."""
    return None not in (was.checks, now.checks) and was.checks != now.checks


def _shown(cause: str | None) -> str | None:
    return None if cause is None else shortened(cause)


def _digest(value: object) -> int:
    """A digest of an output, within this process: equal outputs, equal digests. A mapping
    whose keys came in another order digests otherwise; its diff (of sorted keys) is then
    empty, and the host counted the same."""
    return hash(value if isinstance(value, str) else repr(value))


def _output_diff(old: Path, was: _Seen, new: Path, now: _Seen, host: str) -> str:
    """The unified diff of a host's output, old to new (its lines read again)."""
    before = _text(record_at(old, was.offset).result)
    after = _text(record_at(new, now.offset).result)
    return "".join(difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True),
        f"{old.name}:{host}", f"{new.name}:{host}", n=3,
    )).rstrip("\n")


def _text(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, indent=2, sort_keys=True,
                                                           default=str)
    return text if text.endswith("\n") or not text else text + "\n"
