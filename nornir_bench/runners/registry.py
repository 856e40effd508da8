"""The runner plugins as nornir-bench sees them: their names, and what each one can do.

Runners are found through nornir's ``nornir.plugins.runners`` entry points, ours exactly as a
user's, and among those registered in code (``RunnersPluginRegister.register``), as
``InitNornir`` finds them. The benchmark, the sweep, the command line and job files all ask
here, so they agree on which runners exist, which await ``async def`` tasks
(:mod:`~nornir_bench.core.runner_traits`) and which take a worker count. Asking for
the names loads no runner: the command line checks ``--runner`` before any runner's imports.
"""

from __future__ import annotations

import inspect
from importlib import metadata

from nornir.core.plugins.runners import RUNNERS_PLUGIN_PATH, RunnersPluginRegister

from nornir_bench.core.runner_traits import prefers_async_tasks

__all__ = [
    "available_runners",
    "prefers_async_tasks",
    "runner_class",
    "takes_option",
    "takes_workers",
]


def available_runners() -> list[str]:
    """Names of the runner plugins installed in nornir's entry point group or registered in
    code."""
    installed = {ep.name for ep in metadata.entry_points(group=RUNNERS_PLUGIN_PATH)}
    return sorted(installed | set(_registered()))


def runner_class(runner: str) -> type:
    """The class of the named runner plugin (loaded now): one registered in code, else the
    entry point's.

    Raises:
        ValueError: when no runner plugin has that name.
    """
    registered = _registered().get(runner)
    if registered is not None:
        return registered
    for ep in metadata.entry_points(group=RUNNERS_PLUGIN_PATH):
        if ep.name == runner:
            loaded: type = ep.load()
            return loaded
    raise ValueError(f"unknown runner {runner!r}; available: {', '.join(available_runners())}")


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


def _registered() -> dict[str, type]:
    """The runners registered in code. nornir's registers may share one dict with the other
    plugin kinds (see ``core/plugins.py``): a runner is a class with a ``run``."""
    return {
        name: plugin
        for name, plugin in RunnersPluginRegister.available.items()
        if isinstance(plugin, type) and callable(getattr(plugin, "run", None))
    }
