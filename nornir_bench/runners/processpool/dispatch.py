"""Which hosts go to which worker process next.

A worker runs one kind of host at a time (see :mod:`~nornir_bench.runners.processpool.crashes`):
hosts running for the first time; hosts run again after a crash another host caused, together
(a crash among new hosts, not known yet, must not catch them); or a suspect of a crash whose
cause is not known, alone (so that if it crashes again, it is named). New hosts come from the
run's plan (its policies decide which starts when); hosts taken from it that a worker gave back
unrun (it died before starting) go first, and a host whose connections a worker holds from an
earlier run goes back to that worker.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from nornir_bench.runners.processpool.crashes import HostKind

if TYPE_CHECKING:
    from nornir.core.inventory import Host

    from nornir_bench.core.connections import HeldConnections
    from nornir_bench.core.policies.plan import HostPlan
    from nornir_bench.runners.processpool.workers import Worker

__all__ = ["HostDispatch"]


class HostDispatch:
    """The hosts of a run waiting for a worker, by kind, and those the plan handed out.

    Args:
        plan: the run's plan.
        holders: which worker holds connections of which host (kept from earlier runs).
        per_worker: hosts in flight per worker (``num_workers``).
    """

    def __init__(self, plan: HostPlan, holders: HeldConnections[int], per_worker: int) -> None:
        self.plan = plan
        self.hosts: list[Host] = list(plan.hosts)
        self.holders = holders
        self.per_worker = per_worker
        self.queues: dict[HostKind, deque[int]] = {kind: deque() for kind in HostKind}
        self.held_for: dict[int, deque[int]] = {}  # by the holding worker's pid
        self.out: set[int] = set()  # taken from the plan, not settled yet

    def waiting(self) -> bool:
        """Whether hosts wait for a worker, or the plan has more to start."""
        return any(self.queues.values()) or self.plan.wait_time() is not None

    def kind_next(self) -> HostKind:
        """The kind of hosts an idle worker takes next: suspects first, then re-runs."""
        if self.queues[HostKind.ALONE]:
            return HostKind.ALONE
        return HostKind.RERUN if self.queues[HostKind.RERUN] else HostKind.NEW

    def room(self, worker: Worker) -> int:
        """How many more hosts ``worker`` may have in flight."""
        most = 1 if worker.kind is HostKind.ALONE else self.per_worker
        return most - len(worker.in_flight)

    def take(
        self, worker: Worker, count: int, available: Callable[[int], Worker | None]
    ) -> tuple[list[int], set[Worker]]:
        """Up to ``count`` hosts of ``worker``'s kind for it; and the other workers that were
        given hosts meanwhile (hosts the plan handed out whose connections they hold), which
        should be fed. ``available`` gives a worker by pid, if it is there to run hosts."""
        if worker.kind is not HostKind.NEW:
            return _taken(self.queues[worker.kind], count), set()
        held = self.held_for.get(worker.pid)
        chunk = _taken(held, count) if held else []
        chunk += _taken(self.queues[HostKind.NEW], count - len(chunk))
        others: set[Worker] = set()
        holders = self.holders
        while len(chunk) < count and (index := self.plan.take()) is not None:
            self.out.add(index)
            pid = holders.holder(self.hosts[index].name) if holders else None
            holder = None if pid is None else available(pid)
            if holder is None or holder is worker:
                chunk.append(index)
            else:
                self.held_for.setdefault(holder.pid, deque()).append(index)
                others.add(holder)
        return chunk, {other for other in others if self.room(other) > 0}

    def give_back(self, kind: HostKind, indices: list[int]) -> None:
        """Hosts that never ran (their worker died before starting): first of their kind."""
        self.queues[kind].extendleft(reversed(indices))

    def run_again(self, rerun: list[int], alone: list[int]) -> None:
        """Hosts the crash rule runs again: with others, or alone."""
        self.queues[HostKind.RERUN].extend(rerun)
        self.queues[HostKind.ALONE].extend(alone)

    def release(self, worker: Worker) -> None:
        """``worker`` is going: hosts waiting for it (it held their connections) go to any."""
        waiting = self.held_for.pop(worker.pid, None)
        if waiting:
            self.queues[HostKind.NEW].extend(waiting)

    def settled(self, index: int, failed: bool) -> None:
        """Tell the plan that a host it handed out is done (a host it left out was not)."""
        if index in self.out:
            self.out.discard(index)
            self.plan.finished(index, failed)

    def halt(self) -> None:
        """No host starts any more: those waiting do not run (and are not reported)."""
        self.plan.halt()
        for queue in (*self.queues.values(), *self.held_for.values()):
            queue.clear()

    def drain(self) -> list[int]:
        """Every host waiting, now taken (the pool gives up: they fail)."""
        for pid in list(self.held_for):
            self.queues[HostKind.NEW].extend(self.held_for.pop(pid))
        drained: list[int] = []
        for kind in (HostKind.ALONE, HostKind.RERUN, HostKind.NEW):
            drained += self.queues[kind]
            self.queues[kind].clear()
        return drained


def _taken(queue: deque[int], count: int) -> list[int]:
    """Up to ``count`` hosts from the front of ``queue``."""
    return [queue.popleft() for _ in range(min(count, len(queue)))]
