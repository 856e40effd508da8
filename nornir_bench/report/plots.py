"""The report page's figures of a step, as inline SVG drawn by matplotlib: the timeline of its
hosts (and hosts in flight over time), the histogram and percentiles of their times, and the
times per platform and group.
"""

from __future__ import annotations

import html
import io
import math
import re
from typing import Any

from nornir_bench.bench.summary import percentile
from nornir_bench.report.aggregate import StepView

__all__ = ["TIMELINE_ROWS", "latency", "timeline"]

TIMELINE_ROWS = 1_500
"""Hosts drawn one row each on the timeline at most; more are drawn in this many rows."""

_KINDS_SHOWN = 30


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def latency(step: StepView) -> str:
    """The histogram and percentiles of the step's times, its slowest hosts, and its times per
    platform and group."""
    times = sorted(step.elapsed)
    marks = {p: percentile(times, p) or 0.0 for p in (50, 90, 95, 99, 100)}
    cells = "".join(f"<td>{'max' if p == 100 else f'p{p}'}: {_seconds(v)}</td>"
                    for p, v in marks.items())
    slowest = sorted(step.slowest, reverse=True)[:10]
    figure, axes = _figure(3.2)
    axes.hist(times, bins=min(60, max(5, int(math.sqrt(len(times))))), color="#4878a8")
    axes.set_xlabel("seconds")
    axes.set_ylabel("hosts")
    return (_svg(figure) + f"<table class='pct'><tr>{cells}</tr></table><p class='slowest'>"
            "slowest: " + ", ".join(f"{_e(h)} ({_seconds(s)})" for s, h in slowest) + "</p>"
            + _by_kind(step))


def _by_kind(step: StepView) -> str:
    """Times per platform and per group, the largest first, when there is more than one."""
    if len(step.by_kind) < 2:
        return ""
    rows = []
    for kind, times in sorted(step.by_kind.items(), key=lambda kv: -len(kv[1]))[:_KINDS_SHOWN]:
        times.sort()
        cells = "".join(f"<td>{_seconds(percentile(times, p) or 0.0)}</td>" for p in (50, 95, 100))
        rows.append(f"<tr><td>{_e(kind)}</td><td class='n'>{len(times):,}</td>{cells}</tr>")
    return ("<table class='kinds'><tr><th>platform / group</th><th>hosts</th><th>p50</th>"
            "<th>p95</th><th>max</th></tr>" + "".join(rows) + "</table>")


def _seconds(value: float) -> str:
    return f"{value * 1e3:.1f} ms" if value < 1 else f"{value:.2f} s"


_COLOURS = ("#3a9a5b", "#c8453b", "#e0a030")  # ok, failed, ok after retries


def timeline(step: StepView) -> str:
    """The hosts start to end, in rows past :data:`TIMELINE_ROWS`, and the hosts in flight."""
    from matplotlib.collections import LineCollection

    order = sorted(range(len(step.starts)), key=step.starts.__getitem__)
    count = len(order)
    per_row = max(1, math.ceil(count / TIMELINE_ROWS))
    rows = math.ceil(count / per_row)
    segments, colours = [], []
    row_of = {}
    for row in range(rows):
        chunk = order[row * per_row:(row + 1) * per_row]
        start = min(step.starts[i] for i in chunk)
        end = max(step.ends[i] for i in chunk)
        worst = max((step.outcome[i] for i in chunk), key=(0, 2, 1).index)
        segments.append([(start, row), (end, row)])
        colours.append(_COLOURS[worst])
        for i in chunk:
            row_of[i] = row
    tried = [([(at, row_of[i]), (at + ran, row_of[i])]) for i, at, ran in step.attempts]
    figure, (axes, flight) = _figure(5.5, rows=2)
    width = max(0.5, min(2.5, 600 / rows))
    axes.add_collection(LineCollection(segments, colors=colours, linewidths=width))
    if tried:
        axes.add_collection(LineCollection(tried, colors="#7a1f1a", linewidths=width))
    for batch, at in sorted(step.batches.items()):
        axes.axvline(at, color="#888", linewidth=0.8, linestyle="--")
        axes.annotate(f"batch {batch}", (at, 0), fontsize=7, color="#555",
                      xytext=(2, 2), textcoords="offset points")
    axes.autoscale()
    axes.invert_yaxis()
    axes.set_ylabel("hosts, in order of start" + (f" ({per_row:,} a row)" if per_row > 1
                                                   else ""))
    moments = sorted([(t, 1) for t in step.starts] + [(t, -1) for t in step.ends])
    times, levels, level = [0.0], [0], 0
    for moment, delta in moments:
        level += delta
        times.append(moment)
        levels.append(level)
    if len(times) > 4_000:  # drawn as a step line: every n-th change is enough to see it
        keep = math.ceil(len(times) / 4_000)
        times, levels = times[::keep] + times[-1:], levels[::keep] + levels[-1:]
    flight.step(times, levels, where="post", color="#4878a8")
    flight.set_xlabel("seconds from the run's start")
    flight.set_ylabel("in flight")
    legend = ("<p class='legend'><span style='color:#3a9a5b'>■</span> ok "
              "<span style='color:#e0a030'>■</span> ok after retries "
              "<span style='color:#c8453b'>■</span> failed "
              "<span style='color:#7a1f1a'>■</span> a failed attempt (then its wait)</p>")
    return _svg(figure) + legend


def _figure(height: float, rows: int = 1) -> tuple[Any, Any]:
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    figure = Figure(figsize=(10, height), layout="constrained")
    if rows == 1:
        return figure, figure.subplots()
    return figure, figure.subplots(rows, 1, sharex=True, height_ratios=[3, 1])


def _svg(figure: Any) -> str:
    import matplotlib

    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "nornir-bench"}):
        figure.savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    text = _SVG_METADATA.sub("", text[text.index("<svg"):])  # names of vocabularies, no data
    return "<div class='plot'>" + text + "</div>"


_SVG_METADATA = re.compile(r"<metadata>.*?</metadata>\s*|\s+xmlns:(?:dc|cc|rdf)=\"[^\"]*\"",
                           re.S)
