"""State checks in records files: each record's ``checks`` (as
``tasks.state_checks.CheckOutcome.record`` writes them) as a table of the report page, their
values before and after per host.

Records come from devices, and may be written by hand: every key is read as it may be.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from nornir_bench.core.wording import shortened

__all__ = [
    "MAX_CHECKS_SHOWN",
    "VALUE_SHOWN",
    "CheckTable",
    "checks_section",
    "value_text",
]

MAX_CHECKS_SHOWN = 2_000
"""Checks the page's table holds at most, the failed first (the others are counted)."""

VALUE_SHOWN = 120
"""A check's value, as JSON, in about this many characters at most on the page and in diff's
text: past it, its middle is cut (records and ``diff --json`` hold it whole)."""

_VERDICTS = {True: "held", False: "FAILED", None: "not read after"}
_FAILED_STYLE = " style='color:#c8453b'"  # the timeline's red


def value_text(value: Any, limit: int = VALUE_SHOWN) -> str:
    """``value`` as one line of JSON, its middle cut past ``limit`` characters."""
    return shortened(_canonical(value), limit)


def _canonical(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


@dataclass(frozen=True)
class _Row:
    host: str
    name: str
    on: str
    expect: str
    before: str  # "" when not read
    after: str
    held: bool | None
    failure: str


@dataclass
class CheckTable:
    """The state checks of one step's records: counted, and the first
    :data:`MAX_CHECKS_SHOWN` kept as rows (failed ones first), their values shortened."""

    total: int = 0
    failed: int = 0
    unread: int = 0  # not read after (a dry run)
    _failed_rows: list[_Row] = field(default_factory=list, init=False, repr=False)
    _other_rows: list[_Row] = field(default_factory=list, init=False, repr=False)

    def add(self, record: Mapping[str, Any]) -> None:
        checks = record.get("checks")
        for item in checks if isinstance(checks, list) else ():
            if not isinstance(item, dict):
                continue
            held = item.get("held") if isinstance(item.get("held"), bool) else None
            self.total += 1
            self.failed += held is False
            self.unread += held is None
            rows = self._failed_rows if held is False else self._other_rows
            if len(rows) < MAX_CHECKS_SHOWN:
                rows.append(_row(str(record["host"]), item, held))

    def rows(self) -> list[_Row]:
        """The rows shown: the failed first, then the others, in the records' order."""
        return (self._failed_rows + self._other_rows)[:MAX_CHECKS_SHOWN]


def _row(host: str, item: Mapping[str, Any], held: bool | None) -> _Row:
    expect = str(item.get("expect"))
    before = item.get("before")
    # Before is null in an audit (no change to compare with): shown where it is a value read,
    # or what the check compares with.
    shown_before = before is not None or expect in ("same", "no_fewer")
    if expect == "equals":
        expect += " " + value_text(item.get("value"))
    on = item.get("host")
    return _Row(
        host=host, name=str(item.get("name")), on=str(on) if on is not None else host,
        expect=expect, before=value_text(before) if shown_before else "",
        after=value_text(item.get("after")) if held is not None else "", held=held,
        failure=shortened(str(item["failure"])) if item.get("failure") is not None else "",
    )


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def checks_section(table: CheckTable) -> str:
    """The table of a step's checks, for the report page ("" when its records hold none)."""
    if not table.total:
        return ""
    rows = []
    for row in table.rows():
        verdict = _VERDICTS[row.held]
        rows.append(
            f"<tr data-host='{_e(row.host)}' data-state='{_e(verdict)}'><td>{_e(row.host)}</td>"
            f"<td>{_e(row.name)}</td><td>{_e(row.on)}</td><td>{_e(row.expect)}</td>"
            f"<td><code>{_e(row.before)}</code></td><td><code>{_e(row.after)}</code></td>"
            f"<td{_FAILED_STYLE if row.held is False else ''}>{verdict}</td>"
            f"<td>{_e(row.failure)}</td></tr>"
        )
    held = table.total - table.failed - table.unread
    counts = f"{table.total:,} checks: {held:,} held, {table.failed:,} FAILED" + (
        f", {table.unread:,} not read after" if table.unread else "")
    shown = len(rows)
    more = (f"<p>showing {shown:,} of {table.total:,}, the failed first: the records hold "
            "every one</p>" if table.total > shown else "")
    return (f"<h4>State checks</h4><p class='checks' data-checks='{table.total}' "
            f"data-checks-failed='{table.failed}'>{counts}</p><p><input class='filter' "
            "placeholder='filter: host or held/FAILED' oninput='filterChanges(this)'></p>"
            "<table class='checks'><tr><th>host</th><th>check</th><th>on</th><th>expect</th>"
            "<th>before</th><th>after</th><th>held</th><th>failure</th></tr>" + "".join(rows)
            + "</table>" + more)

