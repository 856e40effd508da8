"""Advising a job: its task run on a random sample of its hosts, measured, and the run of all
of its hosts simulated per runner and worker count (:mod:`nornir_bench.bench.advise`;
``nornir-bench advise``).

The sample runs on the first runner advised for the task whose hosts run in this process
(``asyncio`` for an ``async def`` task, ``threadpool`` for a blocking one:
:mod:`~nornir_bench.bench.advise_runners`), with the job's run policies (its timeouts, start
rate and group limits protect its devices during the sample too), at two loads
(:func:`~nornir_bench.bench.sampling.measure_sample`). A job of steps is sampled step by step on
the same hosts, in order, its connections kept from one step to the next as a run keeps them,
and predicted step by step, the runner's start-up paid once. Each runner's own costs are
measured on this machine, or on the cluster of ``address`` for a runner that takes one
(:func:`~nornir_bench.bench.calibrate.measure_costs`). Only a task known to change nothing runs
(:func:`~nornir_bench.tasks.is_read_only`) unless ``allow_changes``.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import random
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from nornir_bench.bench.advise import (
    Advice,
    Limits,
    Prediction,
    Sample,
    limit_warnings,
)
from nornir_bench.bench.advise_runners import advised_runners
from nornir_bench.bench.advise_steps import StepSample, advise_steps, predict_steps
from nornir_bench.bench.calibrate import measure_costs, replay_cpu
from nornir_bench.bench.costs import RunnerCosts
from nornir_bench.bench.machine import machine_limits, on_this_machine
from nornir_bench.bench.sampling import measure_run, measure_sample, only_hosts
from nornir_bench.core._logging import no_last_resort_logging
from nornir_bench.core.exceptions import NornirBenchError
from nornir_bench.core.execution import is_async_task
from nornir_bench.core.policies.groups import in_flight_cap
from nornir_bench.core.policies.options import POLICY_OPTIONS, RunPolicy
from nornir_bench.core.runner_traits import prefers_async_tasks, takes_address
from nornir_bench.core.secrets import Redactor
from nornir_bench.jobs.run import close_run
from nornir_bench.processors.records import JsonLinesWriter
from nornir_bench.runners.registry import runner_class
from nornir_bench.tasks import is_read_only

if TYPE_CHECKING:
    from nornir.core import Nornir
    from nornir.core.processor import Processor

    from nornir_bench.jobs._steps import Step
    from nornir_bench.jobs.load import Job

__all__ = ["DEFAULT_SAMPLE", "AdviseError", "Check", "JobAdvice", "advise_job"]

DEFAULT_SAMPLE = 100
"""Hosts in the sample unless told: enough for the tail of the latencies and two loads."""

REPLAYS = 3
"""Times the sample's latencies are replayed to tell the runner's CPU from the task's."""

CHECK_HOSTS = 2_000
"""The check runs the recommendation on this many hosts (the job's all, if it has fewer)."""


class AdviseError(NornirBenchError):
    """A job that cannot be advised as asked (one line, exit status 2)."""


@dataclass(frozen=True)
class Check:
    """The recommended configuration run on a larger slice: predicted against measured.

    ``measured`` is the slice's run, its ``wall`` from the runner's start to its close."""

    prediction: Prediction
    measured: Sample


@dataclass(frozen=True)
class JobAdvice:
    """What ``advise`` found for a job.

    Attributes:
        hosts: the job's hosts (its filter applied).
        sampled: the hosts of the sample.
        sample: what their run measured (the first step's, for a job of steps).
        steps: each step's sample and hosts, in order (one for a job of one task).
        sample_runner: the runner the sample ran on.
        limits: this machine's and the job's.
        costs: each runner's own costs, as measured.
        calibration: seconds measuring the runners' costs took.
        advice: every prediction, the recommendation and its warnings.
        as_written: the prediction for the job's own runner and worker count, if the model
            covers that runner.
        as_written_warnings: what the job as written goes past.
        check: the recommended configuration on a larger slice, if asked.
        here: the sampled hosts whose devices are this machine (by their ``hostname``).
    """

    hosts: int
    sampled: tuple[str, ...]
    sample: Sample
    steps: tuple[StepSample, ...]
    sample_runner: str
    limits: Limits
    costs: Mapping[str, RunnerCosts]
    calibration: float
    advice: Advice
    as_written: Prediction | None = None
    as_written_warnings: tuple[str, ...] = ()
    check: Check | None = None
    here: tuple[str, ...] = ()


