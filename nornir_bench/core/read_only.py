"""Which tasks only read from devices: ``nornir-bench advise`` runs a job's task on a sample of
its hosts, and runs only a task known to change nothing unless told it may.

A task says so with :func:`read_only`, a trait of its own (``core.task_traits``); a task whose
effect depends on its parameters gives a check of them instead, as ``send_command`` does: a
``show`` command reads, any other command may change the device.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, overload

from nornir_bench.core.task_traits import traits_of, with_traits

__all__ = ["READ_ONLY_COMMANDS", "is_read_only", "read_only", "reads_only_commands"]

READ_ONLY_COMMANDS = ("show", "display", "ping", "traceroute")
"""The first words of device commands that read, on Cisco-like (``show``) and Huawei-like
(``display``) command lines."""

_Task = TypeVar("_Task", bound=Callable[..., Any])


@overload
def read_only(task: _Task, /) -> _Task: ...


@overload
def read_only(
    task: None = None, /, *, when: Callable[[Mapping[str, Any]], bool] | None = None
) -> Callable[[_Task], _Task]: ...


def read_only(
    task: _Task | None = None,
    /,
    *,
    when: Callable[[Mapping[str, Any]], bool] | None = None,
) -> _Task | Callable[[_Task], _Task]:
    """Mark a task as changing nothing on a device: always, or when ``when(params)`` is true.

    ``@read_only`` and ``@read_only()`` both mark the function below them; ``when`` is given
    by name only (``@read_only(when=...)``). The task is returned as it is, its
    ``read_only`` trait set (``core.task_traits``).
    """
    if task is not None:
        if when is not None or not callable(task):
            raise TypeError(
                "read_only is used as @read_only, @read_only() or @read_only(when=CHECK), "
                f"got read_only({task!r})"
            )
        return _marked(task, True)
    if when is not None and not callable(when):
        raise TypeError(f"read_only(when=...) takes a function of the task's params, got {when!r}")
    return functools.partial(_marked, marked=True if when is None else when)


def _marked(task: _Task, marked: bool | Callable[[Mapping[str, Any]], bool]) -> _Task:
    return with_traits(read_only=marked)(task)


def is_read_only(task: Callable[..., Any], params: Mapping[str, Any]) -> bool:
    """Whether ``task`` run with ``params`` is known to change nothing (see the module)."""
    marked = traits_of(task).read_only
    while isinstance(task, functools.partial):  # its keywords are parameters of the task
        params = {**task.keywords, **params}
        task = task.func
    if marked is True:
        return True
    return callable(marked) and bool(marked(params))


def reads_only_commands(params: Mapping[str, Any]) -> bool:
    """Whether ``params["command"]`` is a command that reads (:data:`READ_ONLY_COMMANDS`)."""
    command = params.get("command")
    if not isinstance(command, str) or "\n" in command:
        return False
    words = command.split()
    return bool(words) and words[0].lower() in READ_ONLY_COMMANDS
