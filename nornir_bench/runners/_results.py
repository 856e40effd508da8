"""The result a runner fills in, shared by the runners: host order kept, unfinished hosts dropped."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nornir.core.task import AggregatedResult

from nornir_bench.core.exceptions import RunInterrupted

if TYPE_CHECKING:
    from nornir.core.inventory import Host
    from nornir.core.task import Task

__all__ = ["interrupted", "placeholders"]


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
