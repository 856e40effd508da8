"""The measurement scripts of scripts/ still run, on a small fleet: docs/benchmarks.md tells
users to re-run them, and a script reaching into a private name breaks silently otherwise."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


@pytest.mark.parametrize(
    "command",
    [
        ["bench_runners.py", "--hosts", "200", "--repeat", "1", "--rtt", "0.01",
         "--rtt-workers", "50"],
        ["bench_asyncio.py", "--hosts", "200", "--repeat", "1", "--rtt", "0.01",
         "--loops", "asyncio"],
        ["bench_processpool.py", "--hosts", "200", "--repeat", "1", "--skip-cpu"],
        ["bench_process.py", "--hosts", "200", "--repeat", "1", "--rtt", "0.01",
         "--points", "threadpool:50,asyncio:200"],
        ["bench_memory.py", "--runs", "2", "--hosts", "200", "--runners", "threadpool,asyncio"],
        ["bench_crashes.py", "--hosts", "200", "--every", "50", "--how", "exit", "--rtt", "0.01",
         "--limit", "60"],
        ["bench_inventory.py", "--repeat", "1"],
        ["bench_policies.py", "--hosts", "300", "--repeats", "1", "--hung-hosts", "20",
         "--task-timeout", "0.3"],
    ],
    ids=lambda command: command[0],
)
def test_a_benchmark_script_runs(command: list[str], tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPTS / command[0]), *command[1:]],
        cwd=tmp_path, capture_output=True, text=True, timeout=110,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Traceback" not in done.stderr


def test_the_connections_benchmark_counts_one_login_per_device_when_connections_are_kept(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPTS / "bench_connections.py"), "--part", "both",
         "--devices", "2", "--hosts", "200", "--repeat", "1"],
        cwd=tmp_path, capture_output=True, text=True, timeout=170,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert done.stderr == ""
    rows = [line.split("|")[1:-1] for line in done.stdout.splitlines() if line.startswith("| ")]
    logins = {
        (r[0].strip(), r[1].strip(), r[2].strip()): r[4].strip()
        for r in rows
        if len(r) == 7 and r[2].strip() in ("kept", "reconnect")
    }
    assert len(logins) == 8  # four runner and task pairs, two modes
    for (runner, task, mode), count in logins.items():
        assert count == ("2" if mode == "kept" else "6"), (runner, task, mode)
    workers = {r[0].strip(): (r[6].strip(), r[7].strip()) for r in rows if len(r) == 8}
    assert workers["processpool, kept workers"] == ("2", "0")
    assert workers["processpool, keep_workers=False"] == ("0", "0")
