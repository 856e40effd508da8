"""The shared host-execution core: run one nornir task on one host.

Every runner in nornir-bench runs its hosts through :func:`run_host` (or, under run policies, the
same steps in :mod:`~nornir_bench.core.policies.hosts`; :mod:`~nornir_bench.core.one_host`
decides which); none re-implements task execution. It does exactly what nornir's
``Task.start`` does, in the same order:

1. fire ``task_instance_started`` (``subtask_instance_started`` for a subtask);
2. call the task function; wrap a plain return value in a ``Result``;
3. turn any ``Exception`` into a failed ``Result`` carrying the traceback text (for a failed
   subtask, the ``NornirSubTaskError`` message, as nornir does), logged on nornir's own logger;
4. name the result after the task and set its severity (``ERROR`` when it failed);
5. put it first in the task's ``MultiResult`` and fire ``task_instance_completed``.

Subtasks started with ``task.run`` go through nornir's own ``Task.start`` and so behave exactly
as in nornir.

:func:`arun_host` is the same step for event-loop runners: the hooks and the result handling
are shared, only the call differs. An ``async def`` task is awaited; a blocking task is handed
to ``offload`` (a thread pool) so the loop keeps serving other hosts. An optional per-host
timeout stops the task and fails the host with :class:`~nornir_bench.core.exceptions.TaskTimeout`.
``task.run`` for async tasks is :func:`~nornir_bench.core.subtasks.arun_subtask`.
"""

from __future__ import annotations

import functools
import inspect
import logging
import time
import traceback
from collections.abc import Awaitable, Callable, Sequence
from types import CoroutineType
from typing import TYPE_CHECKING, Any

from nornir.core.exceptions import NornirSubTaskError
from nornir.core.task import DEFAULT_SEVERITY_LEVEL, Result, Task

from nornir_bench.core.attempts import FailedAttempt, record_attempts
from nornir_bench.core.changes import note_left_changed
from nornir_bench.core.host_task import host_task
from nornir_bench.core.liveness import drop_dead_connections

if TYPE_CHECKING:
    from nornir.core import Nornir
    from nornir.core.inventory import Host
    from nornir.core.processor import Processors
    from nornir.core.task import MultiResult

__all__ = [
    "ARescue",
    "Deadline",
    "Offload",
    "Rescue",
    "acall_task",
    "arun_host",
    "call_task",
    "child_task",
    "complete_host",
    "fail_host",
    "failure_result",
    "is_async_task",
    "log_failure",
    "run_host",
    "run_task",
    "start_host",
    "to_thread",
    "wrap_result",
]

Offload = Callable[[Callable[[], Any]], Awaitable[Any]]
"""Runs a blocking call off the event loop (in a thread pool) and awaits its return value."""

# nornir's Task.start logs failures on this logger; keep using it so that the logging users
# configured for nornir (``logging: {loggers: [nornir]}``) still sees every failed host.
_logger = logging.getLogger("nornir.core.task")


Rescue = Callable[["Task", "Host", Exception, float], "MultiResult | None"]
"""What a runner does with a task's error before it becomes the host's failed result (in the
``except`` block), given when the call began (``time.monotonic``): the host's ``MultiResult``
if it took the host over, else ``None``."""

ARescue = Callable[["Task", "Host", Exception, float], "Awaitable[MultiResult] | None"]
"""The awaitable twin of :data:`Rescue`."""


def run_host(task: Task, host: Host, *, rescue: Rescue | None = None) -> MultiResult:
    """Run a copy of ``task`` on ``host`` exactly as nornir's ``Task.start`` would.

    Args:
        task: the task template built by ``Nornir.run``; it is not modified.
        host: the host to run it on.
        rescue: offered the task's error first (a refused login goes on through the host's
            attempts: ``core.one_host``).

    Returns:
        The host's ``MultiResult``: the task's own ``Result`` first, then its subtasks'.
        User errors never propagate; only ``BaseException`` that is not an ``Exception``
        (``KeyboardInterrupt``, ``SystemExit``) does, as in nornir.
    """
    instance = start_host(task, host)
    began = 0.0 if rescue is None else time.monotonic()
    try:
        outcome = call_task(instance)
    except Exception as exc:  # noqa: BLE001 - a task's error is its host's failed Result
        rescued = None if rescue is None else rescue(instance, host, exc, began)
        if rescued is not None:
            return rescued
        return complete_host(instance, host, _failure(instance, host, exc))
    return complete_host(instance, host, wrap_result(host, outcome))