def advise_job(
    job: Job,
    *,
    sample: int = DEFAULT_SAMPLE,
    seed: int | None = None,
    budget: float | None = None,
    allow_changes: bool = False,
    address: str | None = None,
    check: bool = False,
    runners: Sequence[str] | None = None,
) -> JobAdvice:
    """Run ``job``'s steps on a sample of its hosts and predict the whole job per runner.

    Args:
        job: from :func:`~nornir_bench.jobs.load.load_job`.
        sample: the most hosts in the sample (>= 1).
        seed: makes the draw of the sample (and of the check's slice) reproducible.
        budget: the sample run's ``run_timeout``, seconds: hosts not finished by then fail.
        allow_changes: run a task not known to be read-only.
        address: a cluster the runners that take one (``dask``) would use: its workers,
            cores and the cost of a run on it are measured there.
        check: run the recommendation on :data:`CHECK_HOSTS` hosts.
        runners: predict these runners (default those declaring their traits that fit the
            task, :func:`~nornir_bench.bench.advise_runners.runners_for`); one that declares none is
            read as running its hosts in this process.

    Raises:
        AdviseError: for a task not known to be read-only, a bad ``sample``, a runner
            ``runners`` names that advise does not predict for the job.
        JobError: when the inventory cannot be loaded.
    """
    if sample < 1:
        raise AdviseError(f"the sample must be a whole number of hosts >= 1, got {sample!r}")
    for step in job.steps:
        if not allow_changes and not is_read_only(step.task, step.params):
            where = f" (step {step.number})" if job.stepped else ""
            raise AdviseError(
                f"{job.path}: task {step.task_name}{where} is not known to be read-only, and "
                "advise runs it on real hosts; pass --allow-changes to run it anyway"
            )
    options = _policy_options(job, budget)
    try:
        policy = RunPolicy.build("--budget" if budget is not None else "runner", options)
    except ValueError as exc:
        raise AdviseError(str(exc)) from None
    # A job with an async def step runs its blocking steps on an async runner too.
    async_task = any(is_async_task(step.task) for step in job.steps)
    try:
        chosen = advised_runners(async_task, runners)
    except ValueError as exc:
        raise AdviseError(str(exc)) from None
    sample_runner, runners = chosen.sample, chosen.predicted
    nr, secrets = job.nornir()
    no_last_resort_logging()  # after InitNornir's logging set-up, as run_job does
    names = list(nr.inventory.hosts)
    rng = random.Random(seed)
    sampled = tuple(rng.sample(names, min(sample, len(names))))
    with contextlib.closing(_Records(job, Redactor(secrets))) as records:
        steps = _sampled_steps(nr, job, sampled, sample_runner, options, records)
        limits = machine_limits(
            max_starts_per_second=policy.max_starts_per_second,
            max_start_burst=policy.max_start_burst,
            max_in_flight=in_flight_cap(list(nr.inventory.hosts.values()), policy.group_limits),
            batches=policy.batches,
        )
        started = time.perf_counter()
        costs = _costs(runners, async_task, address, records.writer(job.steps[0]))
        calibration = time.perf_counter() - started
        advice = advise_steps(steps, runners=runners, limits=limits, costs=costs)
        as_written = _as_written(job, steps, runners, limits, costs)
        checked = None
        if check:
            best = advice.best
            hosts = rng.sample(names, min(len(names), max(CHECK_HOSTS, len(sampled))))
            if address is not None and takes_address(chosen.classes[best.runner]):
                options = {**options, "address": address}
            checked = Check(
                predict_steps(
                    _for_hosts(nr, job, steps, hosts), runner=best.runner, workers=best.workers,
                    limits=limits, costs=costs.get(best.runner),
                ),
                _measured_slice(nr, job, hosts, best.runner, best.workers, options, records),
            )
    return JobAdvice(
        hosts=len(names),
        sampled=sampled,
        sample=steps[0].sample,
        steps=steps,
        sample_runner=sample_runner,
        limits=limits,
        costs=costs,
        calibration=calibration,
        advice=advice,
        as_written=as_written,
        as_written_warnings=tuple(limit_warnings(as_written, limits)) if as_written else (),
        check=checked,
        here=_here(nr, sampled),
    )


def _here(nr: Nornir, sampled: Sequence[str]) -> tuple[str, ...]:
    """The sampled hosts whose devices are this machine: they share its CPUs with the run."""
    addresses = {name: nr.inventory.hosts[name].hostname for name in sampled}
    local = set(on_this_machine(addresses.values()))
    return tuple(name for name, address in addresses.items() if address in local)


def _policy_options(job: Job, budget: float | None) -> dict[str, Any]:
    """The job's run policy options (not its runner's own), ``run_timeout`` from ``budget``."""
    given = job.settings["runner"].get("options") or {}
    options = {name: value for name, value in given.items() if name in POLICY_OPTIONS}
    if budget is not None:
        options["run_timeout"] = budget
    return options


def _costs(
    runners: Sequence[str], async_task: bool, address: str | None, records: Processor
) -> dict[str, RunnerCosts]:
    """Each runner's own costs, measured here (or on the cluster of ``address``), the job's
    records writer attached as a run attaches it."""
    costs = {}
    for runner in runners:
        wants = address is not None and takes_address(runner_class(runner))
        given = {"address": address} if wants else None
        try:
            costs[runner] = measure_costs(
                runner, async_task=async_task, options=given, processors=[records]
            )
        except ValueError as exc:
            raise AdviseError(str(exc)) from None
    return costs


