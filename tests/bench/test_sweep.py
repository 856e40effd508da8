"""``nornir-bench sweep``: a small grid end to end, resuming after Ctrl-C, failed children,
the recommendation rule, the journal, and bad arguments."""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import platform
import re
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from nornir_bench.bench.sweep import (
    JOURNAL,
    PLOT_HINT,
    Journal,
    PointResult,
    RunRecord,
    SweepError,
    SweepGrid,
    aggregate,
    recommend,
    recommend_workers,
    run_sweep,
    sweep_environment,
    tables,
    time_process,
    write_report,
)
from nornir_bench.bench.sweep import run as sweep_run
from nornir_bench.cli import main
from tests.waiting import wait_until

PNG = b"\x89PNG\r\n\x1a\n"
COLUMNS = ["runner", "workers", "rtt", "hosts", "repeats", "wall", "wall_min", "wall_max", "user",
           "sys", "cpu_percent", "max_rss_mib", "ok", "failed"]
ENVIRONMENT = ["cpu_count", "python_version", "python_implementation", "platform", "nornir",
               "nornir_bench", "loop", "loop_version", "date"]


def sweep(*args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nornir_bench", "sweep", "--quiet", *args],
        capture_output=True, text=True, timeout=timeout,
    )


def journal_runs(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / JOURNAL).read_text().splitlines()[1:]]


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as file:
        return list(csv.DictReader(file))


def markdown_tables(text: str) -> list[list[list[str]]]:
    """The tables in ``text``: rows of stripped cells, the header first, the rule left out."""
    tables: list[list[list[str]]] = []
    previous = ""
    for line in text.splitlines():
        if line.startswith("|"):
            if not previous.startswith("|"):
                tables.append([])
            if not set(line) <= set("|-: "):
                tables[-1].append([cell.strip() for cell in line.strip("|").split("|")])
        previous = line
    return tables


