"""``HostTimer``: a nornir processor that measures how long each host's task took.

A processor, rather than timing inside a runner, so that the same clock runs on every runner
(nornir's own included) and the figures compare fairly.
"""

from __future__ import annotations

from time import perf_counter
from typing import TYPE_CHECKING

from nornir_bench.core.hooks import NoOpProcessor

if TYPE_CHECKING:
    from nornir.core.inventory import Host
    from nornir.core.task import MultiResult, Task

__all__ = ["HostTimer"]


class HostTimer(NoOpProcessor):
    """Records, per host name, the seconds from ``task_instance_started`` to ``..._completed``.

    ``elapsed`` holds the durations of the last run. Subtasks are not timed separately: they
    are part of their host's time.
    """

    def __init__(self) -> None:
        self.elapsed: dict[str, float] = {}
        self._started: dict[str, float] = {}

    def task_started(self, task: Task) -> None:
        self.elapsed = {}
        self._started = {}

    def task_instance_started(self, task: Task, host: Host) -> None:
        self._started[host.name] = perf_counter()

    def task_instance_completed(self, task: Task, host: Host, result: MultiResult) -> None:
        self.elapsed[host.name] = perf_counter() - self._started.pop(host.name)
