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
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from statistics import median
from typing import TYPE_CHECKING, Any

from nornir_bench.bench.advise import Level, Sample
from nornir_bench.bench.advise_data import cpu_waited, less_cpu_waited
from nornir_bench.bench.summary import summarize
from nornir_bench.core.hooks import NoOpProcessor
from nornir_bench.processors.timing import HostTimer

if TYPE_CHECKING:
    from nornir.core import Nornir
    from nornir.core.inventory import Host
    from nornir.core.processor import Processor
    from nornir.core.task import AggregatedResult, MultiResult, Task

__all__ = [
    "Measured",
    "measure_run",
    "latency_growth",
    "only_hosts",
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
    cpu: float = 0.0  # the watching thread's own CPU seconds, not the run's


@contextmanager
def _peak_usage() -> Iterator[_Peak]:
    """The highest RSS and open-file count seen while the block runs (the thread reading them
    is stopped and joined on the way out, whatever happens)."""
    peak = _Peak(resident_memory(), open_descriptors())
    done = threading.Event()

    def watch() -> None:
        began = time.thread_time()
        while not done.wait(_PERIOD):
            peak.memory = max(peak.memory, resident_memory())
            peak.descriptors = max(peak.descriptors, open_descriptors())
        peak.cpu = time.thread_time() - began

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


def _measure(
    nr: Nornir, task: Callable[..., Any], params: dict[str, Any],
    processors: Sequence[Processor] = (),
) -> _Usage:
    timer, in_flight = HostTimer(), _InFlight()
    with _peak_usage() as peak:
        base_memory, base_descriptors = peak.memory, peak.descriptors
        cpu_before = _cpu_seconds()
        started = time.perf_counter()
        result = nr.with_processors([timer, in_flight, *processors]).run(task=task, **params)
        wall = time.perf_counter() - started
        cpu = _cpu_seconds() - cpu_before
    # What the watching thread took itself grows with the run's length, not its hosts.
    cpu = max(0.0, cpu - peak.cpu)
    return _Usage(
        tuple(timer.elapsed.values()), cpu, peak.memory - base_memory,
        peak.descriptors - base_descriptors, in_flight.peak, base_memory, base_descriptors,
        wall, result,
    )


def measure_run(
    nr: Nornir, task: Callable[..., Any], params: dict[str, Any],
    processors: Sequence[Processor] = (),
) -> Measured:
    """Run ``task`` once on ``nr``'s hosts with ``nr``'s runner, and measure it.

    Each host's memory and open files are the peak's growth shared among the hosts in flight,
    the runner's own (an event loop, a thread pool) included.
    """
    run = _measure(nr, task, params, processors)
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


def measure_sample(
    nr: Nornir, task: Callable[..., Any], params: dict[str, Any],
    processors: Sequence[Processor] = (),
) -> Measured:
    """Measure ``task`` on ``nr``'s hosts: one host to warm up, one alone, then the others at
    two loads: a fifth of them at once, then the rest at once.

    The warm-up takes what only a first run pays (imports, caches) out of the figures; the run
    of one host measures what any run pays once (the runner's event loop or threads,
    collecting results). A host's CPU time, memory and open files are what the largest run
    used beyond that one, shared among the hosts it had in flight more; what the run of one
    took beyond its host's latency is a run's fixed cost. The two loads show whether latency
    grows with the hosts in flight (a shared server, SSH servers throttling logins), and where
    logins were refused. Each host runs once. With fewer than three hosts, one run of them all
    is the sample; with fewer than 12, one load. ``processors`` (a job's records writer, say)
    are attached to every run, so that what they cost is in the figures.
    """
    started = time.perf_counter()
    names = list(nr.inventory.hosts)
    if len(names) < 3:
        measured = measure_run(nr, task, params, processors)
        return Measured(_with_seconds(measured.sample, started), measured.result)
    warm, first, *rest = names
    low_hosts = rest[: len(rest) // 5] if len(rest) >= 10 else []
    runs = [
        _measure(only_hosts(nr, hosts), task, params, processors)
        for hosts in ([warm], [first], low_hosts, rest[len(low_hosts):])
        if hosts
    ]
    _warm_up, one, *loads = runs
    high = loads[-1]
    more = max(1, high.in_flight - one.in_flight)
    memory = high.base_memory + high.memory - (one.base_memory + one.memory)
    descriptors = high.base_descriptors + high.descriptors - (
        one.base_descriptors + one.descriptors
    )
    levels = tuple(_level(run) for run in loads)  # before their results are merged
    result = high.result
    for run in runs[:-1]:
        result.update(run.result)
    cpu_per_host = max(0.0, high.cpu - one.cpu) / more
    sample = Sample(
        latencies=high.latencies,
        cpu_per_host=cpu_per_host,
        memory_per_host=max(0, memory) / more,
        descriptors_per_host=max(0, descriptors) / more,
        base_memory=one.base_memory + max(0, one.memory),
        base_descriptors=one.base_descriptors + max(0, one.descriptors),
        overhead=max(0.0, one.wall - max(one.latencies, default=0.0)),
        failed=len(result.failed_hosts),
        wall=high.wall,
        in_flight=high.in_flight,
        growth=latency_growth(levels, cpu_per_host),
        levels=levels,
        seconds=time.perf_counter() - started,
        cpu_waited=cpu_waited(cpu_per_host, high.in_flight),
    )
    return Measured(sample, result)


GROWTH_NOISE = 0.15
"""Latency that grows less than this fraction between two loads is taken as not growing."""


def latency_growth(levels: tuple[Level, ...], cpu_per_host: float = 0.0) -> float:
    """How much latency grows per host in flight more, as a fraction of the highest load's,
    from the lowest and highest ``levels``, each median less the client CPU its hosts waited
    for (``cpu_per_host`` each, half the others' on average, started together: the simulation
    gives the CPU its own place); 0 for one level, or growth within :data:`GROWTH_NOISE`."""
    if len(levels) < 2:
        return 0.0
    low, high = levels[0], levels[-1]
    at_low, at_high = (
        less_cpu_waited(level.p50, cpu_waited(cpu_per_host, level.in_flight))
        for level in (low, high)
    )
    if high.in_flight <= low.in_flight or at_low <= 0 or at_high <= at_low * (1 + GROWTH_NOISE):
        return 0.0
    return (at_high - at_low) / (high.in_flight - low.in_flight) / at_high


def _level(run: _Usage) -> Level:
    summary = summarize(run.result)
    refused = summary.login_retried + len(summary.failures.get("LoginRefused", ()))
    return Level(
        in_flight=run.in_flight, hosts=len(run.result),
        p50=median(run.latencies) if run.latencies else 0.0, refused=refused,
        failed=summary.failed,
    )


def only_hosts(nr: Nornir, names: Iterable[str]) -> Nornir:
    """``nr`` filtered to the hosts ``names`` names."""
    chosen = set(names)
    return nr.filter(filter_func=lambda host: host.name in chosen)


def _with_seconds(sample: Sample, started: float) -> Sample:
    return replace(sample, seconds=time.perf_counter() - started)


def _cpu_seconds() -> float:
    # Not getrusage: where the kernel counts CPU time in ticks, a run of a few milliseconds
    # reads as 0 or 4 ms.
    return time.process_time()
