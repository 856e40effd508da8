"""Which hosts go to which worker process next: the dispatch book, and the crash rule's kinds.

The book (:class:`~nornir_bench.runners._remote.book.DispatchBook`, keyed by pid) is every
remote runner's. What is the process pool's own is the crash rule's (see
:mod:`~nornir_bench.runners.processpool.crashes`): a worker runs one kind of host at a time:
hosts running for the first time; hosts run again after a crash another host caused, together
(a crash among new hosts, not known yet, must not catch them); or a suspect of a crash whose
cause is not known, alone (so that if it crashes again, it is named).
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from nornir_bench.runners._remote.book import DispatchBook
from nornir_bench.runners.processpool.crashes import HostKind

if TYPE_CHECKING:
    from collections.abc import Mapping

    from nornir_bench.runners._core.scheduler import Scheduler

__all__ = ["HostDispatch"]


class HostDispatch(DispatchBook[int]):
    """The book of a run's hosts over the worker processes (by pid), with the kinds of hosts
    each worker may run.

    Args:
        scheduler: the run's scheduler (the plan's hosts are taken through it).
        holders: which worker (pid) holds connections of which host (kept from earlier runs).
        per_worker: hosts in flight per worker (``num_workers``).
    """

    def __init__(
        self, scheduler: Scheduler, holders: Mapping[str, int], per_worker: int
    ) -> None:
        super().__init__(scheduler, holders, per_worker)
        self.kinds: dict[int, HostKind] = {}  # each worker's kind of hosts in flight
        self.queues: dict[HostKind, deque[int]] = {HostKind.RERUN: deque(), HostKind.ALONE: deque()}

    def kind_for(self, pid: int) -> HostKind:
        """The kind of hosts worker ``pid`` runs: chosen again whenever it has none in flight
        (suspects first, then re-runs, then new hosts); a suspect runs alone."""
        if not self.on.get(pid):
            kind = (
                HostKind.ALONE if self.queues[HostKind.ALONE]
                else HostKind.RERUN if self.queues[HostKind.RERUN]
                else HostKind.NEW
            )
            self.kinds[pid] = kind
            self.places[pid].limit = 1 if kind is HostKind.ALONE else self.per_worker
        return self.kinds.get(pid, HostKind.NEW)

    def take(self, worker: int, most: int) -> list[int]:
        kind = self.kind_for(worker)
        if kind is HostKind.NEW:
            return super().take(worker, most)
        queue = self.queues[kind]
        return [queue.popleft() for _ in range(min(most, len(queue)))]

    def waiting(self) -> bool:
        return super().waiting() or any(self.queues.values())

    def give_back_as(self, kind: HostKind, indices: list[int]) -> None:
        """Hosts that never ran (their worker died before starting): first of their kind."""
        if kind is HostKind.NEW:
            self.give_back(indices)
        else:
            self.queues[kind].extendleft(reversed(indices))

    def run_again(self, rerun: list[int], alone: list[int]) -> None:
        """Hosts the crash rule runs again: with others, or alone."""
        self.queues[HostKind.RERUN].extend(rerun)
        self.queues[HostKind.ALONE].extend(alone)

    def spread(self, per_worker: int) -> None:
        """Fewer hosts per worker from now on (after a crash: rule 6 of the crash rule)."""
        self.per_worker = per_worker
        for pid, places in self.places.items():
            if self.kinds.get(pid) is not HostKind.ALONE:
                places.limit = per_worker

    def remove(self, worker: int) -> list[int]:
        self.kinds.pop(worker, None)
        return super().remove(worker)

    def halt(self) -> None:
        super().halt()
        for queue in self.queues.values():
            queue.clear()

    def drain(self) -> list[int]:
        drained = [*self.queues[HostKind.ALONE], *self.queues[HostKind.RERUN]]
        for queue in self.queues.values():
            queue.clear()
        return drained + super().drain()

