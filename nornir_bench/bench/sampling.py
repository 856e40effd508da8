"""Measuring a run for ``nornir-bench advise``: each host's latency, the client's CPU time, and
the memory and open files the hosts in flight held at the peak.

Latencies come from :class:`~nornir_bench.processors.timing.HostTimer` (the processor hooks, so
any runner is timed alike); the peak from a thread that reads the process's RSS and counts its
open files every few milliseconds while the run lasts (Linux's ``/proc``; elsewhere both read
as 0, and the model predicts no memory or open files per host).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nornir_bench.bench.advise import Sample
from nornir_bench.core.hooks import NoOpProcessor
from nornir_bench.processors.timing import HostTimer

if TYPE_CHECKING:
    from nornir.core import Nornir
    from nornir.core.inventory import Host
    from nornir.core.task import AggregatedResult, MultiResult, Task

__all__ = [
    "Measured",
    "measure_run",
    "measure_sample",
    "open_descriptors",
    "resident_memory",
]

_PERIOD = 0.005  # seconds between two readings of the peak
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


@dataclass(frozen=True)
class Measured:
    """A measured run: the figures (:class:`~nornir_bench.bench.advise.Sample`) and the result."""

    sample: Sample
    result: AggregatedResult


def resident_memory() -> int:
    """The process's resident memory now, bytes; 0 where ``/proc`` has none."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


def open_descriptors() -> int:
    """The process's open file descriptors now; 0 where ``/proc`` has none."""
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return 0


class _InFlight(NoOpProcessor):
    """The most hosts in flight at once, counted by the processor hooks."""

    def __init__(self) -> None:
        self.now = 0
        self.peak = 0
        self._lock = threading.Lock()

    def task_instance_started(self, task: Task, host: Host) -> None:
        with self._lock:
            self.now += 1
            self.peak = max(self.peak, self.now)

    def task_instance_completed(self, task: Task, host: Host, result: MultiResult) -> None:
        with self._lock:
            self.now -= 1


@dataclass
class _Peak:
    memory: int
    descriptors: int


@contextmanager
def _peak_usage() -> Iterator[_Peak]:
    """The highest RSS and open-file count seen while the block runs (the thread reading them
    is stopped and joined on the way out, whatever happens)."""
    peak = _Peak(resident_memory(), open_descriptors())
    done = threading.Event()

    def watch() -> None:
        while not done.wait(_PERIOD):
            peak.memory = max(peak.memory, resident_memory())
            peak.descriptors = max(peak.descriptors, open_descriptors())

    watcher = threading.Thread(target=watch, name="advise-peak", daemon=True)
    watcher.start()
    try:
        yield peak
    finally:
        done.set()
        watcher.join()
    peak.memory = max(peak.memory, resident_memory())
    peak.descriptors = max(peak.descriptors, open_descriptors())


@dataclass(frozen=True)
class _Usage:
    """One measured run: its latencies, CPU, and its peak's growth over the base."""

    latencies: tuple[float, ...]
    cpu: float
    memory: int
    descriptors: int
    in_flight: int
    base_memory: int
    base_descriptors: int
    wall: float
    result: AggregatedResult


def _measure(nr: Nornir, task: Callable[..., Any], params: dict[str, Any]) -> _Usage:
    timer, in_flight = HostTimer(), _InFlight()
    with _peak_usage() as peak:
        base_memory, base_descriptors = peak.memory, peak.descriptors
        cpu_before = _cpu_seconds()
        started = time.perf_counter()
        result = nr.with_processors([timer, in_flight]).run(task=task, **params)
        wall = time.perf_counter() - started
        cpu = _cpu_seconds() - cpu_before
    return _Usage(
        tuple(timer.elapsed.values()), cpu, peak.memory - base_memory,
        peak.descriptors - base_descriptors, in_flight.peak, base_memory, base_descriptors,
        wall, result,
    )


def measure_run(nr: Nornir, task: Callable[..., Any], params: dict[str, Any]) -> Measured:
    """Run ``task`` once on ``nr``'s hosts with ``nr``'s runner, and measure it.

    Each host's memory and open files are the peak's growth shared among the hosts in flight,
    the runner's own (an event loop, a thread pool) included.
    """
    run = _measure(nr, task, params)
    hosts = max(1, run.in_flight)
    sample = Sample(
        latencies=run.latencies,
        cpu_per_host=run.cpu / max(1, len(run.latencies)),
        memory_per_host=max(0, run.memory) / hosts,
        descriptors_per_host=max(0, run.descriptors) / hosts,
        base_memory=run.base_memory,
        base_descriptors=run.base_descriptors,
        failed=len(run.result.failed_hosts),
        wall=run.wall,
    )
    return Measured(sample, run.result)


def measure_sample(nr: Nornir, task: Callable[..., Any], params: dict[str, Any]) -> Measured:
    """Measure ``task`` on ``nr``'s hosts: one host to warm up, one alone, then all the others
    at once.

    The warm-up takes what only a first run pays (imports, caches) out of the figures; the run
    of one host measures what any run pays once (the runner's event loop or threads,
    collecting results). A host's CPU time, memory and open files are what the last run used
    beyond that one, shared among the hosts it had in flight more; what the run of one took
    beyond its host's latency is a run's fixed cost. Each host runs once. With fewer than
    three hosts, one run of them all is the sample.
    """
    names = list(nr.inventory.hosts)
    if len(names) < 3:
        return measure_run(nr, task, params)
    warm, first = names[:2]
    warm_up = _measure(nr.filter(filter_func=lambda host: host.name == warm), task, params)
    one = _measure(nr.filter(filter_func=lambda host: host.name == first), task, params)
    rest = _measure(
        nr.filter(filter_func=lambda host: host.name not in (warm, first)), task, params
    )
    more = max(1, rest.in_flight - one.in_flight)
    memory = rest.base_memory + rest.memory - (one.base_memory + one.memory)
    descriptors = rest.base_descriptors + rest.descriptors - (
        one.base_descriptors + one.descriptors
    )
    result = rest.result
    result.update(one.result)
    result.update(warm_up.result)
    sample = Sample(
        latencies=rest.latencies,
        cpu_per_host=max(0.0, rest.cpu - one.cpu) / more,
        memory_per_host=max(0, memory) / more,
        descriptors_per_host=max(0, descriptors) / more,
        base_memory=one.base_memory + max(0, one.memory),
        base_descriptors=one.base_descriptors + max(0, one.descriptors),
        overhead=max(0.0, one.wall - max(one.latencies, default=0.0)),
        failed=len(result.failed_hosts),
        wall=rest.wall,
    )
    return Measured(sample, result)


def _cpu_seconds() -> float:
    # Not getrusage: where the kernel counts CPU time in ticks, a run of a few milliseconds
    # reads as 0 or 4 ms.
    return time.process_time()
