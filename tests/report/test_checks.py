"""State checks in records files (``checks``): their table on the report page; records written
by hand."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest

from nornir_bench.report import checks as report_checks
from nornir_bench.report.page import write_report


def write(path: Path, *rows: dict[str, Any]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def check(name: str, *, host: str | None = None, expect: str = "present", before: Any = None,
          after: Any = None, held: bool | None = True, failure: str | None = None,
          **value: Any) -> dict[str, Any]:
    """A check's outcome as ``CheckOutcome.record`` writes it."""
    return {"name": name, "host": host, "command": "show bgp summary json", "path": None,
            "expect": expect, **value, "before": before, "after": after, "held": held,
            "failure": failure}


def record(host: str, checks: Any = None, *, failed: bool = False, result: str = "ok",
           task: str = "check_state", **more: Any) -> dict[str, Any]:
    return {"host": host, "step": 1, "task": task, "failed": failed, "result": result,
            "exception": "StateCheckFailed" if failed else None,
            "message": "1 of 1 checks failed" if failed else None, "checks": checks, **more}


def table_rows(page: str) -> list[list[str]]:
    """The state checks table's rows, each its cells' text (HTML entities read)."""
    table = page.split("<table class='checks'>", 1)[1].split("</table>", 1)[0]
    return [[html.unescape(re.sub(r"<[^>]+>", "", cell))
             for cell in re.findall(r"<td[^>]*>(.*?)</td>", row)]
            for row in re.findall(r"<tr data-host=.*?</tr>", table)]


HOSTILE = "<script>document.body.dataset.pwned = '1'</script>"
NAME = "motd' onmouseover='alert(1)"  # quotes, escaped wherever the name is shown


def change_run(path: Path) -> Path:
    """A change step: r1's check held, r2's failed, r3's read a hostile value, r4 a dry run,
    r5 an older record without ``checks``, r6 a host whose checks were null."""
    return write(
        path,
        record("r1", [check("r2 sessions", host="r2", expect="no_fewer", before=2, after=2)],
               task="send_config"),
        record("r2", [check("r2 sessions", host="r1", expect="no_fewer", before=2, after=1,
                            held=False, failure="was 2, now 1: fewer")], failed=True,
               task="send_config"),
        record("r3", [check(NAME, expect="equals", value="hello", after=HOSTILE, held=False,
                            failure=f"{HOSTILE!r}, not 'hello'")], failed=True,
               task="send_config"),
        record("r4", [check("routes", expect="same", before=list(range(500)), held=None)],
               task="send_config"),
        {"host": "r5", "step": 1, "task": "send_config", "failed": False, "result": "ok"},
        record("r6", None, task="send_config"),
    )


def test_the_page_shows_each_check_before_and_after_per_host_escaped(tmp_path: Path) -> None:
    records = change_run(tmp_path / "run.jsonl")
    write_report([records], tmp_path / "page.html")
    page = (tmp_path / "page.html").read_text()
    assert "data-checks='4' data-checks-failed='2'>4 checks: 1 held, 2 FAILED, 1 not read " \
        "after" in page
    rows = table_rows(page)
    # The failed first; columns: host, check, on, expect, before, after, held, failure.
    assert rows[0] == ["r2", "r2 sessions", "r1", "no_fewer", "2", "1", "FAILED",
                       "was 2, now 1: fewer"]
    assert rows[1][:7] == ["r3", NAME, "r3", 'equals "hello"', "", json.dumps(HOSTILE),
                           "FAILED"]
    assert rows[2] == ["r1", "r2 sessions", "r2", "no_fewer", "2", "2", "held", ""]
    host, name, on, expect, before, after, held, failure = rows[3]
    assert (host, name, expect, after, held) == ("r4", "routes", "same", "", "not read after")
    assert before.startswith("[0, 1, 2,") and before.endswith("498, 499]")  # cut in its middle
    assert "characters cut" in before and len(before) < 160
    assert [row[0] for row in rows] == ["r2", "r3", "r1", "r4"]  # none for r5 and r6
    # Device values are text on the page, never markup: the page's own script is its only one.
    assert page.count("<script>") == 1
    assert "&lt;script&gt;document.body.dataset.pwned" in page
    assert "onmouseover='" not in page


def test_the_table_is_bounded_and_keeps_the_failed_checks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(report_checks, "MAX_CHECKS_SHOWN", 2)
    records = write(tmp_path / "run.jsonl", *(
        record(f"h{i}", [check("up", after=True, held=i != 7, failure=None if i != 7 else "x")])
        for i in range(10)))
    write_report([records], tmp_path / "page.html")
    page = (tmp_path / "page.html").read_text()
    assert [(row[0], row[6]) for row in table_rows(page)] == [("h7", "FAILED"), ("h0", "held")]
    assert "showing 2 of 10, the failed first: the records hold every one" in page


def test_checks_that_are_not_what_records_hold_are_skipped_not_a_traceback(
    tmp_path: Path,
) -> None:
    write(tmp_path / "run.jsonl", record("r1", "many"),
          record("r2", [1, None, {"name": ["x"], "held": "yes"}]))
    write_report([tmp_path / "run.jsonl"], tmp_path / "page.html")
    assert table_rows((tmp_path / "page.html").read_text()) == [
        ["r2", "['x']", "r2", "None", "", "", "not read after", ""]]
