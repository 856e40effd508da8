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
    import asyncio

    from nornir.core.inventory import Host
    from nornir.core.task import AggregatedResult, MultiResult, Task

__all__ = [
    "ABANDONED_GRACE_SECONDS",
    "POLL_SECONDS",
    "CtrlC",
    "FinishedHosts",
    "Halt",
    "NotStarted",
    "StoppableRun",
    "ctrl_c_deferred",
    "sigterm_as_ctrl_c",
    "stoppable",
    "stops_on_ctrl_c",
]


ABANDONED_GRACE_SECONDS = 0.1
"""How long the end of a run waits for threads left in a blocking call given up at its deadline
(their hosts already failed): a call returning at that moment still ends its thread cleanly,
and a call that hangs does not hold the run."""

POLL_SECONDS = 0.1
"""How often a run's waits wake up: a SIGINT the kernel hands to a worker thread, or
``_thread.interrupt_main()``, only sets a flag that the main thread checks when it runs
bytecode, and the first Ctrl-C only sets the run's :class:`Halt`; this often keeps a stop
prompt at no measurable cost."""


class NotStarted(BaseException):
    """Ctrl-C stopped the run before this host's task started.

    A ``BaseException``, like ``KeyboardInterrupt``: a task's ``except Exception`` does not
    catch it, and runners pass it up instead of recording a failed host.
    """


class Halt:
    """A run's halt: once set, no host of the run starts any more, and hosts waiting to retry
    stop waiting (they keep their last failure).

    The one "start no more hosts" of every runner: set by the first Ctrl-C, by a limit, or by a
    worker told to. Set from any thread, a signal handler included; waited on by threads
    (:meth:`wait`) and coroutines (:meth:`wait_async`) alike.
    """

    __slots__ = ("_event", "_waiters")

    def __init__(self) -> None:
        self._event = threading.Event()
        self._waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = set()

    def set(self) -> None:
        self._event.set()
        for loop, woken in list(self._waiters):
            try:
                loop.call_soon_threadsafe(_wake, woken)
            except RuntimeError:  # its loop closed: nobody waits there any more
                pass

    def is_set(self) -> bool:
        return self._event.is_set()

    def wait(self, seconds: float) -> bool:
        """Block up to ``seconds``; whether the run was halted."""
        return self._event.wait(seconds)

    async def wait_async(self, seconds: float) -> bool:
        """Wait up to ``seconds`` on the running loop; whether the run was halted."""
        import asyncio

        if self._event.is_set():
            return True
        loop = asyncio.get_running_loop()
        waiter = (loop, loop.create_future())
        self._waiters.add(waiter)
        try:
            if not self._event.is_set():  # set between the check above and the add
                await asyncio.wait([waiter[1]], timeout=seconds)
        finally:
            self._waiters.discard(waiter)
        return self._event.is_set()


def _raise_ctrl_c() -> None:
    raise KeyboardInterrupt


def _wake(woken: asyncio.Future[None]) -> None:
    if not woken.done():
        woken.set_result(None)


_FIRST_PRESS_HEARD: list[Callable[[], None]] = []
"""Called at the first Ctrl-C of a run, whichever runner's :class:`CtrlC` takes it: the
``on_first_press`` of the :func:`stoppable` blocks under way (a command saying it stops)."""


class CtrlC:
    """The two-press Ctrl-C rule every runner keeps, in one place.

    The first press halts the run (``halt``: no host starts any more; those in flight finish,
    or on an event loop are cancelled); the second stops waiting for the hosts in flight, which
    are abandoned. :meth:`handled` takes the presses as they come (a signal handler, so that
    the first never cuts a host's hooks in half); :meth:`wait` waits for the run under the
    rule, also when a ``KeyboardInterrupt`` arrives without that handler (another thread's
    run, a SIGINT handler of the user's own).

    Args:
        halt: what the first press does. It may run in a signal handler: it must only set
            flags or schedule work (``Halt.set``, ``loop.call_soon_threadsafe``).

    Attributes:
        presses: how many times Ctrl-C was pressed so far (0, 1 or 2).
    """

    def __init__(self, halt: Callable[[], None]) -> None:
        self.presses = 0
        self._halt = halt
        self._handling = False
        self._interrupt: Callable[[], None] = _raise_ctrl_c

    def raised_by_a_task(self, exc: BaseException) -> bool:
        """Whether ``exc``, raised where a host's task runs in this thread (an event loop's
        coroutine), is the task's own ``SystemExit`` or ``KeyboardInterrupt``, not Ctrl-C: while
        :meth:`handled` takes SIGINT, only its second press raises one."""
        if isinstance(exc, KeyboardInterrupt):
            return self._handling and self.presses < 2
        return isinstance(exc, SystemExit)

    @property
    def abandoned(self) -> bool:
        """The second press came: the hosts in flight are not waited for."""
        return self.presses > 1

    def press(self) -> None:
        """One Ctrl-C: the first halts the run, the second interrupts the wait."""
        self.presses += 1
        if self.presses > 1:
            self._interrupt()
            return
        self._first()

    def _first(self) -> None:
        self._halt()
        for say in tuple(_FIRST_PRESS_HEARD):
            say()

    @contextmanager
    def handled(self, *, interrupt: Callable[[], None] | None = None) -> Iterator[CtrlC]:
        """For the block, SIGINT is a :meth:`press`: only in the main thread (the only one that
        receives signals), and only over Python's default handler (a user's own stays).
        ``interrupt``: how the second press ends the wait (default: raise ``KeyboardInterrupt``
        in the handler; an event loop schedules it, as uvloop loses one raised in a callback)."""
        # For the block only: it holds the run, which would live on until a full collection.
        self._interrupt = interrupt or _raise_ctrl_c
        takes_sigint = (
            threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler
        )
        if takes_sigint:
            signal.signal(signal.SIGINT, lambda signum, frame: self.press())
            self._handling = True
        try:
            yield self
        finally:
            self._interrupt = _raise_ctrl_c
            if takes_sigint:
                self._handling = False
                signal.signal(signal.SIGINT, signal.default_int_handler)

    def wait(self, run: Callable[[], None]) -> None:
        """Call ``run`` (a wait for the run's end) under the rule: a ``KeyboardInterrupt`` is
        a press too; after the first, ``run`` is called again (for the hosts in flight),
        after the second this returns."""
        while True:
            try:
                run()
                return
            except KeyboardInterrupt:
                if self.presses > 1:  # the handler's second press
                    return
                self.presses += 1
                if self.presses > 1:
                    return
                self._first()


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
        from nornir.core.task import AggregatedResult  # see sigterm_as_ctrl_c

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
    heard = [] if on_first_press is None else [on_first_press]
    _FIRST_PRESS_HEARD.extend(heard)
    try:
        if stops_on_ctrl_c(runner):
            yield StoppableRun(task)
            return
        stop = StoppableRun(task)
        stop.task = _guarded(task, stop.pressed, stop.finished)
        with CtrlC(stop.pressed.set).handled():
            yield stop
    finally:
        for say in heard:
            _FIRST_PRESS_HEARD.remove(say)


def _guarded(
    task: Callable[..., Any], pressed: Halt, finished: FinishedHosts
) -> Callable[..., Any]:
    """``task``, raising :class:`NotStarted` instead of running once ``pressed`` is set (the
    host then never started, for ``finished``)."""
    from nornir_bench.core.execution import is_async_task  # see sigterm_as_ctrl_c

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
def ctrl_c_deferred() -> Iterator[None]:
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