def _runner(runner: str, workers: int, options: dict[str, Any]) -> Any:
    try:
        return runner_class(runner)(num_workers=workers, **options)
    except ValueError as exc:
        raise AdviseError(str(exc)) from None


def _sampled_steps(
    nr: Nornir, job: Job, hosts: Sequence[str], runner: str, options: dict[str, Any],
    records: _Records,
) -> tuple[StepSample, ...]:
    """Each step measured on ``hosts`` (those its filter keeps), in order, on one runner: the
    connections a step opens are there for the next; all closed after, whatever happens."""
    on_hosts = only_hosts(nr, hosts).with_runner(
        _runner(runner, len(hosts), options)
    )
    steps = []
    try:
        for step in job.steps:
            step_nr = step.filter.apply(on_hosts)
            ran = len(step_nr.inventory.hosts)
            if not ran:
                raise AdviseError(f"{job.path}: no sampled host is left for step {step.number}")
            ran_step = measure_sample(step_nr, step.task, _params(step), [records.writer(step)])
            measured = _task_cpu(ran_step.sample, runner, records.writer(step))
            hosts_of_job = len(step.filter.apply(nr).inventory.hosts)
            steps.append(StepSample(step.number, step.task_name, hosts_of_job, measured))
        return tuple(steps)
    finally:
        close_run(on_hosts)


def _params(step: Step) -> dict[str, Any]:
    """What ``nr.run`` takes for ``step``: its task's parameters, and ``on_failed``."""
    return {**step.params, "on_failed": step.on_failed}


def _task_cpu(sample: Sample, runner: str, records: Processor) -> Sample:
    """``sample`` with the CPU its runner (and records writer) took, its hosts ending as they
    did, told apart from its task's (:func:`~nornir_bench.bench.calibrate.replay_cpu`,
    :data:`REPLAYS` times: their spread is how far a measurement of CPU per host goes
    astray)."""
    if sample.hosts < 2:
        return sample
    measured = tuple(
        min(sample.cpu_per_host, replay_cpu(
            runner, async_task=prefers_async_tasks(runner_class(runner)),
            latencies=sample.latencies,
            processors=[records],
        ))
        for _ in range(REPLAYS)
    )
    return replace(sample, cpu_runner=statistics.median(measured), cpu_runner_measured=measured)


class _Records:
    """The job's records writer, as ``run`` attaches it to each step, writing to the null
    device: what it costs a host (encoding, masking) is in the figures, nothing is kept."""

    def __init__(self, job: Job, redact: Redactor) -> None:
        self.job, self.redact = job, redact
        self.null = open(os.devnull, "w", encoding="utf-8")  # closed by close()

    def writer(self, step: Step) -> JsonLinesWriter:
        fields = {"job": str(self.job.path.resolve()), "step": step.number,
                  "task": step.task_name}
        return JsonLinesWriter(self.null, redact=self.redact, fields=fields)

    def close(self) -> None:
        self.null.close()


def _for_hosts(
    nr: Nornir, job: Job, steps: Sequence[StepSample], hosts: Sequence[str]
) -> tuple[StepSample, ...]:
    """``steps`` with each one's hosts counted among ``hosts``."""
    on_hosts = only_hosts(nr, hosts)
    return tuple(
        StepSample(s.number, s.task_name, len(step.filter.apply(on_hosts).inventory.hosts),
                   s.sample)
        for s, step in zip(steps, job.steps, strict=True)
    )


def _measured_slice(
    nr: Nornir, job: Job, hosts: Sequence[str], runner: str, workers: int,
    options: dict[str, Any], records: _Records,
) -> Sample:
    """The job's steps run on ``hosts`` with ``runner`` and ``workers``, as ``run`` would:
    the wall from the runner's start to its close."""
    on_hosts = only_hosts(nr, hosts).with_runner(
        _runner(runner, workers, options)
    )
    started = time.perf_counter()
    runs = []
    try:
        for step in job.steps:
            step_nr = step.filter.apply(on_hosts)
            ran = measure_run(step_nr, step.task, _params(step), [records.writer(step)])
            runs.append(ran.sample)
    finally:
        close_run(on_hosts)
    wall = time.perf_counter() - started
    return Sample(
        latencies=tuple(latency for run in runs for latency in run.latencies),
        failed=sum(run.failed for run in runs), wall=wall,
    )


def _as_written(
    job: Job, steps: Sequence[StepSample], runners: Sequence[str], limits: Limits,
    costs: Mapping[str, RunnerCosts],
) -> Prediction | None:
    """The prediction for the job's own runner and ``num_workers``, if the model covers it."""
    runner = job.runner_plugin
    if runner not in runners:
        return None
    workers = (job.settings["runner"].get("options") or {}).get("num_workers")
    if workers is None:  # the runner's default
        default = inspect.signature(runner_class(runner)).parameters["num_workers"].default
        workers = default if isinstance(default, int) else None
    if not isinstance(workers, int):
        return None
    return predict_steps(steps, runner=runner, workers=workers, limits=limits,
                         costs=costs.get(runner))
