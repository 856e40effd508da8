"""Running a sweep: each run of each point in a fresh process, journaled as it finishes.

Each run is ``scripts/script.py`` (the same :func:`nornir_bench.cli.script_main`) in a new
interpreter, timed from outside as ``time`` timed the study (:mod:`nornir_bench.bench.sweep.child`),
so start-up and imports count. Its counts come from the record it writes with ``--record``
(:mod:`nornir_bench.bench.record`), not from the line it prints for people. Runs go round by
round over the whole grid, so machine noise hits every point alike and a stopped sweep has a
little of everything.
"""

from __future__ import annotations

import math
import signal
import sys
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from nornir_bench.bench.record import BenchmarkRecord, RecordError, read_record
from nornir_bench.bench.sweep.child import TimedProcess, time_process
from nornir_bench.bench.sweep.grid import Point, SweepGrid
from nornir_bench.bench.sweep.journal import (
    JOURNAL,
    Journal,
    RunRecord,
    SweepError,
    plan_runs,
    sweep_environment,
)
from nornir_bench.bench.sweep.results import (
    PointResult,
    Recommendation,
    aggregate,
    recommend,
)
from nornir_bench.processors.progress import progress_bar
from nornir_bench.runners.registry import takes_workers

__all__ = ["SweepResult", "child_timeout", "run_sweep"]

# The child: script.py's own entry point, so the sweep times exactly what script.py runs.
_CHILD_CODE = "from nornir_bench.cli import script_entry; script_entry()"
# What the sweep keeps of a child's output: the end of its standard error, for a failure's
# last line. Its counts come from its record, which read_record bounds too.
_OUTPUT_KEPT = 64 * 1024


@dataclass(frozen=True)
class SweepResult:
    """What the journal holds for a grid, after :func:`run_sweep`.

    Attributes:
        points: the grid's points with at least one run, in grid order.
        recommendations: one per runner and RTT that has a successful point.
        runs_planned, runs_done: the runs this call set out to do, and finished.
        interrupted: stopped by Ctrl-C; what finished is in the journal and in ``points``.
        started: when the journal was started (ISO 8601).
    """

    grid: SweepGrid
    environment: dict[str, Any]
    journal: Path
    points: list[PointResult]
    recommendations: list[Recommendation]
    runs_planned: int
    runs_done: int
    interrupted: bool
    started: str

    @property
    def complete(self) -> bool:
        """Every point of the grid has all its runs (successful or failed)."""
        runs = {(p.runner, p.workers, p.rtt): p.repeats + p.errors for p in self.points}
        return all(
            runs.get((p.runner, p.workers, p.rtt), 0) >= self.grid.repeat
            for p in self.grid.points()
        )

    @property
    def failed_runs(self) -> int:
        return sum(point.errors for point in self.points)


def run_sweep(grid: SweepGrid, out: Path, *, progress: bool | None = None) -> SweepResult:
    """Measure every run of ``grid`` that ``out``'s journal lacks; Ctrl-C stops cleanly.

    A run whose child fails (exits other than 0 or 1, is killed, or overruns
    :func:`child_timeout`) is journaled as failed with its standard error's last line, and the
    sweep goes on. On Ctrl-C the run in flight is dropped and its process killed.

    Args:
        grid: what to measure.
        out: the results folder, created if needed; ``out/runs.jsonl`` is the journal.
        progress: a progress bar of runs on standard error; ``None``: when it is a terminal.

    Returns:
        The grid's points as the journal holds them; write them with
        :func:`nornir_bench.bench.sweep.report.write_report`.

    Raises:
        SweepError: ``out`` cannot be used, or its journal is from another setup.
    """
    environment = sweep_environment()
    path = out / JOURNAL
    try:
        out.mkdir(parents=True, exist_ok=True)
        journal = Journal(path, hosts=grid.hosts, environment=environment)
    except OSError as exc:
        raise SweepError(f"cannot use the results folder {out}: {exc.strerror or exc}") from None
    plan = plan_runs(grid, journal.runs)
    journaled = len(journal.runs)
    has_workers = {runner: takes_workers(runner) for runner in grid.runners}
    interrupted = False
    bar = progress_bar(total=len(plan), desc="sweep", unit="run", file=sys.stderr,
                       enabled=progress)
    try:
        with journal:
            for point in plan:
                bar.set_postfix_str(point.label())
                workers = point.workers if has_workers[point.runner] else 1
                timeout = child_timeout(grid.hosts, workers, point.rtt)
                journal.add(_run_point(point, grid.hosts, timeout))
                bar.update()
    except KeyboardInterrupt:
        interrupted = True
    finally:
        bar.close()
    # Read back: the journal is the truth, whichever line Ctrl-C came between.
    journal = Journal(path, hosts=grid.hosts, environment=environment)
    points = aggregate(grid, journal.runs)
    return SweepResult(
        grid=grid,
        environment=environment,
        journal=path,
        points=points,
        recommendations=recommend(points),
        runs_planned=len(plan),
        runs_done=len(journal.runs) - journaled,
        interrupted=interrupted,
        started=journal.started,
    )


