"""The fleets benchmarks run on: a Nornir of synthetic hosts or of an inventory folder, the
no-op tasks, one timed run, and a runner's workers shared out over its processes."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from nornir.core import Nornir

__all__ = [
    "PROCESS_RUNNERS",
    "close",
    "closing",
    "inventory_files",
    "anoop",
    "noop",
    "run_checked",
    "run_timed",
    "shared_out",
    "simple",
    "synthetic",
    "warm",
]

PROCESS_RUNNERS = ("processpool", "dask")
"""The runners whose ``num_workers`` is per process."""


def noop(task: Any) -> None:
    """A task that does nothing: what a runner costs a host, and nothing else."""
    return None


async def anoop(task: Any) -> None:
    """:func:`noop` as a coroutine, for the runners that await their tasks."""
    return None


def synthetic(runner: str, hosts: int, *, inventory: dict[str, Any] | None = None,
              lean: bool = False, **options: Any) -> Nornir:
    """A Nornir of ``hosts`` synthetic hosts (more ``inventory`` options if given) on
    ``runner`` with ``options``, nornir's logging off. ``lean``: only the plugins the run
    names are imported (the package's ``init_nornir``), no connection plugin."""
    settings: dict[str, Any] = {
        "inventory": {"plugin": "synthetic", "options": {"hosts": hosts, **(inventory or {})}},
        "runner": {"plugin": runner, "options": options},
        "logging": {"enabled": False},
    }
    if lean:
        from nornir_bench.core.plugins import init_nornir

        return init_nornir(**settings, connections=())
    from nornir import InitNornir

    return InitNornir(**settings)


def inventory_files(folder: Path) -> dict[str, str]:
    """A SimpleInventory's options for the inventory written in ``folder`` (hosts, groups,
    defaults: those that exist)."""
    files = {"host_file": "hosts", "group_file": "groups", "defaults_file": "defaults"}
    return {option: str(folder / f"{stem}.yaml") for option, stem in files.items()
            if (folder / f"{stem}.yaml").exists()}


def simple(folder: Path, runner: str, **options: Any) -> Nornir:
    """A Nornir of the SimpleInventory in ``folder`` on ``runner`` with ``options``."""
    from nornir import InitNornir

    return InitNornir(
        inventory={"plugin": "SimpleInventory", "options": inventory_files(folder)},
        runner={"plugin": runner, "options": options},
        logging={"enabled": False},
    )


def close(nr: Nornir) -> float:
    """The runner closed (its workers, cluster, loop); the seconds it took."""
    began = time.perf_counter()
    closer: Callable[[], object] | None = getattr(nr.runner, "close", None)
    if callable(closer):
        closer()
    return time.perf_counter() - began


@contextmanager
def closing(nr: Nornir) -> Iterator[Nornir]:
    """``nr``, its runner closed when the block ends."""
    try:
        yield nr
    finally:
        close(nr)


def run_timed(nr: Nornir, task: Callable[..., Any], **params: Any) -> float:
    """The seconds of ``nr.run(task, **params)``, whatever the hosts' outcome."""
    began = time.perf_counter()
    nr.run(task=task, **params)
    return time.perf_counter() - began


def run_checked(nr: Nornir, task: Callable[..., Any], **params: Any) -> float:
    """The seconds of ``nr.run(task, **params)``, every host back and ok.

    Raises:
        SystemExit: naming what was missing or failed.
    """
    began = time.perf_counter()
    result = nr.run(task=task, **params)
    seconds = time.perf_counter() - began
    if len(result) != len(nr.inventory.hosts) or result.failed:
        raise SystemExit(
            f"{type(nr.runner).__name__}: {len(result)} of {len(nr.inventory.hosts)} hosts "
            f"back, {len(result.failed_hosts)} failed: {sorted(result.failed_hosts)[:3]}"
        )
    return seconds


def warm(nr: Nornir, task: Callable[..., Any], hosts: int, **params: Any) -> None:
    """The runner's workers (or cluster) started by a run on the first ``hosts`` hosts."""
    names = set(list(nr.inventory.hosts)[:hosts])
    nr.filter(filter_func=lambda host: host.name in names).run(task=task, **params)


def shared_out(runner: str, in_flight: int, procs: int | None = None) -> dict[str, int]:
    """Options for ``in_flight`` hosts at once: on a process runner, shared out over ``procs``
    processes (default one a CPU)."""
    if runner not in PROCESS_RUNNERS:
        return {"num_workers": in_flight}
    count = min(procs or os.cpu_count() or 1, in_flight)
    return {"num_workers": math.ceil(in_flight / count), "num_procs": count}
