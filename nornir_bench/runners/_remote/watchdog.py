"""Workers that cannot answer: pure functions of the clock, and the bounds they use.

A worker stops its own hosts at their deadlines (see ``core.policies.hosts``). One whose loop
is frozen (a C call holding the GIL, a stopped process) cannot: not even its own timeout
fires. The parent looks at every worker with hosts out once a :data:`WATCH_SECONDS`: a host
past its longest time (every attempt and retry wait included) or the run's deadline, plus a
grace, means its worker cannot answer; so does a worker silent past :data:`LIVENESS_SECONDS`
(workers with hosts in flight say they are alive every :data:`HEARTBEAT_SECONDS`), deadline
or not. The parent then stops waiting for it (the process pool kills the worker), and those
hosts fail, naming it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from nornir_bench.core.exceptions import RunTimeout, TaskTimeout

if TYPE_CHECKING:
    from nornir.core.inventory import Host

    from nornir_bench.core.policies.options import RunPolicy

__all__ = [
    "FROZEN_GRACE_SECONDS",
    "HEARTBEAT_SECONDS",
    "LIVENESS_SECONDS",
    "WATCH_SECONDS",
    "overdue",
    "overdue_error",
    "overdue_errors",
    "watched",
]

FROZEN_GRACE_SECONDS = 5.0
"""How long a worker may stay silent past a host's deadline before it is taken for frozen."""

WATCH_SECONDS = 1.0
"""How often the parent looks at the workers with hosts out."""

HEARTBEAT_SECONDS = 1.0
"""How often a worker with hosts in flight says it is alive, when nothing else is said."""

LIVENESS_SECONDS = 60.0
"""How long a worker with hosts out may say nothing at all (not even its heartbeat) before the
parent gives it up: its loop is frozen (an ``async def`` task computing without awaiting, a C
call holding the GIL, a stopped process), and no result of its will come."""


def watched(policy: RunPolicy, deadline: float | None) -> bool:
    """Whether any host of the run has a deadline to watch."""
    return policy.longest_host_time is not None or deadline is not None


def overdue(
    in_flight: Mapping[int, float], policy: RunPolicy, deadline: float | None, now: float
) -> list[int]:
    """The hosts of ``in_flight`` (index -> when sent) past their deadline by the grace."""
    longest = policy.longest_host_time
    if longest is None and deadline is None:
        return []
    run_ends = deadline if deadline is not None else math.inf
    return [
        index
        for index, sent in in_flight.items()
        if min(sent + longest if longest is not None else math.inf, run_ends)
        + FROZEN_GRACE_SECONDS
        < now
    ]


def overdue_error(
    policy: RunPolicy, deadline: float | None, sent: float, task: str, host: str
) -> Exception:
    """Why a host sent at ``sent`` fails when its frozen worker is killed: the run's deadline,
    if it came first, else the task's timeout."""
    longest = policy.longest_host_time
    if deadline is not None and (longest is None or deadline <= sent + longest):
        return RunTimeout(policy.run_timeout or 0.0, started=True)
    return TaskTimeout(task, host, policy.task_timeout or 0.0)


def overdue_errors(
    in_flight: Mapping[int, float],
    policy: RunPolicy,
    deadline: float | None,
    now: float,
    task: str,
    hosts: Sequence[Host],
) -> dict[int, Exception]:
    """The hosts of ``in_flight`` past their deadline by the grace, each with its error."""
    return {
        index: overdue_error(policy, deadline, in_flight[index], task, hosts[index].name)
        for index in overdue(in_flight, policy, deadline, now)
    }
