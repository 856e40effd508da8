"""A task's own check of its parameters, run before any host is touched.

A signature says which names and types a task takes, not which values make sense
(``rtt: 1e300``), nor which names a task's ``**kwargs`` can pass on. A task decorated with
:func:`check_params_with` carries a function that checks a whole set of parameters; the job
loader calls it, so a bad value is one line pointing into the job file before anything runs,
not the same failure on every device.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from nornir_bench.core.task_traits import ParamsCheck, traits_of, with_traits

__all__ = ["ParamsCheck", "check_params_with", "params_check_of"]

_Task = TypeVar("_Task", bound=Callable[..., Any])


def check_params_with(check: ParamsCheck) -> Callable[[_Task], _Task]:
    """Attach ``check`` to the decorated task as its ``check_params`` trait (``core.task_traits``).

    The task is returned as it is (the same function, still ``async def`` if it was); the task
    should run the same check itself, for callers that do not go through a job file.
    """
    return with_traits(check_params=check)


def params_check_of(task: Callable[..., Any]) -> ParamsCheck | None:
    """The check attached to ``task`` with :func:`check_params_with`, if any."""
    return traits_of(task).check_params