def test_small_grid_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "results"
    done = sweep("--runners", "threadpool,asyncio,threaded", "--workers", "4,2", "--rtt", "0,0.01",
                 "--hosts", "20", "--repeat", "2", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr

    rows = read_csv(out / "results.csv")
    assert list(rows[0])[: len(COLUMNS)] == COLUMNS
    assert len(rows) == 3 * 2 * 2
    assert {(r["runner"], r["workers"], r["rtt"]) for r in rows} == {
        (runner, workers, rtt) for runner in ("threadpool", "asyncio", "threaded")
        for workers in ("2", "4") for rtt in ("0.0", "0.01")
    }
    for row in rows:
        assert (row["hosts"], row["repeats"], row["ok"], row["failed"]) == ("20", "2", "20", "0")
        assert float(row["wall_min"]) <= float(row["wall"]) <= float(row["wall_max"])
        assert float(row["user"]) > 0 and float(row["cpu_percent"]) > 0
        assert float(row["max_rss_mib"]) > 10  # a Python process with nornir loaded
        assert row["errors"] == "0" and row["error"] == ""

    runs = journal_runs(out)
    assert len(runs) == 24 and all(run["status"] == 0 and run["error"] is None for run in runs)
    assert set(Counter((r["runner"], r["workers"], r["rtt"]) for r in runs).values()) == {2}
    header = json.loads((out / JOURNAL).read_text().splitlines()[0])
    assert header["hosts"] == 20

    environment = json.loads((out / "environment.json").read_text())
    assert set(ENVIRONMENT) <= set(environment)
    assert environment["cpu_count"] == os.cpu_count()
    assert environment["python_version"] == platform.python_version()
    assert environment["loop"] in ("asyncio", "uvloop")

    document = json.loads((out / "results.json").read_text())
    assert document["environment"] == environment and document["complete"] is True
    assert document["grid"] == {"runners": ["threadpool", "asyncio", "threaded"],
                                "workers": [2, 4], "rtts": [0.0, 0.01], "hosts": 20, "repeat": 2}
    assert len(document["points"]) == 12 and len(document["recommendations"]) == 6
    recommendations = read_csv(out / "recommendations.csv")
    assert len(recommendations) == 6
    assert {r["workers"] for r in recommendations} <= {"2", "4"}

    # The study's tables: one per runner, rows workers, columns RTT; then the recommendations.
    for runner in ("threadpool", "asyncio", "threaded"):
        assert f"{runner}: wall (CPU %) of the whole process, median of 2 runs" in done.stdout
    printed = markdown_tables(done.stdout)
    assert len(printed) == 3
    for table in printed:
        assert table[0] == ["in flight", "0 ms", "10 ms"]
        assert [row[0] for row in table[1:]] == ["2", "4"]
        cells = [row[1:] for row in table[1:]]
        cell = re.compile(r"\d+\.\d+ s \(\d+ %\)( \*)?")  # wall (CPU %), * recommended
        assert all(cell.fullmatch(text) for row in cells for text in row)
        for column in zip(*cells, strict=True):  # one recommended worker count per RTT
            assert sum(cell.endswith("*") for cell in column) == 1
    lines = [line for line in done.stdout.splitlines() if ": recommended " in line]
    assert len(lines) == 6 and lines[0].startswith("threadpool, rtt 0 s: recommended ")
    assert (out / "tables.md").read_text().strip() in done.stdout

    for name in ("wall.png", "cpu.png"):
        assert (out / name).read_bytes().startswith(PNG)
    assert PLOT_HINT not in done.stdout


def test_dask_sweeps_as_any_runner_each_run_paying_its_own_cluster(tmp_path: Path) -> None:
    out = tmp_path / "results"
    done = sweep("--runners", "asyncio,dask", "--workers", "5", "--rtt", "0.001", "--hosts", "40",
                 "--repeat", "1", "--out", str(out), timeout=120)
    assert done.returncode == 0, done.stderr
    rows = {row["runner"]: row for row in read_csv(out / "results.csv")}
    for row in rows.values():
        assert (row["ok"], row["failed"], row["errors"]) == ("40", "0", "0")
    # The embedded cluster (a scheduler and a worker process per CPU, each importing Dask)
    # is started and stopped by the run's own process: its CPU counts, as `time` counts it.
    cpu = {name: float(row["user"]) + float(row["sys"]) for name, row in rows.items()}
    assert cpu["dask"] > 2 * cpu["asyncio"], cpu
    assert float(rows["dask"]["run_wall"]) < float(rows["dask"]["wall"])
    assert "dask: hosts in flight in all: num_workers = in flight / Dask workers" in done.stdout
    assert "every run starts and stops an embedded cluster" in done.stdout
    assert "asyncio: hosts in flight" not in done.stdout  # a note only where figures differ


def test_ctrl_c_keeps_what_finished_and_the_same_command_resumes(tmp_path: Path) -> None:
    out = tmp_path / "results"
    # 3 points x 2 runs of about 0.3 s each: Ctrl-C lands after the first run, well before the end.
    args = ["--runners", "threadpool", "--workers", "2", "--rtt", "0,0.01,0.02",
            "--hosts", "23", "--repeat", "2", "--out", str(out)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "nornir_bench", "sweep", "--quiet", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        wait_until(
            lambda: proc.poll() is not None or ((out / JOURNAL).exists() and journal_runs(out)),
            "a first run in the journal",
        )
        assert proc.poll() is None, proc.stderr
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    first = journal_runs(out)
    assert 1 <= len(first) < 6
    assert f"interrupted: {len(first)} of 6 runs done" in stdout
    assert not _children_running("--hosts", "23")
    # What finished is written: only the points with a run.
    rows = read_csv(out / "results.csv")
    assert len(rows) == len({(r["runner"], r["workers"], r["rtt"]) for r in first})

    done = sweep(*args)
    assert done.returncode == 0, done.stderr
    runs = journal_runs(out)
    assert runs[: len(first)] == first  # kept, not run again
    assert len(runs) == 6  # only the missing runs were added
    assert set(Counter((r["workers"], r["rtt"]) for r in runs).values()) == {2}
    assert all(row["repeats"] == "2" for row in read_csv(out / "results.csv"))

    again = sweep(*args)  # nothing left to measure: the report is rewritten, nothing runs
    assert again.returncode == 0 and len(journal_runs(out)) == 6


def _children_running(*argv: str) -> bool:
    """Whether a sweep child (script.py's entry point) with these arguments still runs."""
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            parts = cmdline.read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if any("script_entry" in part for part in parts) and all(arg in parts for arg in argv):
            return True
    return False


# What a stand-in child writes with --record: a good record of 5 hosts, all ok.
RECORD = {"version": 1, "runner": "threadpool", "workers": 4, "task": "sim_rtt", "hosts": 5,
          "rtt": 0.01, "ok": 5, "failed": 0, "changed": 0, "run_wall": 0.001,
          "interrupted": False, "wall": 0.02, "user": 0.01, "sys": 0.0, "cpu_percent": 50.0,
          "max_rss_mib": 20.0}

FAKE_CHILD = rf"""\
import json, sys
workers = sys.argv[1]
if workers == "2":
    print("about to fail", flush=True)
    sys.stderr.write("Traceback...\nRuntimeError: no luck with 2 workers\n")
    sys.exit(3)
if workers == "3":
    sys.exit(130)
print("5 ok, 0 failed | run 0.001 s | process: wall 0.02 s ...")
with open(sys.argv[sys.argv.index("--record") + 1], "w") as file:
    json.dump({RECORD!r}, file)
"""


def test_a_failed_child_is_recorded_and_the_sweep_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_leaked_threads: None
) -> None:
    # A stand-in for script.py: the subject is what the sweep does with a child that fails.
    monkeypatch.setattr(sweep_run, "_CHILD_CODE", FAKE_CHILD)
    grid = SweepGrid(runners=["threadpool"], workers=[2, 4], rtts=[0.01], hosts=5, repeat=2)
    result = run_sweep(grid, tmp_path, progress=False)
    assert not result.interrupted and result.complete
    assert (result.runs_planned, result.runs_done, result.failed_runs) == (4, 4, 2)
    failed, good = result.points
    assert (failed.workers, failed.repeats, failed.errors, failed.wall) == (2, 0, 2, None)
    assert failed.error == "exit status 3: RuntimeError: no luck with 2 workers"
    assert (good.workers, good.repeats, good.errors, good.ok) == (4, 2, 0, 5)
    assert [r.workers for r in result.recommendations] == [4]
    [table] = markdown_tables(tables(result))
    assert table[1] == ["2", "failed"] and table[2][1].endswith("*")
    assert "2 workers, rtt 0.01 s: 2 of 2 failed, last: exit status 3: Runtime" in tables(result)
    assert [run["status"] for run in journal_runs(tmp_path)] == [3, 0, 3, 0]


# A stand-in child whose line for people says one thing and whose record another.
REWORDED_CHILD = rf"""\
import json, sys
print("all 5 hosts answered; 9.999 s")  # reworded, and not what the record says
record = {RECORD!r}
record.update(ok=3, failed=2, run_wall=0.004)
with open(sys.argv[sys.argv.index("--record") + 1], "w") as file:
    json.dump(record, file)
sys.exit(1)
"""


def test_the_counts_come_from_the_record_not_the_line_for_people(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sweep_run, "_CHILD_CODE", REWORDED_CHILD)
    grid = SweepGrid(runners=["threadpool"], workers=[4], rtts=[0.01], hosts=5, repeat=1)
    result = run_sweep(grid, tmp_path, progress=False)
    assert result.failed_runs == 0
    [run] = journal_runs(tmp_path)
    assert (run["status"], run["ok"], run["failed"], run["run_wall"]) == (1, 3, 2, 0.004)


# workers -> what a stand-in child writes as its record (None: none at all), and the reason
# the sweep gives for the failed run.
BAD_RECORDS: dict[int, tuple[str | None, str]] = {
    1: (None, "exit status 0, no record was written"),
    2: ("", "exit status 0, the record is empty"),
    3: ("10000 ok, 0 failed | run 0.680 s", "exit status 0, the record is not JSON: "),
    4: ("[1, 2]", "exit status 0, the record is not a JSON object but list"),
    5: (json.dumps({**RECORD, "version": 2}), "exit status 0, the record's version is 2, not 1"),
    6: (json.dumps({k: v for k, v in RECORD.items() if k not in ("ok", "failed")}),
        "exit status 0, the record lacks ok, failed"),
    7: (json.dumps({**RECORD, "ok": "5"}),
        'exit status 0, the record\'s ok must be a whole number >= 0, got "5"'),
    8: (json.dumps({**RECORD, "run_wall": -1}),
        "exit status 0, the record's run_wall must be a finite number >= 0, got -1"),
    9: (json.dumps({**RECORD, "hosts": 7}),
        "exit status 0, the record is of another run: runner threadpool, 7 hosts"),
    10: (" " * 70_000 + json.dumps(RECORD), "exit status 0, the record is larger than 64 KiB"),
    11: ("[" * 50_000, "exit status 0, the record nests too deep to be a record"),
}

BAD_RECORD_CHILD = rf"""\
import sys
record = {{workers: text for workers, (text, _) in {BAD_RECORDS!r}.items()}}[int(sys.argv[1])]
print("5 ok, 0 failed | run 0.001 s | process: wall 0.02 s ...")
if record is not None:
    with open(sys.argv[sys.argv.index("--record") + 1], "w") as file:
        file.write(record)
sys.stderr.write("done\n")
"""


def test_a_bad_record_is_a_failed_run_saying_what_is_wrong(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sweep_run, "_CHILD_CODE", BAD_RECORD_CHILD)
    grid = SweepGrid(runners=["threadpool"], workers=sorted(BAD_RECORDS), rtts=[0.01], hosts=5,
                     repeat=1)
    result = run_sweep(grid, tmp_path, progress=False)
    assert result.failed_runs == len(BAD_RECORDS) and result.recommendations == []
    for point in result.points:
        reason = BAD_RECORDS[point.workers][1]
        assert point.error is not None, point.workers
        assert point.error.startswith(reason), (point.workers, point.error)
        assert point.error.endswith(": done") and "\n" not in point.error
        assert len(point.error) < 200
    assert {run["ok"] for run in journal_runs(tmp_path)} == {None}


def test_a_child_stopped_by_ctrl_c_stops_the_sweep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sweep_run, "_CHILD_CODE", FAKE_CHILD)
    grid = SweepGrid(runners=["threadpool"], workers=[3, 4], rtts=[0], hosts=5, repeat=1)
    result = run_sweep(grid, tmp_path, progress=False)
    assert result.interrupted and (result.runs_planned, result.runs_done) == (2, 0)
    assert result.points == [] and journal_runs(tmp_path) == []


