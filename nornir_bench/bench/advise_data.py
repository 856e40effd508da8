"""What ``advise`` takes and gives: a sample's figures, a machine's limits, predictions.

Plain data, re-exported by :mod:`nornir_bench.bench.advise`, which computes on them.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median

from nornir_bench.bench.costs import RunnerCosts
from nornir_bench.bench.simulate import Workload
from nornir_bench.bench.summary import percentile
from nornir_bench.core.runner_traits import runs_elsewhere
from nornir_bench.runners.registry import runner_class

__all__ = ["Advice", "Level", "Limits", "Prediction", "Sample", "cpu_waited", "less_cpu_waited"]


@dataclass(frozen=True)
class Level:
    """Hosts run at once in the sample, and what their logins and latency did there.

    Attributes:
        in_flight: hosts in flight at once.
        hosts: hosts run at this level.
        p50: their median latency, seconds.
        refused: hosts whose login their SSH server refused at least once (throttling).
        failed: hosts that failed.
    """

    in_flight: int
    hosts: int
    p50: float
    refused: int = 0
    failed: int = 0


@dataclass(frozen=True)
class Sample:
    """What a run on a sample of hosts measured.

    Attributes:
        latencies: each host's seconds, from its task's start to its end, at the sample's
            highest load (``in_flight`` hosts at once).
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
        in_flight: hosts in flight while ``latencies`` were measured (0: all of them).
        growth: how much latency grew per host in flight more, as a fraction of itself, where
            the sample's load levels saw it grow (see :class:`Level`); 0 where they did not.
        levels: the load levels the sample ran at, lowest first.
        seconds: how long the whole sample took.
        cpu_waited: seconds of each latency that were the client's CPU, not the device: its
            own and the other hosts' it waited for (the simulation gives the CPU its own
            place, and takes this out of the latencies).
        cpu_runner: of ``cpu_per_host``, what the sample's runner took itself, its hosts
            ending as the sample's did (:func:`~nornir_bench.bench.calibrate.replay_cpu`):
            the rest is the task's own. A runner's cost where hosts end together is its
            :class:`~nornir_bench.bench.costs.RunnerCosts` ``per_host``.
        cpu_runner_measured: each measurement of ``cpu_runner`` (their median is it): the
            task's own CPU as each gives it is a draw of the simulation.
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
    in_flight: int = 0
    growth: float = 0.0
    levels: tuple[Level, ...] = ()
    seconds: float = 0.0
    cpu_waited: float = 0.0
    cpu_runner: float = 0.0
    cpu_runner_measured: tuple[float, ...] = ()

    @property
    def cpu_task(self) -> float:
        """The task's own client CPU seconds per host: ``cpu_per_host`` less ``cpu_runner``."""
        return max(0.0, self.cpu_per_host - self.cpu_runner)

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

    def workload(self) -> Workload:
        """The sample as the simulation draws from it: each latency less ``cpu_waited``, never
        below a tenth of itself."""
        latencies = tuple(less_cpu_waited(latency, self.cpu_waited) for latency in self.latencies)
        return Workload(
            latencies or (0.0,), in_flight=max(1, self.in_flight or self.hosts),
            growth=self.growth, cpu_per_host=self.cpu_task, overhead=self.overhead,
            cpu_measured=tuple(
                max(0.0, self.cpu_per_host - runner) for runner in self.cpu_runner_measured
            ),
        )


@dataclass(frozen=True)
class Limits:
    """What bounds a run on a machine, and the job's own policies.

    Attributes:
        cpus: cores on this machine.
        open_files_soft, open_files_hard: ``RLIMIT_NOFILE`` (``ulimit -n``, ``ulimit -Hn``).
        memory_available: bytes available (``MemAvailable``); ``None``: not known.
        max_starts_per_second, max_start_burst: the job's start-rate policy, if it sets one.
        max_in_flight: the most hosts the job's group limits let be in flight at once.
        batches: the job's batch sizes, if it sets them.
    """

    cpus: int
    open_files_soft: int
    open_files_hard: int
    memory_available: int | None = None
    max_starts_per_second: float | None = None
    max_start_burst: int | None = None
    max_in_flight: int | None = None
    batches: tuple[int | float, ...] = ()

    def costs(self, runner: str) -> RunnerCosts:
        """A runner's costs where none were measured: nothing beyond its hosts; one process
        per CPU, here, for a runner whose hosts run elsewhere (its traits say so)."""
        try:
            elsewhere = runs_elsewhere(runner_class(runner))
        except ValueError:  # not installed: read with the defaults
            elsewhere = False
        if not elsewhere:
            return RunnerCosts()
        cpus = max(1, self.cpus)
        return RunnerCosts(processes=cpus, cores=cpus, processes_here=cpus)


@dataclass(frozen=True)
class Prediction:
    """One runner and worker count, predicted for ``hosts`` hosts.

    Attributes:
        wall: seconds, the median of the simulated runs; ``wall_low``, ``wall_high``: their
            5th and 95th percentiles.
        cpu_percent: the client's CPU time over the wall, as ``time`` reports it.
        memory: peak RSS, bytes (worker processes included).
        open_files: descriptors open at the peak, in this process.
        cpu_bound: the client's CPU, not the devices, sets the wall.
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
    wall_low: float = 0.0
    latency_scale: float = 1.0


@dataclass(frozen=True)
class Advice:
    """Every prediction, the one recommended and what to watch out for (a line each)."""

    hosts: int
    predictions: tuple[Prediction, ...]
    best: Prediction
    warnings: tuple[str, ...]


def cpu_waited(cpu_per_host: float, in_flight: int) -> float:
    """Seconds of a host's latency that were the client's CPU when ``in_flight`` hosts started
    together: on average half the others', and its own."""
    return cpu_per_host * (in_flight + 1) / 2


def less_cpu_waited(latency: float, waited: float) -> float:
    """``latency`` less the client CPU ``waited``, never below a tenth of itself."""
    return max(latency * 0.1, latency - waited)
