"""The parent's side of a run whose hosts run elsewhere: one scheduling loop for every such
runner, whatever carries the hosts there and back.

The loop is the same for processpool's worker processes and Dask's workers: a halt (Ctrl-C, or
a task's ``SystemExit`` handed back) stops the sending; the hosts the run's policies will not
start are settled as failed; hosts go out as the plan lets them start; what comes back is
settled; workers that stop answering are watched. What is a transport's own (processpool's
pipes and fork server, Dask's futures and event topic) is in its subclass, through the
methods below that raise ``NotImplementedError``.
"""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING

from nornir_bench.core.exceptions import WorkerUnavailable
from nornir_bench.core.policies.plan import HostPlan
from nornir_bench.core.stopping import POLL_SECONDS, Halt

if TYPE_CHECKING:
    from collections.abc import Iterable

    from nornir.core.inventory import Host
    from nornir.core.task import Task

    from nornir_bench.core.policies.options import RunPolicy
    from nornir_bench.runners._remote.results import ResultSettler

__all__ = ["RemoteScheduling"]

logger = logging.getLogger(__name__)


class RemoteScheduling:
    """One run's loop in the parent, over workers elsewhere.

    Args:
        task: the run's task template.
        hosts: the run's hosts.
        policy: the run's policies (its plan is made from them here).
        what: the runner, in words, for log lines (``"processpool"``, ``"dask"``).

    Attributes:
        plan: which host starts when.
        settle: the hosts' results made in the parent (set by the subclass).
        halt: set by Ctrl-C (also from a signal handler): no more hosts go out.
        sending: False once halted or given up: only the hosts out are waited for.
        escaped: ``SystemExit`` & co. a task raised on a worker: the run stops, and the
            runner raises the first once the run has stopped.
    """

    settle: ResultSettler

    def __init__(self, task: Task, hosts: list[Host], policy: RunPolicy, what: str) -> None:
        self.task = task
        self.hosts = hosts
        self.policy = policy
        self.what = what
        self.plan = HostPlan(hosts, policy)
        self.halt = Halt()
        self.sending = True
        self.escaped: list[BaseException] = []

    def run(self) -> None:
        """Run the hosts to their end; once halted, only those out. Called again after a
        ``KeyboardInterrupt`` cut it short (the two-press rule): it goes on where it was."""
        self._begin()
        while self.settle.remaining if self.sending else self._out():
            if (self.halt.is_set() or self.escaped) and self.sending:
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
            self._receive(self._wait_time())
            self._watch()
        self._end()

    def _wait_time(self) -> float:
        """How long to wait for what comes back: until the next look for a halt, the plan's
        next start (a rate limit, the run's deadline), or the transport's own next look."""
        waits = [POLL_SECONDS, *self._waits()]
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
        self._halt_workers()

    def _give_up(self, reason: str) -> None:
        """The workers cannot go on: every host not back fails with ``reason``."""
        logger.error("%s: giving up: %s", self.what, reason)
        self.sending = False
        for index in self._abandon_all():
            self.settle.failed(index, WorkerUnavailable(reason))
        self.plan.give_up(lambda: WorkerUnavailable(reason), f"{self.what} gave up: {reason}")
        self._settle_not_run()

    # -- the transport's own -------------------------------------------------------------------

    def _begin(self) -> None:
        """Before the loop (again, after an interruption): load the run where it must be."""

    def _end(self) -> None:
        """After the loop: what the transport does once the run is over."""

    def _out(self) -> bool:
        """Whether hosts are still out on workers (waited for once halted)."""
        raise NotImplementedError

    def _cannot_go_on(self) -> str | None:
        """Why the run cannot go on (no worker left, the scheduler lost), if it cannot."""
        return None

    def _send(self) -> None:
        """Send the hosts the plan lets start now to workers with room for them."""
        raise NotImplementedError

    def _receive(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for what comes back, and settle it."""
        raise NotImplementedError

    def _waits(self) -> Iterable[float]:
        """Further seconds to wait at most (the transport's watchdog)."""
        return ()

    def _watch(self) -> None:
        """Stop waiting for hosts well past their deadline (their worker cannot answer)."""

    def _halt_workers(self) -> None:
        """Tell the workers: start no more hosts; hosts waiting to retry stop waiting."""
        raise NotImplementedError

    def _abandon_all(self) -> list[int]:
        """The run gives up: stop everything out; the hosts not back (out or waiting)."""
        raise NotImplementedError
