"""Coroutines waiting for a :class:`~nornir_bench.core.policies.plan.HostPlan`.

The plan never waits; :class:`AsyncPlan` does, and wakes as few waiters as it can. One host
finishing makes room for one host, so it wakes one waiter (all of them only when a batch ends
or the run stops); one waiter waits for the time the plan foresees (a rate limit's next
token), the others for a finish: 1,000 coroutines woken for each of 10,000 hosts, or each of
2,000 tokens a second, would cost more than the run. Every waiter also looks again every
``_POLL_SECONDS`` (the run's deadline, a wake-up that went to a waiter cancelled meanwhile).
(Threads do not wait on the plan: threadpool's main thread applies it, see its ``_Feed``.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncio

    from nornir.core.inventory import Host

    from nornir_bench.core.policies.plan import HostPlan

__all__ = ["AsyncPlan"]

_POLL_SECONDS = 0.1


class AsyncPlan:
    """A :class:`HostPlan` for coroutines on one event loop: ``await plan.next()``."""

    def __init__(self, plan: HostPlan) -> None:
        self.plan = plan
        self._waiters: dict[asyncio.Future[None], None] = {}  # in the order they came
        self._timed = False  # a waiter is waiting for the next start the plan foresees

    def take(self) -> Host | None:
        """The next host if it may start now (no waiting: no coroutine to await)."""
        index = self.plan.take()
        return None if index is None else self.plan.hosts[index]

    async def next(self) -> Host | None:
        """The next host to run, once it may start; ``None`` when no host will any more."""
        import asyncio

        plan = self.plan
        while True:
            index = plan.take()
            if index is not None:
                return plan.hosts[index]
            wait = plan.wait_time()
            if wait is None:
                return None
            woken: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters[woken] = None
            timed = not self._timed
            self._timed = self._timed or timed
            try:
                await asyncio.wait_for(woken, min(wait, _POLL_SECONDS) if timed else _POLL_SECONDS)
            except asyncio.TimeoutError:  # TimeoutError itself from 3.11
                pass
            finally:
                self._waiters.pop(woken, None)
                if timed:
                    self._timed = False
                    if self._waiters:
                        self._wake(every=False)  # the next start: one of them waits for it

    def finished(self, host: Host, failed: bool) -> None:
        many = self.plan.finished(self.plan.index[host.name], failed)
        self._wake(every=many)

    def halt(self) -> None:
        """No host starts any more: every waiter wakes to see it."""
        self.plan.halt()
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