@pytest.mark.parametrize("watch", [True, False], ids=["waitid", "polling"])
def test_time_process_measures_the_child_alone(
    watch: bool, monkeypatch: pytest.MonkeyPatch, no_leaked_threads: None
) -> None:
    if not watch:
        monkeypatch.delattr(os, "waitid", raising=False)
    code = (
        "import sys, time\n"
        "end = time.process_time() + 0.2\n"
        "while time.process_time() < end: pass\n"
        "print('out'); sys.stderr.write('one\\nlast\\n'); sys.exit(3)\n"
    )
    before = os.times()
    child = time_process([sys.executable, "-c", code], timeout=30)
    after = os.times()
    assert child.status == 3 and child.stdout == "out\n" and child.stderr.endswith("last\n")
    # Its own CPU (the spin: 0.2 s), not this process's: no more than this process's children
    # used meanwhile, measured from outside (to the clock tick; any other child reaped then
    # only adds to it).
    outside = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    assert 0.15 <= child.user + child.sys <= outside + 0.03, outside
    assert child.max_rss_mib > 1

    killed = time_process([sys.executable, "-c", "import os; os.kill(os.getpid(), 15)"], timeout=30)
    assert killed.status == -signal.SIGTERM

    # Killed past its timeout: it never woke to say so, as it would after 30 s left alone.
    late = time_process(
        [sys.executable, "-c", "import time; time.sleep(30); print('woke')"], timeout=0.3
    )
    assert late.status is None and late.stdout == ""


