"""Coroutines driving a :class:`~nornir_bench.runners._core.scheduler.Scheduler` on one event
loop: ``await next()`` for the next host to start, as few coroutines woken as can be.

The scheduler never waits; :class:`AsyncScheduler` does, for coroutines that each take a host,
run it and tell its end. One host ending makes room for one host, so it wakes one waiter (all
of them only when a batch ends or the run stops); one waiter waits for the time the scheduler
foresees (a rate limit's next token), the others for an end: 1,000 coroutines woken for each of
10,000 hosts, or each of 2,000 tokens a second, would cost more than the run. Every waiter also
looks again every ``POLL_SECONDS`` (the run's deadline, a wake-up that went to a waiter
cancelled meanwhile). A coroutine leaves once no host will start any more: the hosts out are
their own coroutines' to end.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from nornir_bench.core.ctrl_c import POLL_SECONDS
from nornir_bench.runners._core.scheduler import Start, Wait

if TYPE_CHECKING:
    from nornir.core.task import MultiResult

    from nornir_bench.runners._core.scheduler import Scheduler

__all__ = ["AsyncScheduler"]


class AsyncScheduler:
    """A :class:`Scheduler` for coroutines on one event loop (see the module)."""

    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler
        self._waiters: dict[asyncio.Future[None], None] = {}  # in the order they came
        self._timed = False  # a waiter is waiting for the next start the scheduler foresees

    def take(self) -> Start | None:
        """The next host if it may start now (no waiting: no coroutine to await)."""
        action = self.scheduler.next()
        return action if type(action) is Start else None

    async def next(self) -> Start | None:
        """The next host to start, once it may; ``None`` when no host will any more."""
        scheduler = self.scheduler
        while True:
            action = scheduler.next()
            if type(action) is Start:
                return action
            if type(action) is not Wait or not action.starts:
                return None  # the run is over, or only the hosts out are left to end
            woken: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters[woken] = None
            timed = not self._timed
            self._timed = self._timed or timed
            try:
                await asyncio.wait_for(woken, action.seconds if timed else POLL_SECONDS)
            except asyncio.TimeoutError:  # TimeoutError itself from 3.11
                pass
            finally:
                self._waiters.pop(woken, None)
                if timed:
                    self._timed = False
                    if self._waiters:
                        self._wake(every=False)  # the next start: one of them waits for it

    def ended(self, start: Start, multi: MultiResult) -> None:
        """The host ``start`` started ended with ``multi``: recorded; as many waiters woken as
        hosts may start now."""
        self._wake(every=self.scheduler.ended(start.index, multi))

    def halt(self) -> None:
        """No host starts any more: every waiter wakes to see it."""
        self.scheduler.halt()
        self._wake(every=True)

    def _wake(self, *, every: bool) -> None:
        """Wake the longest waiting coroutine (one host's room), or every one."""
        while self._waiters:
            woken = next(iter(self._waiters))
            del self._waiters[woken]
            if not woken.done():
                woken.set_result(None)
                if not every:
                    return
