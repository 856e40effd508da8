"""The study's benchmark as an API: N synthetic hosts, one simulated round trip each.

``scripts/script.py`` is a thin command line over :func:`run_benchmark`; later tools (the
sweep) call it too, so every figure comes from the same code path.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from time import perf_counter
from typing import IO, TYPE_CHECKING, Any

from nornir_bench.bench.summary import RunSummary, summarize
from nornir_bench.core._logging import no_last_resort_logging
from nornir_bench.core.cpus import usable_cpus
from nornir_bench.core.exceptions import RunInterrupted
from nornir_bench.core.plugins import init_nornir
from nornir_bench.core.stoppable import NotStarted, stoppable
from nornir_bench.processors.timing import HostTimer
from nornir_bench.runners.registry import (
    available_runners,
    prefers_async_tasks,
    takes_option,
    takes_workers,
)
from nornir_bench.tasks.synthetic.simulated import asim_rtt, sim_rtt

if TYPE_CHECKING:
    from nornir.core.processor import Processor
    from nornir.core.task import AggregatedResult

# The registry's three were defined here before they moved to nornir_bench.runners.registry;
# they are still named here so that imports from this module keep working.
__all__ = [
    "BenchmarkRun",
    "available_runners",
    "prefers_async_tasks",
    "run_benchmark",
    "takes_workers",
]


@dataclass(frozen=True)
class BenchmarkRun:
    """One benchmark run: what ran, what came back, and how long it took."""

    runner: str
    workers: int | None
    task: str
    result: AggregatedResult
    summary: RunSummary
    interrupted: bool


def run_benchmark(
    workers: int,
    rtt: float,
    *,
    hosts: int = 10_000,
    runner: str = "threadpool",
    jitter: float = 0.0,
    fail_rate: float = 0.0,
    seed: int | None = None,
    on_start: Callable[[str, int | None, str], None] | None = None,
    in_flight: bool = False,
    progress: IO[str] | None = None,
) -> BenchmarkRun:
    """Run one simulated round trip on each of ``hosts`` synthetic hosts.

    Args:
        workers: the runner's ``num_workers``; ignored by runners without that option.
        rtt, jitter, fail_rate, seed: as for :func:`nornir_bench.tasks.sim_rtt`.
        hosts: how many synthetic hosts.
        runner: a registered runner plugin name (see
            :func:`~nornir_bench.runners.registry.available_runners`).
        on_start: called with the runner's name, its ``num_workers`` (``None`` without) and the
            task's name just before the run starts.
        in_flight: ``workers`` is the hosts in flight in all: a runner of worker processes
            (``num_procs``: processpool, dask) gets one process per CPU (at most ``workers``),
            each with ``num_workers`` = ``ceil(workers / processes)``. Without it, ``workers``
            is ``num_workers``, which such a runner has in each process.
        progress: where to draw a bar of the hosts done (even when it is not a terminal);
            none by default: a benchmark's figures are the run's alone.

    Returns:
        The run; on Ctrl-C, the hosts that finished, with ``interrupted`` set (on any runner:
        see :mod:`nornir_bench.core.stoppable`). Failed hosts are counted, not printed: their
        tracebacks stay off the terminal unless logging is configured. The runner is closed
        before it returns (an embedded Dask cluster stopped, its processes waited for).
    """
    no_last_resort_logging()
    # Only the runner and inventory named are imported: sim_rtt and asim_rtt open no
    # connection, so the run does not pay for netmiko's import (InitNornir's 0.2 s).
    nr = init_nornir(
        inventory={"plugin": "synthetic", "options": {"hosts": hosts}},
        runner={"plugin": runner, "options": _runner_options(runner, workers, in_flight)},
        logging={"enabled": False},
        connections=(),
    )
    timer = HostTimer()
    shown = [] if progress is None else [_progress_bar(progress)]
    task = asim_rtt if prefers_async_tasks(nr.runner) else sim_rtt
    num_workers: int | None = getattr(nr.runner, "num_workers", None)
    if on_start is not None:
        on_start(runner, num_workers, task.__name__)
    hosts_in_order = list(nr.inventory.hosts)
    result: AggregatedResult | None = None
    with stoppable(nr.runner, task) as stop:
        interrupted = False
        start = perf_counter()
        try:
            result = nr.with_processors([timer, stop.finished, *shown]).run(
                task=stop.task, rtt=rtt, jitter=jitter, fail_rate=fail_rate, seed=seed
            )
        except RunInterrupted as exc:
            result, interrupted = exc.result, True
        except (NotStarted, KeyboardInterrupt):  # nornir's runners: what finished is kept
            interrupted = True
        wall = perf_counter() - start
        interrupted = interrupted or stop.pressed.is_set()
        if result is None:
            result = stop.finished.aggregated(task.__name__, hosts_in_order)
    _close_runner(nr.runner)
    return BenchmarkRun(
        runner=runner,
        workers=num_workers,
        task=task.__name__,
        result=result,
        summary=summarize(result, elapsed=timer.elapsed, wall=wall),
        interrupted=interrupted,
    )


def _progress_bar(file: IO[str]) -> Processor:
    """The bar of ``--progress``; tqdm is imported only then (a benchmark's imports are its
    own, tests/test_imports.py)."""
    from nornir_bench.processors.progress import ProgressBar

    return ProgressBar(file=file, enabled=True)


def _close_runner(runner: object) -> None:
    """Close what the runner keeps after its run (the dask runner's cluster, kept worker
    processes), now: their processes are then waited for, so the process's CPU figures
    include theirs, as ``time`` counts them."""
    close = getattr(runner, "close", None)
    if callable(close):
        close()


def _runner_options(runner: str, workers: int, in_flight: bool = False) -> dict[str, Any]:
    """``{"num_workers": workers}`` for runners that take it (nornir's ``serial`` does not);
    with ``in_flight``, ``workers`` shared out over a process runner's processes."""
    if not takes_workers(runner):
        return {}
    if in_flight and takes_option(runner, "num_procs"):
        procs = min(usable_cpus(), workers)
        return {"num_workers": math.ceil(workers / procs), "num_procs": procs}
    return {"num_workers": workers}
