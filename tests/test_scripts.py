"""The measurement scripts of scripts/ still run, on a small fleet, and print their figures:
docs/benchmarks.md tells users to re-run them, and a script reaching into a private name, or
printing nothing useful, breaks silently otherwise."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


N = r"[\d.,]+"  # a figure: these are benchmarks, only their shape is checked
SPREAD = rf"{N} \({N}-{N}\)"  # median (min-max)

# Each script's command on a small fleet, and the lines it must print (regexes, one line each).
SCRIPT_RUNS = [
    (
        ["bench_bastion.py", "--down", "--quick"],
        [
            rf"\| threadpool \| send_command \| 6/6 \| 1 \| {N} \| {N} \((met|MISSED)\) \|",
            rf"\| asyncio \| asend_command \| 6/6 \| 1 \| {N} \| {N} \((met|MISSED)\) \|",
        ],
    ),
    (
        ["bench_host_keys.py", "--quick"],
        [
            r"\| threadpool \| send_command \| strict \| none \| 0 \| HostKeyUnknown \|",
            r"\| asyncio \| asend_command \| accept-new \| another key \| 0 \| HostKeyMismatch \|",
            r"\| processpool \| send_command \| strict \| another key \| 0 \| HostKeyMismatch \|",
            rf"\| 600 \| 600 \| 600 \| 0 \| 600 lines, 0 duplicates \(met\) \| {N} s \|",
            rf"\| asend_command \| asyncio \| {N} \| {N} \| [+-]{N} \|",
        ],
    ),
    (
        ["bench_runners.py", "--hosts", "200", "--repeat", "1", "--rtt", "0.01",
         "--rtt-workers", "50"],
        [
            r"## per-host cost, no-op task, 200 hosts, median of 1 \(min-max\), µs/host",
            *(
                rf"workers={w}:  serial {SPREAD}  threaded {SPREAD}  threadpool {SPREAD}  "
                rf"threadpool/threaded = {N}"
                for w in (20, 1000)
            ),
            r"## sim_rtt 10 ms, 200 hosts, 50 workers; ideal ceil\(N/W\)\*RTT = 0\.040 s",
            *(
                rf" *{runner}: {N} s \(min {N}, max {N}\)  = {N} x ideal"
                for runner in ("bare-threads", "threaded", "threadpool")
            ),
        ],
    ),
    (
        ["bench_advise.py", "--jobs", "synthetic-50", "--quick", "--sample", "30"],
        [
            r"## synthetic-50",
            rf"\| 1 \| {N} \(advise {N} s\) \| \w+, {N} on 2,000 \| {SPREAD} \| {N} \| "
            rf"[+-]{N} % \| (yes|no) \|",
            rf"median off [+-]{N} %, worst {N} % \(target 10 %: (met|MISSED)\); inside the "
            r"range [01] of 1 \(target 4 of 5\)",
        ],
    ),
    (
        ["bench_asyncio.py", "--hosts", "200", "--repeat", "1", "--rtt", "0.01",
         "--loops", "asyncio"],
        [
            r"## 200 hosts, RTT 10 ms, median of 1 \(min-max\)",
            rf" asyncio: floor {N} s \({N}-{N}\)  runner {N} s \({N}-{N}\)  runner/floor {N}",
        ],
    ),
    (
        ["bench_processpool.py", "--hosts", "200", "--repeat", "1", "--skip-cpu"],
        [
            r"## asim_rtt 50 ms on 200 hosts, all in flight",
            rf" +asyncio, 200 workers: +{N} s \({N}-{N}\)",
            rf" +processpool, 2 procs x 100: +{N} s \({N}-{N}\)",
            rf" +processpool / asyncio: {N} \(target <= 1\.5\)",
            r"## no-op task on 200 hosts: per-host cost",
            rf" +threadpool, 20 workers: +{N} s \({N}-{N}\) = {N} µs/host",
            rf" +processpool, 2 procs x 20: +{N} s \({N}-{N}\) = {N} µs/host",
        ],
    ),
    (
        ["bench_process.py", "--hosts", "200", "--repeat", "1", "--rtt", "0.01",
         "--points", "threadpool:50,asyncio:200"],
        [
            r"## whole process, 200 hosts, RTT 10 ms, median of 1 \(min-max\); .*python.*",
            *(
                rf" *{runner} +{workers} workers: wall {N} s \({N}-{N}\), user {N} s, "
                rf"sys {N} s, cpu {N} %"
                for runner, workers in (("threadpool", 50), ("asyncio", 200))
            ),
        ],
    ),
    (
        ["bench_memory.py", "--runs", "2", "--hosts", "200", "--runners", "threadpool,asyncio"],
        [
            r"2 runs in one process, 200 hosts, 10% failing, RTT 0; .*",
            # the process stays flat: as many threads and open files after the last run
            *(
                rf" *{runner}: RSS {N} -> {N} MiB \(.*\); objects {N} -> {N} \(.*\); "
                rf"threads (\d+) -> \1, fds (\d+) -> \2; run {N} s median"
                for runner in ("threadpool", "asyncio")
            ),
        ],
    ),
    (
        ["bench_crashes.py", "--hosts", "200", "--rate", "0.02", "--how", "exit", "--rtt", "0.01",
         "--limit", "60"],
        [
            r"200 hosts, 2\.0% crash their worker at the start of their task, .*",
            # every host in the result, and each of the 4 crashers failed
            rf" *exit: ended, run {N} s \(process {N} s\); hosts present 200, finished 200; "
            rf"failed: 4 of 4 crashers, \d+ of 196 innocent .*",
        ],
    ),
    (
        ["bench_mixed.py", "--killed-worker", "--hosts", "200", "--kill-at", "0.5",
         "--repeat", "1"],
        [
            # every host back and ok on each row; the worker's death heard, whatever the timings
            rf"\| 2 workers x 50 \| {N} s \| {N} s \| {N} s \| - \| 200 / 0 \| {N} \|",
            rf"\| 1 worker x 50 \| {N} s \| {N} s \| {N} s \| - \| 200 / 0 \| 1\.00 \|",
            rf"\| 2 workers x 50, one SIGKILLed 0\.5 s in \| {N} s \| {N} s \| {N} s \| "
            rf"{N} ms \| 200 / 0 \| {N} \|",
            rf"killed / one worker: {N} \(target <= 1\.3: (met|MISSED)\)",
        ],
    ),
    (
        ["bench_inventory.py", "--repeat", "1"],
        [
            rf"synthetic +10,000 hosts: +{N} ms \(min {N}, max {N}\)",
            rf"SimpleInventory +1,000 hosts: +{N} ms \(min {N}, max {N}\)",
            rf"synthetic 10k / SimpleInventory 1k = {N} \(target < 1\)",
        ],
    ),
    (
        ["bench_policies.py", "--hosts", "300", "--repeats", "1", "--hung-hosts", "20",
         "--task-timeout", "0.3"],
        [
            r"## 1\. Untriggered policies: no-op task on 300 hosts in 100 groups, .*",
            r"## 2\. max_starts_per_second: 2000 on 300 hosts, .*",
            r"## 3\. group_limits: \{group: 5\} on 300 hosts in 100 groups, .*",
            r"## 4\. 20 hosts on a loopback port that accepts and never answers, .*",
            # limits that must hold, whatever the timings: no group above 5 hosts in flight,
            # every hung host failed by its deadline and nothing left once the peer closed
            *(
                rf"\| {runner} \| \d+ \| {N} \| [0-5] \| \d+ of 100 \| 5 \| yes \|"
                for runner in ("threadpool", "asyncio", "processpool")
            ),
            *(
                rf"\| {runner} \| \d+ \| {N} \| {N} \| {N} \| .* \| 20 of 20 \(\d+\) \| .* \| "
                r"0 thr, 0 proc \(0 thr\) \(.*\) \|"
                for runner in ("threadpool", "asyncio", "processpool")
            ),
        ],
    ),
    (
        ["bench_faults.py", "--dask-connections", "--ctrl-c", "--quick"],
        [
            r"bench_faults: parts dask-connections, ctrl-c; nornir_bench of commit .*",
            # connections kept across the three runs: one login per host, whatever the timings
            rf"dask-connections: runs 2, hangs 0, failures 0, logins per run 40 \(2 runs\), "
            rf"wall median {N} s, max {N} s, processes left 0",
            *(
                rf"\| {runner} \| 130 \| {N} \| {N} \| \d+ \| \d+ \| 0 \| .* \| \d+ \|"
                for runner in ("threadpool", "asyncio")
            ),
        ],
    ),
    (
        ["soak.py", "--rounds", "1", "--busy", "1", "--runners", "threadpool", "--tests",
         "conformance", "-k", "no_hosts"],
        [
            r"soak: rounds 1 x tests 1 \(conformance\) on threadpool; busy processes 1, "
            r"cores \d+; round timeout 1800 s",
            rf"round 1/1 threadpool: passed 1, failed 0, hangs 0, leftovers 0, {N} s",
            r"rounds 1, tests 1, failures 0, hangs 0, leftovers 0",
        ],
    ),
]


@pytest.mark.parametrize(
    ("command", "lines"), SCRIPT_RUNS, ids=[command[0] for command, _ in SCRIPT_RUNS]
)
def test_a_benchmark_script_prints_its_figures(
    command: list[str], lines: list[str], tmp_path: Path
) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPTS / command[0]), *command[1:]],
        cwd=tmp_path, capture_output=True, text=True, timeout=110,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    for line in lines:
        assert re.search(f"^{line}$", done.stdout, re.M), (line, done.stdout)


@pytest.mark.parametrize(
    ("options", "error"),
    [
        (["--rounds", "0"], "argument --rounds: must be a whole number >= 1, got '0'"),
        (["--runners", "threadpool,trio"], "argument --runners: runners must be among "
         "threadpool,asyncio,asyncio-uvloop,processpool,dask,threaded,serial,other, got "
         "'threadpool,trio'"),
        (["--runners", "serial", "--tests", "conformance"], "no test of conformance on serial"),
    ],
    ids=["rounds", "runners", "nothing-selected"],
)
def test_the_soak_refuses_what_it_cannot_run_in_one_line(
    options: list[str], error: str, tmp_path: Path
) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPTS / "soak.py"), *options],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"soak.py: error: {error}\n")


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


def test_the_mutation_check_still_applies_to_the_code(tmp_path: Path) -> None:
    """scripts/mutate.py (minutes: run by hand) names code to break and tests to run: a
    mutation whose text changed, or a test renamed, would go unnoticed until the next run."""
    done = subprocess.run(
        [sys.executable, str(SCRIPTS / "mutate.py"), "--list"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr  # every old text found exactly once
    lines = done.stdout.splitlines()
    names = {line.split(":")[0] for line in lines if not line.startswith(" ")}
    assert names >= {
        "masking", "crash-isolation", "task-timeout", "retry-never", "retry-never-subtask",
        "dask-credentials", "login-pace",
    }
    tests = sorted({line.strip() for line in lines if line.startswith("    tests/")})
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *tests],
        cwd=SCRIPTS.parent, capture_output=True, text=True, timeout=120,
    )
    assert collected.returncode == 0, collected.stdout[-2000:] + collected.stderr[-2000:]


def test_the_router_benchmark_runs(tmp_path: Path) -> None:
    from tests.routers import skip_without_router_lab

    skip_without_router_lab()
    done = subprocess.run(
        [sys.executable, str(SCRIPTS / "bench_routers.py"), "--quick", "--runners", "asyncio",
         "--routers", "2", "--logins-count", "8", "--sessions", "4", "--hosts", "20"],
        cwd=tmp_path, capture_output=True, text=True, timeout=110,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Traceback" not in done.stderr


def test_the_checks_benchmark_reverts_what_it_breaks_on_a_router_lab(tmp_path: Path) -> None:
    """bench_checks.py --quick: a lab of its own, a BGP break in a canary rollout, a SIGKILL
    before confirm, and the overhead runs; what must hold whatever the timings."""
    from tests.routers import skip_without_router_lab

    skip_without_router_lab()
    done = subprocess.run(
        [sys.executable, str(SCRIPTS / "bench_checks.py"), "--quick"],
        cwd=tmp_path, capture_output=True, text=True, timeout=200,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    for line in (
        rf"\| broken-bgp \| r1 reverted \(run {N} s\) \| change.state rolled back; running "
        r"config byte-identical \| rolled back, identical \(met\) \|",
        rf"\| broken-bgp \| break to r2's session Established \| {N} s .* \| <= 30 s .* \|",
        r"\| broken-bgp \| later routers touched \| 0 of 2 \(2 RunAborted\) \| 0 \(met\) \|",
        rf"\| sigkill \| SIGKILL {N} s after start, all 3 pending; recover {N} s \| 3/3 "
        r"routers byte-identical to before \| 3/3 \(met\) \|",
        r"\| sigkill \| journal's last entry per host / recover records \| 3/3 reverted / "
        r"3/3 'rolled back' \| all \(met\) \|",
        rf"\| overhead \| .* \| {N} s \(30 of 30 ok\) / {N} s \(30 of 30 ok\) = {N} \| .* \|",
        rf"\| parse \| asend_command .* \| {N} s \(30 of 30 ok\) / {N} s \(30 of 30 ok\) = "
        rf"{N} \| .* \|",
    ):
        assert re.search(f"^{line}$", done.stdout, re.M), (line, done.stdout)


def test_the_compliance_benchmark_checks_every_host_on_a_router_lab(tmp_path: Path) -> None:
    """bench_compliance.py --quick: every host drifted and checked, against reading them."""
    from tests.routers import skip_without_router_lab

    skip_without_router_lab()
    done = subprocess.run(
        [sys.executable, str(SCRIPTS / "bench_compliance.py"), "--quick"],
        cwd=tmp_path, capture_output=True, text=True, timeout=200,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    line = (rf"\| asyncio \| {N} s \(30 of 30 ok; 30 drifted\) \| {N} s \(30 of 30 ok\) \| "
            rf"{N} \| <= 1.2 \((met|MISSED)\) \|")
    assert re.search(f"^{line}$", done.stdout, re.M), done.stdout


def test_the_faults_benchmark_runs_its_hung_change_on_a_router_lab(tmp_path: Path) -> None:
    """bench_faults.py --hung-change: a router lab of its own, r1's vtysh stopped mid-change."""
    from tests.routers import skip_without_router_lab

    skip_without_router_lab()
    done = subprocess.run(
        [sys.executable, str(SCRIPTS / "bench_faults.py"), "--hung-change", "--quick"],
        cwd=tmp_path, capture_output=True, text=True, timeout=110,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    for runner, task in (("threadpool", "send_config"), ("asyncio", "asend_config")):
        line = (rf"\| {runner} \| {task} \| 1 \| \d+ \| {N} \| TaskTimeout \| interrupted "
                rf"during change \| [+-]{N} \((met|MISSED)\) \| [+-]{N} \| 2 of 2 \| yes \|")
        assert re.search(f"^{line}$", done.stdout, re.M), (line, done.stdout)


def test_the_bastion_benchmark_reaches_every_host_through_openssh(tmp_path: Path) -> None:
    """bench_bastion.py --quick: a router lab and a real OpenSSH jump host of its own; every
    host ends ok both ways, and the bastion's connections are shared (3 logins for 30 hosts
    at 10 sessions each: 3 at most)."""
    from tests.routers import skip_without_router_lab

    skip_without_router_lab()
    done = subprocess.run(
        [sys.executable, str(SCRIPTS / "bench_bastion.py"), "--quick"],
        cwd=tmp_path, capture_output=True, text=True, timeout=200,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert re.search(
        rf"^\| asyncio \| asend_command \| 30/30 \| 30/30 \| {N} \| {N} \| {N} \((met|MISSED)\) "
        r"\| [123] a run \|$", done.stdout, re.M
    ), done.stdout


def test_the_sites_benchmark_runs_each_host_at_its_own_site(tmp_path: Path) -> None:
    """bench_sites.py --quick: two sites, each a network namespace with its devices and a Dask
    worker that cannot reach the other's, the scheduler and the client in a third: every host
    ends ok on a worker of its own site, and site c's hosts (no worker) fail naming it. Its
    namespaces are gone after it."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("network namespaces need root and iproute2")
    done = subprocess.run(
        [sys.executable, str(SCRIPTS / "bench_sites.py"), "--quick"],
        cwd=tmp_path, capture_output=True, text=True, timeout=200,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    for site in ("a", "b"):
        line = rf"\| {site} \| 20/20 \| 20/20 \| {N} s, exit 1 \|"
        assert re.search(f"^{line}$", done.stdout, re.M), (line, done.stdout)
    assert "| c | failed naming the site: 4/4 | other failures: 0 | - |" in done.stdout
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert "nbsite-" not in listed
