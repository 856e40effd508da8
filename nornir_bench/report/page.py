"""``nornir-bench report RECORDS... -o report.html``: what runs did, as one self-contained HTML
page (no server, no network, nothing fetched: it opens offline and can be attached to a
ticket).

For each records file, and each step of a job of steps:

- the summary, as the terminal's (hosts, ok, failed, changed; the slowest);
- the failures grouped by cause: the exception type and its message with numbers, addresses
  and host names folded (``login refused by 10.0.0.7 after 3 s`` and ``... 10.0.0.9 after 5 s``
  are one cause), each with its count and hosts;
- a timeline of the hosts, start to end, coloured by outcome, failed attempts and the waits
  after them drawn in, canary batches marked; past :data:`TIMELINE_ROWS` hosts, the hosts
  (in the order they started) are drawn in as many rows, each row a run of hosts, and the
  hosts in flight over time are plotted beside it, so a page of 100,000 hosts stays small;
- the distribution of the hosts' times: a histogram and percentiles;
- for change jobs, each host's change state, backup and diff, filterable;
- each state check's values before and after, per host (:mod:`nornir_bench.report.checks`);
- a compliance check's verdict and remediation per host (:mod:`nornir_bench.report.compliance`).

The records are streamed and kept as numbers; the plots are matplotlib's, as inline SVG.
Secrets are already masked in the records; everything from them is HTML-escaped.
"""

from __future__ import annotations

import html
import io
import math
import os
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nornir_bench.bench.summary import change_counts, percentile
from nornir_bench.core.exceptions import NornirBenchError
from nornir_bench.core.wording import shortened
from nornir_bench.processors.records import RecordsRead, each_record
from nornir_bench.report.checks import CheckTable, checks_section
from nornir_bench.report.compliance import ComplianceTable, compliance_section

__all__ = ["TIMELINE_ROWS", "ReportError", "Written", "fold_cause", "write_report"]

TIMELINE_ROWS = 1_500
"""Hosts drawn one row each on the timeline at most; more are drawn in this many rows."""

MAX_CHANGES_SHOWN = 2_000
"""Change records whose diffs the page holds at most (the others are counted)."""

MAX_DIFF_CHARS = 20_000
"""A diff's characters the page holds at most."""

_HOSTS_NAMED = 20  # hosts named per failure cause
_KINDS = 200  # platforms and groups whose times are kept, at most (the first seen)
_KINDS_SHOWN = 30


class ReportError(NornirBenchError):
    """The page cannot be written (its folder, the disk): one line."""


@dataclass
class _Cause:
    exception: str
    folded: str
    example: str
    hosts: list[str] = field(default_factory=list)
    count: int = 0


