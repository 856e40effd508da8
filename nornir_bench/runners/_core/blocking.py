"""Deadlines of blocking calls, watched from the run's main thread.

A thread blocked in a call (a socket read, a device library's wait) cannot be interrupted. A
runner whose hosts run on threads makes each attempt through :meth:`BlockingCalls.call`; the
run's main thread calls :meth:`BlockingCalls.expired` as it waits. Whichever comes first owns
the attempt: the call's return, or the deadline. Past the deadline the attempt is given up (its
host fails with ``TaskTimeout``, or is retried, see ``HostAttempts.timed_out``) and another
thread takes the host over, so the run keeps its pace; the given-up call goes on in its thread
until it returns, its return dropped.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from nornir_bench.core.ctrl_c import ABANDONED_GRACE_SECONDS
from nornir_bench.core.one_host import run_one
from nornir_bench.core.policies.hosts import run_policed
from nornir_bench.runners._core.scheduler import Start

if TYPE_CHECKING:
    from nornir.core.task import MultiResult

    from nornir_bench.core.one_host import RunContext
    from nornir_bench.core.policies.hosts import HostAttempts, Outcome
    from nornir_bench.runners._core.lifecycle import Lifecycle
    from nornir_bench.runners._core.scheduler import TakeOver

__all__ = ["BlockingCalls", "Ended", "join_threads", "serve_hosts"]

Ended = tuple[int, "MultiResult | BaseException | None"]
"""A host's end, as a thread reports it to the scheduler's driver (``Scheduler.ended``)."""


def serve_hosts(
    first: Start | TakeOver,
    run: Lifecycle,
    context: RunContext,
    take: Callable[[], Start | None],
    report: Callable[[Ended], None],
) -> None:
    """A thread's life on a scheduler's driver: run ``first``, then each host ``take`` gives,
    until it gives ``None``; ``report`` each end. A host taken once the run is halted does not
    start; a task's ``SystemExit`` is reported, not raised. The thread leaves when its call
    was given up at its deadline: another thread goes on with its host (``TakeOver``)."""
    action: Start | TakeOver | None = first
    while action is not None:
        done: MultiResult | BaseException | None
        if isinstance(action, Start):
            if run.halt.is_set():
                report((action.index, None))  # the halt came first: it does not run
                action = take()
                continue
            try:
                done = run_one(run.task, action.host, context)
            except BaseException as exc:  # noqa: BLE001 - a task's SystemExit: the run's
                done = exc
        else:
            attempts = action.attempts
            try:
                done = run_policed(attempts, attempts.timed_out(), call=context.attempt)
            except BaseException as exc:  # noqa: BLE001 - as above
                done = exc
        if done is None:  # given up at its deadline: another thread goes on with it
            return
        report((action.index, done))
        action = take()


def join_threads(threads: Iterable[threading.Thread], calls: BlockingCalls | None) -> None:
    """Join ``threads``; those left in a call given up at its deadline at most for the grace
    (the call cannot be stopped)."""
    abandoned = set() if calls is None else calls.abandoned
    grace_ends = time.monotonic() + ABANDONED_GRACE_SECONDS
    for thread in threads:
        if thread in abandoned:
            thread.join(max(0.0, grace_ends - time.monotonic()))
        else:
            thread.join()


class BlockingCalls:
    """The blocking calls in flight that have a deadline.

    Attributes:
        abandoned: the threads left in a call given up at its deadline.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: dict[int, tuple[float, HostAttempts, threading.Thread]] = {}
        self.abandoned: set[threading.Thread] = set()

    def call(self, attempts: HostAttempts) -> Outcome | None:
        """Make one attempt of ``attempts`` in this thread; ``None`` when the deadline won (the
        attempt was given up meanwhile: another thread goes on with the host)."""
        deadline = attempts.deadline()
        if deadline is None:
            return attempts.call()
        key = id(attempts)
        with self._lock:
            self._calls[key] = (deadline, attempts, threading.current_thread())
        outcome = attempts.call()
        with self._lock:
            if self._calls.pop(key, None) is None:  # the deadline won: drop this return
                return None
        return outcome

    def next_in(self) -> float | None:
        """Seconds to the nearest deadline, if any call has one."""
        with self._lock:
            if not self._calls:
                return None
            return max(0.0, min(call[0] for call in self._calls.values()) - time.monotonic())

    def expired(self) -> list[HostAttempts]:
        """The calls past their deadline, now given up (their threads no longer own them)."""
        now = time.monotonic()
        with self._lock:
            due = [key for key, call in self._calls.items() if call[0] <= now]
            late = [self._calls.pop(key) for key in due]
        self.abandoned.update(thread for _, _, thread in late)
        return [attempts for _, attempts, _ in late]
