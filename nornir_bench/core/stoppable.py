"""Ctrl-C on any runner, nornir's own included, keeping every host that finished.

nornir-bench's runners stop on Ctrl-C by themselves (:class:`~nornir_bench.core.ctrl_c.CtrlC`):
no host starts after it, and :class:`~nornir_bench.core.exceptions.RunInterrupted` carries the
hosts that finished. nornir's own runners do not: ``threaded`` waits for every host to have run
(so a Ctrl-C during a config push to 10,000 devices goes on pushing to all of them), and
``serial`` loses what finished. For any runner that does not say it stops by itself
(``stops_on_ctrl_c = True``), :func:`stoppable` therefore:

- wraps the task, so that once Ctrl-C is pressed a host that has not started does not start:
  its task raises :class:`NotStarted`, a ``BaseException`` that runners pass up, ending the run
  once the hosts in flight are done;
- handles SIGINT while the run lasts: the first Ctrl-C stops new hosts, a second one raises
  ``KeyboardInterrupt`` at once, abandoning the hosts still in flight.

On every runner, a :class:`FinishedHosts` processor keeps each host's result as it finishes, so
what finished is known however the run ended.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nornir.core.task import AggregatedResult

from nornir_bench.core.ctrl_c import CtrlC, Halt, first_press_callback
from nornir_bench.core.execution import is_async_task
from nornir_bench.core.hooks import NoOpProcessor

if TYPE_CHECKING:
    from nornir.core.inventory import Host
    from nornir.core.task import MultiResult, Task

__all__ = [
    "FinishedHosts",
    "NotStarted",
    "StoppableRun",
    "stoppable",
    "stops_on_ctrl_c",
]


class NotStarted(BaseException):
    """Ctrl-C stopped the run before this host's task started.

    A ``BaseException``, like ``KeyboardInterrupt``: a task's ``except Exception`` does not
    catch it, and runners pass it up instead of recording a failed host.
    """


def stops_on_ctrl_c(runner: object) -> bool:
    """Whether a runner stops on Ctrl-C by itself, keeping the hosts that finished.

    Runners say so with a ``stops_on_ctrl_c = True`` class attribute (nornir-bench's do).
    """
    return bool(getattr(runner, "stops_on_ctrl_c", False))


class FinishedHosts(NoOpProcessor):
    """A processor keeping each host's ``MultiResult`` as the host finishes."""

    def __init__(self) -> None:
        self.results: dict[str, MultiResult] = {}
        self.started: set[str] = set()
        self._lock = threading.Lock()

    def never_started(self, host: str) -> None:
        """``host``'s task was stopped before it began (:class:`NotStarted`)."""
        with self._lock:
            self.started.discard(host)

    def in_flight(self, hosts: list[str]) -> list[str]:
        """The hosts of ``hosts`` that started and have not finished, in that order."""
        with self._lock:
            return [h for h in hosts if h in self.started and h not in self.results]

    def aggregated(self, name: str, hosts: list[str]) -> AggregatedResult:
        """The hosts that finished, as an ``AggregatedResult`` in the order of ``hosts``."""
        result = AggregatedResult(name)
        for host in hosts:
            if host in self.results:
                result[host] = self.results[host]
        return result

    def task_instance_started(self, task: Task, host: Host) -> None:
        with self._lock:
            self.started.add(host.name)

    def task_instance_completed(self, task: Task, host: Host, result: MultiResult) -> None:
        with self._lock:
            self.results[host.name] = result

    def task_started(self, task: Task) -> None:
        self.results, self.started = {}, set()


@dataclass
class StoppableRun:
    """What :func:`stoppable` hands the run: the task to run, and what Ctrl-C did.

    Attributes:
        task: the task to give ``nr.run``: the user's own, or it wrapped (see the module).
        finished: the hosts that finished, kept as they do.
        pressed: set by the first Ctrl-C (for runners that stop by themselves: not known here;
            they raise ``RunInterrupted``).
    """

    task: Callable[..., Any]
    finished: FinishedHosts = field(default_factory=FinishedHosts)
    pressed: Halt = field(default_factory=lambda: Halt())


@contextmanager
def stoppable(
    runner: object, task: Callable[..., Any], *, on_first_press: Callable[[], None] | None = None
) -> Iterator[StoppableRun]:
    """The run's task, made to stop on Ctrl-C if ``runner`` does not by itself.

    Args:
        runner: the Nornir object's runner.
        task: the task function.
        on_first_press: called on the first Ctrl-C, on any runner (to say that the run is
            stopping). It may run in a signal handler.

    The two-press rule (:class:`CtrlC`) holds for the block: the first Ctrl-C lets no host
    start, the second raises ``KeyboardInterrupt`` at once.
    """
    with first_press_callback(on_first_press):
        if stops_on_ctrl_c(runner):
            yield StoppableRun(task)
            return
        stop = StoppableRun(task)
        stop.task = _guarded(task, stop.pressed, stop.finished)
        with CtrlC(stop.pressed.set).handled():
            yield stop


def _guarded(
    task: Callable[..., Any], pressed: Halt, finished: FinishedHosts
) -> Callable[..., Any]:
    """``task``, raising :class:`NotStarted` instead of running once ``pressed`` is set (the
    host then never started, for ``finished``)."""
    if is_async_task(task):

        @functools.wraps(task)
        async def guarded_async(nornir_task: Task, **kwargs: Any) -> Any:
            if pressed.is_set():
                finished.never_started(nornir_task.host.name)
                raise NotStarted
            return await task(nornir_task, **kwargs)

        return guarded_async

    @functools.wraps(task)
    def guarded(nornir_task: Task, **kwargs: Any) -> Any:
        if pressed.is_set():
            finished.never_started(nornir_task.host.name)
            raise NotStarted
        return task(nornir_task, **kwargs)

    return guarded