@dataclass
class _Step:
    """One step of one run, as the page shows it."""

    label: str
    hosts: int = 0
    ok: int = 0
    failed: int = 0
    changed: int = 0
    elapsed: list[float] = field(default_factory=list)
    starts: list[float] = field(default_factory=list)
    ends: list[float] = field(default_factory=list)
    outcome: list[int] = field(default_factory=list)  # 0 ok, 1 failed, 2 ok after retries
    attempts: list[tuple[int, float, float]] = field(default_factory=list)  # row, ran, wait
    batches: dict[int, float] = field(default_factory=dict)  # batch -> its first start
    causes: dict[tuple[str, str], _Cause] = field(default_factory=dict)
    changes: list[dict[str, Any]] = field(default_factory=list)
    checks: CheckTable = field(default_factory=CheckTable)
    compliance: ComplianceTable = field(default_factory=ComplianceTable)
    change_states: dict[str, int] = field(default_factory=dict)
    slowest: list[tuple[float, str]] = field(default_factory=list)
    by_kind: dict[str, list[float]] = field(default_factory=dict)  # "platform ios" -> times

    def add(self, record: dict[str, Any]) -> None:
        self.hosts += 1
        failed = record.get("failed") is not False
        self.failed += failed
        self.ok += not failed
        self.changed += bool(record.get("changed"))
        elapsed = _number(record.get("elapsed"))
        if elapsed is not None:
            self.elapsed.append(elapsed)
            self.slowest.append((elapsed, record["host"]))
            if len(self.slowest) > 200:
                self.slowest = sorted(self.slowest, reverse=True)[:10]
            kinds = [f"platform {record['platform']}"] if record.get("platform") else []
            groups = record.get("groups")
            kinds += [f"group {g}" for g in groups[:10]] if isinstance(groups, list) else []
            for kind in kinds:
                if kind in self.by_kind or len(self.by_kind) < _KINDS:
                    self.by_kind.setdefault(kind, []).append(elapsed)
        start, end = _number(record.get("start")), _number(record.get("end"))
        if start is not None and end is not None:
            row = len(self.starts)
            self.starts.append(start)
            self.ends.append(end)
            tried = record.get("failed_attempts") or []
            self.outcome.append(1 if failed else 2 if tried else 0)
            at = start
            for attempt in tried if isinstance(tried, list) else ():
                ran = _number(attempt.get("seconds")) if isinstance(attempt, dict) else None
                wait = _number(attempt.get("wait")) if isinstance(attempt, dict) else None
                if ran is None:
                    break
                self.attempts.append((row, at, ran))
                at += ran + (wait or 0.0)
            batch = record.get("batch")
            if isinstance(batch, int):
                self.batches[batch] = min(self.batches.get(batch, start), start)
        if failed:
            self._cause(record)
        self.checks.add(record)
        self.compliance.add(record)
        change = record.get("change")
        if isinstance(change, dict) and "state" in change:
            state = str(change["state"])
            self.change_states[state] = self.change_states.get(state, 0) + 1
            if len(self.changes) < MAX_CHANGES_SHOWN:
                diff = str(record.get("diff") or "")
                self.changes.append({
                    "host": record["host"], "state": state,
                    "backup": change.get("backup"), "message": record.get("message"),
                    "diff": diff[:MAX_DIFF_CHARS] + ("\n... cut" if len(diff) > MAX_DIFF_CHARS
                                                     else ""),
                })

    def _cause(self, record: dict[str, Any]) -> None:
        exception = str(record.get("exception") or "failed")
        message = shortened(" ".join(str(record.get("message") or "").split()))
        folded = fold_cause(message, record["host"])
        cause = self.causes.get((exception, folded))
        if cause is None:
            cause = self.causes[(exception, folded)] = _Cause(exception, folded, message)
        cause.count += 1
        if len(cause.hosts) < _HOSTS_NAMED:
            cause.hosts.append(record["host"])


_ADDRESS = re.compile(
    r"\b(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?\b|\b(?:[0-9a-f]{0,4}:){2,7}[0-9a-f]{0,4}\b", re.I
)
_NUMBER = re.compile(r"\b\d+(?:\.\d+)?\b")
_PID = re.compile(r"\b(pid|process|worker process) \d+", re.I)


def fold_cause(message: str, host: str) -> str:
    """``message`` with what differs from host to host folded: the host's own name, addresses
    (IPv4, IPv6, with a port) and numbers."""
    if host:
        message = message.replace(host, "<host>")
    message = _ADDRESS.sub("<address>", message)
    message = _PID.sub(lambda m: f"{m.group(1)} <n>", message)
    return _NUMBER.sub("<n>", message)


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


@dataclass
class _Run:
    path: Path
    read: RecordsRead
    job: str | None = None
    run_start: str | None = None
    overrides: str | None = None  # what the command line changed in the job (run --limit ...)
    steps: dict[Any, _Step] = field(default_factory=dict)


def _load(path: Path) -> _Run:
    run = _Run(path, RecordsRead(path))
    for record in each_record(path, read=run.read):
        step = record.get("step")
        if step not in run.steps:
            task = record.get("task")
            label = f"step {step} {task}" if step is not None else str(task or "run")
            run.steps[step] = _Step(label)
        run.steps[step].add(record)
        if run.job is None and isinstance(record.get("job"), str):
            run.job = record["job"]
        if run.run_start is None and isinstance(record.get("run_start"), str):
            run.run_start = record["run_start"]
        given = record.get("overrides")
        if run.overrides is None and isinstance(given, dict) and given:
            run.overrides = ", ".join(f"{key} {value}" for key, value in given.items())
    return run


