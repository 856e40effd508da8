"""State checks in records files (``checks``): their table on the report page, and the checks
whose state drifted between two runs in ``nornir-bench diff``; records written by hand."""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nornir_bench.report import checks as report_checks
from nornir_bench.report.compare import compare_runs
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


def diff(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "nornir_bench", "diff", *map(str, args)],
                          cwd=cwd, capture_output=True, text=True, timeout=60, check=False)


def test_diff_names_each_check_whose_state_drifted(tmp_path: Path) -> None:
    established = check("peer state", expect="equals", value="Established", after="Established")
    old = write(
        tmp_path / "old.jsonl",
        record("r1", [check("r2 sessions", host="r2", expect="no_fewer", before=2, after=2)],
               task="send_config", result="changed"),
        record("r2", [established]),
        record("r3", [check("routes", after=["10.0.0.0/8"])], result="routes present"),
        {"host": "r4", "step": 1, "task": "check_state", "failed": False, "result": "ok"},
        record("r5", [check("peers", expect="same", before=3, held=None)], result="dry run"),
        record("r6", [check("up", after=True)]),
        record("r7", [check("peers", expect="same", before=2, after=2)], task="send_config"),
    )
    new = write(
        tmp_path / "new.jsonl",
        record("r1", [check("r2 sessions", host="r2", expect="no_fewer", before=2, after=1,
                            held=False, failure="was 2, now 1: fewer")],
               task="send_config", result="changed", failed=True),
        record("r2", [established]),
        record("r3", [check("routes", after=["10.0.0.0/8", "10.1.0.0/16"])],
               result="routes present"),
        record("r4", [check("up", after=True)]),  # older records held no checks: no drift
        record("r5", [check("peers", expect="same", before=4, held=None)], result="dry run"),
        record("r6", [check("up", after=True), check("down", expect="absent", after=None)]),
        record("r7", [check("peers", expect="same", before=3, after=2, held=False,
                            failure="was 3, now 2")], task="send_config", failed=True),
    )
    done = diff(old, new, "--no-diffs", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == ("newly failed: 2, fixed: 0, still failing: 0, added: 0, missing: 0, "
                        "output changed: 3, same: 2")
    assert "  r1: check 'r2 sessions' on r2: 2 -> 1: held, now FAILED (was 2, now 1: fewer)" \
        in lines
    # Held in both, the value drifted; the output's text the same: changed by its checks alone.
    assert "output changed: r3" in lines
    assert '  r3: check \'routes\': ["10.0.0.0/8"] -> ["10.0.0.0/8", "10.1.0.0/16"]' in lines
    assert "  r5: check 'peers': 3 -> 4" in lines  # not read after: its value before
    assert "  r6: check 'down': only in NEW: null" in lines
    # The same value after the change, yet no longer what the check expects.
    assert "  r7: check 'peers': 2 in both: held, now FAILED (was 3, now 2)" in lines
    assert not any(line.startswith(("  r2:", "  r4:")) for line in lines)
    as_json = json.loads(diff(old, new, "--json", cwd=tmp_path).stdout)
    by_host = {change["host"]: change for change in as_json["changes"]}
    assert sorted(by_host) == ["r1", "r3", "r5", "r6", "r7"]
    assert by_host["r1"]["checks"] == [{
        "name": "r2 sessions", "host": "r2", "old": 2, "new": 1, "old_held": True,
        "new_held": False, "failure": "was 2, now 1: fewer", "only": None}]
    assert by_host["r3"]["checks"][0]["new"] == ["10.0.0.0/8", "10.1.0.0/16"]
    assert by_host["r3"]["diff"] == ""
    write_report([new], tmp_path / "page.html", compare=old)  # the page's comparison too
    page = (tmp_path / "page.html").read_text()
    assert html.escape("check 'r2 sessions' on r2: 2 -> 1: held, now FAILED") in page


def test_checks_held_with_the_same_values_are_no_drift(tmp_path: Path) -> None:
    """The same values in both runs (keys of a mapping in another order too): the same."""
    old = write(tmp_path / "old.jsonl", record("r1", [
        check("peers", host="r2", after={"a": "Established", "b": "Established"}),
        check("peers", host="r3", after=2)]))
    new = write(tmp_path / "new.jsonl", record("r1", [
        check("peers", host="r3", after=2),
        check("peers", host="r2", after={"b": "Established", "a": "Established"})]))
    comparison = compare_runs(old, new)
    assert comparison.changes == [] and comparison.same == 1
    assert not comparison.differ
    itself = diff(new, new, cwd=tmp_path)
    assert itself.returncode == 0, itself.stdout
    assert "check" not in itself.stdout


def test_a_host_still_failing_for_the_same_cause_with_a_check_drifted_differs(
    tmp_path: Path,
) -> None:
    old = write(tmp_path / "old.jsonl", record("r1", [
        check("up", expect="equals", value=2, after=1, held=False, failure="1, not 2")],
        failed=True))
    new = write(tmp_path / "new.jsonl", record("r1", [
        check("up", expect="equals", value=2, after=0, held=False, failure="0, not 2")],
        failed=True))
    comparison = compare_runs(old, new)
    assert [(c.kind, [d.said() for d in c.drift]) for c in comparison.changes] == [
        ("still failing", ["check 'up': 1 -> 0"])]
    assert comparison.differ


def test_checks_that_are_not_what_records_hold_are_skipped_not_a_traceback(
    tmp_path: Path,
) -> None:
    hostile = [record("r1", "many"), record("r2", [1, None, {"name": ["x"], "held": "yes"}])]
    write(tmp_path / "old.jsonl", *hostile)
    write(tmp_path / "new.jsonl", *hostile)
    done = diff("old.jsonl", "new.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    write_report([tmp_path / "new.jsonl"], tmp_path / "page.html")
    assert table_rows((tmp_path / "page.html").read_text()) == [
        ["r2", "['x']", "r2", "None", "", "", "not read after", ""]]
