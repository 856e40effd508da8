"""Waiting in tests for what has no known time: an event, a thread's end, a process's.

Tests check what happened (an event, a counter, a state, an order), never how long it took: on
a loaded machine every timed assert is a flake, and targets belong in the benchmarks
(``scripts/``). A wait still needs an end, or a broken change would hang the suite:
:data:`HANG_GUARD` is that end, far past what a loaded machine takes, so it only stops a wait
that would never end. Where a wrong behaviour would merely be slow, a test makes it endless
(a task that sleeps an hour, a fallback timeout of an hour) so that the guard tells them apart.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

__all__ = ["HANG_GUARD", "LIVENESS_IN_TESTS", "process_ended", "still_alive", "wait_until"]

HANG_GUARD = 60.0
"""Seconds after which a wait for something that should happen counts as a hang: a guard, not
a measure."""

LIVENESS_IN_TESTS = 10.0
"""The process runners' liveness bound (``watchdog.LIVENESS_SECONDS``, 60 s) in the tests of a
worker gone silent: short, for the test's sake, yet past what a live worker's heartbeats (every
second) are held up on two loaded cores: at 3 s, a CI run under load gave up the live worker
too."""


def wait_until(condition: Callable[[], object], what: str, *, every: float = 0.01) -> None:
    """Return once ``condition()`` is true, looking every ``every`` seconds.

    Raises:
        AssertionError: ``what`` has not happened within :data:`HANG_GUARD` seconds.
    """
    deadline = time.monotonic() + HANG_GUARD
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"hang guard: {what} not within {HANG_GUARD:g} s")
        time.sleep(every)


def still_alive(threads: Iterable[threading.Thread]) -> list[threading.Thread]:
    """The ``threads`` that have not ended within :data:`HANG_GUARD` seconds (one guard for
    them all, not one each)."""
    deadline = time.monotonic() + HANG_GUARD
    alive = []
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
        if thread.is_alive():
            alive.append(thread)
    return alive


def process_ended(pid: int) -> bool:
    """Whether process ``pid`` has ended: gone, or a zombie not yet reaped (read from /proc)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z"
