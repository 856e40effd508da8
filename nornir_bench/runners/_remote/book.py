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
- the hosts of a site waiting for a worker of that site (Dask workers at each site: a host
  whose ``site`` is set runs only on a worker serving it), and those of a site no worker
  serves, which the transport fails;
- the run's scheduler (:class:`~nornir_bench.runners._core.scheduler.Scheduler`): each host
  is taken from the plan through it, and told finished once.

It decides nothing about time and does no I/O: the transport asks it what to send where, and
tells it what went and what came back.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Generic, TypeVar

from nornir_bench.runners._core.limiter import InFlight

if TYPE_CHECKING:
    from nornir_bench.runners._core.scheduler import Scheduler

__all__ = ["DispatchBook"]

W = TypeVar("W", bound=Hashable)


class DispatchBook(Generic[W]):
    """Which of a run's hosts are where (see the module).

    Args:
        scheduler: the run's scheduler: the plan's hosts are taken through it.
        holders: which worker keeps connections of which host (by host name), from earlier
            runs.
        per_worker: each worker's places (``num_workers``).
        sites: each host's site, by index (``None``: any worker); ``None`` for a run whose
            workers serve no site (every host goes anywhere).

    Attributes:
        out: each host out, by index: the worker it went to.
        on: each worker's hosts out: index -> when it went (``time.monotonic``).
    """

    def __init__(
        self,
        scheduler: Scheduler,
        holders: Mapping[str, W],
        per_worker: int,
        sites: Sequence[str | None] | None = None,
    ) -> None:
        self.scheduler = scheduler
        self.hosts = scheduler.hosts
        self.holders = holders
        self.per_worker = per_worker
        self.places: dict[W, InFlight] = {}
        self.out: dict[int, W] = {}
        self.on: dict[W, dict[int, float]] = {}
        self._ended: set[int] = set()  # ended on their worker, place free, result not back
        self._given_back: deque[int] = deque()
        self._held_for: dict[W, deque[int]] = {}
        self._closed: set[W] = set()  # still there, taking no more hosts
        self.sites = sites
        self.serves: dict[W, frozenset[str]] = {}
        self._serving: Counter[str] = Counter()  # workers taking hosts, by site served
        self._for_site: dict[str, deque[int]] = {}  # taken, waiting for a worker of the site
        self._unserved: list[tuple[int, str]] = []  # taken, of a site no worker serves

    # -- workers ------------------------------------------------------------------------------

    def add(self, worker: W, places: int | None = None, serves: Iterable[str] = ()) -> None:
        """A worker the run may send hosts to (``places``: its own, if not ``per_worker``;
        ``serves``: the sites whose hosts it runs, besides those of none)."""
        self.places[worker] = InFlight(self.per_worker if places is None else places)
        self.on.setdefault(worker, {})
        self.serves[worker] = frozenset(serves)
        self._serving.update(self.serves[worker])

    def remove(self, worker: W) -> list[int]:
        """``worker`` is gone (or silent): the hosts it had out, in order, now out nowhere (the
        transport settles them); the hosts waiting for it go to any worker."""
        if worker in self.places and worker not in self._closed:
            self._stop_serving(worker)
        self.places.pop(worker, None)
        self._closed.discard(worker)
        hosts = sorted(self.on.pop(worker, {}))
        for index in hosts:
            del self.out[index]
            self._ended.discard(index)
        waiting = self._held_for.pop(worker, None)
        if waiting:
            self._to_any(waiting)
        return hosts

    def release(self, worker: W) -> None:
        """``worker`` takes no more hosts (it is retiring): those waiting for it go to any."""
        if worker in self.places and worker not in self._closed:
            self._stop_serving(worker)
        self._closed.add(worker)
        if worker in self.places:
            self.places[worker].limit = 0
        waiting = self._held_for.pop(worker, None)
        if waiting:
            self._to_any(waiting)

    def _stop_serving(self, worker: W) -> None:
        """``worker`` takes no more hosts: a site it was the last to serve has its waiting
        hosts unserved."""
        for site in self.serves.get(worker, ()):
            self._serving[site] -= 1
            if self._serving[site] <= 0:
                del self._serving[site]
                waiting = self._for_site.pop(site, ())
                self._unserved += [(index, site) for index in waiting]

    def _to_any(self, indices: Iterable[int], *, first: bool = False) -> None:
        """Hosts for any worker (of their site, if they have one): ahead of the others waiting
        if ``first``."""
        for index in reversed(list(indices)) if first else indices:
            site = self.sites[index] if self.sites is not None else None
            if site is None:
                queue = self._given_back
            elif site in self._serving:
                queue = self._for_site.setdefault(site, deque())
            else:
                self._unserved.append((index, site))
                continue
            if first:
                queue.appendleft(index)
            else:
                queue.append(index)

    def unserved(self) -> list[tuple[int, str]]:
        """The hosts taken whose site no worker serves, with their site, now out of the book
        (the transport fails them)."""
        found, self._unserved = self._unserved, []
        return found

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
        return bool(
            self._given_back
            or self._held_for
            or self._for_site
            or self.scheduler.wait_time() is not None
        )

    def take(self, worker: W, most: int) -> list[int]:
        """Up to ``most`` hosts for ``worker``: those waiting for it (it keeps their
        connections), those of its sites and those given back, then the plan's that may start
        now. A host of the plan's whose connections another worker keeps waits for that one
        instead; one of a site ``worker`` does not serve waits for a worker that does."""
        chunk = _taken(self._held_for.get(worker), most)
        if chunk and not self._held_for[worker]:
            del self._held_for[worker]
        serves = self.serves.get(worker, frozenset())
        for site in sorted(serves) if self._for_site else ():
            queue = self._for_site.get(site)
            if queue:
                chunk += _taken(queue, most - len(chunk))
                if not queue:
                    del self._for_site[site]
        chunk += _taken(self._given_back, most - len(chunk))
        holders, places, hosts, closed = self.holders, self.places, self.hosts, self._closed
        sites = self.sites
        while len(chunk) < most and (index := self.scheduler.take()) is not None:
            holder = holders.get(hosts[index].name) if holders else None
            elsewhere = holder is not None and holder != worker
            if elsewhere and holder in places and holder not in closed:
                self._held_for.setdefault(holder, deque()).append(index)
            elif sites is None or sites[index] is None or sites[index] in serves:
                chunk.append(index)
            else:
                self._to_any((index,))
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
        """Hosts taken that did not go, or never ran: first, for any worker (of their site)."""
        self._to_any(indices, first=True)

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
        self.scheduler.finished(index, failed)

    # -- stopping -----------------------------------------------------------------------------

    def halt(self) -> None:
        """No host starts any more: those waiting do not run (and are not reported)."""
        self.scheduler.halt()
        self._given_back.clear()
        self._held_for.clear()
        self._for_site.clear()
        self._unserved.clear()

    def drain(self) -> list[int]:
        """Every host waiting (given back, or for its worker), now taken: the run gives up."""
        drained = list(self._given_back)
        self._given_back.clear()
        for queues in (self._held_for, self._for_site):
            for queue in queues.values():
                drained += queue
            queues.clear()
        return drained + [index for index, _ in self.unserved()]


def _taken(queue: deque[int] | None, count: int) -> list[int]:
    """Up to ``count`` hosts from the front of ``queue``."""
    if not queue or count <= 0:
        return []
    return [queue.popleft() for _ in range(min(count, len(queue)))]
