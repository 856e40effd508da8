"""The parent's side of a run whose hosts run elsewhere: one loop for every such runner,
whatever carries the hosts there and back.

The loop is the same for processpool's worker processes and Dask's workers: a halt (Ctrl-C,
or a task's ``SystemExit`` handed back) stops the sending; the hosts the run's policies will
not start are settled as failed; hosts go out as the plan lets them start, to every worker
with room (the :class:`~nornir_bench.runners._remote.book.DispatchBook` says which); what
comes back is settled; workers that stop answering are given up.

No wait is without an end:

- the loop never waits while nothing is in flight and nothing will be sent: hosts left then
  fail at once, saying so;
- a worker with hosts out that sends nothing (not even its heartbeat) for
  :data:`~nornir_bench.runners._remote.watchdog.LIVENESS_SECONDS` is given up, as is one that
  missed a host's deadline by far: its hosts fail, naming it.

What is a transport's own (processpool's pipes and fork server, Dask's futures and event
topic) is in its subclass, through the methods below that raise ``NotImplementedError``.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Hashable
from typing import TYPE_CHECKING, Generic, TypeVar

from nornir_bench.core.ctrl_c import POLL_SECONDS
from nornir_bench.core.exceptions import NoWorkerForSite, WorkerUnavailable
from nornir_bench.runners._core.lifecycle import Transport
from nornir_bench.runners._remote import watchdog

if TYPE_CHECKING:
    from nornir_bench.runners._core.lifecycle import Lifecycle
    from nornir_bench.runners._remote.book import DispatchBook
    from nornir_bench.runners._remote.results import ResultSettler

__all__ = ["RemoteScheduling"]

logger = logging.getLogger(__name__)

W = TypeVar("W", bound=Hashable)


class RemoteScheduling(Transport, Generic[W]):
    """One run's loop in the parent, over workers elsewhere (named by ``W``: a pid, an
    address).

    Args:
        run: the run's lifecycle (its plan made with ``planned``: every host comes from it).
        what: the runner, in words, for log lines (``"processpool"``, ``"dask"``).

    Attributes:
        book: which host is where (set by the subclass).
        settle: the hosts' results made in the parent (set by the subclass).
        sending: False once halted or given up: only the hosts out are waited for.
        heard: when each worker last said something, or was sent hosts.
    """

    book: DispatchBook[W]
    settle: ResultSettler

    def __init__(self, run: Lifecycle, what: str) -> None:
        assert run.plan is not None, "a remote run takes every host from its plan"
        self.run = run
        self.task = run.task
        self.hosts = run.hosts
        self.policy = run.policy
        self.plan = run.plan
        self.what = what
        self.sending = True
        self.heard: dict[W, float] = {}
        self._next_watch = 0.0

    def wait(self) -> None:
        """Run the hosts to their end; once halted, only those out. Called again after a
        ``KeyboardInterrupt`` cut it short (the two-press rule): it goes on where it was."""
        self._begin()
        while self.settle.remaining if self.sending else self.book.out:
            if self.run.halt.is_set() and self.sending:
                self._halt_now()
                continue
            self._settle_not_run()
            if self.sending and not self.settle.remaining:
                break
            if self.sending:
                reason = self._cannot_go_on()
                if reason is not None:
                    self._give_up(reason)
                    continue
                self._send()
                if self._stuck():
                    continue
            self._receive(self._wait_time())
            self._watch()
        self._end()

    def _send(self) -> None:
        """Hosts out to every worker with room, as the plan lets them start, until none more
        can go: a host held for another worker (its connections are there) is sent when that
        worker's turn comes, so no host waits for a worker with room; nor does a host of a
        site no worker serves: it fails, naming the site. Each worker is filled before the
        next, in order: a crash then takes one worker's hosts in flight, not a share of
        everybody's (the crash rule runs the others again together)."""
        book = self.book
        while True:
            fed = False
            for worker in book.busiest_last():
                while (most := self._most_for(worker)) > 0 and (
                    chunk := book.take(worker, most)
                ):
                    self._ship(worker, chunk)
                    self.heard[worker] = time.monotonic()
                    fed = True
            for index, site in book.unserved():
                self.settle.failed(index, NoWorkerForSite(self.what, site))
            if not fed:
                return

    def _stuck(self) -> bool:
        """Nothing is out and nothing can go, yet hosts are left, and the plan foresees no
        start: no wait would end. They fail at once, saying so."""
        if self.book.out or not self.settle.remaining:
            return False
        wait = self.plan.wait_time()
        if wait is not None and wait != math.inf:
            return False  # a start the plan foresees (a rate limit)
        self._give_up(
            f"no host is in flight on any {self.what} worker and none could be sent to one "
            "(a fault of nornir-bench's dispatch: please report it)"
        )
        return True

    def _wait_time(self) -> float:
        """How long to wait for what comes back: until the next look for a halt, the plan's
        next start (a rate limit, the run's deadline), or the next watch."""
        waits = [POLL_SECONDS, max(0.0, self._next_watch - time.monotonic())]
        plan_wait = self.plan.wait_time() if self.sending else None
        if plan_wait is not None and plan_wait != math.inf:
            waits.append(plan_wait)
        return min(waits)

    def _settle_not_run(self) -> None:
        """Fail the hosts the run's policies will not start (a limit, the deadline)."""
        for host, error in self.plan.not_run():
            self.settle.failed(self.plan.index[host.name], error)

    def _halt_now(self) -> None:
        """Send no more hosts; those not sent yet (or waiting to run again) do not run."""
        self.sending = False
        self.book.halt()
        self._halt_workers()

    def _give_up(self, reason: str) -> None:
        """The workers cannot go on: every host not back fails with ``reason``."""
        logger.error("%s: giving up: %s", self.what, reason)
        self.sending = False
        for index in [*self._abandon_all(), *self.book.drain()]:
            self.settle.failed(index, WorkerUnavailable(reason))
        self.plan.give_up(lambda: WorkerUnavailable(reason), f"{self.what} gave up: {reason}")
        self._settle_not_run()

    def _watch(self) -> None:
        """Once a watch period: give up each worker with hosts out that missed a host's
        deadline by far, or has said nothing for the liveness bound (it cannot answer)."""
        now = time.monotonic()
        if now < self._next_watch:
            return
        self._next_watch = now + watchdog.WATCH_SECONDS
        policy, deadline = self.policy, self.plan.deadline
        deadlines = watchdog.watched(policy, deadline)
        for worker, hosts in list(self.book.on.items()):
            if not hosts:
                continue
            if deadlines:
                late = watchdog.overdue_errors(
                    hosts, policy, deadline, now, self.task.name, self.hosts
                )
                if late:
                    self._unresponsive(worker, late, "stopped answering after a host's deadline")
                    continue
            silent = now - self.heard.get(worker, now)
            if silent > watchdog.LIVENESS_SECONDS:
                why = (
                    f"{self._name(worker)} sent nothing for {silent:.0f} s while running this "
                    f"host (alive but silent: more than {watchdog.LIVENESS_SECONDS:g} s)"
                )
                self._unresponsive(
                    worker, {index: WorkerUnavailable(why) for index in hosts}, "went silent"
                )

    # -- the transport's own -------------------------------------------------------------------

    def _begin(self) -> None:
        """Before the loop (again, after an interruption): load the run where it must be."""

    def _end(self) -> None:
        """After the loop: what the transport does once the run is over."""

    def _cannot_go_on(self) -> str | None:
        """Why the run cannot go on (no worker left, the scheduler lost), if it cannot."""
        return None

    def _most_for(self, worker: W) -> int:
        """How many hosts to send ``worker`` now, at most (0: none now)."""
        raise NotImplementedError

    def _ship(self, worker: W, indices: list[int]) -> None:
        """Send ``indices`` (taken from the book for it) to ``worker``; tell the book."""
        raise NotImplementedError

    def _receive(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for what comes back, and settle it."""
        raise NotImplementedError

    def _unresponsive(self, worker: W, errors: dict[int, Exception], why: str) -> None:
        """``worker`` cannot answer: stop it (or stop using it), failing its hosts out with
        ``errors`` (what its last words did not settle)."""
        raise NotImplementedError

    def _name(self, worker: W) -> str:
        """``worker`` in words, as failures name it."""
        raise NotImplementedError

    def _halt_workers(self) -> None:
        """Tell the workers: start no more hosts; hosts waiting to retry stop waiting."""
        raise NotImplementedError

    def _abandon_all(self) -> list[int]:
        """The run gives up: stop everything out; the hosts that were out."""
        raise NotImplementedError