@dataclass(frozen=True)
class Written:
    """The page written: its path, the hosts it covers, its size in bytes, and notes (lines
    skipped in the records)."""

    path: Path
    hosts: int
    size: int
    notes: tuple[str, ...]


def write_report(records: Sequence[Path], output: Path, *, compare: Path | None = None) -> Written:
    """Write the page of the runs of ``records`` to ``output`` (see the module).

    Raises:
        RecordsFileError: a file cannot be read or is not a records file.
        ReportError: the page cannot be written.
    """
    try:
        import matplotlib  # noqa: F401 - the plots' library, in the extra "plot"
    except ImportError:
        raise ReportError(
            "nornir-bench report draws with matplotlib, which is not installed: "
            "python3 -m pip install 'nornir-bench[plot]'"
        ) from None
    runs = [_load(path) for path in records]
    comparison = None
    if compare is not None:
        from nornir_bench.report.compare import compare_runs

        comparison = compare_runs(compare, records[0])
    body = [_run_section(run) for run in runs]
    if comparison is not None:
        body.append(_comparison_section(comparison))
    hosts = sum(step.hosts for run in runs for step in run.steps.values())
    title = "nornir-bench report: " + ", ".join(path.name for path in records)
    page = _PAGE.format(title=_e(title), body="\n".join(body), total=hosts)
    notes = tuple(n for run in runs if (n := run.read.note()) is not None)
    if not output.parent.exists():  # made, and said: a mistyped folder shows
        notes += (f"report: made the folder {output.parent}, which was not there",)
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(
            "w", encoding="utf-8", dir=output.parent, prefix=f".{output.name}.", delete=False
        ) as file:
            file.write(page)
        os.replace(file.name, output)
    except OSError as exc:
        raise ReportError(f"{output}: cannot write the report: {exc.strerror or exc}") from None
    return Written(output, hosts, output.stat().st_size, notes)


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _run_section(run: _Run) -> str:
    parts = [f"<section class='run'><h2>{_e(run.path.name)}</h2>"]
    facts = [("job", run.job), ("started", run.run_start),
             ("from the command line", run.overrides)]
    parts.append("<p class='facts'>" + " · ".join(
        f"{name}: <code>{_e(value)}</code>" for name, value in facts if value) + "</p>")
    for step in run.steps.values():
        parts.append(_step_section(step))
    return "\n".join(parts) + "</section>"


def _step_section(step: _Step) -> str:
    summary = (f"<p class='summary' data-hosts='{step.hosts}' data-ok='{step.ok}' "
               f"data-failed='{step.failed}'>hosts: <b>{step.hosts:,}</b>, ok: "
               f"<b>{step.ok:,}</b>, failed: <b>{step.failed:,}</b>, changed: "
               f"{step.changed:,}")
    if step.change_states:
        summary += "; config: " + _e(change_counts(step.change_states))
    summary += "</p>"
    parts = [f"<h3>{_e(step.label)}</h3>", summary]
    if step.causes:
        parts.append(_causes(step))
    if step.starts:
        parts.append("<h4>Timeline</h4>" + _timeline(step))
    else:
        parts.append("<h4>Timeline</h4><p class='missing'>missing: these records hold no start "
                     "and end times (written before they were recorded, or by hand)</p>")
    if step.elapsed:
        parts.append("<h4>Time per host</h4>" + _latency(step))
    if step.changes:
        parts.append(_changes(step))
    parts.append(compliance_section(step.compliance))
    parts.append(checks_section(step.checks))
    return "\n".join(parts)


def _causes(step: _Step) -> str:
    rows = []
    for cause in sorted(step.causes.values(), key=lambda c: -c.count):
        more = cause.count - len(cause.hosts)
        hosts = ", ".join(cause.hosts) + (f", ... (+{more:,})" if more > 0 else "")
        rows.append(f"<tr><td class='n'>{cause.count:,}</td><td><code>{_e(cause.exception)}"
                    f"</code>: {_e(cause.folded)}<div class='example'>e.g. {_e(cause.example)}"
                    f"</div></td><td>{_e(hosts)}</td></tr>")
    return ("<h4>Failures by cause</h4><table class='causes'><tr><th>hosts</th><th>cause</th>"
            "<th>which</th></tr>" + "".join(rows) + "</table>")


