"""Advising a job: its task run on a random sample of its hosts, measured, and the model of
:mod:`nornir_bench.bench.advise` applied to all of its hosts (``nornir-bench advise``).

The sample runs with every host in flight at once, on the ``asyncio`` runner for an ``async
def`` task and on ``threadpool`` for a blocking one, with the job's run policies (its timeouts,
start rate and group limits protect its devices during the sample too). Only a task known to
change nothing runs (:func:`~nornir_bench.tasks.is_read_only`) unless ``allow_changes``.
"""

from __future__ import annotations

import importlib.util
import inspect
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nornir_bench.bench.advise import (
    Advice,
    Limits,
    Prediction,
    Sample,
    advise,
    limit_warnings,
    machine_limits,
    predict,
    runners_for,
)
from nornir_bench.bench.sampling import measure_run, measure_sample
from nornir_bench.core._logging import no_last_resort_logging
from nornir_bench.core.exceptions import NornirBenchError
from nornir_bench.core.execution import is_async_task
from nornir_bench.core.policies.options import POLICY_OPTIONS, RunPolicy
from nornir_bench.core.policies.plan import in_flight_cap
from nornir_bench.jobs.run import close_run
from nornir_bench.runners.registry import available_runners, runner_class
from nornir_bench.tasks import is_read_only

if TYPE_CHECKING:
    from nornir.core import Nornir

    from nornir_bench.jobs.load import Job

__all__ = ["DEFAULT_SAMPLE", "AdviseError", "Check", "JobAdvice", "advise_job"]

DEFAULT_SAMPLE = 24
"""Hosts in the sample unless told: enough for a median and a 95th percentile of latency, few
enough to be gentle with the devices."""

CHECK_FACTOR = 10
"""The check's slice of hosts: this many times the sample (never more than the job has)."""


class AdviseError(NornirBenchError):
    """A job that cannot be advised as asked (one line, exit status 2)."""


@dataclass(frozen=True)
class Check:
    """The recommended configuration run on a larger slice: predicted against measured."""

    prediction: Prediction
    measured: Sample


@dataclass(frozen=True)
class JobAdvice:
    """What ``advise`` found for a job.

    Attributes:
        hosts: the job's hosts (its filter applied).
        sampled: the hosts of the sample.
        sample: what their run measured.
        sample_runner: the runner the sample ran on.
        limits: this machine's and the job's.
        advice: every prediction, the recommendation and its warnings.
        as_written: the prediction for the job's own runner and worker count, if the model
            covers that runner.
        as_written_warnings: what the job as written goes past.
        check: the recommended configuration on a larger slice, if asked.
    """

    hosts: int
    sampled: tuple[str, ...]
    sample: Sample
    sample_runner: str
    limits: Limits
    advice: Advice
    as_written: Prediction | None = None
    as_written_warnings: tuple[str, ...] = ()
    check: Check | None = None


