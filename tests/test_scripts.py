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
        ["bench_crashes.py", "--hosts", "200", "--rate", "0.02", "--how", "exit", "--rtt", "0.01",
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
        if len(r) == 8 and r[2].strip() in ("kept", "reconnect")
    }
    assert len(logins) == 8  # four runner and task pairs, two modes
    for (runner, task, mode), count in logins.items():
        assert count == ("2" if mode == "kept" else "6"), (runner, task, mode)
    for (runner, _, mode), row in zip(logins, (r for r in rows if len(r) == 8 and r[2].strip()
                                                in ("kept", "reconnect")), strict=True):
        share = row[7].strip()  # the share of the run spent checking kept connections
        assert share == "in workers" if runner == "processpool" else share.endswith(" %"), mode
    workers = {
        r[0].strip(): (r[6].strip(), r[7].strip())
        for r in rows
        if len(r) == 8 and r[2].strip() not in ("kept", "reconnect", "mode", "---")
    }
    assert workers["processpool, kept workers"] == ("2", "0")
    assert workers["processpool, keep_workers=False"] == ("0", "0")


MINIATURE_CONFTEST = """
import pytest
from nornir.core import Nornir
from nornir.core.inventory import Defaults, Groups, Host, Hosts, Inventory
from nornir.plugins.runners import SerialRunner


@pytest.fixture(scope="session", autouse=True)
def nornir():
    defaults = Defaults()
    hosts = Hosts({name: Host(name, defaults=defaults) for name in ("h1", "h2", "h3")})
    return Nornir(Inventory(hosts=hosts, groups=Groups(), defaults=defaults), runner=SerialRunner())
"""

MINIATURE_TESTS = """
from nornir.plugins import runners
from nornir.plugins.runners import ThreadedRunner


def hello(task):
    return task.host.name


def test_on_the_sessions_nornir(nornir):
    assert not nornir.run(task=hello).failed


def test_on_a_runner_it_builds(nornir):
    assert not nornir.with_runner(ThreadedRunner(num_workers=2)).run(task=hello).failed


def test_that_fails(nornir):
    assert nornir.run(task=hello)["h1"].result == "h2"


def test_on_a_runner_the_swap_misses(nornir):
    assert not nornir.with_runner(runners.SerialRunner()).run(task=hello).failed
"""


def test_the_nornir_suite_tool_swaps_each_runner_in_and_counts(tmp_path: Path) -> None:
    """scripts/nornir_suite/run.py on a miniature of nornir's tests: the same fixture, the same
    runner classes built in a test module."""
    tests = tmp_path / "nornir" / "tests"
    tests.mkdir(parents=True)
    (tests / "__init__.py").write_text("")
    (tests / "conftest.py").write_text(MINIATURE_CONFTEST)
    (tests / "test_miniature.py").write_text(MINIATURE_TESTS)
    done = subprocess.run(
        [sys.executable, str(SCRIPTS / "nornir_suite" / "run.py"), "--nornir-tests",
         str(tests.parent), "--runners", "nornir,threadpool"],
        cwd=tmp_path, capture_output=True, text=True, timeout=110,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    summary = [line for line in done.stdout.splitlines() if not line.startswith("left out")]
    assert summary == [
        "nornir: 3 passed of 4",
        "threadpool: 2 passed of 4",
        "  nornir: test_miniature.py::test_that_fails failed: call: AssertionError: assert 'h1' "
        "== 'h2'",
        "  threadpool: test_miniature.py::test_that_fails failed: call: AssertionError: assert "
        "'h1' == 'h2'",
        "  threadpool: test_miniature.py::test_on_a_runner_the_swap_misses failed: teardown: "
        "AssertionError: nr.run ran on ['SerialRunner'], not on the swapped-in threadpool runner",
    ], done.stdout + done.stderr


def test_the_router_benchmark_runs(tmp_path: Path) -> None:
    from tests.routers import skip_without_router_lab

    skip_without_router_lab()
    done = subprocess.run(
        [sys.executable, str(SCRIPTS / "bench_routers.py"), "--quick", "--runners", "asyncio"],
        cwd=tmp_path, capture_output=True, text=True, timeout=110,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Traceback" not in done.stderr
