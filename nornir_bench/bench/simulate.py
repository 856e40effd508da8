"""A run replayed as a discrete-event simulation, for ``nornir-bench advise``.

A pure function: what a sample measured (:class:`Workload`) and how the run is set up
(:class:`Setup`: hosts, hosts in flight, the runner's own costs, the job's start rate and
batches) in, the wall of many simulated runs out (:class:`Simulated`: p5, p50, p95).

One simulated run, host by host in the order the runner starts them:

- each host's latency is drawn, with replacement, from the sample's (a bootstrap: the sample
  itself drawn again for each run, then its hosts from that draw), scaled by
  how latency grows with the hosts in flight when the sample saw it grow (a shared server, an
  SSH server throttling logins);
- a host starts when a place in flight is free, when the start rate lets it
  (``max_starts_per_second`` with its burst) and, with ``batches``, when the batch before its
  own has ended;
- it first takes its CPU time on the earliest free core (one core under one GIL, the
  processes' cores otherwise), then waits its latency;
- the parent takes each result in the order they end, its own cost per host on one core
  (processpool and dask: sending the host, taking its result back);
- the run's wall is the runner's start-up and a run's fixed cost, then the last result taken.

A wave ends with its slowest host, so the tail of the sample's latencies, not their median,
sets the wall of a run whose hosts are all in flight; the simulation sees that without a
formula for it. The range is the 5th to 95th percentile of the simulated walls.

Past :data:`HOST_EVENTS` hosts simulated in all, a run is simulated at scale: a fraction of
its hosts, its places in flight and its start rate, and each host's CPU and parent cost
multiplied back, so that its waves and its CPU and start floors stay the same; only the
slowest of a wave is drawn from fewer hosts.
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, replace

from nornir_bench.bench.costs import RunnerCosts
from nornir_bench.core.policies.plan import batch_size

__all__ = ["HOST_EVENTS", "REPEATS", "Setup", "Simulated", "Workload", "simulate"]

REPEATS = 40
"""Simulated runs per prediction: the range is their 5th to 95th percentile."""

HOST_EVENTS = 400_000
"""At most this many hosts simulated per prediction (all repeats): past it, at scale."""

_LEAST_SCALE = 0.1  # latency never shrinks below this share of the sampled one


@dataclass(frozen=True)
class Workload:
    """What the sample measured, per host.

    Attributes:
        latencies: each sampled host's seconds on its device, its client CPU time taken out.
        in_flight: hosts in flight while those latencies were measured.
        growth: how much latency grows per host in flight more than ``in_flight``, as a
            fraction of itself (0.01: 1 % a host); 0 where the sample saw none.
        cpu_per_host: the task's client CPU seconds per host.
        overhead: seconds any run pays once beyond its hosts' (its event loop, its results).
        cpu_measured: ``cpu_per_host`` as each of several measurements gave it: each
            simulated run draws one, so the range holds their spread.
    """

    latencies: tuple[float, ...]
    in_flight: int = 1
    growth: float = 0.0
    cpu_per_host: float = 0.0
    overhead: float = 0.0
    cpu_measured: tuple[float, ...] = ()

    def scale(self, in_flight: int) -> float:
        """Latency at ``in_flight`` hosts in flight, as a multiple of the sampled one."""
        return max(_LEAST_SCALE, 1.0 + self.growth * (in_flight - self.in_flight))


@dataclass(frozen=True)
class Setup:
    """How the run is set up.

    Attributes:
        hosts: the run's hosts.
        in_flight: the most hosts in flight at once (workers, times processes, within the
            job's group limits).
        costs: the runner's own costs and cores.
        max_starts_per_second, max_start_burst: the job's start rate, if it sets one.
        batches: the job's batch sizes (counts, or fractions of the hosts; the last repeats).
    """

    hosts: int
    in_flight: int
    costs: RunnerCosts = RunnerCosts()
    max_starts_per_second: float | None = None
    max_start_burst: int | None = None
    batches: tuple[int | float, ...] = ()
    per_host_scale: float = 1.0  # simulated at scale: each host stands for this many


@dataclass(frozen=True)
class Simulated:
    """The walls of the simulated runs, seconds, ascending."""

    walls: tuple[float, ...]

    def percentile(self, pct: float) -> float:
        """The nearest-rank percentile ``pct`` (0-100) of the walls."""
        rank = max(1, math.ceil(pct / 100 * len(self.walls)))
        return self.walls[rank - 1]

    @property
    def p5(self) -> float:
        return self.percentile(5)

    @property
    def p50(self) -> float:
        return self.percentile(50)

    @property
    def p95(self) -> float:
        return self.percentile(95)


def simulate(
    workload: Workload, setup: Setup, *, repeats: int = REPEATS, seed: int | None = 0
) -> Simulated:
    """Simulate ``repeats`` runs of ``setup`` on ``workload`` (see the module).

    Raises:
        ValueError: for no latency, fewer than one host, in flight or repeat.
    """
    if not workload.latencies:
        raise ValueError("simulate: the workload has no latency to draw from")
    if setup.hosts < 1 or setup.in_flight < 1 or repeats < 1:
        raise ValueError(
            f"simulate: hosts, in_flight and repeats must be >= 1, got {setup.hosts!r}, "
            f"{setup.in_flight!r}, {repeats!r}"
        )
    at_scale = min(1.0, HOST_EVENTS / (setup.hosts * repeats))
    if at_scale < 1.0:
        workload, setup = _scaled(workload, setup, at_scale)
    rng = random.Random(seed)
    walls = sorted(_one_run(rng, workload, setup) for _ in range(repeats))
    return Simulated(tuple(walls))


def _scaled(workload: Workload, setup: Setup, fraction: float) -> tuple[Workload, Setup]:
    """The run at ``fraction`` of its hosts, with the same waves, CPU and start floors."""
    hosts = max(1, round(setup.hosts * fraction))
    kept = hosts / setup.hosts
    in_flight = max(1, round(setup.in_flight * kept))
    costs = replace(setup.costs, per_host=setup.costs.per_host / kept)
    rate = setup.max_starts_per_second
    batches = tuple(
        size if isinstance(size, float) else max(1, round(size * kept)) for size in setup.batches
    )
    return (
        replace(
            workload, cpu_per_host=workload.cpu_per_host / kept,
            cpu_measured=tuple(cpu / kept for cpu in workload.cpu_measured),
        ),
        replace(
            setup, hosts=hosts, in_flight=in_flight, costs=costs, batches=batches,
            max_starts_per_second=rate * kept if rate else None, per_host_scale=1 / kept,
        ),
    )


def _one_run(rng: random.Random, workload: Workload, setup: Setup) -> float:
    hosts = setup.hosts
    in_flight = min(setup.in_flight, hosts)
    scale = workload.scale(in_flight)
    # The sample drawn again first (a bootstrap of it), then the hosts from that draw: the
    # range holds what another sample of as many hosts might have shown.
    sample = rng.choices(workload.latencies, k=len(workload.latencies))
    latencies = [latency * scale for latency in rng.choices(sample, k=hosts)]
    costs = setup.costs
    t0 = costs.startup + workload.overhead
    measured = costs.per_host_measured
    per_host = rng.choice(measured) * setup.per_host_scale if measured else costs.per_host
    cpu = rng.choice(workload.cpu_measured) if workload.cpu_measured else workload.cpu_per_host
    if costs.processes == 1:  # in process: the runner's cost per host takes the hosts' core
        cpu, per_host = cpu + per_host, 0.0
    ends = _ends(latencies, t0, in_flight, cpu, setup)
    if per_host <= 0:
        return max(ends)
    taken = t0  # the parent takes the results one at a time, as they end
    for end in sorted(ends):
        taken = (end if end > taken else taken) + per_host
    return taken


def _ends(
    latencies: Sequence[float], t0: float, in_flight: int, cpu: float, setup: Setup
) -> list[float]:
    """Each host's end, in the order the hosts start."""
    places = [t0] * in_flight  # when each place in flight is free: a heap
    cores = [t0] * max(1, setup.costs.cores)  # when each core is free: a heap
    rate, burst = setup.max_starts_per_second, setup.max_start_burst or 1
    starts = _batch_starts(setup)
    batch_end = t0  # the end of the batches before the current one
    current_end = t0
    ends = []
    for index, latency in enumerate(latencies):
        if index in starts:  # a new batch waits for the one before to end
            batch_end = current_end
        start = places[0]
        if batch_end > start:
            start = batch_end
        if rate and index >= burst:
            start = max(start, t0 + (index - burst + 1) / rate)
        if cpu:
            core = cores[0]
            done = (core if core > start else start) + cpu
            heapq.heapreplace(cores, done)
            start = done
        end = start + latency
        heapq.heapreplace(places, end)
        if end > current_end:
            current_end = end
        ends.append(end)
    return ends


def _batch_starts(setup: Setup) -> set[int]:
    """The host indexes that start a batch after the first, as the run's plan cuts them."""
    if not setup.batches:
        return set()
    starts: set[int] = set()
    index, sizes = 0, list(setup.batches)
    while True:
        size = sizes.pop(0) if len(sizes) > 1 else sizes[0]
        index += batch_size(size, setup.hosts)
        if index >= setup.hosts:
            return starts
        starts.add(index)
