"""Which host starts when: batches, failure limits, rate and group limits, the run's deadline.

A :class:`HostPlan` hands out a run's hosts, in order, as the policies allow. It does no I/O
and never waits: :meth:`HostPlan.take` returns the next host that may start now, or ``None``
and :meth:`HostPlan.wait_time` says for how long nothing can (a rate limit), until a host
finishes (a batch's end, a full group), or that no host will start any more. One taker: the
runner core's ``Scheduler`` (``runners/_core/scheduler.py``), which every runner's driver asks
what to do next; the drivers do the waiting.

- ``batches``: the next batch starts once every host of the current one has finished (Ansible's
  ``serial``: ``[1, "10%", "100%"]`` is a canary, then a tenth, then the rest; the last size
  repeats).
- ``max_failures`` / ``max_fail_percentage``: checked as each host finishes (failed hosts
  more than ``max_failures``, or more than the percentage of the run's hosts) and at each
  batch's end (more than the percentage of the hosts run so far: a canary that fails stops
  the run). Once crossed, no host starts; hosts in flight finish; the others fail with
  :class:`~nornir_bench.core.exceptions.RunAborted`.
- ``max_starts_per_second``: a token bucket of ``max_start_burst`` tokens (default a
  twentieth of a second's starts), refilled at that rate.
- ``group_limits``: at most N hosts in flight per group; a host waits while any of its groups
  is full and the hosts after it go first. ``group_max_failures``: a group with more failed
  hosts than that skips its hosts not started
  (:class:`~nornir_bench.core.exceptions.HostSkipped`). Each group's counters are
  :mod:`~nornir_bench.core.policies.groups`'.
- ``run_timeout``: past the deadline no host starts; those left fail with
  :class:`~nornir_bench.core.exceptions.RunTimeout` (hosts in flight are stopped by their own
  deadline, see :mod:`~nornir_bench.core.policies.hosts`).
"""

from __future__ import annotations

import functools
import math
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from nornir_bench.core.exceptions import HostSkipped, RunAborted, RunTimeout
from nornir_bench.core.policies.groups import GroupFailures, GroupSlots, per_host_counters
from nornir_bench.core.wording import hosts_text as _hosts

if TYPE_CHECKING:
    from nornir.core.inventory import Host

    from nornir_bench.core.policies.options import RunPolicy

__all__ = ["HostPlan", "batch_number", "batch_size"]

