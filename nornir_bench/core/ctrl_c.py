"""Ctrl-C inside a run, for every runner: the halt and the two-press rule.

:class:`Halt` is the one "start no more hosts" of a run; :class:`CtrlC` the one rule for the
presses: the first halts the run, the second stops waiting for the hosts in flight.
:func:`ctrl_c_deferred` holds a press back over a step it must not cut in half. Runners that do
not keep the rule themselves are made to (:mod:`nornir_bench.core.stoppable`).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncio

__all__ = [
    "ABANDONED_GRACE_SECONDS",
    "POLL_SECONDS",
    "CtrlC",
    "Halt",
    "ctrl_c_deferred",
    "first_press_callback",
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


_FIRST_PRESS_CALLBACKS: list[Callable[[], None]] = []
"""Called at the first Ctrl-C of a run, whichever runner's :class:`CtrlC` takes it: the
callbacks of the :func:`first_press_callback` blocks under way (a command saying it stops)."""


@contextmanager
def first_press_callback(callback: Callable[[], None] | None) -> Iterator[None]:
    """For the block, ``callback`` (if any) is called at the first Ctrl-C of a run, whichever
    runner's :class:`CtrlC` takes it. It may run in a signal handler."""
    callbacks = [] if callback is None else [callback]
    _FIRST_PRESS_CALLBACKS.extend(callbacks)
    try:
        yield
    finally:
        for added in callbacks:
            _FIRST_PRESS_CALLBACKS.remove(added)


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
        for callback in tuple(_FIRST_PRESS_CALLBACKS):
            callback()

    @contextmanager
    def handled(self, *, interrupt: Callable[[], None] | None = None) -> Iterator[CtrlC]:
        """For the block, SIGINT is a :meth:`press`: only in the main thread (the only one that
        receives signals), and only over Python's default handler (a user's own stays).
        ``interrupt``: how the second press ends the wait (default: raise ``KeyboardInterrupt``
        in the handler; an event loop schedules it, as uvloop loses one raised in a callback)."""
        # Held for the block only: the transport holds the run, and a run held past its end
        # keeps its results (and a pool's processes) until a full collection.
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
