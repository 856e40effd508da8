"""How many workers a job needs, predicted from a sample of its hosts (``nornir-bench advise``).

The model is pure: a measured :class:`Sample`, each runner's own costs
(:class:`~nornir_bench.bench.costs.RunnerCosts`) and a machine's :class:`Limits` in, a
:class:`Prediction` per runner and worker count out, so a notebook can feed it figures of its
own. Measuring a sample is :mod:`nornir_bench.bench.sampling`'s, a runner's costs
:mod:`nornir_bench.bench.calibrate`'s; :func:`machine_limits` reads this machine's.

Per runner and worker count, hosts in flight are ``workers x processes`` (one process in
process; the runner's traits say how many, :mod:`nornir_bench.core.runner_traits`), never more than
the hosts or what the job's group limits allow; the wall is a discrete-event simulation of the run
(:mod:`nornir_bench.bench.simulate`): hosts drawn from the sample's latencies, their CPU on the
cores the runner can use, the parent's cost per host, the start rate and the batches, the
runner's start-up. The prediction is the simulated walls' median, its range their 5th to 95th
percentile.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from nornir_bench.bench.advise_data import Advice, Level, Limits, Prediction, Sample
from nornir_bench.bench.advise_runners import runners_for
from nornir_bench.bench.costs import RunnerCosts
from nornir_bench.bench.simulate import REPEATS, Setup, simulate
from nornir_bench.bench.sweep.grid import DEFAULT_WORKERS

__all__ = [
    "NEAR_BEST",
    "Advice",
    "Level",
    "Limits",
    "Prediction",
    "Sample",
    "accepted_start_rate",
    "advise",
    "limit_warnings",
    "load_warnings",
    "predict",
    "recommend",
    "runners_for",
    "worker_grid",
]

PROCESS_DESCRIPTORS = 8
"""Open files each worker process adds in the parent (its pipes and socket): a margin."""

NEAR_BEST = 0.10
"""A worker count within this fraction of the best predicted wall is as good: fewest wins."""

_SMALL_WORKERS = (1, 10, 20, 50)


def worker_grid(
    hosts: int, workers: Sequence[int] = (*_SMALL_WORKERS, *DEFAULT_WORKERS)
) -> tuple[int, ...]:
    """The sweep's worker counts (and a few small ones), none above ``hosts``; ``hosts`` itself
    when the grid stops short of it."""
    grid = {min(count, hosts) for count in workers if count >= 1}
    if hosts <= max(workers, default=0):
        grid.add(hosts)
    return tuple(sorted(grid))


def predict(
    sample: Sample,
    *,
    runner: str,
    workers: int,
    hosts: int,
    limits: Limits,
    costs: RunnerCosts | None = None,
    repeats: int = REPEATS,
) -> Prediction:
    """Simulate ``runner`` with ``workers`` on ``hosts`` hosts (see the module).

    ``costs``: the runner's, measured; :meth:`Limits.costs` where not given.
    """
    costs = costs or limits.costs(runner)
    in_flight = max(1, min(hosts, workers * costs.processes, limits.max_in_flight or hosts))
    workload = sample.workload()
    simulated = simulate(
        workload,
        Setup(
            hosts, in_flight, costs, limits.max_starts_per_second, limits.max_start_burst,
            limits.batches,
        ),
        repeats=repeats,
    )
    wall = simulated.p50
    cpu = hosts * workload.cpu_per_host + hosts * costs.per_host
    # The CPU floor: the hosts' CPU on the cores they can use, or the parent's on its one
    # (in process, one core takes both).
    parent = hosts * costs.per_host
    own = hosts * workload.cpu_per_host / costs.cores
    cpu_floor = own + parent if costs.processes == 1 else max(own, parent)
    extra = costs.processes_here
    memory = sample.base_memory * (1 + extra) + round(in_flight * sample.memory_per_host)
    open_files = (
        sample.base_descriptors
        + math.ceil(in_flight * sample.descriptors_per_host)
        + extra * PROCESS_DESCRIPTORS
    )
    run = wall - costs.startup - workload.overhead
    return Prediction(
        runner=runner,
        workers=workers,
        hosts=hosts,
        in_flight=in_flight,
        waves=math.ceil(hosts / in_flight),
        wall=wall,
        wall_high=simulated.p95,
        wall_low=simulated.p5,
        cpu_percent=100.0 * cpu / wall if wall > 0 else 0.0,
        memory=memory,
        open_files=open_files,
        # Half the run or more spent on the client's CPU.
        cpu_bound=cpu_floor > 0 and cpu_floor >= run / 2,
        latency_scale=workload.scale(in_flight),
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
    costs: Mapping[str, RunnerCosts] | None = None,
) -> Advice:
    """Predict every runner x worker count and recommend one.

    The recommendation is the fewest hosts in flight within :data:`NEAR_BEST` of the smallest
    predicted wall, among the configurations that fit the machine (all, if none does).
    ``costs``: each runner's, measured (:meth:`Limits.costs` for those not given).

    Raises:
        ValueError: for no runner, or fewer than one host.
    """
    if not runners:
        raise ValueError("advise: no runner to predict for")
    if hosts < 1:
        raise ValueError(f"advise: hosts must be >= 1, got {hosts!r}")
    grid = worker_grid(hosts) if workers is None else tuple(sorted(set(workers)))
    measured = costs or {}
    predictions = tuple(
        predict(
            sample, runner=runner, workers=count, hosts=hosts, limits=limits,
            costs=measured.get(runner),
        )
        for runner in runners
        for count in grid
    )
    return recommend(hosts, predictions, limits, [sample])


def recommend(
    hosts: int, predictions: Sequence[Prediction], limits: Limits, samples: Sequence[Sample]
) -> Advice:
    """The fewest hosts in flight within :data:`NEAR_BEST` of the smallest predicted wall,
    among ``predictions`` that fit the machine (all, if none does), with what ``samples``
    showed and what it goes past."""
    fitting = [p for p in predictions if not _past_limits(p, limits)] or list(predictions)
    best_wall = min(p.wall for p in fitting)
    near = [p for p in fitting if p.wall <= best_wall * (1 + NEAR_BEST)]
    best = min(near, key=lambda p: (p.in_flight, p.wall, p.workers))
    seen = [line for sample in samples for line in load_warnings(sample, best)]
    warnings = [*dict.fromkeys(seen), *limit_warnings(best, limits)]
    return Advice(hosts, tuple(predictions), best, tuple(warnings))


def load_warnings(sample: Sample, best: Prediction) -> list[str]:
    """What the sample's load levels showed: logins refused, latency growing with load."""
    lines = []
    refused = [level for level in sample.levels if level.refused]
    if refused:
        worst = max(refused, key=lambda level: level.refused / level.hosts)
        lines.append(
            f"the devices' SSH servers refused {100 * worst.refused / worst.hosts:.0f} % of "
            f"logins at {worst.in_flight:,} in flight: set max_starts_per_second: "
            f"{accepted_start_rate(sample):g}"
        )
    if sample.growth > 0 and len(sample.levels) >= 2:
        low, high = sample.levels[0], sample.levels[-1]
        lines.append(
            f"latency grows with hosts in flight: p50 {low.p50 * 1000:,.1f} ms at "
            f"{low.in_flight:,}, {high.p50 * 1000:,.1f} ms at {high.in_flight:,} (a shared "
            f"server, SSH servers throttling logins, an AAA server); at {best.in_flight:,} in "
            f"flight predicted {best.latency_scale:.1f}x the latency at {high.in_flight:,}"
        )
    return lines


def accepted_start_rate(sample: Sample) -> float:
    """Starts a second the devices took: of the load levels with the fewest refused logins
    (the highest such), the hosts whose login was not refused over its median latency (at
    least 1)."""
    levels = [level for level in sample.levels if level.p50 > 0 and level.hosts]
    if not levels:
        return 1.0
    level = min(levels, key=lambda level: (level.refused / level.hosts, -level.in_flight))
    let_in = level.in_flight * (1 - level.refused / level.hosts)
    return float(max(1, math.floor(let_in / level.p50)))


def _past_limits(p: Prediction, limits: Limits) -> bool:
    too_much_memory = limits.memory_available is not None and p.memory > limits.memory_available
    return p.open_files > limits.open_files_hard or too_much_memory


def _mib(size: int) -> str:
    return f"{size / 2**20:,.0f} MiB"
