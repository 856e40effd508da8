"""Whether a failed attempt is tried again, and after how long.

The wait before retry ``n`` (1 for the first) is
``min(retry_max_delay, retry_delay * retry_backoff ** (n - 1))`` plus a random
``0..retry_jitter`` seconds: exponential, capped, and spread so that 10,000 hosts failing at
once do not all come back at once. An error is retried when it, or for a task that failed
because a subtask did (``NornirSubTaskError``), the subtask's error, is one of ``retry_on`` and
none of them is one of ``retry_never``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from nornir.core.exceptions import NornirSubTaskError

if TYPE_CHECKING:
    from nornir_bench.core.policies.options import RunPolicy

__all__ = ["causes", "retry_wait", "retryable"]

# A subtask's failure within a subtask's ... : deeper than this is not looked into.
_MAX_DEPTH = 8


def causes(exc: BaseException, depth: int = 0) -> Iterator[BaseException]:
    """``exc``, and for a failed subtask the errors of the subtasks that failed."""
    yield exc
    if isinstance(exc, NornirSubTaskError) and depth < _MAX_DEPTH:
        for result in exc.result:
            inner = getattr(result, "exception", None)
            if inner is not None and inner is not exc:
                yield from causes(inner, depth + 1)


def retryable(policy: RunPolicy, exc: BaseException) -> bool:
    """Whether ``exc`` may be retried under ``policy`` (retries left aside)."""
    found = list(causes(exc))
    if any(policy.retry_never.matches(cause) for cause in found):
        return False
    return any(policy.retry_on.matches(cause) for cause in found)


def retry_wait(
    policy: RunPolicy, exc: BaseException, failed: int, random: Callable[[], float]
) -> float | None:
    """Seconds to wait before trying again after ``failed`` failed attempts, or ``None`` when
    ``exc`` is not tried again (no retries left, or not retryable).

    ``random`` returns a number in ``[0, 1)`` (``random.random``; a test passes its own).
    """
    if failed > policy.retries or not retryable(policy, exc):
        return None
    delay = min(policy.retry_max_delay, policy.retry_delay * policy.retry_backoff ** (failed - 1))
    return delay + policy.retry_jitter * random()
