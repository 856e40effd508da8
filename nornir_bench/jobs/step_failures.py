"""The hosts a step of a job fails itself, around what its runner does: before any device is
touched (the task's ``prepare`` refused their input, and past the runner's failure limit every
host), and after Ctrl-C stopped them in flight (failed with what their task may have done).
Each is failed in the step's result and written to its records.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from nornir_bench.core.exceptions import HostAbandoned, RunAborted
from nornir_bench.core.task_traits import traits_of
from nornir_bench.core.wording import hosts_text
from nornir_bench.jobs.outcome import failed_result

if TYPE_CHECKING:
    from nornir.core import Nornir
    from nornir.core.task import AggregatedResult, MultiResult

    from nornir_bench.jobs.load import Step
    from nornir_bench.processors.records import JsonLinesWriter

__all__ = ["fail_abandoned", "failed_before_any_device"]


def failed_before_any_device(
    step: Step,
    nr: Nornir,
    hosts: list[str],
    params: Mapping[str, Any],
    records: JsonLinesWriter,
) -> dict[str, MultiResult]:
    """The hosts of ``hosts`` failed before the step touches any device, each with its
    record: those whose input the task's ``prepare`` refuses (a change's template error).
    When they are more than the runner's ``max_failures`` or ``max_fail_percentage`` allow,
    every host is: the others as not run (``RunAborted``), as the limit would have."""
    prepare = traits_of(step.task).prepare
    if prepare is None or not hosts:
        return {}
    early: dict[str, MultiResult] = {}
    for name in hosts:
        try:
            prepare(nr.inventory.hosts[name], params)
        except ValueError as exc:  # the task's own words, naming the template
            early[name] = failed_result(step, nr, name, exc)
    policy = getattr(nr.runner, "policy", None)
    limit = None if not early else _limit_crossed(policy, len(early), len(hosts))
    if limit is not None:
        for name in hosts:
            if name not in early:
                early[name] = failed_result(step, nr, name, RunAborted(*limit))
    for name, multi in early.items():
        records.write(name, multi)
    return early


def _limit_crossed(policy: Any, failed: int, hosts: int) -> tuple[str, str] | None:
    """The run's failure limit (its name, and why) that ``failed`` of ``hosts`` cross."""
    most = getattr(policy, "max_failures", None)
    percentage = getattr(policy, "max_fail_percentage", None)
    why = f"the lines of {hosts_text(failed)} could not be made, before any device was touched"
    if most is not None and failed > most:
        return "max_failures", f"{why}: more than {most}"
    if percentage is not None and failed > percentage / 100 * hosts:
        return "max_fail_percentage", f"{why}: more than {percentage:g} %"
    return None


def fail_abandoned(
    step: Step,
    nr: Nornir,
    params: Mapping[str, Any],
    since: float,
    hosts: tuple[str, ...],
    records: JsonLinesWriter,
    result: AggregatedResult,
) -> None:
    """Each host of ``hosts``, stopped in flight by Ctrl-C (cancelled on an event loop, or
    abandoned by a second press), failed in ``result`` and the records with what it may have
    done: a change task says it from its backups (``abandoned_failure``); others are not
    known. A host of them ending later (its thread went on) is not written again."""
    records.seal()
    said = traits_of(step.task).abandoned_failure
    for name in hosts:
        exc = said(name, params, since) if said is not None else HostAbandoned(
            "stopped in flight by Ctrl-C: what its task did is not known"
        )
        result[name] = multi = failed_result(step, nr, name, exc)
        records.write(name, multi)
