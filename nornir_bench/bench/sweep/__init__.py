"""The sweep: the study's grid of runners x workers x RTT, each run a fresh, timed process.

``nornir-bench sweep`` is a thin layer over this package::

    grid = SweepGrid(runners=["threadpool", "asyncio"], workers=[100, 1000], rtts=[0.05])
    result = run_sweep(grid, Path("sweep-results"))   # measures what the journal lacks
    write_report(result, Path("sweep-results"))       # CSV, JSON, tables, plots

- ``grid``: what to measure (:class:`SweepGrid`).
- ``child``: a child process timed from outside, as ``time`` times a command.
- ``journal``: ``runs.jsonl``, one line per finished run; what makes a sweep resumable.
- ``run``: running the runs still to do, each in a fresh process.
- ``results``: runs summarised per point (median, min-max), the recommended worker count.
- ``report``: the study's tables, CSV and JSON files, plots.
"""

from __future__ import annotations

from nornir_bench.bench.sweep.child import TimedProcess, time_process
from nornir_bench.bench.sweep.grid import (
    DEFAULT_RTTS,
    DEFAULT_RUNNERS,
    DEFAULT_WORKERS,
    Point,
    SweepGrid,
)
from nornir_bench.bench.sweep.journal import (
    JOURNAL,
    Journal,
    RunRecord,
    SweepError,
    sweep_environment,
)
from nornir_bench.bench.sweep.report import PLOT_HINT, Report, tables, write_report
from nornir_bench.bench.sweep.results import (
    RECOMMEND_WITHIN,
    PointResult,
    Recommendation,
    aggregate,
    recommend,
    recommend_workers,
)
from nornir_bench.bench.sweep.run import SweepResult, child_timeout, run_sweep

__all__ = [
    "DEFAULT_RTTS",
    "DEFAULT_RUNNERS",
    "DEFAULT_WORKERS",
    "JOURNAL",
    "PLOT_HINT",
    "RECOMMEND_WITHIN",
    "Journal",
    "Point",
    "PointResult",
    "Recommendation",
    "Report",
    "RunRecord",
    "SweepError",
    "SweepGrid",
    "SweepResult",
    "TimedProcess",
    "aggregate",
    "child_timeout",
    "recommend",
    "recommend_workers",
    "run_sweep",
    "sweep_environment",
    "tables",
    "time_process",
    "write_report",
]
