"""How many workers a job needs, predicted from a sample of its hosts (``nornir-bench advise``).

The model is pure: a measured :class:`Sample` and a machine's :class:`Limits` in, a
:class:`Prediction` per runner and worker count out, so a notebook can feed it figures of its
own. Measuring a sample is :mod:`nornir_bench.bench.sampling`'s; :func:`machine_limits` reads
this machine's.

Per runner and worker count:

- in flight: ``workers`` (threadpool, asyncio) or ``workers x processes`` (processpool, dask),
  never more than the hosts or what the job's group limits allow;
- waves: ``ceil(hosts / in flight)``; the I/O time is ``waves x latency``, with the sample's
  median latency for the prediction and its 95th percentile for the high end of its range;
- the CPU floor: ``hosts x CPU seconds per host / usable cores`` (one core for threadpool and
  asyncio: the GIL);
- the start floor: ``hosts / max_starts_per_second`` when the job sets that policy;
- wall: the runner's start-up and a run's fixed cost (measured), plus the I/O time, or the
  larger floor plus one latency (the last host given its CPU or its start still waits for its
  device), whichever is longer.
"""

from __future__ import annotations

import math
import os
import resource
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import median

from nornir_bench.bench.summary import percentile
from nornir_bench.bench.sweep.grid import DEFAULT_WORKERS

__all__ = [
    "ASYNC_RUNNERS",
    "NEAR_BEST",
    "STARTUP_SECONDS",
    "Advice",
    "Limits",
    "Prediction",
    "Sample",
    "advise",
    "limit_warnings",
    "machine_limits",
    "predict",
    "runners_for",
    "worker_grid",
]

ASYNC_RUNNERS = ("asyncio", "processpool", "dask")
"""The runners advised for an ``async def`` task; a blocking task gets ``threadpool``."""

PROCESS_RUNNERS = ("processpool", "dask")
"""Runners whose hosts run in several processes: ``workers`` hosts in flight in each."""

STARTUP_SECONDS = {"processpool": 0.3, "dask": 2.7}
"""Fixed seconds a run pays before its first host, from docs/benchmarks.md: processpool's fork
server is a fresh interpreter importing nornir and nornir-bench (about 0.3 s, "processpool
runner"); dask's embedded cluster starts in about 2 s and closes in 0.7 s ("dask runner")."""

DASK_ATTACHED_STARTUP = 0.034
"""A run on a Dask cluster already started (``--address``): 34 ms, docs/benchmarks.md."""

PROCESS_DESCRIPTORS = 8
"""Open files each worker process adds in the parent (its pipes and socket): a margin."""

NEAR_BEST = 0.10
"""A worker count within this fraction of the best predicted wall is as good: fewest wins."""

_SMALL_WORKERS = (1, 10, 20, 50)


@dataclass(frozen=True)
class Sample:
    """What a run on a sample of hosts measured, all of its hosts in flight at once.

    Attributes:
        latencies: each host's seconds, from its task's start to its end.
        cpu_per_host: the client's CPU seconds (user + system) per host.
        memory_per_host: bytes of RSS each host in flight adds.
        descriptors_per_host: open files each host in flight adds.
        base_memory: the process's RSS with a run of one host at its peak, bytes: the
            interpreter, the inventory and the runner's fixed part.
        base_descriptors: its open files at that peak.
        overhead: seconds a run takes beyond its hosts' (starting the runner, collecting
            results), from that run of one host.
        failed: hosts whose task failed.
        wall: the run's seconds.
    """

    latencies: tuple[float, ...]
    cpu_per_host: float = 0.0
    memory_per_host: float = 0.0
    descriptors_per_host: float = 0.0
    base_memory: int = 0
    base_descriptors: int = 0
    overhead: float = 0.0
    failed: int = 0
    wall: float = 0.0

    @property
    def hosts(self) -> int:
        return len(self.latencies)

    @property
    def p50(self) -> float:
        return median(self.latencies) if self.latencies else 0.0

    @property
    def p95(self) -> float:
        return percentile(sorted(self.latencies), 95) or 0.0

    @property
    def max(self) -> float:
        return max(self.latencies, default=0.0)


