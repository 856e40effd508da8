"""The result a runner fills in, shared by the runners: host order kept, unfinished hosts
dropped."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nornir.core.task import AggregatedResult

from nornir_bench.core.exceptions import RunInterrupted
from nornir_bench.core.execution import fail_host

if TYPE_CHECKING:
    from nornir.core.inventory import Host
    from nornir.core.task import Task

    from nornir_bench.core.policies.plan import HostPlan

__all__ = ["fill_not_run", "interrupted", "placeholders"]


def placeholders(task: Task, hosts: list[Host]) -> AggregatedResult:
    """An ``AggregatedResult`` keyed by the hosts in their order, every value ``None`` for now.

    Workers overwrite their host's value as it finishes, which keeps nornir's host order without
    a second pass over the results.
    """
    result = AggregatedResult(task.name)
    result.update(dict.fromkeys(host.name for host in hosts))  # type: ignore[arg-type]
    return result


def interrupted(result: AggregatedResult, *, abandoned: bool = False) -> RunInterrupted:
    """The exception that reports a run stopped by Ctrl-C, holding the hosts that finished.

    Its ``result`` is a new ``AggregatedResult`` of the finished hosts, in host order: with
    ``abandoned`` (a second Ctrl-C), hosts still in flight in threads that cannot be stopped
    would otherwise write into it later.
    """
    finished = AggregatedResult(result.name)
    for name, multi in result.items():
        if multi is not None:
            finished[name] = multi
    return RunInterrupted(finished, pending=len(result) - len(finished), abandoned=abandoned)


def fill_not_run(task: Task, plan: HostPlan, result: AggregatedResult) -> None:
    """Give each host the run's policies kept from starting its failed result (``RunAborted``,
    ``HostSkipped``, ``RunTimeout``), made by the core with its hooks: no host is missing."""
    for host, error in plan.not_run():
        result[host.name] = fail_host(task, host, error)
