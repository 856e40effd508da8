"""Keep thousands of threads from convoying on the GIL during a run.

A thread that waits for the GIL longer than the switch interval (``sys.getswitchinterval()``,
5 ms) asks its holder to drop it. With thousands of threads waking together (10,000 hosts
whose round trips end at the same moment), every waiter asks every 5 ms: the GIL changes hands
thousands of times a second, each hand-over a futex call, and system time grows past user
time (measured: docs/benchmarks.md, "The costs behind the code's choices").

``fewer_gil_switches(threads)`` raises the interval to :data:`MANY_THREADS_INTERVAL` for a run
of at least :data:`MANY_THREADS` threads, and puts it back when the last such run ends (unless
something else changed it meanwhile). A thread holding the GIL in pure Python keeps it for up
to 50 ms instead of 5 before the others get a turn; threads blocked on I/O release it at once,
as before.
"""

from __future__ import annotations

import math
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["MANY_THREADS", "MANY_THREADS_INTERVAL", "fewer_gil_switches"]

MANY_THREADS = 256
"""Runs with at least this many threads get the longer switch interval."""

MANY_THREADS_INTERVAL = 0.05
"""Seconds: the switch interval while such a run is in progress (CPython's default: 0.005)."""

_MICROSECOND = 1e-6  # CPython keeps the interval in microseconds: 0.05 reads 0.0499999...

_lock = threading.Lock()
_runs = 0
_saved: float | None = None  # the interval before the runs set theirs


@contextmanager
def fewer_gil_switches(threads: int) -> Iterator[None]:
    """For the block, the longer switch interval if ``threads`` is many (see the module)."""
    global _runs, _saved
    if threads < MANY_THREADS:
        yield
        return
    with _lock:
        _runs += 1
        if _runs == 1:
            current = sys.getswitchinterval()
            if current < MANY_THREADS_INTERVAL - _MICROSECOND:  # a user's longer one stays
                _saved = current
                sys.setswitchinterval(MANY_THREADS_INTERVAL)
    try:
        yield
    finally:
        with _lock:
            _runs -= 1
            if _runs == 0 and _saved is not None:  # set by the runs: put back
                current = sys.getswitchinterval()
                if math.isclose(current, MANY_THREADS_INTERVAL, abs_tol=_MICROSECOND):
                    sys.setswitchinterval(_saved)  # else someone else set it meanwhile: theirs
                _saved = None