@dataclass(frozen=True)
class Limits:
    """What bounds a run on a machine, and the job's own policies.

    Attributes:
        cpus: cores on this machine.
        open_files_soft, open_files_hard: ``RLIMIT_NOFILE`` (``ulimit -n``, ``ulimit -Hn``).
        memory_available: bytes available (``MemAvailable``); ``None``: not known.
        max_starts_per_second: the job's start-rate policy, if it sets one.
        max_in_flight: the most hosts the job's group limits let be in flight at once.
        cluster_cores: the Dask cluster's cores (``None``: a local cluster, ``cpus``).
        attached: the Dask cluster is already started (no start-up paid).
    """

    cpus: int
    open_files_soft: int
    open_files_hard: int
    memory_available: int | None = None
    max_starts_per_second: float | None = None
    max_in_flight: int | None = None
    cluster_cores: int | None = None
    attached: bool = False

    def cores(self, runner: str) -> int:
        """The cores a runner's hosts can use at once."""
        if runner == "dask":
            return max(1, self.cluster_cores or self.cpus)
        if runner == "processpool":
            return max(1, self.cpus)
        return 1  # one interpreter: the GIL

    def startup(self, runner: str) -> float:
        if runner == "dask" and self.attached:
            return DASK_ATTACHED_STARTUP
        return STARTUP_SECONDS.get(runner, 0.0)


@dataclass(frozen=True)
class Prediction:
    """One runner and worker count, predicted for ``hosts`` hosts.

    Attributes:
        wall, wall_high: seconds, with the sample's median and 95th percentile latency.
        cpu_percent: the client's CPU time over the wall, as ``time`` reports it.
        memory: peak RSS, bytes (worker processes included).
        open_files: descriptors open at the peak, in this process.
        cpu_bound: the CPU floor, not the waves, sets the wall.
    """

    runner: str
    workers: int
    hosts: int
    in_flight: int
    waves: int
    wall: float
    wall_high: float
    cpu_percent: float
    memory: int
    open_files: int
    cpu_bound: bool = False


@dataclass(frozen=True)
class Advice:
    """Every prediction, the one recommended and what to watch out for (a line each)."""

    hosts: int
    predictions: tuple[Prediction, ...]
    best: Prediction
    warnings: tuple[str, ...]


def runners_for(async_task: bool, installed: Iterable[str]) -> tuple[str, ...]:
    """The runners worth predicting for a task: the event-loop and process runners for an
    ``async def`` task, ``threadpool`` for a blocking one; those installed, in that order."""
    wanted = ASYNC_RUNNERS if async_task else ("threadpool",)
    have = set(installed)
    return tuple(name for name in wanted if name in have)


def worker_grid(
    hosts: int, workers: Sequence[int] = (*_SMALL_WORKERS, *DEFAULT_WORKERS)
) -> tuple[int, ...]:
    """The sweep's worker counts (and a few small ones), none above ``hosts``; ``hosts`` itself
    when the grid stops short of it."""
    grid = {min(count, hosts) for count in workers if count >= 1}
    if hosts <= max(workers, default=0):
        grid.add(hosts)
    return tuple(sorted(grid))


def predict(sample: Sample, *, runner: str, workers: int, hosts: int, limits: Limits) -> Prediction:
    """The model (see the module) for ``runner`` with ``workers`` on ``hosts`` hosts."""
    processes = limits.cores(runner) if runner in PROCESS_RUNNERS else 1
    in_flight = max(1, min(hosts, workers * processes, limits.max_in_flight or hosts))
    waves = math.ceil(hosts / in_flight)
    cpu_floor = hosts * sample.cpu_per_host / limits.cores(runner)
    start_floor = hosts / limits.max_starts_per_second if limits.max_starts_per_second else 0.0
    startup = limits.startup(runner) + sample.overhead
    # The last host to get its CPU or its start still waits one latency for its device.
    floor = max(cpu_floor, start_floor)
    wall = startup + max(waves * sample.p50, floor + sample.p50)
    wall_high = startup + max(waves * sample.p95, floor + sample.p95)
    cpu = hosts * sample.cpu_per_host
    # Worker processes on this machine, each an interpreter of its own.
    local = runner == "processpool" or (runner == "dask" and not limits.attached)
    extra = processes if local else 0
    memory = sample.base_memory * (1 + extra) + round(in_flight * sample.memory_per_host)
    open_files = (
        sample.base_descriptors
        + math.ceil(in_flight * sample.descriptors_per_host)
        + extra * PROCESS_DESCRIPTORS
    )
    return Prediction(
        runner=runner,
        workers=workers,
        hosts=hosts,
        in_flight=in_flight,
        waves=waves,
        wall=wall,
        wall_high=wall_high,
        cpu_percent=100.0 * cpu / wall if wall > 0 else 0.0,
        memory=memory,
        open_files=open_files,
        # Half the time or more spent on the client's CPU.
        cpu_bound=start_floor <= cpu_floor >= (wall - startup) / 2 and cpu_floor > 0,
    )


