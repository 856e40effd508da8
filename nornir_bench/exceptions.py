"""Exceptions that nornir-bench raises or records on hosts."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nornir.core.task import AggregatedResult

__all__ = ["RunInterrupted", "SimulatedFailure", "TaskTimeout"]


class SimulatedFailure(Exception):
    """A device failure drawn by a simulated task (``sim_rtt``'s ``fail_rate``)."""

    def __init__(self, host: str, delay: float) -> None:
        super().__init__(f"simulated failure on {host} after {delay * 1000:.1f} ms")
        self.host = host
        self.delay = delay

    def __reduce__(self) -> tuple[type[SimulatedFailure], tuple[str, float]]:
        # Exceptions pickle their ``args`` by default; ours were built from other arguments.
        return (type(self), (self.host, self.delay))


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a run; ``result`` holds every host that had finished.

    It is a ``KeyboardInterrupt``, so code that does not know it still stops as on Ctrl-C,
    and code that does can keep what finished.
    """

    def __init__(self, result: AggregatedResult, pending: int) -> None:
        super().__init__(f"interrupted: {len(result)} hosts finished, {pending} did not run")
        self.result = result
        self.pending = pending


class TaskTimeout(TimeoutError):
    """A host's task ran longer than the runner's ``task_timeout`` and was stopped."""

    def __init__(self, task: str, host: str, seconds: float) -> None:
        super().__init__(f"task {task!r} on host {host!r} timed out after {seconds:g} s")
        self.task = task
        self.host = host
        self.seconds = seconds

    def __reduce__(self) -> tuple[type[TaskTimeout], tuple[str, str, float]]:
        return (type(self), (self.task, self.host, self.seconds))
