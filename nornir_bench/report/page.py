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
The page's numbers are :mod:`nornir_bench.report.aggregate`'s, its figures
:mod:`nornir_bench.report.plots`'.
"""

from __future__ import annotations

import html
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from nornir_bench.bench.summary import change_counts
from nornir_bench.core.exceptions import NornirBenchError
from nornir_bench.report.aggregate import (
    MAX_CHANGES_SHOWN,
    MAX_DIFF_CHARS,
    RunView,
    StepView,
    load_run,
)
from nornir_bench.report.checks import checks_section
from nornir_bench.report.compliance import compliance_section
from nornir_bench.report.plots import latency, timeline

if TYPE_CHECKING:
    from nornir_bench.report.compare import Comparison, Side

__all__ = ["ReportError", "Written", "write_report"]


class ReportError(NornirBenchError):
    """The page cannot be written (its folder, the disk): one line."""



@dataclass(frozen=True)
class Written:
    """The page written: its path, the hosts it covers, its size in bytes, and notes (lines
    skipped in the records)."""

    path: Path
    hosts: int
    size: int
    notes: tuple[str, ...]


def write_report(
    records: Sequence[Path],
    output: Path,
    *,
    compare: Path | None = None,
    compared: tuple[Side, Side] | None = None,
) -> Written:
    """Write the page of the runs of ``records`` to ``output`` (see the module), with the
    comparison of the first run with ``compare``'s, or of ``compared``'s two sides (records
    files or commits: :func:`nornir_bench.report.sides.report_sides`).

    Raises:
        RecordsFileError: a file cannot be read or is not a records file.
        RepositoryError: a commit's files cannot be read.
        ReportError: the page cannot be written.
    """
    try:
        import matplotlib  # noqa: F401 - the plots' library, in the extra "plot"
    except ImportError:
        raise ReportError(
            "nornir-bench report draws with matplotlib, which is not installed: "
            "python3 -m pip install 'nornir-bench[plot]'"
        ) from None
    runs = [load_run(path) for path in records]
    comparison = None
    if compared is None and compare is not None:
        from nornir_bench.report.compare import RecordsSide

        compared = (RecordsSide(compare), RecordsSide(records[0]))
    if compared is not None:
        from nornir_bench.report.compare import compare_sides

        comparison = compare_sides(*compared)
    body = [_run_section(run) for run in runs]
    if comparison is not None:
        body.append(_comparison_section(comparison))
    hosts = sum(step.hosts for run in runs for step in run.steps.values())
    if not runs and comparison is not None:  # two commits: the hosts compared
        hosts = comparison.same + len(comparison.changes)
    names = [path.name for path in records]
    if comparison is not None and comparison.new.label not in map(str, records):
        names.insert(0, comparison.new.name)  # a commit: a side with no section of its own
    title = "nornir-bench report: " + ", ".join(names)
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


def _run_section(run: RunView) -> str:
    parts = [f"<section class='run'><h2>{_e(run.path.name)}</h2>"]
    facts = [("job", run.job), ("started", run.run_start),
             ("from the command line", run.overrides)]
    parts.append("<p class='facts'>" + " · ".join(
        f"{name}: <code>{_e(value)}</code>" for name, value in facts if value) + "</p>")
    for step in run.steps.values():
        parts.append(_step_section(step))
    return "\n".join(parts) + "</section>"


def _step_section(step: StepView) -> str:
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
        parts.append("<h4>Timeline</h4>" + timeline(step))
    else:
        parts.append("<h4>Timeline</h4><p class='missing'>missing: these records hold no start "
                     "and end times (written before they were recorded, or by hand)</p>")
    if step.elapsed:
        parts.append("<h4>Time per host</h4>" + latency(step))
    if step.changes:
        parts.append(_changes(step))
    parts.append(compliance_section(step.compliance))
    parts.append(checks_section(step.checks))
    return "\n".join(parts)


def _causes(step: StepView) -> str:
    rows = []
    for cause in sorted(step.causes.values(), key=lambda c: -c.count):
        more = cause.count - len(cause.hosts)
        hosts = ", ".join(cause.hosts) + (f", ... (+{more:,})" if more > 0 else "")
        rows.append(f"<tr><td class='n'>{cause.count:,}</td><td><code>{_e(cause.exception)}"
                    f"</code>: {_e(cause.folded)}<div class='example'>e.g. {_e(cause.example)}"
                    f"</div></td><td>{_e(hosts)}</td></tr>")
    return ("<h4>Failures by cause</h4><table class='causes'><tr><th>hosts</th><th>cause</th>"
            "<th>which</th></tr>" + "".join(rows) + "</table>")


def _changes(step: StepView) -> str:
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


def _comparison_section(comparison: Comparison) -> str:
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
    notes = "".join(f"<p class='note'>{_e(note)}</p>" for note in comparison.notes())
    return (f"<section class='compare'><h2>{_e(comparison.new.name)} compared with "
            f"{_e(comparison.old.name)}</h2>"
            f"<p class='summary' data-differ='{len(comparison.changes)}'>{_e(head)}, same: "
            f"{comparison.same:,}</p>{notes}<table><tr><th>change</th><th>host</th>"
            "<th>cause</th><th>output</th></tr>" + "".join(rows) + "</table></section>")


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