def limit_warnings(prediction: Prediction, limits: Limits) -> list[str]:
    """What in ``prediction`` goes past the machine's limits or the job's policies, a line
    each."""
    p = prediction
    lines = []
    if p.open_files > limits.open_files_hard:
        lines.append(
            f"{p.in_flight:,} in flight needs {p.open_files:,} open files; the hard limit "
            f"(ulimit -Hn) is {limits.open_files_hard:,}: the runner keeps fewer in flight"
        )
    elif p.open_files > limits.open_files_soft:
        lines.append(
            f"{p.in_flight:,} in flight needs {p.open_files:,} open files; ulimit -n is "
            f"{limits.open_files_soft:,} (the runner raises it, up to the hard limit "
            f"{limits.open_files_hard:,})"
        )
    if limits.memory_available is not None and p.memory > limits.memory_available:
        lines.append(
            f"{p.in_flight:,} in flight needs {_mib(p.memory)} of memory; "
            f"{_mib(limits.memory_available)} is available"
        )
    if limits.max_starts_per_second and p.hosts / limits.max_starts_per_second >= p.wall * 0.9:
        lines.append(
            f"max_starts_per_second {limits.max_starts_per_second:g} sets the pace: "
            f"{p.hosts:,} hosts take {p.hosts / limits.max_starts_per_second:,.1f} s at least"
        )
    if limits.max_in_flight is not None and p.in_flight == limits.max_in_flight < p.workers:
        lines.append(
            f"the job's group limits allow {limits.max_in_flight:,} hosts in flight: more "
            "workers do not help"
        )
    if p.cpu_bound:
        lines.append(
            f"{p.runner} is CPU-bound here ({p.cpu_percent:.0f} % CPU): the client's CPU, not "
            "the devices, sets the wall"
        )
    return lines


def advise(
    sample: Sample,
    *,
    hosts: int,
    runners: Sequence[str],
    limits: Limits,
    workers: Sequence[int] | None = None,
) -> Advice:
    """Predict every runner x worker count and recommend one.

    The recommendation is the fewest hosts in flight within :data:`NEAR_BEST` of the smallest
    predicted wall, among the configurations that fit the machine (all, if none does).

    Raises:
        ValueError: for no runner, or fewer than one host.
    """
    if not runners:
        raise ValueError("advise: no runner to predict for")
    if hosts < 1:
        raise ValueError(f"advise: hosts must be >= 1, got {hosts!r}")
    grid = worker_grid(hosts) if workers is None else tuple(sorted(set(workers)))
    predictions = tuple(
        predict(sample, runner=runner, workers=count, hosts=hosts, limits=limits)
        for runner in runners
        for count in grid
    )
    fitting = [p for p in predictions if not _past_limits(p, limits)] or list(predictions)
    best_wall = min(p.wall for p in fitting)
    near = [p for p in fitting if p.wall <= best_wall * (1 + NEAR_BEST)]
    best = min(near, key=lambda p: (p.in_flight, p.wall, p.workers))
    return Advice(hosts, predictions, best, tuple(limit_warnings(best, limits)))


def _past_limits(p: Prediction, limits: Limits) -> bool:
    too_much_memory = limits.memory_available is not None and p.memory > limits.memory_available
    return p.open_files > limits.open_files_hard or too_much_memory


def machine_limits(
    *,
    max_starts_per_second: float | None = None,
    max_in_flight: int | None = None,
    cluster_cores: int | None = None,
    attached: bool = False,
) -> Limits:
    """This machine's :class:`Limits`, with the job's policies and the Dask cluster given."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    unlimited = resource.RLIM_INFINITY
    return Limits(
        cpus=os.cpu_count() or 1,
        open_files_soft=soft if soft != unlimited else 2**31,
        open_files_hard=hard if hard != unlimited else 2**31,
        memory_available=_memory_available(),
        max_starts_per_second=max_starts_per_second,
        max_in_flight=max_in_flight,
        cluster_cores=cluster_cores,
        attached=attached,
    )


def _memory_available() -> int | None:
    """``MemAvailable`` of /proc/meminfo, bytes; ``None`` where there is none."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _mib(size: int) -> str:
    return f"{size / 2**20:,.0f} MiB"
