"""State checks in records files: each record's ``checks`` (as
``tasks.checks.check_outcomes.CheckOutcome.record`` writes them) as a table of the report page,
their values before and after per host; and, for ``nornir-bench diff``, how a host's checks
drifted between two runs.

Records come from devices, and may be written by hand: every key is read as it may be.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nornir_bench.core.wording import shortened
from nornir_bench.processors.host_record import HostRecord

__all__ = [
    "MAX_CHECKS_SHOWN",
    "VALUE_SHOWN",
    "CheckDrift",
    "CheckTable",
    "checks_digest",
    "checks_section",
    "drifted",
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

    def add(self, record: HostRecord) -> None:
        for item in record.checks or ():
            held = item.get("held") if isinstance(item.get("held"), bool) else None
            self.total += 1
            self.failed += held is False
            self.unread += held is None
            rows = self._failed_rows if held is False else self._other_rows
            if len(rows) < MAX_CHECKS_SHOWN:
                rows.append(_row(record.host, item, held))

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


# -- drift between two runs --------------------------------------------------------------------

_Key = tuple[str, str | None, int]  # name, host read on (None: the record's), occurrence


def _keyed(checks: Sequence[Mapping[str, Any]] | None) -> dict[_Key, Mapping[str, Any]] | None:
    if checks is None:
        return None
    keyed: dict[_Key, Mapping[str, Any]] = {}
    seen: dict[tuple[str, str | None], int] = {}  # two checks may share a name
    for item in checks:
        on = item.get("host")
        named = (str(item.get("name")), None if on is None else str(on))
        seen[named] = seen.get(named, -1) + 1
        keyed[(named[0], named[1], seen[named])] = item
    return keyed


def _state(item: Mapping[str, Any]) -> tuple[Any, bool | None]:
    """A check's value (after the change, or as an audit read it; before, when it was not read
    after) and whether it held."""
    held = item.get("held") if isinstance(item.get("held"), bool) else None
    read_after = held is not None or item.get("after") is not None
    return item.get("after") if read_after else item.get("before"), held


def checks_digest(checks: Sequence[Mapping[str, Any]] | None) -> int | None:
    """A digest of the checks' states (:func:`_state`), within this process: equal states,
    equal digests; ``None`` when the record holds no checks."""
    keyed = _keyed(checks)
    if keyed is None:
        return None
    states = sorted((repr(key), _canonical(state[0]), state[1])
                    for key, state in ((key, _state(item)) for key, item in keyed.items()))
    return hash(repr(states))


@dataclass(frozen=True)
class CheckDrift:
    """A check of one host whose state differs between two runs: its value, or whether it held
    (a check in one run only: ``only`` names the run)."""

    name: str
    on: str | None  # the host it was read on; None: the record's own
    old: Any = None
    new: Any = None
    old_held: bool | None = None
    new_held: bool | None = None
    failure: str | None = None  # why it failed in the new run
    only: str | None = None  # "old", "new"

    def said(self) -> str:
        """``check 'r2 sessions' on r2: 2 -> 1: held, now FAILED (was 2, now 1: fewer)``."""
        head = f"check {self.name!r}" + (f" on {self.on}" if self.on else "")
        if self.only is not None:
            value = self.old if self.only == "old" else self.new
            return f"{head}: only in {self.only.upper()}: {value_text(value)}"
        if _canonical(self.old) == _canonical(self.new):
            text = f"{head}: {value_text(self.new)} in both"
        else:
            text = f"{head}: {value_text(self.old)} -> {value_text(self.new)}"
        if None not in (self.old_held, self.new_held) and self.old_held != self.new_held:
            text += f": {_VERDICTS[self.old_held]}, now {_VERDICTS[self.new_held]}"
            if self.failure:
                text += f" ({shortened(self.failure)})"
        return text

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "host": self.on, "old": self.old, "new": self.new,
                "old_held": self.old_held, "new_held": self.new_held,
                "failure": self.failure, "only": self.only}


def drifted(
    old_checks: Sequence[Mapping[str, Any]] | None, new_checks: Sequence[Mapping[str, Any]] | None
) -> list[CheckDrift]:
    """The checks whose state differs between a host's two records' ``checks``: the value
    (:func:`_state`) or held and failed; none when either record holds no checks (older
    records, a host that failed before reading them)."""
    old, new = _keyed(old_checks), _keyed(new_checks)
    if old is None or new is None:
        return []
    drifts = []
    for key, item in new.items():
        value, held = _state(item)
        failure = None if item.get("failure") is None else str(item["failure"])
        if key not in old:
            drifts.append(CheckDrift(key[0], key[1], new=value, new_held=held, only="new"))
            continue
        was, was_held = _state(old[key])
        flipped = None not in (was_held, held) and was_held != held
        if flipped or _canonical(was) != _canonical(value):
            drifts.append(CheckDrift(key[0], key[1], was, value, was_held, held, failure))
    drifts += [CheckDrift(key[0], key[1], old=_state(item)[0], old_held=_state(item)[1],
                          only="old") for key, item in old.items() if key not in new]
    return drifts
