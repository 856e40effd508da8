"""What a job run did, step by step: the records of a run as objects (:class:`JobRun`,
:class:`StepRun`), and the results the job itself makes (a host it failed, a step it did not
get to, each host's steps combined). Below both the running (:mod:`~nornir_bench.jobs.run`)
and the text (:mod:`~nornir_bench.jobs.show`): neither imports the other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from nornir_bench.bench.summary import RunSummary, summarize

if TYPE_CHECKING:
    from nornir.core import Nornir
    from nornir.core.task import AggregatedResult, MultiResult

    from nornir_bench.core.secrets import Redactor
    from nornir_bench.jobs.load import Step

__all__ = ["JobRun", "StepRun", "combined", "failed_result", "not_run", "unfinished"]


@dataclass(frozen=True)
class StepRun:
    """What one step of a job run did.

    Attributes:
        step: the step.
        result: the hosts that ran it and finished.
        summary: counts, per-host times, failures by type, of those hosts.
        hosts: how many hosts it was to run on.
        left_out: the hosts of its filter it did not run on: they had failed an earlier step.
        elapsed: seconds each host of ``result`` took.
        interrupted: Ctrl-C stopped it; ``result`` has the hosts that had finished.
        abandoned: the hosts Ctrl-C stopped in flight (cancelled on an event loop, or left by
            a second press): in ``result`` as failed with what their task may have done
            (:class:`~nornir_bench.core.exceptions.HostAbandoned`, or the task's own
            ``abandoned_failure``: a change's backup), not finished.
        not_run: why it did not run at all (an earlier step was interrupted, or
            ``core.raise_on_error`` ended the job), if it did not.
    """

    step: Step
    result: AggregatedResult
    summary: RunSummary
    hosts: int
    left_out: tuple[str, ...] = ()
    elapsed: Mapping[str, float] = field(default_factory=dict)
    interrupted: bool = False
    abandoned: tuple[str, ...] = ()
    not_run: str | None = None

    @property
    def unfinished(self) -> int:
        """How many of its hosts did not finish it."""
        return self.hosts - len(self.result) + len(self.abandoned)


@dataclass(frozen=True)
class JobRun:
    """What a job run did.

    Attributes:
        result: the hosts that finished (all of them unless ``interrupted``); in a job of
            several steps, each host's results of every step it ran, in order, so that a host
            is failed if it failed any step.
        summary: counts, per-host times, failures by type, over the whole job.
        output: the JSON Lines file holding one record per finished host and step.
        hosts: how many hosts the run was to cover.
        interrupted: stopped by Ctrl-C; ``result`` has the hosts that had finished.
        redact: masks the run's secrets in any text shown from it.
        abandoned: a second Ctrl-C left hosts in flight unfinished; their threads may still
            be running (a blocking call cannot be stopped), so the caller should exit without
            waiting for them.
        steps: what each step did, in order (one for a job of one task).
        stepped: the job gave ``steps`` (rather than one ``task``).
    """

    result: AggregatedResult
    summary: RunSummary
    output: Path
    hosts: int
    interrupted: bool
    redact: Redactor
    abandoned: bool = False
    steps: tuple[StepRun, ...] = ()
    stepped: bool = False


def failed_result(step: Step, nr: Nornir, name: str, exc: BaseException) -> MultiResult:
    """Host ``name``'s results of ``step``, failed by the job with ``exc``."""
    from nornir.core.task import MultiResult, Result

    multi = MultiResult(step.task_name)
    multi.append(Result(host=nr.inventory.hosts[name], name=step.task_name, failed=True,
                        exception=exc))
    return multi


def not_run(step: Step, why: str) -> StepRun:
    """A step the job did not get to."""
    from nornir.core.task import AggregatedResult

    empty = AggregatedResult(step.task_name)
    return StepRun(step, empty, summarize(empty), 0, not_run=why)


def combined(
    name: str, hosts: list[str], steps: list[StepRun]
) -> tuple[AggregatedResult, dict[str, float]]:
    """Each host's results of every step it ran, in order, and its seconds over all of them:
    a host is failed if any step failed on it, and its failure is the first."""
    from nornir.core.task import AggregatedResult, MultiResult

    result = AggregatedResult(name)
    elapsed: dict[str, float] = {}
    for host in hosts:
        ran = [s for s in steps if host in s.result]
        if not ran:
            continue
        multi = MultiResult(host)
        for s in ran:
            multi.extend(s.result[host])
            if host in s.elapsed:
                elapsed[host] = elapsed.get(host, 0.0) + s.elapsed[host]
        result[host] = multi
    return result, elapsed


def unfinished(nr: Nornir, result: AggregatedResult, steps: list[StepRun]) -> list[str]:
    """The hosts of ``result`` not failed that did not finish every step they were to run:
    one interrupted in flight, or whose later steps never ran."""
    later = [s for s in steps if s.not_run is not None]
    cut = [s for s in steps if s.not_run is None and s.interrupted]
    missed: set[str] = set()
    for step_run in later:
        missed.update(step_run.step.filter.apply(nr).inventory.hosts)
    for step_run in cut:
        ran = step_run.result
        missed.update(h for h in step_run.step.filter.apply(nr).inventory.hosts if h not in ran)
    return [h for h, multi in result.items() if not multi.failed and h in missed]
