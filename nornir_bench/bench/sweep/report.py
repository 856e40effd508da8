"""A sweep's results, written: the study's tables, CSV and JSON files, and plots.

Everything here is rebuilt from a :class:`~nornir_bench.bench.sweep.run.SweepResult`, so an
interrupted sweep writes the points that finished, and a finished one can be rewritten by
running it again (nothing is left to measure). The plots need matplotlib (the ``plot``
extra); without it they are skipped and everything else is written.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nornir_bench.bench.sweep.results import (
    RECOMMEND_WITHIN,
    PointResult,
    Recommendation,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from nornir_bench.bench.sweep.run import SweepResult

__all__ = [
    "PLOT_HINT",
    "POINT_COLUMNS",
    "RECOMMENDATION_COLUMNS",
    "RUNNER_NOTES",
    "Report",
    "tables",
    "write_plots",
    "write_report",
]

POINT_COLUMNS = tuple(field.name for field in fields(PointResult))
RECOMMENDATION_COLUMNS = tuple(field.name for field in fields(Recommendation))
PLOT_HINT = "plots skipped: matplotlib is not installed (pip install 'nornir-bench[plot]')"

# What a runner's figures hold that the others' do not, said under its table.
RUNNER_NOTES = {
    "processpool": "hosts in flight in all: num_workers = in flight / processes (one process "
    "per CPU, rounded up); CPU includes the worker processes",
    "dask": "hosts in flight in all: num_workers = in flight / Dask workers (one per CPU, "
    "rounded up); every run starts and stops an embedded cluster (a scheduler and the "
    "workers), in its wall, run phase and CPU",
}

# Decimals kept in the files: seconds to 0.1 ms, percentages and MiB to one decimal.
_DECIMALS = {
    "wall": 4, "wall_min": 4, "wall_max": 4, "run_wall": 4, "best_wall": 4,
    "user": 4, "sys": 4, "cpu_seconds": 4, "cpu_percent": 1, "max_rss_mib": 1,
}


@dataclass(frozen=True)
class Report:
    """The files :func:`write_report` wrote; ``plots`` is empty when matplotlib is missing."""

    files: list[Path]
    plots: list[Path]
    plots_skipped: bool


def write_report(result: SweepResult, out: Path) -> Report:
    """Write ``results.csv``/``.json``, ``recommendations.csv``, ``environment.json``,
    ``tables.md``, and the plots ``wall.png`` and ``cpu.png``, into ``out``.

    Raises:
        OSError: when a file cannot be written.
    """
    points = [_rounded(asdict(point)) for point in result.points]
    recommendations = [_rounded(asdict(rec)) for rec in result.recommendations]
    document = {
        "environment": result.environment,
        "journal_started": result.started,
        "grid": result.grid.as_dict(),
        "complete": result.complete,
        "recommend_within": RECOMMEND_WITHIN,
        "points": points,
        "recommendations": recommendations,
    }
    files = [
        _write(out / "results.csv", _csv(POINT_COLUMNS, points)),
        _write(out / "results.json", json.dumps(document, indent=2) + "\n"),
        _write(out / "recommendations.csv", _csv(RECOMMENDATION_COLUMNS, recommendations)),
        _write(out / "environment.json", json.dumps(result.environment, indent=2) + "\n"),
        _write(out / "tables.md", tables(result) + "\n"),
    ]
    plots = write_plots(result, out)
    return Report(files=files, plots=plots or [], plots_skipped=plots is None)


def tables(result: SweepResult) -> str:
    """The study's tables, one per runner: rows the hosts in flight (workers), columns RTT,
    cells wall (CPU %).

    Markdown, aligned for the terminal; ``*`` marks the recommended worker count, ``-`` a
    point not measured yet, ``failed`` one whose every run failed; under a runner's table,
    what its figures hold that the others' do not (:data:`RUNNER_NOTES`). Then the
    recommendations and the failed runs.
    """
    grid = result.grid
    by_cell = {(p.runner, p.workers, p.rtt): p for p in result.points}
    chosen = {(r.runner, r.workers, r.rtt) for r in result.recommendations}
    parts = []
    for runner in grid.runners:
        header = ["in flight", *(_rtt_label(rtt) for rtt in grid.rtts)]
        rows = [
            [str(workers), *(
                _cell(by_cell.get((runner, workers, rtt)), (runner, workers, rtt) in chosen)
                for rtt in grid.rtts
            )]
            for workers in grid.workers
        ]
        note = f"\n\n{runner}: {RUNNER_NOTES[runner]}" if runner in RUNNER_NOTES else ""
        parts.append(
            f"{runner}: wall (CPU %) of the whole process, median of {_runs(grid.repeat)}, "
            f"{grid.hosts} hosts; * recommended\n\n{_markdown(header, rows)}{note}"
        )
    if result.recommendations:
        parts.append(
            f"Recommended: the fewest workers within {RECOMMEND_WITHIN * 100:.0f} % of the best "
            "wall at each RTT\n"
            + "\n".join(rec.line() for rec in result.recommendations)
        )
    failed = [p for p in result.points if p.errors]
    if failed:
        parts.append(
            "Failed runs:\n"
            + "\n".join(
                f"{p.runner} {p.workers} workers, rtt {p.rtt:g} s: {p.errors} of "
                f"{p.errors + p.repeats} failed, last: {p.error}"
                for p in failed
            )
        )
    return "\n\n".join(parts)


def _runs(count: int) -> str:
    return f"{count} run" if count == 1 else f"{count} runs"


def _cell(point: PointResult | None, recommended: bool) -> str:
    if point is None:
        return "-"
    if point.wall is None:
        return "failed"
    cell = f"{_seconds(point.wall)} ({point.cpu_percent or 0:.0f} %)"
    return cell + " *" if recommended else cell


def _seconds(value: float) -> str:
    """Three or four significant digits, as the study wrote them: 0.960 s, 5.53 s, 100.6 s."""
    for digits, below in ((3, 0.9995), (2, 9.995)):
        if value < below:
            return f"{value:.{digits}f} s"
    return f"{value:.1f} s"


def _rtt_label(rtt: float) -> str:
    return f"{rtt * 1000:g} ms" if rtt < 1 else f"{rtt:g} s"


def _markdown(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        padded = (cell.rjust(width) for cell, width in zip(cells, widths, strict=True))
        return "| " + " | ".join(padded) + " |"

    rule = "|" + "|".join("-" * (width + 1) + ":" for width in widths) + "|"
    return "\n".join([line(header), rule, *(line(row) for row in rows)])


def _rounded(row: Mapping[str, Any]) -> dict[str, Any]:
    return {
        key: round(value, _DECIMALS[key]) if key in _DECIMALS and value is not None else value
        for key, value in row.items()
    }


def _csv(columns: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> str:
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return text.getvalue()


def _write(path: Path, text: str) -> Path:
    """Write ``text`` whole or not at all: a Ctrl-C mid-write leaves the old file."""
    part = path.with_name(path.name + ".part")
    part.write_text(text, encoding="utf-8")
    os.replace(part, path)
    return path


def write_plots(result: SweepResult, out: Path) -> list[Path] | None:
    """``wall.png`` and ``cpu.png``: one panel per RTT, one line per runner, workers on a
    log axis. ``None`` (nothing written) when matplotlib is not installed.
    """
    try:
        # The Agg canvas, not pyplot: no GUI backend, no global state, safe in any thread.
        from matplotlib import ticker
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        return None
    grid = result.grid
    written = []
    for name, ylabel, draw in (
        ("wall.png", "wall of the whole process (s, log)", _draw_wall),
        ("cpu.png", "CPU % (user + sys) / wall", _draw_cpu),
    ):
        columns = 1 if len(grid.rtts) == 1 else 2
        rows = math.ceil(len(grid.rtts) / columns)
        figure = Figure(figsize=(6.4 * columns, 4.2 * rows), layout="constrained")
        FigureCanvasAgg(figure)
        axes = list(figure.subplots(rows, columns, squeeze=False).flat)
        for ax, rtt in zip(axes, grid.rtts, strict=False):  # a last row may have spare axes
            draw(ax, result, rtt)
            ax.set_xscale("log")
            ax.set_xticks(grid.workers, [str(workers) for workers in grid.workers])
            ax.xaxis.set_minor_locator(ticker.NullLocator())
            if len(grid.workers) > 5:
                ax.tick_params(axis="x", labelrotation=45)
            if ax.get_yscale() == "log":  # plain numbers, not 3x10^-1
                ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda value, _: f"{value:g}"))
                ax.yaxis.set_minor_formatter(
                    ticker.LogFormatter(labelOnlyBase=False, minor_thresholds=(1, 0.4))
                )
            ax.set_title(f"RTT {_rtt_label(rtt)}")
            ax.set_xlabel("hosts in flight: workers, in all processes (log)")
            ax.set_ylabel(ylabel)
            ax.grid(True, which="both", alpha=0.3)
        for ax in axes[len(grid.rtts):]:
            ax.set_visible(False)
        for ax in axes:
            handles, labels = ax.get_legend_handles_labels()
            if handles:
                ax.legend(handles, labels, fontsize="small")
                break
        figure.suptitle(
            f"{grid.hosts} hosts, each run a fresh process; median of {_runs(grid.repeat)}"
            + (" (bars: min to max)" if draw is _draw_wall else "")
        )
        path = out / name
        part = path.with_name(path.name + ".part")
        figure.savefig(part, format="png", dpi=100)
        os.replace(part, path)
        written.append(path)
    return written


def _series(result: SweepResult, rtt: float) -> Iterable[tuple[str, list[PointResult]]]:
    for runner in result.grid.runners:
        points = [p for p in result.points if p.runner == runner and p.rtt == rtt and p.wall]
        if points:
            yield runner, points


def _draw_wall(ax: Axes, result: SweepResult, rtt: float) -> None:
    for runner, points in _series(result, rtt):
        walls = [p.wall or 0.0 for p in points]
        below = [wall - (p.wall_min or wall) for wall, p in zip(walls, points, strict=True)]
        above = [(p.wall_max or wall) - wall for wall, p in zip(walls, points, strict=True)]
        ax.errorbar([p.workers for p in points], walls, yerr=[below, above], marker="o",
                    markersize=4, capsize=3, label=runner)
    grid = result.grid
    if rtt > 0:  # the floor: rounds of `workers` hosts, one RTT each, nothing else
        ideal = [math.ceil(grid.hosts / workers) * rtt for workers in grid.workers]
        ax.plot(grid.workers, ideal, linestyle="--", color="grey", linewidth=1,
                label="ideal: ceil(hosts / workers) x RTT")
    ax.set_yscale("log")


def _draw_cpu(ax: Axes, result: SweepResult, rtt: float) -> None:
    for runner, points in _series(result, rtt):
        ax.plot([p.workers for p in points], [p.cpu_percent or 0.0 for p in points],
                marker="o", markersize=4, label=runner)
    ax.set_ylim(bottom=0)