def call_task(task: Task) -> Any:
    """Call ``task``'s function here (blocking) and return what it returns.

    Raises:
        TypeError: the task is ``async def``, which a blocking runner cannot await: its host
            fails saying so, rather than being reported ok with a coroutine that never ran.
    """
    outcome = task.task(task, **task.params)
    if isinstance(outcome, CoroutineType):  # not inspect.isawaitable: three times cheaper
        outcome.close()  # no "coroutine was never awaited" warning: the error says it
        raise TypeError(
            f"task {task.name!r} is async (it returned coroutine {outcome.__qualname__}, which "
            "this runner cannot await): run it with the asyncio or processpool runner, or make "
            "it a plain def"
        )
    return outcome


Deadline = Callable[[Awaitable[Any], bool], Awaitable[Any]]
"""Bounds one await of a task's call by a deadline: ``(awaitable, blocking)``, where
``blocking`` says the awaitable is a blocking call running in a thread (which cannot be stopped,
only given up)."""


def acall_task(
    task: Task, offload: Offload | None, deadline: Deadline | None = None
) -> Awaitable[Any]:
    """Call ``task``'s function on the event loop: await this for what it returns.

    Args:
        task: the host's task.
        offload: ``None`` to await the function (``async def``); else the thread pool a
            blocking function runs in. A coroutine that a plain function returned (a lambda, a
            wrapper) is awaited too.
        deadline: bounds each await, if the host has a deadline.
    """
    if offload is None:  # the coroutine itself: no coroutine of ours around it, per host
        call: Awaitable[Any] = task.task(task, **task.params)
        return call if deadline is None else deadline(call, False)
    return _acall_offloaded(task, offload, deadline)


async def _acall_offloaded(task: Task, offload: Offload, deadline: Deadline | None) -> Any:
    call = offload(functools.partial(task.task, task, **task.params))
    outcome = await (call if deadline is None else deadline(call, True))
    if isinstance(outcome, CoroutineType):
        outcome = await (outcome if deadline is None else deadline(outcome, False))
    return outcome


async def arun_host(
    task: Task,
    host: Host,
    *,
    offload: Offload | None = None,
    rescue: ARescue | None = None,
) -> MultiResult:
    """The event-loop twin of :func:`run_host`: same hooks, same results, same error capture.

    Args:
        task: the task template; it is not modified.
        host: the host to run it on.
        offload: ``None`` to await the task function (``async def``); for a blocking task, a
            function that runs the call in a thread and awaits it.
        rescue: as :func:`run_host`'s.

    Returns:
        The host's ``MultiResult``. Cancelling the coroutine (Ctrl-C) propagates
        ``CancelledError``: a host that did not finish has no result.
    """
    instance = start_host(task, host)
    began = 0.0 if rescue is None else time.monotonic()
    try:
        outcome = await acall_task(instance, offload)
    except Exception as exc:  # noqa: BLE001 - a task's error is its host's failed Result
        rescued = None if rescue is None else rescue(instance, host, exc, began)
        if rescued is not None:
            return await rescued
        return complete_host(instance, host, _failure(instance, host, exc))
    return complete_host(instance, host, wrap_result(host, outcome))


def fail_host(
    task: Task,
    host: Host,
    error: Exception,
    *,
    started: Task | None = None,
    attempts: Sequence[FailedAttempt] = (),
) -> MultiResult:
    """The ``MultiResult`` of a host whose task could not run, or not to its end, on ``host``.

    For failures that are not the task's own (a worker process that died, a host never sent
    anywhere): the same failed ``Result``, log line and hooks as a task raising ``error``,
    without raising it. ``error`` must be this host's own instance: raising one instance for
    many hosts would chain every raise into its ``__traceback__``.

    Args:
        task: the task template.
        host: the host that failed.
        error: why; it becomes the result's ``exception``, and its text the ``result``.
        started: the host's task if its ``task_instance_started`` hook has already fired (only
            the completion hook fires then); ``None`` fires both.
        attempts: earlier runs of the host that did not count (see ``core.attempts``).
    """
    instance = start_host(task, host) if started is None else started
    text = "".join(traceback.format_exception(error))
    log_failure(host.name, instance.name, text)
    result = Result(host, exception=error, result=text, failed=True)
    record_attempts(result, attempts)
    return complete_host(instance, host, result)


