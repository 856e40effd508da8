"""The hosts of a run waiting to start, taken in order by however many workers drain them."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from typing import Generic, TypeVar

__all__ = ["HostQueue"]

_H = TypeVar("_H")  # a host (nornir's Host), or a host with its index in the run (a worker's)


class HostQueue(Generic[_H]):
    """Hosts waiting to start: each worker (a thread, a coroutine) iterates it until it is empty.

    A ``collections.deque`` taken from with ``popleft``, which is atomic under the GIL: no lock,
    no wake-up signalling, no shutdown sentinel, as all hosts are known before the run starts
    (fastthreadpool's reasoning; see docs/benchmarks.md). ``halt`` lets no more start. A worker
    process, whose hosts come while it runs, adds them with :meth:`put` and starts a coroutine
    to drain them when it has fewer than its places.
    """

    __slots__ = ("_pending",)

    def __init__(self, hosts: Iterable[_H] = ()) -> None:
        self._pending = deque(hosts)

    def __iter__(self) -> Iterator[_H]:
        """The next waiting host, for as long as any is left (shared by every worker)."""
        pending = self._pending
        take = pending.popleft
        # Checked before taking, not by catching the IndexError of an empty deque: with every
        # host in flight at once (10,000 coroutines, one host each), raising it once per worker
        # cost 10-20 ms a run. The except is for threads racing for the last host.
        while pending:
            try:
                host = take()
            except IndexError:  # another thread took the last one
                return
            yield host

    def take(self) -> _H | None:
        """The next waiting host, ``None`` once none is left (for workers without a loop over
        :meth:`__iter__`: no generator per worker)."""
        pending = self._pending
        if pending:  # checked first, as in __iter__: no exception per worker at the end
            try:
                return pending.popleft()
            except IndexError:  # another thread took the last one
                return None
        return None

    def put(self, host: _H) -> None:
        """One more host, after those waiting."""
        self._pending.append(host)

    def __len__(self) -> int:
        return len(self._pending)

    def halt(self) -> None:
        """Let no waiting host start (Ctrl-C): the hosts in flight still finish."""
        self._pending.clear()

    def drop(self) -> list[_H]:
        """:meth:`halt`, saying which hosts were waiting, in order (one thread only)."""
        dropped = list(self._pending)
        self._pending.clear()
        return dropped
