"""What the parts of scripts/bench_dask.py share: host counts scaled by ``--fraction``, the
process tree's CPU by role (parent, scheduler, workers), a run measured with it."""

from __future__ import annotations

import os
import time
from typing import Any

import psutil
from nornir.core import Nornir

import harness
from harness.fleets import run_checked, synthetic

__all__ = ["build", "cpu_by_role", "measured_run", "med", "role", "shown", "sized", "tree"]


def sized(hosts: int, fraction: float) -> int:
    """``hosts`` times ``fraction`` (``--fraction``), 400 at least."""
    return max(400, round(hosts * fraction))


def build(runner: str, hosts: int, **options: Any) -> Nornir:
    """``hosts`` synthetic hosts on ``runner``, only the plugins the run names imported."""
    return synthetic(runner, hosts, lean=True, **options)


def med(samples: list[float]) -> float:
    return harness.Spread.of(samples).median


def shown(samples: list[float], unit: str = "s", scale: float = 1.0, digits: int = 3) -> str:
    """``median unit (low-high)`` of ``samples`` times ``scale``."""
    return harness.Spread.of(samples, scale).unit_text(unit, digits)


def tree() -> list[psutil.Process]:
    return [psutil.Process(), *psutil.Process().children(recursive=True)]


def role(process: psutil.Process) -> str:
    """What a process of this tree is: parent, scheduler, worker (a Dask worker or a
    processpool worker), or other (Dask's worker command holding the nannies, trackers)."""
    if process.pid == os.getpid():
        return "parent"
    try:
        command = " ".join(process.cmdline())
    except psutil.Error:
        return "other"
    if "dask_scheduler" in command:
        return "scheduler"
    if "spawn_main" in command or "processpool" in command:
        return "worker"
    return "other"


def cpu_by_role() -> dict[str, float]:
    """CPU seconds (user + system) used so far by each role's processes alive now."""
    totals: dict[str, float] = {}
    for process in tree():
        try:
            times = process.cpu_times()
        except psutil.Error:
            continue
        name = role(process)
        totals[name] = totals.get(name, 0.0) + times.user + times.system
    return totals


def measured_run(nr: Nornir, task: Any, **kwargs: Any) -> dict[str, float]:
    """One run: its wall, and the CPU seconds the parent, the scheduler and the workers used."""
    before = cpu_by_role()
    own = time.process_time()
    wall = run_checked(nr, task, **kwargs)
    own = time.process_time() - own  # every thread of the parent: Dask's client loop too
    after = cpu_by_role()
    return {"wall": wall, "parent": own,
            **{name: after.get(name, 0.0) - before.get(name, 0.0)
               for name in ("scheduler", "worker")}}
