"""The runner plugins as nornir-bench sees them: their names, and what each one can do.

Runners are found through nornir's ``nornir.plugins.runners`` entry points, ours exactly as a
user's. The benchmark, the sweep, the command line and job files all ask here, so they agree on
which runners exist, which await ``async def`` tasks and which take a worker count. Asking for
the names loads no runner: the command line checks ``--runner`` before any runner's imports.
"""

from __future__ import annotations

import inspect
from importlib import metadata

from nornir.core.plugins.runners import RUNNERS_PLUGIN_PATH

__all__ = [
    "available_runners",
    "prefers_async_tasks",
    "runner_class",
    "takes_option",
    "takes_workers",
]


def available_runners() -> list[str]:
    """Names of the runner plugins installed in nornir's entry point group."""
    return sorted({ep.name for ep in metadata.entry_points(group=RUNNERS_PLUGIN_PATH)})


def runner_class(runner: str) -> type:
    """The class of the named runner plugin (loaded now).

    Raises:
        ValueError: when no runner plugin has that name.
    """
    for ep in metadata.entry_points(group=RUNNERS_PLUGIN_PATH):
        if ep.name == runner:
            loaded: type = ep.load()
            return loaded
    raise ValueError(f"unknown runner {runner!r}; available: {', '.join(available_runners())}")


def prefers_async_tasks(runner: object) -> bool:
    """Whether a runner (class or instance) runs ``async def`` tasks natively.

    Runners say so with a ``prefers_async_tasks = True`` class attribute; nornir's own runners
    and ``threadpool`` do not, so they get blocking tasks.
    """
    return bool(getattr(runner, "prefers_async_tasks", False))


def takes_option(runner: str, option: str) -> bool:
    """Whether the named runner plugin has the keyword option ``option`` (``False``: there is
    no such plugin)."""
    try:
        return option in inspect.signature(runner_class(runner)).parameters
    except ValueError:
        return False


def takes_workers(runner: str) -> bool:
    """Whether the named runner plugin has a ``num_workers`` option (nornir's ``serial`` has not).

    Runners without it ignore the worker count asked for.
    """
    return takes_option(runner, "num_workers")
