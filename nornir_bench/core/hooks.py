"""nornir's processor hooks, each doing nothing: subclass and override only the hooks you need.

In the core because the core's own processors (keeping what finished on Ctrl-C, a worker's
events) need it as much as :mod:`nornir_bench.processors` do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nornir.core.inventory import Host
    from nornir.core.task import AggregatedResult, MultiResult, Task

__all__ = ["NoOpProcessor"]


class NoOpProcessor:
    """nornir's ``Processor`` protocol with every hook a no-op.

    nornir calls all six hooks on every processor; a subclass overrides those it uses (a timer
    only the per-host ones, a progress bar the completions) instead of repeating empty ones.
    """

    def task_started(self, task: Task) -> None:
        """The run of ``task`` starts (once, before any host)."""

    def task_completed(self, task: Task, result: AggregatedResult) -> None:
        """The run of ``task`` ended with ``result`` (once, after every host)."""

    def task_instance_started(self, task: Task, host: Host) -> None:
        """``host`` starts ``task``."""

    def task_instance_completed(self, task: Task, host: Host, result: MultiResult) -> None:
        """``host`` finished ``task`` with ``result``."""

    def subtask_instance_started(self, task: Task, host: Host) -> None:
        """``host`` starts the subtask ``task``."""

    def subtask_instance_completed(self, task: Task, host: Host, result: MultiResult) -> None:
        """``host`` finished the subtask ``task`` with ``result``."""
