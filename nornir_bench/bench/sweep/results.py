"""A sweep's runs summarised per point; the worker count to recommend per runner and RTT."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from nornir_bench.bench.sweep.grid import Point, SweepGrid
from nornir_bench.bench.sweep.journal import RunRecord

__all__ = [
    "RECOMMEND_WITHIN",
    "PointResult",
    "Recommendation",
    "aggregate",
    "recommend",
    "recommend_workers",
]

# The recommended worker count is the smallest whose wall is within this of the best.
RECOMMEND_WITHIN = 0.10


@dataclass(frozen=True)
class PointResult:
    """One point's runs summarised: medians, and the wall's min and max.

    Attributes:
        repeats: the successful runs the figures are over (0: none succeeded, figures None).
        wall, wall_min, wall_max: the whole process's wall seconds: median, min, max.
        user, sys, cpu_percent, max_rss_mib: medians, as ``time`` reports them.
        ok, failed: host counts of the run with the most failed hosts.
        run_wall: median seconds of the run phase alone (``nr.run``), from the child.
        errors, error: how many runs failed (the child died, or overran its timeout), and
            the last one's error.
    """

    runner: str
    workers: int
    rtt: float
    hosts: int
    repeats: int
    wall: float | None
    wall_min: float | None
    wall_max: float | None
    user: float | None
    sys: float | None
    cpu_percent: float | None
    max_rss_mib: float | None
    ok: int | None
    failed: int | None
    run_wall: float | None
    errors: int
    error: str | None


@dataclass(frozen=True)
class Recommendation:
    """The worker count to use for one runner at one RTT, and the CPU it costs.

    Attributes:
        workers, wall: the recommended count, and its median wall seconds.
        best_workers, best_wall: the fastest count measured, and its median wall.
        cpu_seconds, cpu_percent: user + sys seconds and CPU % at the recommended count.
    """

    runner: str
    rtt: float
    workers: int
    wall: float
    best_wall: float
    best_workers: int
    cpu_seconds: float
    cpu_percent: float

    def line(self) -> str:
        """E.g. ``asyncio, rtt 0.05 s: recommended 5000 workers (wall 0.41 s, best ...)``."""
        return (
            f"{self.runner}, rtt {self.rtt:g} s: recommended {self.workers} workers "
            f"(wall {self.wall:.2f} s, best {self.best_wall:.2f} s at {self.best_workers}; "
            f"cpu {self.cpu_seconds:.2f} s, {self.cpu_percent:.0f} %)"
        )


def aggregate(grid: SweepGrid, runs: Iterable[RunRecord]) -> list[PointResult]:
    """The grid's points summarised, in grid order; points without any run are left out.

    Runs of points outside the grid (a journal can hold more) are ignored.
    """
    by_point: dict[Point, list[RunRecord]] = {}
    for run in runs:
        by_point.setdefault(run.point, []).append(run)
    return [
        _summarise(point, grid.hosts, by_point[point])
        for point in grid.points()
        if point in by_point
    ]


def _summarise(point: Point, hosts: int, runs: list[RunRecord]) -> PointResult:
    good = [run for run in runs if run.error is None]
    failures = [run for run in runs if run.error is not None]
    worst = max(good, key=lambda run: run.failed or 0) if good else None
    walls = [run.wall for run in good]
    return PointResult(
        runner=point.runner,
        workers=point.workers,
        rtt=point.rtt,
        hosts=hosts,
        repeats=len(good),
        wall=_median(walls),
        wall_min=min(walls) if walls else None,
        wall_max=max(walls) if walls else None,
        user=_median(run.user for run in good),
        sys=_median(run.sys for run in good),
        cpu_percent=_median(run.cpu_percent for run in good),
        max_rss_mib=_median(run.max_rss_mib for run in good),
        ok=worst.ok if worst else None,
        failed=worst.failed if worst else None,
        run_wall=_median(run.run_wall for run in good),
        errors=len(failures),
        error=failures[-1].error if failures else None,
    )


def _median(values: Iterable[float | None]) -> float | None:
    present = [value for value in values if value is not None]
    return statistics.median(present) if present else None


def recommend_workers(walls: Mapping[int, float], *, within: float = RECOMMEND_WITHIN) -> int:
    """The smallest worker count whose wall is within ``within`` of the best (0.10: 10 %).

    More workers than that buy less than ``within`` of speed and cost threads, memory and CPU;
    fewer are measurably slower.

    Args:
        walls: worker count -> median wall seconds.
        within: how far from the best wall still counts as as good, as a fraction (>= 0).

    Raises:
        ValueError: when ``walls`` is empty or ``within`` is negative.
    """
    if not walls:
        raise ValueError("recommend_workers: no wall times to choose from")
    if not within >= 0:
        raise ValueError(f"recommend_workers: within must be a fraction >= 0, got {within!r}")
    limit = min(walls.values()) * (1 + within)
    return min(workers for workers, wall in walls.items() if wall <= limit)


def recommend(
    points: Iterable[PointResult], *, within: float = RECOMMEND_WITHIN
) -> list[Recommendation]:
    """:func:`recommend_workers` for each runner and RTT, over the points that have a wall."""
    groups: dict[tuple[str, float], dict[int, PointResult]] = {}
    for point in points:
        if point.wall is not None:
            groups.setdefault((point.runner, point.rtt), {})[point.workers] = point
    recommendations = []
    for (runner, rtt), by_workers in groups.items():
        walls = {workers: p.wall for workers, p in by_workers.items() if p.wall is not None}
        chosen = by_workers[recommend_workers(walls, within=within)]
        best = min(walls, key=lambda workers: (walls[workers], workers))
        recommendations.append(
            Recommendation(
                runner=runner,
                rtt=rtt,
                workers=chosen.workers,
                wall=walls[chosen.workers],
                best_wall=walls[best],
                best_workers=best,
                cpu_seconds=(chosen.user or 0.0) + (chosen.sys or 0.0),
                cpu_percent=chosen.cpu_percent or 0.0,
            )
        )
    return recommendations
