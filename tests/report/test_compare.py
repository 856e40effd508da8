"""``nornir-bench diff OLD NEW``: two runs compared from their records files, real ones and
written by hand (drift of a device's output, lines cut short, files that are not records)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from nornir_bench.report.compare import compare_runs


def write(path: Path, *rows: dict[str, Any], tail: str = "") -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows) + tail)
    return path


def row(host: str, *, failed: bool = False, result: Any = "ok", message: str | None = None,
        step: int = 1) -> dict[str, Any]:
    return {"host": host, "step": step, "failed": failed, "result": result,
            "exception": "DeviceError" if failed else None, "message": message}


def diff(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "nornir_bench", "diff", *map(str, args)],
                          cwd=cwd, capture_output=True, text=True, timeout=60, check=False)


def test_each_kind_of_difference_is_found_and_drift_is_a_unified_diff(tmp_path: Path) -> None:
    old = write(tmp_path / "old.jsonl",
                row("r1", result="hostname r1\nip route 10.0.0.0/8 Null0\n"),
                row("r2", failed=True, message="timed out after 3 s"),
                row("r3"), row("r4", failed=True, message="refused"), row("r5"), row("gone"))
    new = write(tmp_path / "new.jsonl",
                row("r1", result="hostname r1\nip route 10.0.0.0/9 Null0\n"),
                row("r2"), row("r3", failed=True, message="auth failed"),
                row("r4", failed=True, message="refused again"), row("r5"), row("r6"))
    comparison = compare_runs(old, new)
    assert [(c.kind, c.host) for c in comparison.changes] == [
        ("newly failed", "r3"), ("fixed", "r2"), ("still failing", "r4"), ("added", "r6"),
        ("missing", "gone"), ("output changed", "r1"),
    ]
    assert comparison.same == 1
    drift = comparison.changes[-1].diff.splitlines()
    assert drift[:2] == ["--- old.jsonl:r1", "+++ new.jsonl:r1"]
    assert "-ip route 10.0.0.0/8 Null0" in drift and "+ip route 10.0.0.0/9 Null0" in drift
    done = diff("old.jsonl", "new.jsonl", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines()[0] == (
        "newly failed: 1, fixed: 1, still failing: 1, added: 1, missing: 1, output changed: 1, "
        "same: 1"
    )
    assert "still failing: r4: DeviceError: refused again (was: DeviceError: refused)" in (
        done.stdout)
    as_json = json.loads(diff("--json", "old.jsonl", "new.jsonl", cwd=tmp_path).stdout)
    assert as_json["counts"]["output changed"] == 1 and as_json["same"] == 1


def test_the_same_run_twice_exits_0(tmp_path: Path) -> None:
    (tmp_path / "job.yaml").write_text(textwrap.dedent("""\
        inventory: {plugin: synthetic, options: {hosts: 20}}
        runner: {plugin: threadpool, options: {num_workers: 5}}
        task: {name: sim_rtt, params: {rtt: 0}}
        logging: {enabled: false}
        """))
    for name in ("a.jsonl", "b.jsonl"):
        subprocess.run([sys.executable, "-m", "nornir_bench", "run", "job.yaml", "-o", name],
                       cwd=tmp_path, capture_output=True, timeout=60, check=True)
    done = diff("a.jsonl", "b.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().endswith("output changed: 0, same: 20")


def test_a_records_file_with_failed_hosts_compared_with_itself_exits_0(tmp_path: Path) -> None:
    """Once, a host still failing for the same cause made the runs differ: exit 1 for a file
    compared with itself."""
    same = write(tmp_path / "run.jsonl", row("r1"), row("r2", failed=True, message="refused"))
    done = diff("run.jsonl", "run.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "still failing: 1" in done.stdout.splitlines()[0]
    other = write(tmp_path / "other.jsonl", row("r1"), row("r2", failed=True, message="timed out"))
    assert compare_runs(same, other).differ  # failing for another cause is a difference


def test_a_line_cut_short_or_corrupt_is_skipped_and_said(tmp_path: Path) -> None:
    old = write(tmp_path / "old.jsonl", row("r1"), row("r2"), tail='{"host": "r3", "fail')
    new = write(tmp_path / "new.jsonl", row("r1"), row("r2"), tail="\x00\x01garbage\n")
    done = diff("old.jsonl", "new.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "old.jsonl: skipped 1 of 3 lines that are not a host's record (corrupt or cut " \
        "short: line 3)" in done.stdout
    assert compare_runs(old, new).same == 2


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (None, "cannot read the records file: No such file or directory"),
        ("", "empty: not a records file of nornir-bench run"),
        ("hello\n", "line 1 is not a host's record: not a records file of nornir-bench run"),
        ('["host"]\n', "line 1 is not a host's record: not a records file of nornir-bench run"),
        ("/dev/zero", "not a regular file: not a records file"),
    ],
    ids=["missing", "empty", "text", "json-not-a-record", "endless"],
)
def test_a_file_that_is_not_records_exits_2_in_one_line(
    tmp_path: Path, content: str | None, says: str
) -> None:
    write(tmp_path / "new.jsonl", row("r1"))
    if content == "/dev/zero":
        (tmp_path / "old.jsonl").symlink_to(content)
    elif content is not None:
        (tmp_path / "old.jsonl").write_text(content)
    done = diff("old.jsonl", "new.jsonl", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == f"nornir-bench: error: old.jsonl: {says}\n"
    assert done.stdout == ""


def test_hostile_records_are_skipped_or_shown_as_they_are_never_a_traceback(
    tmp_path: Path,
) -> None:
    """Nesting past the stack, a step that is a list, values of the wrong types."""
    hostile = [
        "[" * 100_000 + "]" * 100_000 + "\n",
        json.dumps({"host": "r1", "step": [1], "failed": "yes", "result": {"a": [1]},
                    "elapsed": "slow", "start": 1e308,
                    "end": None, "batch": True, "failed_attempts": "many",
                    "groups": [{"x": 1}], "platform": {"p": 1},
                    "change": {"state": ["odd"]}, "message": ["m"]}) + "\n",
    ]
    write(tmp_path / "old.jsonl", row("r0"), tail="".join(hostile))
    write(tmp_path / "new.jsonl", row("r0"), tail="".join(hostile))
    done = diff("old.jsonl", "new.jsonl", cwd=tmp_path)
    # "failed": "yes" is not ok, and fails for the same cause in both: the runs are the same
    assert done.returncode == 0, done.stdout + done.stderr
    assert "still failing: r1 (step [1]): failed: ['m']" in done.stdout
    assert "skipped 1 of 3 lines" in done.stdout and "Traceback" not in done.stderr
    page = subprocess.run(
        [sys.executable, "-m", "nornir_bench", "report", "new.jsonl", "-o", "page.html"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert page.returncode == 0, page.stderr
    assert "Traceback" not in page.stderr


def test_a_long_cause_is_cut_in_its_middle_in_the_text_and_whole_in_json(tmp_path: Path) -> None:
    """The end of a cause (a backup's path) is kept, with a marker for what was cut."""
    message = "line 1 refused; " + "x" * 400 + "; rolled back to the backup at /b/r1.cfg"
    old = write(tmp_path / "old.jsonl", row("r1"))
    new = write(tmp_path / "new.jsonl", row("r1", failed=True, message=message))
    done = diff(old, new, cwd=tmp_path)
    line = next(x for x in done.stdout.splitlines() if x.startswith("newly failed: r1"))
    assert line.endswith("rolled back to the backup at /b/r1.cfg")
    assert "characters cut ...]" in line and len(line) < 360
    whole = diff(old, new, "--json", cwd=tmp_path)
    assert json.loads(whole.stdout)["changes"][0]["new_cause"] == f"DeviceError: {message}"
