"""The dispatch book of a run whose hosts run on workers elsewhere: which host is where.

One book for every such runner (processpool's worker processes, Dask's workers), keyed by
whatever names a worker there (a pid, an address):

- each worker's places (an :class:`~nornir_bench.runners._core.limiter.InFlight` of
  ``num_workers``), taken as hosts go out, given back as they end;
- the hosts out: on which worker, and since when (the watchdogs read it);
- the hosts handed out that never ran (their worker died before starting them): they go first,
  to any worker;
- the hosts whose connections a worker keeps from an earlier run, waiting for that worker's
  room (nornir keeps a host's connections until ``nr.close_connections()``: the host goes back
  where they are);
- the plan: each host taken from it is told finished once.

It decides nothing about time and does no I/O: the transport asks it what to send where, and
tells it what went and what came back.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Iterable, Mapping
from typing import TYPE_CHECKING, Generic, TypeVar

from nornir_bench.runners._core.limiter import InFlight

if TYPE_CHECKING:
    from nornir_bench.core.policies.plan import HostPlan

__all__ = ["DispatchBook"]

W = TypeVar("W", bound=Hashable)


class DispatchBook(Generic[W]):
    """Which of a run's hosts are where (see the module).

    Args:
        plan: the run's plan (its policies' order).
        holders: which worker keeps connections of which host (by host name), from earlier
            runs.
        per_worker: each worker's places (``num_workers``).

    Attributes:
        out: each host out, by index: the worker it went to.
        on: each worker's hosts out: index -> when it went (``time.monotonic``).
    """

    def __init__(self, plan: HostPlan, holders: Mapping[str, W], per_worker: int) -> None:
        self.plan = plan
        self.hosts = plan.hosts
        self.holders = holders
        self.per_worker = per_worker
        self.places: dict[W, InFlight] = {}
        self.out: dict[int, W] = {}
        self.on: dict[W, dict[int, float]] = {}
        self._ended: set[int] = set()  # ended on their worker, place free, result not back
        self._given_back: deque[int] = deque()
        self._held_for: dict[W, deque[int]] = {}
        self._taken: set[int] = set()  # from the plan, not settled yet
        self._closed: set[W] = set()  # still there, taking no more hosts

    # -- workers ------------------------------------------------------------------------------

    def add(self, worker: W, places: int | None = None) -> None:
        """A worker the run may send hosts to (``places``: its own, if not ``per_worker``)."""
        self.places[worker] = InFlight(self.per_worker if places is None else places)
        self.on.setdefault(worker, {})

    def remove(self, worker: W) -> list[int]:
        """``worker`` is gone (or silent): the hosts it had out, in order, now out nowhere (the
        transport settles them); the hosts waiting for it go to any worker."""
        self.places.pop(worker, None)
        self._closed.discard(worker)
        hosts = sorted(self.on.pop(worker, {}))
        for index in hosts:
            del self.out[index]
            self._ended.discard(index)
        waiting = self._held_for.pop(worker, None)
        if waiting:
            self._given_back.extend(waiting)
        return hosts

    def release(self, worker: W) -> None:
        """``worker`` takes no more hosts (it is retiring): those waiting for it go to any."""
        self._closed.add(worker)
        if worker in self.places:
            self.places[worker].limit = 0
        waiting = self._held_for.pop(worker, None)
        if waiting:
            self._given_back.extend(waiting)

    def room(self, worker: W) -> int:
        """How many more hosts ``worker`` may have in flight now."""
        places = self.places.get(worker)
        return 0 if places is None else places.room

    def busiest_last(self) -> list[W]:
        """The workers with room, the most room first (the least busy first)."""
        return sorted(
            (worker for worker, places in self.places.items() if places.room > 0),
            key=lambda worker: -self.places[worker].room,
        )

    # -- out ----------------------------------------------------------------------------------

    def waiting(self) -> bool:
        """Whether hosts wait to be sent: given back, waiting for their worker, or the plan's
        (now or later)."""
        return bool(self._given_back or self._held_for or self.plan.wait_time() is not None)

    def take(self, worker: W, most: int) -> list[int]:
        """Up to ``most`` hosts for ``worker``: those waiting for it (it keeps their
        connections), those given back, then the plan's that may start now. A host of the
        plan's whose connections another worker keeps waits for that one instead."""
        chunk = _taken(self._held_for.get(worker), most)
        if chunk and not self._held_for[worker]:
            del self._held_for[worker]
        chunk += _taken(self._given_back, most - len(chunk))
        holders, places, hosts, closed = self.holders, self.places, self.hosts, self._closed
        while len(chunk) < most and (index := self.plan.take()) is not None:
            self._taken.add(index)
            holder = holders.get(hosts[index].name) if holders else None
            if holder is None or holder == worker or holder not in places or holder in closed:
                chunk.append(index)
            else:
                self._held_for.setdefault(holder, deque()).append(index)
        return chunk

    def sent(self, worker: W, indices: Iterable[int], now: float) -> None:
        """``indices`` went to ``worker`` at ``now``."""
        on = self.on[worker]
        count = 0
        for index in indices:
            self.out[index] = worker
            on[index] = now
            count += 1
        self.places[worker].take(count)

    def move(self, index: int, worker: W) -> None:
        """Host ``index`` turned out to run on ``worker``, not where it was sent (Dask moved
        its chunk after that worker died): its place, and its watch, go with it."""
        was = self.out.get(index)
        if was is None or was == worker:
            return
        self.on.setdefault(worker, {})[index] = self.on[was].pop(index)
        self.out[index] = worker
        if index not in self._ended:
            for places, change in ((self.places.get(was), -1), (self.places.get(worker), 1)):
                if places is not None:
                    places.taken += change

    def give_back(self, indices: Iterable[int]) -> None:
        """Hosts taken that did not go, or never ran: first, for any worker."""
        self._given_back.extendleft(reversed(list(indices)))

    # -- back ---------------------------------------------------------------------------------

    def ended(self, index: int) -> bool:
        """Host ``index`` ended on its worker, its result still on the way: its place there is
        free now. Whether it was out and its place not freed yet."""
        worker = self.out.get(index)
        if worker is None or index in self._ended:
            return False
        self._ended.add(index)
        places = self.places.get(worker)
        if places is not None:
            places.give()
        return True

    def back(self, index: int) -> W | None:
        """Host ``index`` is back (its result, or its failure): out nowhere, its place free;
        the worker it was on, if it was out."""
        worker = self.out.pop(index, None)
        if worker is None:
            return None
        del self.on[worker][index]
        if index in self._ended:
            self._ended.discard(index)
        elif worker in self.places:
            self.places[worker].give()
        return worker

    def settled(self, index: int, failed: bool) -> None:
        """Host ``index`` has its result: the plan, if it handed it out, is told once."""
        if index in self._taken:
            self._taken.discard(index)
            self.plan.finished(index, failed)

    # -- stopping -----------------------------------------------------------------------------

    def halt(self) -> None:
        """No host starts any more: those waiting do not run (and are not reported)."""
        self.plan.halt()
        self._given_back.clear()
        self._held_for.clear()

    def drain(self) -> list[int]:
        """Every host waiting (given back, or for its worker), now taken: the run gives up."""
        drained = list(self._given_back)
        self._given_back.clear()
        for queue in self._held_for.values():
            drained += queue
        self._held_for.clear()
        return drained


def _taken(queue: deque[int] | None, count: int) -> list[int]:
    """Up to ``count`` hosts from the front of ``queue``."""
    if not queue or count <= 0:
        return []
    return [queue.popleft() for _ in range(min(count, len(queue)))]