def test_time_process_keeps_the_end_of_a_long_output() -> None:
    code = (
        "import sys; sys.stdout.write('x' * 1_000_000)\n"
        "sys.stderr.write('y' * 100_000 + '\\nlast\\n')"
    )
    child = time_process([sys.executable, "-c", code], timeout=30, max_output=1000)
    assert child.status == 0 and child.stdout == "x" * 1000
    assert len(child.stderr) == 1000 and child.stderr.endswith("y\nlast\n")


def record(workers: int, wall: float, *, rtt: float = 0.05, error: str | None = None) -> RunRecord:
    return RunRecord(
        runner="asyncio", workers=workers, rtt=rtt, hosts=100, status=1 if error else 0,
        wall=wall, user=wall * 0.6, sys=wall * 0.1, max_rss_mib=80.0, ok=None if error else 100,
        failed=None if error else 0, run_wall=None if error else wall - 0.2, error=error,
        finished="2026-01-01T00:00:00+00:00",
    )


@pytest.mark.parametrize(
    ("walls", "within", "expected"),
    [
        ({100: 10.0, 500: 2.15, 1000: 2.05, 2000: 2.0, 10000: 2.1}, 0.10, 500),
        ({100: 1.2, 200: 1.1, 300: 1.0}, 0.10, 200),  # exactly 10 % over the best counts
        ({100: 1.2, 200: 1.1, 300: 1.0}, 0.05, 300),
        ({5000: 0.41, 10000: 0.39, 100: 5.5}, 0.10, 5000),
        ({100: 1.0, 200: 1.0}, 0.0, 100),  # a tie: the fewer workers
        ({1000: 3.0}, 0.10, 1000),
    ],
)
def test_recommend_workers_fewest_within_the_tolerance(
    walls: dict[int, float], within: float, expected: int
) -> None:
    assert recommend_workers(walls, within=within) == expected


