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

A side may also be a commit of a backup repository (:mod:`nornir_bench.report.sides`): the
engine compares two :class:`Side` objects, each a host's outcome and digest by key, read again
for its diff.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from nornir_bench.core.wording import shortened
from nornir_bench.processors.records_file import RecordsRead, each_record_at, record_at
from nornir_bench.report.checks import CheckDrift, checks_digest, drifted

__all__ = ["Comparison", "HostChange", "RecordsSide", "Seen", "Side", "compare_runs",
           "compare_sides"]

Key = tuple[str, int | str | None]  # host, step
Checks = Sequence[Mapping[str, Any]] | None  # a host's state checks, as its record holds them


@dataclass(frozen=True)
class Seen:
    """A host as one side holds it: its outcome, a digest of its output, and where to read it
    again (a records line's offset, a blob's id)."""

    failed: bool
    cause: str | None
    digest: int
    where: int | str
    checks: int | None = None  # a digest of the checks' states, None: none recorded
    text: bool = True  # its output is text (a configuration can be), not a mapping or None
    left_out: bool = False  # not comparable (with a commit: not a configuration): not compared


class Side(Protocol):
    """One side of a comparison: a records file, or a commit of a backup repository."""

    @property
    def name(self) -> str:
        """What the diffs' ``---``/``+++`` lines and the page call it (``old.jsonl``)."""

    @property
    def label(self) -> str:
        """What ``--json`` calls it (the path as given, the revision)."""

    def seen(self) -> dict[Key, Seen]:
        """Each host (and step) it holds, in its order; a host's last record counts."""

    def output(self, seen: Seen) -> object:
        """The output of a host it holds, read again."""

    def checks(self, seen: Seen) -> Checks:
        """The state checks of a host it holds, read again (``None``: none)."""

    def notes(self) -> list[str]:
        """Lines to say below the comparison: lines skipped, the commit a revision is."""

    def as_json(self) -> dict[str, Any]:
        """What ``--json`` says of it beside its label: ``skipped_lines``, ``commit`` (its id,
        or ``None``), ``left_out`` (the hosts it leaves out of the comparison)."""


class RecordsSide:
    """A records file as a side, streamed (see the module)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.read = RecordsRead(path)
        self.name = path.name
        self.label = str(path)

    def seen(self) -> dict[Key, Seen]:
        seen: dict[Key, Seen] = {}
        for offset, record in each_record_at(self.path, read=self.read):
            cause = None
            if record.failed:
                message = (record.message or "").strip().splitlines()
                cause = (record.exception or "failed") + (f": {message[0]}" if message else "")
            seen[(record.host, record.step)] = Seen(
                record.failed, cause, _digest(record.result), offset,
                checks_digest(record.checks), isinstance(record.result, str),
            )
        return seen

    def output(self, seen: Seen) -> object:
        return record_at(self.path, int(seen.where)).result

    def checks(self, seen: Seen) -> Checks:
        return record_at(self.path, int(seen.where)).checks

    def notes(self) -> list[str]:
        note = self.read.note()
        return [note] if note else []

    def as_json(self) -> dict[str, Any]:
        return {"skipped_lines": self.read.skipped, "commit": None, "left_out": []}


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

    old: Side
    new: Side
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
        yield from self.notes()

    def notes(self) -> list[str]:
        """What the sides say of themselves (lines skipped, the commit a revision is)."""
        return [*self.old.notes(), *self.new.notes()]

    def as_json(self) -> dict[str, Any]:
        old, new = self.old.as_json(), self.new.as_json()
        return {
            "old": self.old.label, "new": self.new.label, "counts": self.counts(),
            "same": self.same, "changes": [c.as_json() for c in self.changes],
            "skipped_lines": {"old": old["skipped_lines"], "new": new["skipped_lines"]},
            "commits": {"old": old["commit"], "new": new["commit"]},
            "left_out": {"old": old["left_out"], "new": new["left_out"]},
        }


def compare_runs(old: Path, new: Path) -> Comparison:
    """Compare the runs of records files ``old`` and ``new``.

    Raises:
        RecordsFileError: either file cannot be read or is not a records file.
    """
    return compare_sides(RecordsSide(old), RecordsSide(new))


def compare_sides(old: Side, new: Side) -> Comparison:
    """Compare two sides: records files, or commits (:mod:`nornir_bench.report.sides`).

    Raises:
        RecordsFileError: a records file cannot be read or is not a records file.
        RepositoryError: a commit's files cannot be read.
    """
    comparison = Comparison(old, new)
    before = old.seen()
    after = new.seen()
    for key in [key for seen in (before, after) for key, one in seen.items() if one.left_out]:
        before.pop(key, None)
        after.pop(key, None)
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
            change.drift = drifted(old.checks(was), new.checks(now))
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


def _checks_differ(was: Seen, now: Seen) -> bool:
    """Whether both records hold checks, in states that differ (older records hold none)."""
    return None not in (was.checks, now.checks) and was.checks != now.checks


def _shown(cause: str | None) -> str | None:
    return None if cause is None else shortened(cause)


def _digest(value: object) -> int:
    """A digest of an output, within this process: equal outputs, equal digests. A mapping
    whose keys came in another order digests otherwise; its diff (of sorted keys) is then
    empty, and the host counted the same."""
    return hash(value if isinstance(value, str) else repr(value))


def _output_diff(old: Side, was: Seen, new: Side, now: Seen, host: str) -> str:
    """The unified diff of a host's output, old to new (its lines read again)."""
    before = _text(old.output(was))
    after = _text(new.output(now))
    return "".join(difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True),
        f"{old.name}:{host}", f"{new.name}:{host}", n=3,
    )).rstrip("\n")


def _text(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, indent=2, sort_keys=True,
                                                           default=str)
    return text if text.endswith("\n") or not text else text + "\n"
