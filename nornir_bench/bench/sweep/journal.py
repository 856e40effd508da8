"""The sweep's journal, ``runs.jsonl``: one JSON line per finished run, so a sweep resumes.

The first line is a header: the hosts per run and the environment the runs were measured on.
Then each run a child process finished, as it finishes. A sweep started again on the same
folder runs only what the journal lacks. Runs measured with other ``hosts`` or on another
environment are never mixed in: opening such a journal is refused, naming what differs.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from nornir_bench.bench.sweep.grid import Point, SweepGrid
from nornir_bench.bench.usage import cpu_percent
from nornir_bench.core.exceptions import NornirBenchError
from nornir_bench.core.loops import resolve_loop

__all__ = ["JOURNAL", "Journal", "RunRecord", "SweepError", "plan_runs", "sweep_environment"]

JOURNAL = "runs.jsonl"
_KIND = "nornir-bench sweep journal"
# Environment keys that may change between a sweep and its resumption.
_MAY_DIFFER = frozenset({"date"})


class SweepError(NornirBenchError):
    """A sweep cannot use its folder: not writable, or a journal from another setup."""


@dataclass(frozen=True)
class RunRecord:
    """One child process run of one point: a line of the journal.

    Attributes:
        status: the child's exit status (1: some host failed); negative: killed by that
            signal; ``None``: it overran its timeout and was killed.
        wall, user, sys, max_rss_mib: the whole child process, as ``time`` reports them.
        ok, failed, run_wall: from the child's record (hosts; the run phase's seconds).
        error: why the run failed (its standard error's last line); ``None`` if it did not.
        finished: when the run ended, ISO 8601.
    """

    runner: str
    workers: int
    rtt: float
    hosts: int
    status: int | None
    wall: float
    user: float
    sys: float
    max_rss_mib: float
    ok: int | None
    failed: int | None
    run_wall: float | None
    error: str | None
    finished: str

    @property
    def point(self) -> Point:
        return Point(self.runner, self.workers, self.rtt)

    @property
    def cpu_percent(self) -> float:
        """CPU time as a percentage of wall time, as ``time`` prints it (200 % = 2 busy cores)."""
        return cpu_percent(self.user, self.sys, self.wall)


class Journal:
    """The journal in ``path``, opened for adding runs; started if missing.

    A last line without its newline (the sweep was killed while writing it) is cut off, so
    the next run starts on a line of its own.

    Args:
        path: the journal file.
        hosts: the sweep's hosts per run.
        environment: the sweep's :func:`sweep_environment`.

    Raises:
        SweepError: the file is not a sweep journal, or holds runs of another setup.
        OSError: the file cannot be read or written.
    """

    def __init__(self, path: Path, *, hosts: int, environment: Mapping[str, Any]) -> None:
        self.path = path
        wanted = {"journal": _KIND, "hosts": hosts, "environment": dict(environment)}
        if not path.exists() or path.stat().st_size == 0:
            path.write_text(json.dumps(wanted) + "\n", encoding="utf-8")
        self.header, self.runs = self._read()
        differences = _differences(self.header, wanted)
        if differences:
            raise SweepError(
                f"{path} holds runs measured with {'; '.join(differences)}: use another --out "
                f"for this setup, or delete {path.name} to start over"
            )
        self._file: IO[str] | None = None

    @property
    def started(self) -> str:
        """When the journal was started (ISO 8601)."""
        return str(self.header["environment"].get("date", ""))

    def add(self, record: RunRecord) -> None:
        """Append a finished run; it is on disk when this returns."""
        if self._file is None:
            self._file = self.path.open("a", encoding="utf-8")
        self._file.write(json.dumps(asdict(record)) + "\n")
        self._file.flush()
        self.runs.append(record)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> Journal:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _read(self) -> tuple[dict[str, Any], list[RunRecord]]:
        text = self.path.read_text(encoding="utf-8")
        if not text.endswith("\n"):
            text = text[: text.rfind("\n") + 1]
            os.truncate(self.path, len(text.encode("utf-8")))
        lines = text.splitlines()
        try:
            header = json.loads(lines[0]) if lines else None
            if not isinstance(header, dict) or header.get("journal") != _KIND:
                raise ValueError("no header")
            runs = [RunRecord(**json.loads(line)) for line in lines[1:]]
        except (ValueError, TypeError):
            raise SweepError(
                f"{self.path} is not a nornir-bench sweep journal: use another --out"
            ) from None
        return header, runs


def _differences(found: Mapping[str, Any], wanted: Mapping[str, Any]) -> list[str]:
    """What differs between two journal headers, as ``name OLD (now NEW)``."""
    pairs = [("hosts", found.get("hosts"), wanted["hosts"])]
    old: Mapping[str, Any] = found.get("environment") or {}
    pairs += [
        (key, old.get(key), new)
        for key, new in wanted["environment"].items()
        if key not in _MAY_DIFFER
    ]
    return [f"{name} {before} (now {now})" for name, before, now in pairs if before != now]


def plan_runs(grid: SweepGrid, runs: Iterable[RunRecord]) -> list[Point]:
    """The runs still to do, round by round, until each point has ``grid.repeat`` runs.

    A failed run counts as a run: a point that fails is not retried on every resumption.
    """
    done = Counter(run.point for run in runs)
    return [
        point
        for round_ in range(grid.repeat)
        for point in grid.points()
        if done[point] <= round_
    ]


def sweep_environment() -> dict[str, Any]:
    """Where the runs are measured: the figures mean little without it.

    The children run this interpreter, so its versions are theirs; ``loop`` is the event loop
    the async runners pick by default (``"auto"``: uvloop when installed).
    """
    loop = resolve_loop("auto", what="sweep")
    return {
        "cpu_count": os.cpu_count(),
        "python_version": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "python_executable": sys.executable,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "nornir": metadata.version("nornir"),
        "nornir_bench": metadata.version("nornir-bench"),
        "loop": loop,
        "loop_version": (
            metadata.version("uvloop") if loop == "uvloop" else platform.python_version()
        ),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