def test_recommend_workers_rejects_what_it_cannot_choose_from() -> None:
    with pytest.raises(ValueError, match="no wall times"):
        recommend_workers({})
    with pytest.raises(ValueError, match="within must be a fraction >= 0, got -0.1"):
        recommend_workers({1: 1.0}, within=-0.1)


def test_recommendation_line_and_cpu() -> None:
    point = PointResult(
        runner="asyncio", workers=5000, rtt=0.05, hosts=10000, repeats=3, wall=0.41,
        wall_min=0.40, wall_max=0.43, run_wall=0.15, user=0.44, sys=0.08, cpu_percent=98.2,
        max_rss_mib=90.0, ok=10000, failed=0, errors=0, error=None,
    )
    best = dataclasses.replace(point, workers=10000, wall=0.39)
    slow = dataclasses.replace(point, workers=100, wall=5.5)
    [rec] = recommend([slow, point, best])
    assert rec.line() == ("asyncio, rtt 0.05 s: recommended 5000 workers (wall 0.41 s, best "
                          "0.39 s at 10000; cpu 0.52 s, 98 %)")


def test_report_of_a_partial_sweep(tmp_path: Path, no_leaked_threads: None) -> None:
    grid = SweepGrid(runners=["asyncio"], workers=[10, 100, 1000], rtts=[0.05, 1], hosts=100)
    runs = [record(10, 0.9), record(10, 0.8), record(10, 1.0), record(100, 0.45),
            record(1000, 0.5, error="exit status 2: boom"), record(10, 9.0, rtt=1)]
    points = aggregate(grid, runs)
    assert [(p.workers, p.rtt, p.repeats, p.errors) for p in points] == [
        (10, 0.05, 3, 0), (100, 0.05, 1, 0), (1000, 0.05, 0, 1), (10, 1.0, 1, 0)]
    assert (points[0].wall, points[0].wall_min, points[0].wall_max) == (0.9, 0.8, 1.0)
    result = sweep_run.SweepResult(
        grid=grid, environment={"python_version": "3"}, journal=tmp_path / JOURNAL, points=points,
        recommendations=recommend(points), runs_planned=9, runs_done=6, interrupted=True,
        started="2026-01-01T00:00:00+00:00",
    )
    assert not result.complete
    report = write_report(result, tmp_path)
    assert len(read_csv(tmp_path / "results.csv")) == 4
    [table] = markdown_tables((tmp_path / "tables.md").read_text())
    assert table == [
        ["in flight", "50 ms", "1 s"],
        ["10", "0.900 s (70 %)", "9.00 s (70 %) *"],
        ["100", "0.450 s (70 %) *", "-"],  # recommended at 50 ms; not measured at 1 s
        ["1000", "failed", "-"],
    ]
    assert json.loads((tmp_path / "results.json").read_text())["complete"] is False
    assert not report.plots_skipped


def test_plots_are_skipped_without_matplotlib(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now fails
    grid = SweepGrid(runners=["asyncio"], workers=[10], rtts=[0.05], hosts=100, repeat=1)
    points = aggregate(grid, [record(10, 0.9)])
    result = sweep_run.SweepResult(
        grid=grid, environment={}, journal=tmp_path / JOURNAL, points=points,
        recommendations=recommend(points), runs_planned=1, runs_done=1, interrupted=False,
        started="",
    )
    report = write_report(result, tmp_path)
    assert report.plots_skipped and report.plots == []
    assert (tmp_path / "results.csv").exists() and not (tmp_path / "wall.png").exists()
    assert "pip install 'nornir-bench[plot]'" in PLOT_HINT


def test_the_environment_names_the_package_and_the_loop_the_async_runners_run() -> None:
    from nornir_bench import AsyncioRunner, ProcessPoolRunner, __version__

    environment = sweep_environment()
    assert environment["nornir_bench"] == __version__
    assert environment["loop"] == AsyncioRunner().loop_implementation
    assert environment["loop"] == ProcessPoolRunner().loop_implementation


def test_journal_cuts_a_half_written_line(tmp_path: Path) -> None:
    path = tmp_path / JOURNAL
    environment = sweep_environment()
    with Journal(path, hosts=100, environment=environment) as journal:
        journal.add(record(10, 0.9))
    whole = path.read_text()
    path.write_text(whole + '{"runner": "asyn')  # killed while writing
    journal = Journal(path, hosts=100, environment={**environment, "date": "later"})
    assert journal.runs == [record(10, 0.9)]
    assert path.read_text() == whole


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"hosts": 200}, "hosts 200 (now 100)"),
        ({"python_version": "2.7.18"}, "python_version 2.7.18 (now "),
        ({"loop": "tokio"}, "loop tokio (now "),
    ],
)
def test_journal_of_another_setup_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict[str, Any], named: str
) -> None:
    environment = {**sweep_environment(), **{k: v for k, v in change.items() if k != "hosts"}}
    Journal(tmp_path / JOURNAL, hosts=change.get("hosts", 100), environment=environment)
    status = main(["sweep", "--quiet", "--hosts", "100", "--out", str(tmp_path)])
    assert status == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("nornir-bench: error: ") and "\n" not in err
    assert named in err and "use another --out" in err


