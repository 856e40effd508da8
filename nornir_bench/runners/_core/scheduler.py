"""One run's dispatch, written once and doing no I/O: what a runner's driver does next.

The scheduler owns what every runner used to loop over by itself: the plan of the run's
policies (:class:`~nornir_bench.core.policies.plan.HostPlan`, or the hosts in order without
one), the places in flight (:class:`~nornir_bench.runners._core.limiter.InFlight`), which
host is out (the dispatch book), the blocking calls past their deadline
(:class:`~nornir_bench.runners._core.blocking.BlockingCalls`), the run's halt, and each host's
end recorded in the run's result. As httpx's sans-I/O core, it answers "what now?" and its
driver does it:

- :class:`Start`: start this host (its place is taken);
- :class:`TakeOver`: this host's blocking call passed its deadline and was given up: go on
  with its attempts elsewhere (a new thread), in the same place;
- :class:`Wait`: nothing to start now: wait until a host ends, at most ``seconds``;
- :data:`DONE`: nothing is out and nothing will start: the run is over.

The driver tells it each host's end (:meth:`Scheduler.ended`): its result, what its task raised
that is not an error, or that it never started (the halt caught it queued). Threads' drivers
run :meth:`Scheduler.drive`; coroutines :class:`~.async_scheduler.AsyncScheduler`; the
dispatch book of a run elsewhere takes hosts (:meth:`Scheduler.take`) for each worker's room
and tells it what settled (:meth:`Scheduler.finished`). A scheduler belongs to one thread (a
run's main thread, an event loop), as its plan does.
"""

from __future__ import annotations

import functools
import math
import queue
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from nornir_bench.core.ctrl_c import POLL_SECONDS
from nornir_bench.core.exceptions import RunAborted

if TYPE_CHECKING:
    from nornir.core.inventory import Host
    from nornir.core.task import MultiResult

    from nornir_bench.core.policies.hosts import HostAttempts
    from nornir_bench.runners._core.blocking import BlockingCalls
    from nornir_bench.runners._core.lifecycle import Lifecycle
    from nornir_bench.runners._core.limiter import InFlight

__all__ = ["DONE", "Action", "Done", "Scheduler", "Start", "TakeOver", "Wait"]


class Start:
    """Start host ``index`` (``host``): its place is taken."""

    __slots__ = ("host", "index")

    def __init__(self, index: int, host: Host) -> None:
        self.index = index
        self.host = host

    def __repr__(self) -> str:
        return f"Start({self.index})"


class TakeOver:
    """Host ``index``'s blocking call passed its deadline and was given up: go on with
    ``attempts`` (``attempts.timed_out()`` first) elsewhere, in the same place."""

    __slots__ = ("attempts", "index")

    def __init__(self, index: int, attempts: HostAttempts) -> None:
        self.index = index
        self.attempts = attempts

    def __repr__(self) -> str:
        return f"TakeOver({self.index})"


class Wait(NamedTuple):
    """Nothing to do now: wait for a host's end, at most ``seconds`` (then ask again).

    ``foreseen``: something is due at the end of ``seconds`` (the plan's next start, a
    deadline); else ``seconds`` is only the longest a wait may last without looking again.
    ``starts``: a host may still start; else only the hosts out are left to end.
    """

    seconds: float
    foreseen: bool
    starts: bool