class HostPlan:
    """The hosts of one run, handed out as ``policy`` allows (see the module).

    A limit that cannot act on this run is left out when the plan is built (a group no bigger
    than its limit, or whose limit is at least the hosts ever in flight, ``max_failures`` of
    as many hosts as the run has, a bucket of starts as big as the run): configured but never
    triggered, it costs nothing. :meth:`for_run` says when no limit is left.

    Args:
        hosts: the run's hosts, in order.
        policy: the run's policies.
        in_flight: the most hosts the runner has in flight at once, if it knows.
        clock: ``time.monotonic``, or a test's own.

    Attributes:
        left_out: the hosts that will not run, by index, with why (each its own exception).
        stopped_by: once the run was stopped by a limit, the line that says which.
    """

    def __init__(
        self,
        hosts: Sequence[Host],
        policy: RunPolicy,
        *,
        in_flight: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.hosts = hosts
        self.policy = policy
        self.clock = clock
        self._order: deque[int] = deque(range(len(hosts)))
        self._ready: deque[int] = deque()  # hosts that waited for room in a group, first
        self._parked = 0  # hosts waiting for room in a group
        self.in_flight = 0
        self.started = 0
        self.failed = 0
        self.left_out: dict[int, Exception] = {}
        self.stopped_by: str | None = None
        self._halted = False  # no host starts any more (a limit, the deadline, Ctrl-C)
        most = math.inf if in_flight is None else in_flight
        self._slots = per_host_counters(hosts, policy.group_limits, GroupSlots, most=most)
        self._failures = per_host_counters(hosts, policy.group_max_failures, GroupFailures)
        count = len(hosts)
        # Failed hosts never number more than the run's hosts, nor more than 100 % of them.
        self._max_failures = policy.max_failures
        if self._max_failures is not None and self._max_failures >= count:
            self._max_failures = None
        self._max_fail_percentage = policy.max_fail_percentage
        if self._max_fail_percentage is not None and self._max_fail_percentage >= 100:
            self._max_fail_percentage = None
        self._batches = list(policy.batches)
        self._batch_end = self._next_batch_end() if self._batches else math.inf
        rate = policy.max_starts_per_second
        self._burst = float(policy.max_start_burst or max(1, math.ceil((rate or 0) / 20)))
        self._rate = rate if self._burst < count else None  # else the bucket never empties
        self._tokens = self._burst
        self._refilled = clock()
        self.deadline = None if policy.run_timeout is None else clock() + policy.run_timeout

    @classmethod
    def for_run(
        cls, hosts: Sequence[Host], policy: RunPolicy, *, in_flight: int | None = None
    ) -> HostPlan | None:
        """The run's plan; ``None`` when no limit of ``policy`` can act on this run: its
        hosts simply start in order, as without one."""
        if not policy.schedules:
            return None
        plan = cls(hosts, policy, in_flight=in_flight)
        return plan if plan.acts else None

    @property
    def acts(self) -> bool:
        """Whether a limit is left that can act on the run."""
        return self.waits_for_ends or self._rate is not None or self.deadline is not None

    @property
    def waits_for_ends(self) -> bool:
        """Whether a limit left decides from hosts' ends (batches, failure limits, group
        limits): a runner that learns a host ended before its result is here must not start
        another in its place until the result is (the limit would see it late)."""
        return bool(
            self._slots is not None
            or self._failures is not None
            or self._max_failures is not None
            or self._max_fail_percentage is not None
            or self._batches
        )

    @functools.cached_property
    def index(self) -> dict[str, int]:
        """Each host's index, by name (built when first asked: a name costs a call of
        nornir's ``Host.__getattribute__``)."""
        return {host.name: i for i, host in enumerate(self.hosts)}

    # -- handing out -----------------------------------------------------------------------

    def take(self) -> int | None:
        """The index of the next host that may start now (counted as in flight), or ``None``."""
        if self._halted:
            return None
        if self.deadline is not None and self.clock() >= self.deadline:
            self._halt(
                lambda: RunTimeout(self.policy.run_timeout or 0.0, started=False),
                f"run stopped by run_timeout: {self.policy.run_timeout:g} s passed",
            )
            return None
        if self.started >= self._batch_end:
            return None
        if self._rate is not None and not self._has_token():
            return None
        failures, per_host = self._failures, self._slots
        while self._ready or self._order:
            index = self._ready.popleft() if self._ready else self._order.popleft()
            if failures is not None and failures[index] and self._closed(index):
                continue
            if per_host is not None:
                slots = per_host[index]
                if slots:
                    if self._parked_on_full(index, slots):
                        continue
                    for group in slots:
                        group.in_flight += 1
            self.in_flight += 1
            self.started += 1
            if self._rate is not None:
                self._tokens -= 1
            return index
        return None

    def _closed(self, index: int) -> bool:
        """Whether a group of host ``index`` failed past its limit (then it is left out)."""
        assert self._failures is not None
        for failures in self._failures[index]:
            if failures.closed:
                self.left_out[index] = self._skipped(failures)
                return True
        return False

    def _parked_on_full(self, index: int, slots: tuple[GroupSlots, ...]) -> bool:
        """Whether a group of host ``index`` is full (then it waits for room there)."""
        for group in slots:
            if group.in_flight >= group.limit:
                group.waiting.append(index)
                self._parked += 1
                return True
        return False

    def wait_time(self) -> float | None:
        """After :meth:`take` gave ``None``: ``None`` if no host will start any more, else the
        seconds until one may (``math.inf``: not before a host finishes)."""
        if self._halted or not (self._order or self._ready or self._parked):
            return None
        wait = math.inf
        if self.started < self._batch_end and self._rate is not None and self._tokens < 1:
            wait = (1 - self._tokens) / self._rate
        if self.deadline is not None:
            wait = min(wait, max(0.0, self.deadline - self.clock()))
        return wait

    def _has_token(self) -> bool:
        now = self.clock()
        assert self._rate is not None
        self._tokens = min(self._burst, self._tokens + (now - self._refilled) * self._rate)
        self._refilled = now
        return self._tokens >= 1

    # -- finishing ---------------------------------------------------------------------------

    def finished(self, index: int, failed: bool) -> bool:
        """Host ``index`` finished (``failed``: its result failed): free its room, count it.

        Returns whether many hosts may start now, or none ever will (a batch ended, a limit
        stopped the run): every waiter should look; else one finish makes room for one host.
        """
        self.in_flight -= 1
        halted = self._halted
        if self._slots is not None:
            for group in self._slots[index]:
                group.in_flight -= 1
                if group.waiting:
                    self._ready.append(group.waiting.popleft())
                    self._parked -= 1
        if failed:
            self.failed += 1
            if self._failures is not None:
                for failures in self._failures[index]:
                    failures.failed += 1
            self._check_failures(len(self.hosts), "the run's hosts")
        if self.started >= self._batch_end and self.in_flight == 0 and not self._halted:
            self._check_failures(self.started, "the hosts run so far")
            if not self._halted:
                self._batch_end = self._next_batch_end()
                return True
        return self._halted and not halted

    def _check_failures(self, hosts: int, of: str) -> None:
        most, percentage = self._max_failures, self._max_fail_percentage
        if most is not None and self.failed > most:
            self._stop("max_failures", f"{_hosts(self.failed)} failed, more than {most}")
        elif percentage is not None and self.failed > percentage / 100 * hosts:
            self._stop(
                "max_fail_percentage",
                f"{self.failed} of {_hosts(hosts)} failed ({of}), more than {percentage:g} %",
            )

    def _next_batch_end(self) -> float:
        size = self._batches.pop(0) if len(self._batches) > 1 else self._batches[0]
        return self.started + batch_size(size, len(self.hosts))

    def _skipped(self, failures: GroupFailures) -> HostSkipped:
        return HostSkipped(
            "group_max_failures",
            f"more than {_hosts(failures.limit)} of {failures.label} failed",
        )

    # -- stopping ----------------------------------------------------------------------------

    def _stop(self, limit: str, reason: str) -> None:
        self._halt(lambda: RunAborted(limit, reason), f"run aborted by {limit}: {reason}")

    def halt(self) -> None:
        """Start no more hosts (Ctrl-C): those not started are not run, and not reported."""
        self._halted = True
        self._order.clear()
        self._ready.clear()
        if self._parked:
            for per_host in self._slots or ():
                for slots in per_host:
                    slots.waiting.clear()
            self._parked = 0

    def give_up(self, error: Callable[[], Exception], why: str) -> None:
        """Start no more hosts: each not started is left out with its own ``error()``."""
        self._halt(error, why)

    def _halt(self, error: Callable[[], Exception], why: str) -> None:
        if self._halted:
            return
        self.stopped_by = why
        waiting = [i for per_host in self._slots or () for s in per_host for i in s.waiting]
        for index in sorted({*self._order, *self._ready, *waiting}):
            self.left_out[index] = error()
        self.halt()

    def not_run(self) -> Iterator[tuple[Host, Exception]]:
        """The hosts that will not run and why, in host order, each once (then forgotten)."""
        left, self.left_out = self.left_out, {}
        for index in sorted(left):
            yield self.hosts[index], left[index]


def batch_size(size: int | float, hosts: int) -> int:
    """How many hosts a batch of ``size`` (a count, or a fraction of the run's ``hosts``)
    holds."""
    return size if isinstance(size, int) else max(1, math.ceil(size * hosts))


def batch_number(batches: Sequence[int | float], hosts: int, started: int) -> int | None:
    """The batch (from 1) of the host that started ``started``-th (from 0) in a run of
    ``hosts`` with ``batches`` (the last size repeats), as :class:`HostPlan` hands them out;
    ``None`` without batches."""
    if not batches:
        return None
    end, number = 0, 0
    for number, size in enumerate(batches, 1):
        end += batch_size(size, hosts)
        if started < end:
            return number
    last = batch_size(batches[-1], hosts)
    return number + (started - end) // last + 1
