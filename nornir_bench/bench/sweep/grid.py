"""What a sweep measures: every runner x worker count x round-trip time, each point repeated."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nornir_bench.core.checks import is_number, is_whole_number
from nornir_bench.runners.registry import available_runners
from nornir_bench.tasks.synthetic.simulated import MAX_RTT

__all__ = ["DEFAULT_RTTS", "DEFAULT_RUNNERS", "DEFAULT_WORKERS", "Point", "SweepGrid"]

# The study's grid, with nornir's own runner as the baseline.
DEFAULT_RUNNERS = ("threadpool", "asyncio", "processpool", "threaded")
DEFAULT_WORKERS = (100, 200, 500, 1000, 1500, 2000, 5000, 10000)
DEFAULT_RTTS = (0.05, 0.1, 0.3, 1.0)


@dataclass(frozen=True)
class Point:
    """One cell of the grid: a runner with a worker count, at one round-trip time (seconds)."""

    runner: str
    workers: int
    rtt: float

    def label(self) -> str:
        return f"{self.runner} {self.workers} workers, rtt {self.rtt:g} s"


class SweepGrid:
    """Every runner x workers x RTT, on ``hosts`` synthetic hosts, ``repeat`` runs each.

    Worker counts and RTTs are sorted and deduplicated; runners keep their order (the order of
    the report's tables).

    Args:
        runners: registered runner plugin names (see
            :func:`nornir_bench.runners.registry.available_runners`), nornir's ``threaded`` and
            ``serial`` included.
        workers: worker counts, each >= 1.
        rtts: round-trip times in seconds, each from 0 to
            :data:`~nornir_bench.tasks.synthetic.simulated.MAX_RTT`.
        hosts: synthetic hosts per run (>= 1).
        repeat: runs per point (>= 1); results are their median, with min and max.

    Raises:
        ValueError: for an empty list or a bad value, saying what is allowed.
    """

    def __init__(
        self,
        *,
        runners: Sequence[str] = DEFAULT_RUNNERS,
        workers: Sequence[int] = DEFAULT_WORKERS,
        rtts: Sequence[float] = DEFAULT_RTTS,
        hosts: int = 10_000,
        repeat: int = 3,
    ) -> None:
        available = available_runners()
        unknown = [name for name in runners if name not in available]
        if not runners or unknown:
            what = f"unknown runner {unknown[0]!r}" if unknown else "runners must not be empty"
            raise ValueError(f"sweep: {what}; available: {', '.join(available)}")
        if not workers or not rtts:
            raise ValueError(f"sweep: {'workers' if not workers else 'rtts'} must not be empty")
        for count in workers:
            _whole_number("workers", count, "whole numbers")
        for rtt in rtts:
            if not is_number(rtt, 0, MAX_RTT):
                raise ValueError(
                    f"sweep: rtts must be numbers of seconds from 0 to {MAX_RTT:g}, got {rtt!r}"
                )
        self.runners = tuple(dict.fromkeys(runners))
        self.workers = tuple(sorted(set(workers)))
        self.rtts = tuple(sorted({float(rtt) for rtt in rtts}))
        self.hosts = _whole_number("hosts", hosts, "a whole number")
        self.repeat = _whole_number("repeat", repeat, "a whole number")

    def points(self) -> list[Point]:
        """Every point: runner by runner, then by RTT, then by worker count."""
        return [
            Point(runner, workers, rtt)
            for runner in self.runners
            for rtt in self.rtts
            for workers in self.workers
        ]

    def as_dict(self) -> dict[str, Any]:
        return {
            "runners": list(self.runners),
            "workers": list(self.workers),
            "rtts": list(self.rtts),
            "hosts": self.hosts,
            "repeat": self.repeat,
        }

    def __repr__(self) -> str:
        options = ", ".join(f"{key}={value!r}" for key, value in self.as_dict().items())
        return f"SweepGrid({options})"


def _whole_number(name: str, value: object, allowed: str) -> int:
    if not is_whole_number(value, 1):
        raise ValueError(f"sweep: {name} must be {allowed} >= 1, got {value!r}")
    return value
