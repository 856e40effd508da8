"""The advise model's predictions as a picture: predicted wall against workers, a line per
runner, the 5th-95th percentile of the simulated runs shaded, the recommendation marked
(matplotlib, optional)."""

from __future__ import annotations

import os
from pathlib import Path

from nornir_bench.bench.advise import Advice

__all__ = ["PLOT_HINT", "write_advice_plot"]

PLOT_HINT = "plot skipped: matplotlib is not installed (pip install 'nornir-bench[plot]')"


def write_advice_plot(advice: Advice, path: Path) -> bool:
    """Write the plot to ``path`` (PNG); ``False`` (nothing written) without matplotlib.

    Raises:
        OSError: when ``path`` cannot be written.
    """
    try:
        # The Agg canvas, not pyplot: no GUI backend, no global state.
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        return False
    figure = Figure(figsize=(6.4, 4.2), layout="constrained")
    FigureCanvasAgg(figure)
    ax = figure.subplots()
    for runner in dict.fromkeys(p.runner for p in advice.predictions):
        points = [p for p in advice.predictions if p.runner == runner]
        workers = [p.workers for p in points]
        (line,) = ax.plot(workers, [p.wall for p in points], marker="o", label=runner)
        ax.fill_between(
            workers, [p.wall_low for p in points], [p.wall_high for p in points],
            color=line.get_color(), alpha=0.2,
        )
    best = advice.best
    ax.plot([best.workers], [best.wall], marker="*", markersize=14, color="black",
            linestyle="none", label=f"recommended: {best.runner} {best.workers}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("workers (log)")
    ax.set_ylabel("predicted wall (s, log; shaded: 5th to 95th percentile)")
    ax.set_title(f"{advice.hosts:,} hosts, predicted from a sample")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")
    part = path.with_name(path.name + ".part")
    figure.savefig(part, format="png", dpi=100)
    os.replace(part, path)
    return True