class Done:
    """Nothing is out and nothing will start: the run is over."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "DONE"


DONE = Done()
Action = Start | TakeOver | Wait | Done

_STUCK = (
    "no host is in flight and the plan foresees no start (a fault of nornir-bench's "
    "dispatch: please report it)"
)


class Scheduler:
    """One run's dispatch (see the module).

    Args:
        run: the run's lifecycle: its hosts, plan, halt and result.
        places: the places in flight.
        calls: the blocking calls whose deadlines the driver's main thread watches, if any.

    Attributes:
        out: the hosts out (started, not ended), by index.
        halted: the halt was applied: no host starts any more.
    """

    def __init__(self, run: Lifecycle, places: InFlight, calls: BlockingCalls | None = None):
        self.run = run
        self.plan = run.plan
        self.hosts = run.hosts
        self.result = run.result
        self.places = places
        self.calls = calls
        self.out: set[int] = set()
        self.halted = False
        self._next = 0  # without a plan: the next host, in order
        self._expired: deque[TakeOver] = deque()

    @functools.cached_property
    def _index(self) -> dict[str, int]:
        """Each host's index, by name (built when first asked: only a host taken over needs it)."""
        return (
            self.plan.index
            if self.plan is not None
            else {host.name: i for i, host in enumerate(self.hosts)}
        )

    def next(self) -> Action:
        """What the driver does now (see the module)."""
        if not self.halted and self.run.halt.is_set():
            self.halt()
        if self.calls is not None and self.out:
            if not self._expired:
                self._expired.extend(self.expired())
            if self._expired:  # one a call: the driver asks again at once
                return self._expired.popleft()
        index = self.take()
        if index is not None:
            return Start(index, self.hosts[index])
        return self._idle()

    def expired(self) -> list[TakeOver]:
        """The blocking calls past their deadline, given up now: each host goes on elsewhere
        (:meth:`next` says them one at a time; a driver whose workers take hosts themselves,
        with no plan to apply, asks for them here)."""
        if self.calls is None:
            return []
        return [TakeOver(self._index[a.host.name], a) for a in self.calls.expired()]

    def take(self) -> int | None:
        """The next host that may start now, its place taken and out; or ``None``. (The one
        taker of the plan's hosts: :meth:`next` for the drivers, or a dispatch book filling
        workers elsewhere.)"""
        if self.halted or self.places.taken >= self.places.limit:
            return None
        plan = self.plan
        if plan is not None:
            index = plan.take()
            if index is None:
                return None
        else:
            index = self._next
            if index >= len(self.hosts):
                return None
            self._next = index + 1
        self.places.taken += 1
        self.out.add(index)
        return index

    def _idle(self) -> Wait | Done:
        wait = None if self.halted else self.wait_time()
        if not self.places.taken:
            if wait is None:
                return DONE
            if wait == math.inf:  # no end to wait for: no wait would end
                assert self.plan is not None
                self.plan.give_up(lambda: RunAborted("dispatch", _STUCK), _STUCK)
                return DONE
        seconds = POLL_SECONDS if wait is None else min(POLL_SECONDS, wait)
        foreseen = seconds < POLL_SECONDS
        if self.calls is not None and self.out:
            nearest = self.calls.next_in()
            if nearest is not None and nearest < seconds:
                seconds, foreseen = nearest, True
        return Wait(seconds, foreseen, wait is not None)

    def wait_time(self) -> float | None:
        """Seconds until a host may start (``math.inf``: not before a host ends), or ``None``:
        no host will start any more."""
        if self.plan is not None:
            return self.plan.wait_time()
        return math.inf if self._next < len(self.hosts) else None

    def ended(self, index: int, outcome: MultiResult | BaseException | None) -> bool:
        """Host ``index`` ended: its place is free, and ``outcome`` recorded: its result; what
        its task raised that is not an error (``SystemExit``, its own ``KeyboardInterrupt``:
        the run halts and raises it once it has stopped); ``None``: it never started (the
        halt came first).

        Returns whether many hosts may start now, or none ever will (a batch ended, a limit
        stopped the run): every waiter should look; else one end makes room for one host.
        """
        if outcome is None or isinstance(outcome, BaseException):
            if not self._free(index) or outcome is None:
                return False
            self.run.escape(outcome)
            return True
        if index not in self.out:  # its start was cut short (Ctrl-C) and taken for never made
            return False
        self.result[self.hosts[index].name] = outcome
        return self.finished(index, outcome.failed)

    def finished(self, index: int, failed: bool) -> bool:
        """Host ``index`` ended (``failed``: its result failed), its result recorded by the
        driver (a settler of results from elsewhere): its place is free, the plan told once.
        Returns what :meth:`ended` returns."""
        if not self._free(index):  # not out: told already
            return False
        plan = self.plan
        return False if plan is None else plan.finished(index, failed)

    def _free(self, index: int) -> bool:
        """Host ``index`` no longer out, its place given back; ``False`` if it was not out."""
        try:
            self.out.remove(index)
        except KeyError:
            return False
        self.places.taken -= 1
        return True

    def drive(
        self,
        start: Callable[[Start | TakeOver], None],
        ends: queue.SimpleQueue[tuple[int, MultiResult | BaseException | None]],
    ) -> None:
        """Drive the run from a thread that waits (threads' hosts): ``start`` each host to
        start or take over, record each end from ``ends``, until the run is over."""
        while not isinstance(action := self.next(), Done):
            if isinstance(action, Wait):
                try:
                    self.ended(*ends.get(timeout=action.seconds))
                except queue.Empty:
                    pass
            else:
                try:
                    start(action)
                except BaseException:  # Ctrl-C cut the start short: taken for never made
                    self.ended(action.index, None)
                    raise

    def halt(self) -> None:
        """Start no more hosts (the run's halt, applied): those not started do not run."""
        self.halted = True
        if self.plan is not None:
            self.plan.halt()