def child_timeout(hosts: int, workers: int, rtt: float) -> float:
    """Seconds a run may take: 10 x its ideal time (rounds of ``workers`` hosts) + 60 s."""
    return 10 * math.ceil(hosts / workers) * rtt + 60


def _run_point(point: Point, hosts: int, timeout: float) -> RunRecord:
    """Run ``point`` once in a fresh process; a failed child is a record, not an exception.

    The child writes its figures to a record file (``script.py --record``); a child that
    exits 0 or 1 without a good record is a failed run, saying what was wrong with it.

    Raises:
        KeyboardInterrupt: Ctrl-C, here or in the child (a terminal's reaches both).
    """
    with tempfile.TemporaryDirectory(prefix="nornir-bench-sweep-") as folder:
        path = Path(folder) / "record.json"
        argv = [
            sys.executable, "-c", _CHILD_CODE, str(point.workers), repr(point.rtt),
            "--hosts", str(hosts), "--runner", point.runner, "--record", str(path),
            "--in-flight",  # the same hosts in flight on every runner, at the same x
        ]
        child = time_process(argv, timeout=timeout, max_output=_OUTPUT_KEPT)
        if child.status in (130, -signal.SIGINT):
            raise KeyboardInterrupt
        figures: BenchmarkRecord | None = None
        error = None
        if child.status in (0, 1):
            try:
                figures = _record_of(point, hosts, read_record(path))
            except RecordError as exc:
                error = _failure(child, timeout, str(exc))
        else:
            error = _failure(child, timeout)
    return RunRecord(
        runner=point.runner,
        workers=point.workers,
        rtt=point.rtt,
        hosts=hosts,
        status=child.status,
        wall=child.wall,
        user=child.user,
        sys=child.sys,
        max_rss_mib=child.max_rss_mib,
        ok=figures.ok if figures else None,
        failed=figures.failed if figures else None,
        run_wall=figures.run_wall if figures else None,
        error=error,
        finished=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )


def _record_of(point: Point, hosts: int, record: BenchmarkRecord) -> BenchmarkRecord:
    """``record``, if it is the record of this run.

    Raises:
        RecordError: it is another run's (a child that wrote what it was not asked for).
    """
    if (record.runner, record.hosts) != (point.runner, hosts):
        raise RecordError(
            f"the record is of another run: runner {record.runner}, {record.hosts} hosts"
        )
    return record


def _failure(child: TimedProcess, timeout: float, bad_record: str | None = None) -> str:
    """Why a child failed, in one line: its status (or what was wrong with the record it
    wrote), and its standard error's last line."""
    if child.status is None:
        what = f"timed out after {timeout:.0f} s and was killed"
    elif child.status < 0:
        what = f"killed by {signal.Signals(-child.status).name}"
    elif bad_record is not None:
        what = f"exit status {child.status}, {bad_record}"
    else:
        what = f"exit status {child.status}"
    lines = [line.strip() for line in child.stderr.splitlines() if line.strip()]
    return f"{what}: {lines[-1]}" if lines else what
