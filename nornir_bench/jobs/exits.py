"""A job's task that exits fails its host: ``sys.exit(...)`` in a task is that host's
:class:`~nornir_bench.core.exceptions.TaskExited`, recorded and summed up like any failure, on
every runner. Called directly, ``nr.run`` raises a task's ``SystemExit`` once the run has
stopped, as nornir's runners do; a job of many hosts is not ended by one of them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from nornir_bench.core.exceptions import TaskExited
from nornir_bench.core.execution import is_async_task

if TYPE_CHECKING:
    from nornir.core.task import Task

__all__ = ["exit_fails_the_host"]


def exit_fails_the_host(task: Callable[..., Any]) -> Callable[..., Any]:
    """``task``, raising :class:`TaskExited` where it raised ``SystemExit`` (its marks, such as
    ``read_only``, kept: ``functools.wraps`` copies them)."""
    if is_async_task(task):

        @functools.wraps(task)
        async def exits_async(nornir_task: Task, **kwargs: Any) -> Any:
            try:
                return await task(nornir_task, **kwargs)
            except SystemExit as exc:
                raise TaskExited(exc.code) from None

        return exits_async

    @functools.wraps(task)
    def exits(nornir_task: Task, **kwargs: Any) -> Any:
        try:
            return task(nornir_task, **kwargs)
        except SystemExit as exc:
            raise TaskExited(exc.code) from None

    return exits
