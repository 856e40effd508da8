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
