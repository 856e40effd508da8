"""Which runners ``advise`` predicts for a task, and which one runs its sample.

Read from the runners' traits (:mod:`nornir_bench.core.runner_traits`), never from their names: a
runner a user registers is advised as ours are.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from nornir_bench.core.runner_traits import (
    declares_traits,
    is_installed,
    prefers_async_tasks,
    runs_elsewhere,
    takes_address,
)
from nornir_bench.runners.registry import available_runners, runner_class

__all__ = ["AdvisedRunners", "advised_runners", "installed_runners", "runners_for"]


@dataclass(frozen=True)
class AdvisedRunners:
    """The runners to predict, by name, and the one the sample runs on.

    Attributes:
        sample: the first of the runners advised by default whose hosts run in this process:
            the sample's CPU is measured in this process.
        predicted: those named, or those advised by default (:func:`runners_for`).
        classes: every runner's class, by name.
    """

    sample: str
    predicted: tuple[str, ...]
    classes: Mapping[str, type]


def installed_runners() -> dict[str, type]:
    """Every runner plugin's class, by name; one whose module cannot be imported (what it
    imports is not installed) is left out."""
    classes = {}
    for name in available_runners():
        try:
            classes[name] = runner_class(name)
        except ImportError:
            continue
    return classes


def runners_for(
    async_task: bool, installed: Mapping[str, type], *, declared_only: bool = True
) -> tuple[str, ...]:
    """The runners of ``installed`` (name: class) worth predicting for a task.

    Those that run it natively (an ``async def`` task on the runners that prefer them, a
    blocking one on the others), take a worker count and have what they require installed;
    with ``declared_only``, only those declaring their traits, else the others too, read with
    the defaults. Nearest first: in process, in processes here, on a cluster.
    """
    fitting = [
        name
        for name, cls in installed.items()
        if prefers_async_tasks(cls) == async_task
        and "num_workers" in inspect.signature(cls).parameters
        and is_installed(cls)
        and (declares_traits(cls) or not declared_only)
    ]
    return tuple(sorted(
        fitting, key=lambda name: (runs_elsewhere(installed[name]),
                                   takes_address(installed[name]), name)
    ))


def advised_runners(
    async_task: bool,
    named: Sequence[str] | None = None,
    installed: Mapping[str, type] | None = None,
) -> AdvisedRunners:
    """The runners to predict for a task: ``named`` (any that fit it), else those declaring
    their traits; and the sample's runner.

    Raises:
        ValueError: a runner named that does not fit the task, or no runner to sample on, in
            one line.
    """
    classes = installed_runners() if installed is None else installed
    usable = runners_for(async_task, classes)
    sample = next((name for name in usable if not runs_elsewhere(classes[name])), None)
    if sample is None:
        raise ValueError(
            "no runner installed for this task runs its hosts in this process, as the sample "
            "needs"
        )
    fitting = runners_for(async_task, classes, declared_only=False)
    for name in named or ():
        if name not in fitting:
            raise ValueError(
                f"--runners: advise predicts {', '.join(fitting)} for this task, got {name!r}"
            )
    predicted = tuple(dict.fromkeys(named)) if named else usable
    return AdvisedRunners(sample, predicted, classes)
