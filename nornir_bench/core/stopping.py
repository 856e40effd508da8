"""Stopping a run on Ctrl-C, on any runner, and keeping every host that finished.

nornir-bench's runners stop on Ctrl-C by themselves: no host starts after it, and
:class:`~nornir_bench.core.exceptions.RunInterrupted` carries the hosts that finished. nornir's own
runners do not: ``threaded`` waits for every host to have run (so a Ctrl-C during a config push
to 10,000 devices goes on pushing to all of them), and ``serial`` loses what finished. For any
runner that does not say it stops by itself (``stops_on_ctrl_c = True``), :func:`stoppable`
therefore:

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
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nornir_bench.core.hooks import NoOpProcessor

if TYPE_CHECKING:
    from nornir.core.inventory import Host
    from nornir.core.task import AggregatedResult, MultiResult, Task

__all__ = [
    "FinishedHosts",
    "NotStarted",
    "ctrl_c_held",
    "Stop",
    "sigterm_as_ctrl_c",
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
        self._lock = threading.Lock()

    def aggregated(self, name: str, hosts: list[str]) -> AggregatedResult:
        """The hosts that finished, as an ``AggregatedResult`` in the order of ``hosts``."""
        from nornir.core.task import AggregatedResult  # see sigterm_as_ctrl_c

        result = AggregatedResult(name)
        for host in hosts:
            if host in self.results:
                result[host] = self.results[host]
        return result

    def task_instance_completed(self, task: Task, host: Host, result: MultiResult) -> None:
        with self._lock:
            self.results[host.name] = result

    def task_started(self, task: Task) -> None:
        self.results = {}


@dataclass
class Stop:
    """What :func:`stoppable` hands the run: the task to run, and what Ctrl-C did.

    Attributes:
        task: the task to give ``nr.run``: the user's own, or it wrapped (see the module).
        finished: the hosts that finished, kept as they do.
        pressed: Ctrl-C was pressed (for runners that stop by themselves: not known here;
            they raise ``RunInterrupted``).
    """

    task: Callable[..., Any]
    finished: FinishedHosts = field(default_factory=FinishedHosts)
    pressed: threading.Event = field(default_factory=threading.Event)


@contextmanager
def stoppable(
    runner: object, task: Callable[..., Any], *, on_first_press: Callable[[], None] | None = None
) -> Iterator[Stop]:
    """The run's task, made to stop on Ctrl-C if ``runner`` does not by itself.

    Args:
        runner: the Nornir object's runner.
        task: the task function.
        on_first_press: called on the first Ctrl-C (to say that the run is stopping).

    SIGINT is handled only in the main thread (the only one that receives signals), and only
    for the block; the previous handler is restored after.
    """
    if stops_on_ctrl_c(runner):
        yield Stop(task)
        return
    stop = Stop(task)
    stop.task = _guarded(task, stop.pressed)
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return

    def on_sigint(signum: int, frame: object) -> None:
        if stop.pressed.is_set():
            raise KeyboardInterrupt  # a second Ctrl-C: do not wait for the hosts in flight
        stop.pressed.set()
        if on_first_press is not None:
            on_first_press()

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield stop
    finally:
        # None: a handler set from C (an embedding application), which Python cannot put back.
        signal.signal(signal.SIGINT, signal.default_int_handler if previous is None else previous)


def _guarded(task: Callable[..., Any], pressed: threading.Event) -> Callable[..., Any]:
    """``task``, raising :class:`NotStarted` instead of running once ``pressed`` is set."""
    from nornir_bench.core.execution import is_async_task  # see sigterm_as_ctrl_c

    if is_async_task(task):

        @functools.wraps(task)
        async def guarded_async(nornir_task: Task, **kwargs: Any) -> Any:
            if pressed.is_set():
                raise NotStarted
            return await task(nornir_task, **kwargs)

        return guarded_async

    @functools.wraps(task)
    def guarded(nornir_task: Task, **kwargs: Any) -> Any:
        if pressed.is_set():
            raise NotStarted
        return task(nornir_task, **kwargs)

    return guarded


@contextmanager
def sigterm_as_ctrl_c() -> Iterator[threading.Event]:
    """For the block, SIGTERM (what systemd, Kubernetes, CI and ``kill`` send) does what
    Ctrl-C does at that moment; the event is set once one came, so the exit status can say so.

    Only in the main thread; the previous handler is restored after.

    Every command runs inside it, ``--help`` included: so this module imports nornir (and the
    execution core) only where a run needs it, not at import.
    """
    received = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def on_sigterm(signum: int, frame: Any) -> None:
        received.set()
        handler = signal.getsignal(signal.SIGINT)
        if callable(handler):
            handler(signal.SIGINT, frame)
        else:  # SIG_IGN or SIG_DFL set by someone: stop as Ctrl-C would by default
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield received
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


@contextmanager
def ctrl_c_held() -> Iterator[None]:
    """Ctrl-C (SIGINT) comes when the block has ended, not inside it.

    For steps a ``KeyboardInterrupt`` must not cut in half: a processpool batch of results
    being stored (cut, it lost hosts whose processors had seen them finish, and the pool then
    waited for ever for results already sent), a threadpool thread being started (cut, the
    run no longer knew whether the thread ran). Inside the block a press is only noted; it is
    raised again, to whatever handler was there, as the block ends. (Only the main thread
    gets ``KeyboardInterrupt``: elsewhere there is nothing to hold.)
    """
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is None  # set from C: it could not be put back
    ):
        yield
        return
    pressed: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: pressed.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if pressed:
            signal.raise_signal(signal.SIGINT)
