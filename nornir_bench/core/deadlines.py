"""The time a host's attempt has left: for tasks that bound their own timeouts by it.

A runner gives up a host's attempt at its deadline (the earlier of ``task_timeout`` and
``run_timeout``). An ``async def`` task is cancelled there; a blocking call cannot be: the
attempt is given up and the call goes on in its thread until it returns by itself. A task
that bounds its own timeouts by :func:`time_left` returns by itself at the deadline, and leaves
no thread behind::

    def backup(task):
        conn = socket.create_connection(address, timeout=bounded(task, 30))

The package's own blocking tasks (``tcp_ping``, ``send_command``) do so.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nornir.core.task import Task

__all__ = ["bounded", "set_deadline", "time_left"]

# On the host's Task (nornir's Task has no __slots__): a subtask finds its parent's.
_ATTRIBUTE = "nornir_bench_deadline"

# A timeout bounded by the time left is never below this: a call's own timeout of 0 would mean
# "no timeout" to some libraries, and one started just past the deadline must still fail fast.
_AT_LEAST = 0.05


def set_deadline(task: Task, deadline: float | None) -> None:
    """The deadline of ``task``'s current attempt, on the ``time.monotonic`` clock (the core
    sets it as each attempt starts; ``None``: none)."""
    setattr(task, _ATTRIBUTE, deadline)


def time_left(task: Task) -> float | None:
    """Seconds before this host's attempt is given up, never below 0; ``None`` without a
    deadline. A subtask has its host task's."""
    current: Task | None = task
    while current is not None:
        deadline: float | None = getattr(current, _ATTRIBUTE, None)
        if deadline is not None:
            return max(0.0, deadline - time.monotonic())
        current = getattr(current, "parent_task", None)  # any object with a host will do
    return None


def bounded(task: Task, timeout: float) -> float:
    """``timeout``, or the time the host's attempt has left if that is shorter."""
    left = time_left(task)
    return timeout if left is None else max(_AT_LEAST, min(timeout, left))
