"""The processor hooks of a host that ran in a worker, fired again in the parent.

A worker records its hosts' subtask hooks as events (``worker._Events``); the parent fires
``task_instance_started`` as a host leaves for its worker and, when its result comes back,
replays the subtask hooks and fires ``task_instance_completed``, in the order the worker fired
them, so that the user's processors see what they would see in process.
"""

from __future__ import annotations

from typing import Any

from nornir.core.inventory import Host
from nornir.core.task import MultiResult, Task

from nornir_bench.core.execution import child_task

__all__ = ["relink", "replay_hooks"]


def _remote(task: Task) -> None:
    """Stands for a subtask that ran in a worker, in the hooks replayed in the parent."""


def relink(multi: MultiResult, host: Host | None) -> None:
    """Point every result at the parent's ``Host``; ``None`` in a worker, before they are sent
    (the parent has the host: a copy of it in every result would be pickled for nothing)."""
    for item in multi:
        if isinstance(item, MultiResult):
            relink(item, host)
        else:
            item.host = host


def replay_hooks(top: Task, multi: MultiResult, events: list[tuple[Any, ...]]) -> None:
    """Fire, in the parent, the hooks the host's run fired in its worker, in the same order.

    ``top`` is the host's task, whose ``task_instance_started`` fired when the host was sent.
    """
    task = top
    host = top.host
    stack = [top]
    for event in events:
        if event[0] == "started":
            sub = child_task(stack[-1], _remote, name=event[1])
            task.processors.subtask_instance_started(sub, host)
            stack.append(sub)
        else:
            sub = stack.pop() if len(stack) > 1 else top
            sub_results: MultiResult = event[2]
            relink(sub_results, host)
            sub.results = sub_results
            task.processors.subtask_instance_completed(sub, host, sub_results)
    top.results = multi
    task.processors.task_instance_completed(top, host, multi)