def test_a_file_that_is_not_a_journal_is_refused(tmp_path: Path) -> None:
    (tmp_path / JOURNAL).write_text("hello\n")
    with pytest.raises(SweepError, match="is not a nornir-bench sweep journal"):
        run_sweep(SweepGrid(runners=["serial"], workers=[1], rtts=[0], hosts=1), tmp_path)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--workers", ""], "argument --workers: must be comma-separated whole numbers >= 1"),
        (["--workers", "100,,200"], "whole numbers >= 1 (e.g. 100,1000), got '100,,200'"),
        (["--workers", "100,0"], "argument --workers: must be a whole number >= 1, got '0'"),
        (["--workers", "many"], "argument --workers: must be a whole number >= 1, got 'many'"),
        (["--rtt", ""], "--rtt: must be comma-separated seconds from 0 to 3600 (e.g. 0.05,0.1)"),
        (["--rtt", "0.05,-1"], "--rtt: must be a number of seconds from 0 to 3600 (an hour: "),
        (["--rtt", "-0.05"], "argument --rtt: must be a number of seconds from 0 to 3600"),
        (["--rtt", "fast"], "argument --rtt: must be a number of seconds from 0 to 3600"),
        (["--rtt", "0.05,1e300"], "than any device takes to answer), got '1e300'"),
        (["--rtt", "inf"], "argument --rtt: must be a number of seconds from 0 to 3600"),
        (["--runners", "threadpool,warp"], "--runners: unknown runner 'warp'; available: "),
        (["--runners", ""], "argument --runners: must be comma-separated runner names, got ''"),
        (["--hosts", "0"], "argument --hosts: must be a whole number >= 1, got '0'"),
        (["--repeat", "-1"], "argument --repeat: must be a whole number >= 1, got '-1'"),
    ],
)
def test_bad_arguments_one_line_exit_2(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["sweep", *args])
    assert exit_.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("nornir-bench sweep: error: ")
    assert message in lines[0]


def test_bad_arguments_from_the_command_line(tmp_path: Path) -> None:
    done = sweep("--runners", "warp", "--out", str(tmp_path / "never-written"))
    assert done.returncode == 2 and done.stdout == ""
    [line] = done.stderr.strip().splitlines()
    for name in ("serial", "threaded", "threadpool", "asyncio", "processpool", "dask"):
        assert name in line
    assert not (tmp_path / "never-written").exists()


def test_grid_validates_like_the_command_line() -> None:
    with pytest.raises(ValueError, match="sweep: unknown runner 'warp'; available: "):
        SweepGrid(runners=["warp"])
    with pytest.raises(ValueError, match="sweep: runners must not be empty"):
        SweepGrid(runners=[])
    with pytest.raises(ValueError, match="sweep: workers must be whole numbers >= 1, got 0"):
        SweepGrid(workers=[100, 0])
    with pytest.raises(ValueError, match="sweep: rtts must be numbers of seconds from 0 to 3600"):
        SweepGrid(rtts=[-1])
    with pytest.raises(ValueError, match="sweep: rtts must be .* to 3600, got 1e[+]300"):
        SweepGrid(rtts=[0.05, 1e300])
    with pytest.raises(ValueError, match="sweep: rtts must not be empty"):
        SweepGrid(rtts=[])
    grid = SweepGrid(runners=["threaded", "asyncio", "threaded"], workers=[10, 2, 10], rtts=[1, 0])
    assert (grid.runners, grid.workers, grid.rtts) == (("threaded", "asyncio"), (2, 10), (0, 1))