def is_async_task(func: Callable[..., Any]) -> bool:
    """Whether a task function is ``async def`` (also through ``functools.partial``)."""
    while isinstance(func, functools.partial):
        func = func.func
    return inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(
        getattr(func, "__call__", None)  # noqa: B004 - a callable object's async __call__
    )


def run_task(
    func: Callable[..., Any],
    nornir: Nornir,
    *,
    global_dry_run: bool,
    processors: Processors,
    name: str | None = None,
    **params: Any,
) -> Task:
    """A run's task template, as ``Nornir.run`` builds it: ``params`` are ``Task``'s own
    (``severity_level``) and the task's parameters, ``dry_run`` among them when the run was
    given one (nornir passes it to the task as it is)."""
    return Task(
        func, nornir, global_dry_run=global_dry_run, processors=processors, name=name, **params
    )


def child_task(parent: Task, func: Callable[..., Any], **kwargs: Any) -> Task:
    """A subtask of ``parent`` on ``parent``'s host, as ``Task.run`` builds it: same nornir,
    dry run and processors; ``kwargs`` are ``Task``'s (``name``, ``severity_level``) and the
    subtask's parameters."""
    sub = Task(
        func,
        parent.nornir,
        global_dry_run=parent.global_dry_run,
        processors=parent.processors,
        parent_task=parent,
        **kwargs,
    )
    sub.host = getattr(parent, "host", None)  # type: ignore[assignment]
    return sub


async def to_thread(call: Callable[[], Any]) -> Any:
    """Run ``call`` in asyncio's default thread pool and await it: where a run has no pool of
    its own (a subtask called outside a run's session)."""
    import asyncio  # only on an event loop, which imported it already: blocking runs never do

    return await asyncio.to_thread(call)


def start_host(template: Task, host: Host) -> Task:
    """The host's own copy of ``template``, its start hook fired (what ``Task.start`` does
    first); the connections it keeps from earlier runs that died since, dropped.

    Runners that fire the start hook apart from the run (the processpool fires it as a host
    leaves for its worker) pass the copy on to :func:`fail_host` as ``started``.
    """
    task = host_task(template)  # template.copy(), lighter per host
    task.host = host
    if task.parent_task is not None:
        task.processors.subtask_instance_started(task, host)
    else:
        task.processors.task_instance_started(task, host)
        # A connection kept from an earlier run may have died since (the device restarted):
        # dropped here, the task opens a new one. (Not nornir's __getattribute__: no cost.)
        if object.__getattribute__(host, "connections"):
            drop_dead_connections(host)
    if _logger.isEnabledFor(logging.DEBUG):  # skips the arguments' cost when it is off
        _logger.debug("Host %r: running task %r", host.name, task.name)
    return task


def wrap_result(host: Host, outcome: object) -> Result:
    """A task's return value as its ``Result`` (a ``Result`` it returned is kept as it is)."""
    return outcome if isinstance(outcome, Result) else Result(host=host, result=outcome)


def _failure(task: Task, host: Host, exc: Exception) -> Result:
    """The failed ``Result`` nornir builds for an exception raised by a task."""
    return failure_result(task, host, exc, traceback.format_exc())


def failure_result(task: Task, host: Host, exc: Exception, tb: str) -> Result:
    """The failed ``Result`` of ``exc``, raised by ``task`` with traceback text ``tb``, logged
    as nornir logs it."""
    log_failure(host.name, task.name, tb)
    text = str(exc) if isinstance(exc, NornirSubTaskError) else tb
    return Result(host, exception=exc, result=text, failed=True)


def log_failure(host: str, task: str, tb: str) -> None:
    """Log a host's failed task as nornir's ``Task.start`` does (an ERROR with the traceback)."""
    _logger.error("Host %r: task %r failed with traceback:\n%s", host, task, tb)


def complete_host(task: Task, host: Host, result: Result) -> MultiResult:
    """Name ``result`` after ``task``, set its severity, put it first in the task's results
    and fire the completion hook (what ``Task.start`` does last)."""
    result.name = task.name  # type: ignore[assignment]  # nornir annotates it as None
    if result.severity_level == DEFAULT_SEVERITY_LEVEL:
        result.severity_level = logging.ERROR if result.failed else task.severity_level
    task.results.insert(0, result)
    if result.failed:  # a change that failed may have left its device changed: said here
        note_left_changed(task.results)
    if task.parent_task is not None:
        task.processors.subtask_instance_completed(task, host, task.results)
    else:
        task.processors.task_instance_completed(task, host, task.results)
    return task.results