def advise_job(
    job: Job,
    *,
    sample: int = DEFAULT_SAMPLE,
    seed: int | None = None,
    budget: float | None = None,
    allow_changes: bool = False,
    address: str | None = None,
    check: bool = False,
) -> JobAdvice:
    """Run ``job``'s task on a sample of its hosts and predict the whole job per runner.

    Args:
        job: from :func:`~nornir_bench.jobs.load.load_job`, a job of one task.
        sample: the most hosts in the sample (>= 1).
        seed: makes the draw of the sample (and of the check's slice) reproducible.
        budget: the sample run's ``run_timeout``, seconds: hosts not finished by then fail.
        allow_changes: run a task not known to be read-only.
        address: a Dask scheduler the ``dask`` runner would use (no cluster start-up).
        check: run the recommendation on ``CHECK_FACTOR`` times the sample's hosts.

    Raises:
        AdviseError: for a job of steps, a task not known to be read-only, a bad ``sample``.
        JobError: when the inventory cannot be loaded.
    """
    if sample < 1:
        raise AdviseError(f"the sample must be a whole number of hosts >= 1, got {sample!r}")
    if job.stepped:
        raise AdviseError(
            f"{job.path}: advise takes a job of one task; this one has {len(job.steps)} steps"
        )
    if not allow_changes and not is_read_only(job.task, job.params):
        raise AdviseError(
            f"{job.path}: task {job.task_name} is not known to be read-only, and advise runs "
            "it on real hosts; pass --allow-changes to run it anyway"
        )
    options = _policy_options(job, budget)
    try:
        policy = RunPolicy.build("--budget" if budget is not None else "runner", options)
    except ValueError as exc:
        raise AdviseError(str(exc)) from None
    async_task = is_async_task(job.task)
    sample_runner = "asyncio" if async_task else "threadpool"
    runners = runners_for(async_task, _usable_runners())
    if not runners:
        raise AdviseError(f"no runner installed for this task (advise predicts {sample_runner})")
    nr, _secrets = job.nornir()
    no_last_resort_logging()  # after InitNornir's logging set-up, as run_job does
    names = list(nr.inventory.hosts)
    rng = random.Random(seed)
    sampled = tuple(rng.sample(names, min(sample, len(names))))
    measured = _measured(nr, job, sampled, sample_runner, len(sampled), options, sample=True)
    limits = machine_limits(
        max_starts_per_second=policy.max_starts_per_second,
        max_in_flight=in_flight_cap(list(nr.inventory.hosts.values()), policy.group_limits),
        attached=address is not None,
    )
    advice = advise(measured, hosts=len(names), runners=runners, limits=limits)
    as_written = _as_written(job, measured, runners, len(names), limits)
    checked = None
    if check:
        best = advice.best
        hosts = rng.sample(names, min(len(names), CHECK_FACTOR * len(sampled)))
        if best.runner == "dask" and address is not None:
            options = {**options, "address": address}
        checked = Check(
            predict(measured, runner=best.runner, workers=best.workers, hosts=len(hosts),
                    limits=limits),
            _measured(nr, job, hosts, best.runner, best.workers, options),
        )
    return JobAdvice(
        hosts=len(names),
        sampled=sampled,
        sample=measured,
        sample_runner=sample_runner,
        limits=limits,
        advice=advice,
        as_written=as_written,
        as_written_warnings=tuple(limit_warnings(as_written, limits)) if as_written else (),
        check=checked,
    )


def _usable_runners() -> list[str]:
    """The installed runners, ``dask`` only when Dask distributed is installed too (the
    extra ``dask``): its entry point is there either way."""
    runners = available_runners()
    if "dask" in runners and importlib.util.find_spec("distributed") is None:
        runners.remove("dask")
    return runners


def _policy_options(job: Job, budget: float | None) -> dict[str, Any]:
    """The job's run policy options (not its runner's own), ``run_timeout`` from ``budget``."""
    given = job.settings["runner"].get("options") or {}
    options = {name: value for name, value in given.items() if name in POLICY_OPTIONS}
    if budget is not None:
        options["run_timeout"] = budget
    return options


def _measured(
    nr: Nornir,
    job: Job,
    hosts: Sequence[str],
    runner: str,
    workers: int,
    options: dict[str, Any],
    *,
    sample: bool = False,
) -> Sample:
    """Run the job's task on ``hosts`` with ``runner`` and ``workers``, measured; its
    connections and the runner closed after, whatever happens."""
    chosen = set(hosts)
    try:
        plugin = runner_class(runner)(num_workers=workers, **options)
    except ValueError as exc:
        raise AdviseError(str(exc)) from None
    on_hosts = nr.filter(filter_func=lambda host: host.name in chosen).with_runner(plugin)
    try:
        measure = measure_sample if sample else measure_run
        return measure(on_hosts, job.task, job.params).sample
    finally:
        close_run(on_hosts)


def _as_written(
    job: Job, sample: Sample, runners: Sequence[str], hosts: int, limits: Limits
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
    return predict(sample, runner=runner, workers=workers, hosts=hosts, limits=limits)
