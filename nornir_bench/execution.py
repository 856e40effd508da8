"""The shared host-execution core: run one nornir task on one host.

Every runner in nornir-bench calls :func:`run_host`; none re-implements task execution. It does
exactly what nornir's ``Task.start`` does, in the same order:

1. fire ``task_instance_started`` (``subtask_instance_started`` for a subtask);
2. call the task function; wrap a plain return value in a ``Result``;
3. turn any ``Exception`` into a failed ``Result`` carrying the traceback text (for a failed
   subtask, the ``NornirSubTaskError`` message, as nornir does), logged on nornir's own logger;
4. name the result after the task and set its severity (``ERROR`` when it failed);
5. put it first in the task's ``MultiResult`` and fire ``task_instance_completed``.

Subtasks started with ``task.run`` go through nornir's own ``Task.start`` and so behave exactly
as in nornir. Owning the top-level step here is what lets later runners add async execution,
timeouts and retries in one place.
"""

from __future__ import annotations

import logging
import traceback
from typing import TYPE_CHECKING

from nornir.core.exceptions import NornirSubTaskError
from nornir.core.task import DEFAULT_SEVERITY_LEVEL, Result

import nornir_bench._pickling  # noqa: F401  (results of every runner unpickle, see the module)

if TYPE_CHECKING:
    from nornir.core.inventory import Host
    from nornir.core.task import MultiResult, Task

__all__ = ["run_host"]

# nornir's Task.start logs failures on this logger; keep using it so that the logging users
# configured for nornir (``logging: {loggers: [nornir]}``) still sees every failed host.
_logger = logging.getLogger("nornir.core.task")


def run_host(task: Task, host: Host) -> MultiResult:
    """Run a copy of ``task`` on ``host`` exactly as nornir's ``Task.start`` would.

    Args:
        task: the task template built by ``Nornir.run``; it is not modified.
        host: the host to run it on.

    Returns:
        The host's ``MultiResult``: the task's own ``Result`` first, then its subtasks'.
        User errors never propagate; only ``BaseException`` that is not an ``Exception``
        (``KeyboardInterrupt``, ``SystemExit``) does, as in nornir.
    """
    instance = task.copy()
    instance.host = host
    _started(instance, host)
    try:
        _logger.debug("Host %r: running task %r", host.name, instance.name)
        outcome = instance.task(instance, **instance.params)
    except Exception as exc:
        return _completed(instance, host, _failure(instance, host, exc))
    return _completed(instance, host, _wrap(host, outcome))


def _started(task: Task, host: Host) -> None:
    if task.parent_task is not None:
        task.processors.subtask_instance_started(task, host)
    else:
        task.processors.task_instance_started(task, host)


def _wrap(host: Host, outcome: object) -> Result:
    return outcome if isinstance(outcome, Result) else Result(host=host, result=outcome)


def _failure(task: Task, host: Host, exc: Exception) -> Result:
    """The failed ``Result`` nornir builds for an exception raised by a task."""
    tb = traceback.format_exc()
    _logger.error("Host %r: task %r failed with traceback:\n%s", host.name, task.name, tb)
    text = str(exc) if isinstance(exc, NornirSubTaskError) else tb
    return Result(host, exception=exc, result=text, failed=True)


def _completed(task: Task, host: Host, result: Result) -> MultiResult:
    result.name = task.name  # type: ignore[assignment]  # nornir annotates it as None
    if result.severity_level == DEFAULT_SEVERITY_LEVEL:
        result.severity_level = logging.ERROR if result.failed else task.severity_level
    task.results.insert(0, result)
    if task.parent_task is not None:
        task.processors.subtask_instance_completed(task, host, task.results)
    else:
        task.processors.task_instance_completed(task, host, task.results)
    return task.results
