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
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nornir_bench.core.policies.hosts import HostAttempts, Outcome

__all__ = ["BlockingCalls"]


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