def _latency(step: _Step) -> str:
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


def _by_kind(step: _Step) -> str:
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


def _timeline(step: _Step) -> str:
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


def _changes(step: _Step) -> str:
    rows = []
    for change in step.changes:
        diff = (f"<details><summary>diff</summary><pre>{_e(change['diff'])}</pre></details>"
                if change["diff"] else "")
        note = f"<div class='example'>{_e(change['message'])}</div>" if change["message"] else ""
        backup = f"<code>{_e(change['backup'])}</code>" if change["backup"] else ""
        rows.append(f"<tr data-state='{_e(change['state'])}' data-host='{_e(change['host'])}'>"
                    f"<td>{_e(change['host'])}</td><td>{_e(change['state'])}{note}</td>"
                    f"<td>{backup}</td><td>{diff}</td></tr>")
    total = sum(step.change_states.values())
    more = (f"<p>showing the first {len(step.changes):,} of {total:,}: the records hold "
            "every one</p>" if total > len(step.changes) else "")
    return ("<h4>Changes</h4><p><input class='filter' placeholder='filter: host or state' "
            "oninput='filterChanges(this)'></p><table class='changes'><tr><th>host</th>"
            "<th>state</th><th>backup</th><th>diff</th></tr>" + "".join(rows) + "</table>"
            + more)


def _comparison_section(comparison: Any) -> str:
    counts = comparison.counts()
    head = ", ".join(f"{kind}: {n:,}" for kind, n in counts.items())
    rows = []
    for change in comparison.changes[:MAX_CHANGES_SHOWN]:
        diff = (f"<details><summary>diff</summary><pre>{_e(change.diff[:MAX_DIFF_CHARS])}</pre>"
                "</details>" if change.diff else "")
        cause = _e(change.new_cause or change.old_cause or "") + "".join(
            f"<div class='example'>{_e(drift.said())}</div>" for drift in change.drift)
        rows.append(f"<tr><td>{_e(change.kind)}</td><td>{_e(change.label())}</td>"
                    f"<td>{cause}</td><td>{diff}</td></tr>")
    return (f"<section class='compare'><h2>Compared with {_e(comparison.old.path.name)}</h2>"
            f"<p class='summary' data-differ='{len(comparison.changes)}'>{_e(head)}, same: "
            f"{comparison.same:,}</p><table><tr><th>change</th><th>host</th><th>cause</th>"
            "<th>output</th></tr>" + "".join(rows) + "</table></section>")


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


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
body {{ font: 14px/1.4 system-ui, sans-serif; margin: 1.5em auto; max-width: 72em;
       color: #222; padding: 0 1em; }}
h2 {{ border-bottom: 1px solid #ccc; }} code {{ font-size: 90%; }}
table {{ border-collapse: collapse; margin: .5em 0; }}
td, th {{ border: 1px solid #ddd; padding: .25em .5em; vertical-align: top; text-align: left; }}
td.n {{ text-align: right; }} .example {{ color: #666; font-size: 85%; }}
pre {{ white-space: pre-wrap; font-size: 85%; max-height: 30em; overflow: auto; }}
.plot svg {{ width: 100%; height: auto; }} .summary b {{ font-size: 110%; }}
</style></head>
<body data-hosts="{total}">
<h1>{title}</h1>
{body}
<script>
window.addEventListener("error", function (e) {{
  document.body.dataset.errors = (document.body.dataset.errors || "") + e.message + ";";
}});
function filterChanges(box) {{
  var text = box.value.toLowerCase();
  var table = box.closest("p").nextElementSibling;
  Array.prototype.forEach.call(table.querySelectorAll("tr[data-host]"), function (row) {{
    var hit = (row.dataset.host + " " + row.dataset.state).toLowerCase().indexOf(text) >= 0;
    row.style.display = hit ? "" : "none";
  }});
}}
document.body.dataset.ready = "1";
</script>
</body></html>
"""
