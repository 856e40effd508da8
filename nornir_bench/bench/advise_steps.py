"""A job of steps advised step by step (``nornir-bench advise``).

Each step is sampled in order on the same hosts, the connections a step opens kept for the next
as a run keeps them, so a later step's sample already holds what reusing them saves. Each step
is simulated on its own hosts (:func:`~nornir_bench.bench.advise.predict`), and the job's wall
is their sum, the runner's start-up paid once: a job's steps run on one runner.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from nornir_bench.bench.advise import (
    Advice,
    Limits,
    Prediction,
    Sample,
    advise,
    predict,
    recommend,
    worker_grid,
)
from nornir_bench.bench.costs import RunnerCosts

__all__ = ["StepSample", "advise_steps", "predict_steps"]


@dataclass(frozen=True)
class StepSample:
    """One step: its place in the job, its task, the job's hosts it runs on, its sample."""

    number: int
    task_name: str
    hosts: int
    sample: Sample


def predict_steps(
    steps: Sequence[StepSample],
    *,
    runner: str,
    workers: int,
    limits: Limits,
    costs: RunnerCosts | None = None,
) -> Prediction:
    """The steps one after the other with ``runner`` and ``workers``: their walls summed, the
    runner's start-up once; the peak memory and open files of the largest step.

    Raises:
        ValueError: for no step with a host.
    """
    costs = costs or limits.costs(runner)
    each = [
        predict(step.sample, runner=runner, workers=workers, hosts=step.hosts, limits=limits,
                costs=costs)
        for step in steps
        if step.hosts
    ]
    if not each:
        raise ValueError("advise: no step runs on any host")
    if len(each) == 1:
        return each[0]
    again = costs.startup * (len(each) - 1)  # paid by the first step only
    wall = sum(p.wall for p in each) - again
    cpu = sum(p.cpu_percent * p.wall for p in each) / 100
    return Prediction(
        runner=runner,
        workers=workers,
        hosts=max(p.hosts for p in each),
        in_flight=max(p.in_flight for p in each),
        waves=sum(p.waves for p in each),
        wall=wall,
        wall_high=sum(p.wall_high for p in each) - again,
        wall_low=sum(p.wall_low for p in each) - again,
        cpu_percent=100 * cpu / wall if wall > 0 else 0.0,
        memory=max(p.memory for p in each),
        open_files=max(p.open_files for p in each),
        cpu_bound=math.fsum(p.wall for p in each if p.cpu_bound) >= wall / 2,
        latency_scale=max(p.latency_scale for p in each),
    )


def advise_steps(
    steps: Sequence[StepSample],
    *,
    runners: Sequence[str],
    limits: Limits,
    costs: Mapping[str, RunnerCosts] | None = None,
) -> Advice:
    """Every runner x worker count for the steps, and the recommendation (as
    :func:`~nornir_bench.bench.advise.advise` for one step)."""
    measured = costs or {}
    hosts = max(step.hosts for step in steps)
    if len(steps) == 1:
        (only,) = steps
        return advise(only.sample, hosts=only.hosts, runners=runners, limits=limits,
                      costs=measured)
    predictions = [
        predict_steps(steps, runner=runner, workers=count, limits=limits,
                      costs=measured.get(runner))
        for runner in runners
        for count in worker_grid(hosts)
    ]
    return recommend(hosts, predictions, limits, [step.sample for step in steps])
