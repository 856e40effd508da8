"""``task.run`` for ``async def`` tasks (:func:`arun_subtask`), the run's thread pool its
blocking subtasks run in (:func:`offloading`), as an event-loop run's session sets it, and the
async twin of a blocking task that runs it there (:func:`async_twin`).
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from nornir.core.exceptions import NornirSubTaskError

from nornir_bench.core.execution import Offload, arun_host, child_task, is_async_task, to_thread

if TYPE_CHECKING:
    from nornir.core.task import MultiResult, Task

__all__ = ["arun_subtask", "async_twin", "offloading", "run_blocking", "stop_offloading"]

_P = ParamSpec("_P")
_R = TypeVar("_R")


# The offload of the run in progress, so that arun_subtask sends blocking subtasks to the same
# bounded pool as the run's blocking tasks. Worker coroutines inherit it from the run.
_current_offload: contextvars.ContextVar[Offload | None] = contextvars.ContextVar(
    "nornir_bench_offload", default=None
)


def offloading(offload: Offload | None) -> contextvars.Token[Offload | None]:
    """Make ``offload`` the pool for blocking subtasks of coroutines started after this call.

    Returns the token that :func:`stop_offloading` takes to restore the previous one.
    """
    return _current_offload.set(offload)


def stop_offloading(token: contextvars.Token[Offload | None]) -> None:
    """Undo :func:`offloading`, so no closed pool stays visible to the caller's context."""
    _current_offload.reset(token)


async def run_blocking(call: Callable[[], Any]) -> Any:
    """Await the blocking ``call`` from an ``async def`` task: run in the run's thread pool
    (asyncio's default one outside a run), so the loop goes on meanwhile; its return value."""
    offload = _current_offload.get() or to_thread
    return await offload(call)


async def arun_subtask(task: Task, subtask: Callable[..., Any], **kwargs: Any) -> MultiResult:
    """``task.run`` for ``async def`` tasks: run ``subtask`` on ``task``'s host and await it.

    The subtask may be ``async def`` or blocking (then it runs in the run's thread pool). As
    with ``task.run``: it fires the subtask processor hooks, its result is added to ``task``'s
    results, and if it fails ``NornirSubTaskError`` is raised (which fails the parent task).

    Example::

        async def backup(task):
            await arun_subtask(task, asend_command, command="show version")
            await arun_subtask(task, write_file, path=f"{task.host}.txt")
    """
    host = getattr(task, "host", None)
    if host is None:
        raise RuntimeError("arun_subtask must be called from within a running task")
    kwargs.setdefault("severity_level", task.severity_level)
    sub = child_task(task, subtask, **kwargs)
    offload = None if is_async_task(subtask) else (_current_offload.get() or to_thread)
    multi = await arun_host(sub, host, offload=offload)
    task.results.append(multi[0] if len(multi) == 1 else multi)  # type: ignore[arg-type]
    if multi.failed:
        raise NornirSubTaskError(task=sub, result=multi)
    return multi


def async_twin(
    blocking: Callable[_P, _R], *, name: str, doc: str,
) -> Callable[_P, Coroutine[Any, Any, _R]]:
    """The ``async def`` twin of the blocking task ``blocking``, named ``name``: the same call
    run whole in the run's thread pool (:func:`run_blocking`; the loop goes on meanwhile),
    with ``blocking``'s parameters, traits (``core.task_traits``) and module."""
    async def twin(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        result: _R = await run_blocking(functools.partial(blocking, *args, **kwargs))
        return result

    functools.update_wrapper(twin, blocking)
    twin.__name__ = twin.__qualname__ = name
    twin.__doc__ = doc
    return twin
