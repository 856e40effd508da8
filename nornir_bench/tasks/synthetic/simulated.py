"""Tasks that simulate a device round trip, as in the "how many threads" study.

``sim_rtt`` blocks (``time.sleep``) like a netmiko call does; ``asim_rtt`` awaits
(``asyncio.sleep``) like an async SSH call does. Both draw the same delay and the same failure
for a host from :func:`plan_round_trip`, so a run with either gives the same results.
"""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from nornir_bench.core.deadlines import time_left
from nornir_bench.core.exceptions import SimulatedFailure
from nornir_bench.core.read_only import read_only
from nornir_bench.core.wording import seconds_text
from nornir_bench.tasks._needs import needs
from nornir_bench.tasks._params import check_params_with

if TYPE_CHECKING:
    from nornir.core.task import Task

__all__ = ["MAX_RTT", "RoundTrip", "asim_rtt", "plan_round_trip", "sim_rtt"]

MAX_RTT = 3600.0
"""Longest ``rtt`` and ``jitter``, in seconds: an hour is longer than any device takes to
answer, and an unbounded value would sleep forever (``asyncio.sleep``) or overflow
(``time.sleep``)."""


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
        rtt: the base round-trip time in seconds, 0 to :data:`MAX_RTT`.
        jitter: the delay is drawn uniformly from ``rtt ± jitter`` seconds, never below 0;
            0 to :data:`MAX_RTT`.
        fail_rate: the probability (0 to 1) that the round trip fails.
        seed: makes the draw reproducible; ``None`` draws from the process's random state.

    Raises:
        ValueError: for ``rtt`` or ``jitter`` outside 0..:data:`MAX_RTT`, or ``fail_rate``
            outside 0..1.
    """
    _check_round_trip(rtt, jitter, fail_rate)
    if not jitter and not fail_rate:
        return RoundTrip(rtt, False)  # no draw needed: the common benchmark case stays cheap
    rng = random.Random(f"{seed}/{host}") if seed is not None else random
    delay = max(0.0, rtt + rng.uniform(-jitter, jitter)) if jitter else rtt
    return RoundTrip(delay, rng.random() < fail_rate)


def _check_round_trip(rtt: float, jitter: float, fail_rate: float) -> None:
    # One test on the path every host takes; the wording only when it fails.
    # NaN fails every comparison, so it is refused too.
    if 0 <= rtt <= MAX_RTT and 0 <= jitter <= MAX_RTT and 0 <= fail_rate <= 1:
        return
    for name, value in (("rtt", rtt), ("jitter", jitter)):
        if not 0 <= value <= MAX_RTT:
            raise ValueError(
                f"{name} must be a number of seconds from 0 to {MAX_RTT:g} (an hour: longer "
                f"than any device takes to answer), got {value!r}"
            )
    raise ValueError(f"fail_rate must be a probability from 0 to 1, got {fail_rate!r}")


def _check_params(params: Mapping[str, Any]) -> None:
    """The job loader's check of ``sim_rtt`` / ``asim_rtt`` parameters, as the tasks do it."""
    _check_round_trip(
        params.get("rtt", 0.0), params.get("jitter", 0.0), params.get("fail_rate", 0.0)
    )


@read_only()
@needs(descriptors=0)  # no library, no connection, no file: the benchmark registers none
@check_params_with(_check_params)
def sim_rtt(
    task: Task,
    rtt: float,
    jitter: float = 0.0,
    fail_rate: float = 0.0,
    seed: int | None = None,
) -> float:
    """Block for one simulated device round trip; returns the delay waited, in seconds.

    A round trip longer than the time the host's attempt has left ends at the deadline (see
    :mod:`nornir_bench.core.deadlines`): the call returns by itself, leaving no thread behind.

    Raises:
        SimulatedFailure: when the drawn outcome is a failure (after the delay).
        TimeoutError: the round trip would end past the attempt's deadline.
    """
    trip = plan_round_trip(task.host.name, rtt, jitter, fail_rate, seed)
    left = time_left(task)
    if left is not None and trip.delay > left:
        time.sleep(left)
        raise TimeoutError(f"{task.host.name}: no simulated reply within {seconds_text(left)} s")
    time.sleep(trip.delay)
    if trip.fails:
        raise SimulatedFailure(task.host.name, trip.delay)
    return trip.delay


@read_only()
@needs(descriptors=0)
@check_params_with(_check_params)
async def asim_rtt(
    task: Task,
    rtt: float,
    jitter: float = 0.0,
    fail_rate: float = 0.0,
    seed: int | None = None,
) -> float:
    """The awaitable twin of :func:`sim_rtt`: same parameters, same draw, same failure."""
    trip = plan_round_trip(task.host.name, rtt, jitter, fail_rate, seed)
    await _asyncio_sleep()(trip.delay)
    if trip.fails:
        raise SimulatedFailure(task.host.name, trip.delay)
    return trip.delay


def _asyncio_sleep() -> Callable[[float], Awaitable[None]]:
    """``asyncio.sleep``, imported on first use (sim_rtt's runs need no asyncio), and cached:
    an ``import`` statement in ``asim_rtt`` cost 0.5-1 µs on each of 10,000 hosts."""
    global _sleep
    if _sleep is None:
        from asyncio import sleep

        _sleep = sleep
    return _sleep


_sleep: Callable[[float], Awaitable[None]] | None = None
