"""Tasks that simulate a device round trip, as in the "how many threads" study.

``sim_rtt`` blocks (``time.sleep``) like a netmiko call does; ``asim_rtt`` awaits
(``asyncio.sleep``) like an async SSH call does. Both draw the same delay and the same failure
for a host from :func:`plan_round_trip`, so a run with either gives the same results.
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import TYPE_CHECKING, NamedTuple

from nornir_bench.exceptions import SimulatedFailure

if TYPE_CHECKING:
    from nornir.core.task import Task

__all__ = ["RoundTrip", "asim_rtt", "plan_round_trip", "sim_rtt"]


class RoundTrip(NamedTuple):
    """What one simulated round trip does: wait ``delay`` seconds, then fail or not."""

    delay: float
    fails: bool


def plan_round_trip(
    host: str,
    rtt: float,
    jitter: float = 0.0,
    fail_rate: float = 0.0,
    seed: int | None = None,
) -> RoundTrip:
    """Draw the delay and the outcome of one host's round trip.

    Args:
        host: the host's name; with ``seed`` set, the draw depends only on (seed, host), so a
            host gets the same delay and outcome in every run, on every runner.
        rtt: the base round-trip time in seconds (>= 0).
        jitter: the delay is drawn uniformly from ``rtt ± jitter`` seconds, never below 0.
        fail_rate: the probability (0 to 1) that the round trip fails.
        seed: makes the draw reproducible; ``None`` draws from the process's random state.

    Raises:
        ValueError: for a negative ``rtt`` or ``jitter``, or ``fail_rate`` outside 0..1.
    """
    if not rtt >= 0:
        raise ValueError(f"rtt must be a number of seconds >= 0, got {rtt!r}")
    if not jitter >= 0:
        raise ValueError(f"jitter must be a number of seconds >= 0, got {jitter!r}")
    if not 0 <= fail_rate <= 1:
        raise ValueError(f"fail_rate must be a probability from 0 to 1, got {fail_rate!r}")
    if not jitter and not fail_rate:
        return RoundTrip(rtt, False)  # no draw needed: the common benchmark case stays cheap
    rng = random.Random(f"{seed}/{host}") if seed is not None else random
    delay = max(0.0, rtt + rng.uniform(-jitter, jitter)) if jitter else rtt
    return RoundTrip(delay, rng.random() < fail_rate)


def sim_rtt(
    task: Task,
    rtt: float,
    jitter: float = 0.0,
    fail_rate: float = 0.0,
    seed: int | None = None,
) -> float:
    """Block for one simulated device round trip; returns the delay waited, in seconds.

    Raises:
        SimulatedFailure: when the drawn outcome is a failure (after the delay).
    """
    trip = plan_round_trip(task.host.name, rtt, jitter, fail_rate, seed)
    time.sleep(trip.delay)
    if trip.fails:
        raise SimulatedFailure(task.host.name, trip.delay)
    return trip.delay


async def asim_rtt(
    task: Task,
    rtt: float,
    jitter: float = 0.0,
    fail_rate: float = 0.0,
    seed: int | None = None,
) -> float:
    """The awaitable twin of :func:`sim_rtt`: same parameters, same draw, same failure."""
    trip = plan_round_trip(task.host.name, rtt, jitter, fail_rate, seed)
    await asyncio.sleep(trip.delay)
    if trip.fails:
        raise SimulatedFailure(task.host.name, trip.delay)
    return trip.delay
