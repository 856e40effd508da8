"""scripts/script.py as a user runs it: a real subprocess, exit status, output, bad input."""

from __future__ import annotations

import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from nornir_bench.bench.record import read_record
from tests.waiting import HANG_GUARD, wait_until

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "script.py"
SUMMARY = re.compile(
    r"^(\d+) ok, (\d+) failed \| run [\d.]+ s \| process: wall [\d.]+ s, user [\d.]+ s, "
    r"sys [\d.]+ s, cpu \d+ %, max rss \d+ MiB$"
)


def script(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout
    )


ASYNC_RUNNERS = ("asyncio", "processpool", "dask")


# processpool and dask run to the end in test_cpu_includes_the_worker_processes and
# test_in_flight_shares_the_workers_out_over_the_processes.
@pytest.mark.parametrize("runner", ["threadpool", "threaded", "serial", "asyncio"])
def test_runs_and_ends_with_the_summary_line(runner: str) -> None:
    done = script("4", "0.001", "--hosts", "30", "--runner", runner)
    assert done.returncode == 0, done.stderr
    last = done.stdout.strip().splitlines()[-1]
    match = SUMMARY.match(last)
    assert match, last
    assert match.groups() == ("30", "0")
    assert f"runner {runner}" in done.stdout
    task = "asim_rtt" if runner in ASYNC_RUNNERS else "sim_rtt"
    assert f"task {task}(rtt=0.001)" in done.stdout


def test_failed_hosts_exit_1_and_are_named_without_tracebacks() -> None:
    done = script("8", "0", "--hosts", "40", "--fail-rate", "0.5", "--seed", "11")
    assert done.returncode == 1
    ok, failed = map(int, SUMMARY.match(done.stdout.strip().splitlines()[-1]).groups())  # type: ignore[union-attr]
    assert ok + failed == 40 and 0 < failed < 40
    assert f"failed with SimulatedFailure: {failed} hosts" in done.stdout
    assert "Traceback" not in done.stdout


def test_seeded_runs_fail_the_same_hosts() -> None:
    args = ("8", "0", "--hosts", "40", "--fail-rate", "0.5", "--seed", "5", "--jitter", "0.001")
    first, second = script(*args), script(*args)
    failures = [line for line in first.stdout.splitlines() if line.startswith("failed with")]
    assert failures and failures == [
        line for line in second.stdout.splitlines() if line.startswith("failed with")
    ]


@pytest.mark.parametrize(
    ("args", "allowed"),
    [
        (["0", "0.05"], "WORKERS: must be a whole number >= 1, got '0'"),
        (["-4", "0.05"], "WORKERS: must be a whole number >= 1, got '-4'"),
        (["many", "0.05"], "WORKERS: must be a whole number >= 1, got 'many'"),
        (["10", "-0.05"], "RTT: must be a number of seconds from 0 to 3600 (an hour: longer than "
                          "any device takes to answer), got '-0.05'"),
        (["10", "nan"], "RTT: must be a number of seconds from 0 to 3600"),
        # Unbounded, the asyncio runner would sleep for ever and the threads overflow.
        (["10", "1e300", "--hosts", "2", "--runner", "asyncio"], "RTT: must be a number of "
         "seconds from 0 to 3600 (an hour: longer than any device takes to answer), got '1e300'"),
        (["10", "inf", "--hosts", "2"], "RTT: must be a number of seconds from 0 to 3600"),
        (["10", "3600.5"], "RTT: must be a number of seconds from 0 to 3600"),
        (["10", "0.05", "--hosts", "0"], "--hosts: must be a whole number >= 1, got '0'"),
        (["10", "0.05", "--fail-rate", "2"], "--fail-rate: must be a probability from 0 to 1"),
        (["10", "0.05", "--jitter", "-1"], "--jitter: must be a number of seconds from 0 to 3600"),
        (["10", "0", "--jitter", "1e300"], "--jitter: must be a number of seconds from 0 to 3600"),
        (["10", "0.05", "--runner", "warp"], "unknown runner 'warp'; available: "),
        (["10"], "the following arguments are required: RTT"),
        (["10", "0.05", "--record", "/nonexistent/run.json"],
         "--record: cannot write /nonexistent/run.json: No such file or directory"),
    ],
)
def test_bad_input_one_line_exit_2(args: list[str], allowed: str) -> None:
    done = script(*args)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("script.py: error: ")
    assert allowed in lines[0]
    assert "Traceback" not in done.stderr and done.stdout == ""


# The record is the script's, whatever the runner; serial has no workers.
@pytest.mark.parametrize("runner", ["threadpool", "serial"])
def test_the_record_holds_the_figures_of_the_last_line(runner: str, tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    done = script("4", "0", "--hosts", "30", "--fail-rate", "0.5", "--seed", "2", "--runner",
                  runner, "--record", str(path))
    assert done.returncode == 1, done.stderr
    ok, failed = map(int, SUMMARY.match(done.stdout.strip().splitlines()[-1]).groups())  # type: ignore[union-attr]
    record = read_record(path)
    assert (record.ok, record.failed, record.hosts, record.rtt) == (ok, failed, 30, 0)
    task = "asim_rtt" if runner in ASYNC_RUNNERS else "sim_rtt"
    assert (record.runner, record.task, record.interrupted) == (runner, task, False)
    assert record.workers == (None if runner == "serial" else 4)  # serial has no workers
    assert 0 < record.run_wall < record.wall and record.max_rss_mib > 0
    assert path.read_text().count("\n") == 1  # one JSON object, one line


def test_unknown_runner_lists_the_installed_ones() -> None:
    line = script("10", "0.05", "--runner", "warp").stderr.strip()
    for name in ("serial", "threaded", "threadpool"):
        assert name in line


class Interrupted:
    """scripts/script.py run with ``--progress`` in a process group of its own: its bar read
    as it is drawn, so that Ctrl-C lands once hosts have finished, however busy the machine."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(SCRIPT), *args, "--progress"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        )
        self.said = b""
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        while chunk := os.read(self.proc.stderr.fileno(), 4096):
            self.said += chunk

    def done(self) -> int:
        """The hosts done, as the bar last said."""
        counts = re.findall(rb"(\d+)/\d+ \[", self.said)
        return int(counts[-1]) if counts else 0

    def ctrl_c(self, group: bool = False) -> tuple[str, str]:
        """Ctrl-C once some host is done (to the process, or to its group as a terminal sends
        it); what it printed once it ended."""
        try:
            wait_until(lambda: self.done() > 0, "a host done", every=0.05)
            if group:
                os.killpg(self.proc.pid, signal.SIGINT)
            else:
                os.kill(self.proc.pid, signal.SIGINT)
            self.proc.wait(HANG_GUARD)
        finally:
            self.proc.kill()
            assert self.proc.stdout is not None
            out = self.proc.stdout.read().decode()
            self.proc.wait()
            self.reader.join(HANG_GUARD)
            self.proc.stdout.close()
            self.proc.stderr.close()  # type: ignore[union-attr]
        return out, self.said.decode(errors="replace")


@pytest.mark.parametrize("runner", ["threadpool", "asyncio"])
def test_ctrl_c_keeps_what_finished_and_exits_130(runner: str) -> None:
    # 2 workers x 0.05 s over 2,000 hosts would take 50 s: Ctrl-C lands mid-run.
    run = Interrupted("2", "0.05", "--hosts", "2000", "--runner", runner)
    out, err = run.ctrl_c()
    assert run.proc.returncode == 130, err
    assert "Traceback" not in err
    ok, failed = map(int, SUMMARY.match(out.strip().splitlines()[-1]).groups())  # type: ignore[union-attr]
    assert 0 < ok < 2000 and failed == 0
    assert f"interrupted: {2000 - ok} hosts did not run" in out


@pytest.mark.parametrize("to", ["process", "group"])
def test_ctrl_c_on_dask_keeps_what_finished_and_leaves_no_cluster_process(to: str) -> None:
    # 2 Dask workers x 2 hosts x 0.05 s over 4,000 hosts would take 50 s: Ctrl-C lands mid-run.
    # "group": as a terminal sends it, to the whole foreground process group; the embedded
    # cluster's processes got it too, and every host in flight failed, the scheduler lost.
    run = Interrupted("2", "0.05", "--hosts", "4000", "--runner", "dask")
    cluster: list[psutil.Process] = []

    def cluster_up() -> bool:
        # The scheduler, the workers' command and, per worker, its nanny and its process.
        nonlocal cluster
        cluster = psutil.Process(run.proc.pid).children(recursive=True)
        return len(cluster) >= 4

    wait_until(cluster_up, "the embedded cluster's processes", every=0.2)
    out, err = run.ctrl_c(group=to == "group")
    assert run.proc.returncode == 130, err
    assert "Traceback" not in err
    ok, failed = map(int, SUMMARY.match(out.strip().splitlines()[-1]).groups())  # type: ignore[union-attr]
    assert 0 < ok < 4000 and failed == 0
    assert f"interrupted: {4000 - ok} hosts did not run" in out
    _, alive = psutil.wait_procs(cluster, timeout=HANG_GUARD)
    assert not alive, [process.cmdline()[:4] for process in alive]


PROCESS = re.compile(r"wall ([\d.]+) s, user ([\d.]+) s, sys ([\d.]+) s")


def test_failed_hosts_are_counted_not_printed() -> None:
    """Once: every failed host's traceback was printed, inside the timed run."""
    done = script("50", "0", "--hosts", "400", "--fail-rate", "0.25", "--seed", "3")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr + done.stdout
    assert done.stderr == ""
    assert "failed with SimulatedFailure:" in done.stdout


def test_the_wall_starts_with_the_interpreter_not_the_process_a_shell_exec_replaced() -> None:
    """Once: a shell that slept, then exec'd the script, had its sleep counted as the run's."""
    slept = 5
    start = time.monotonic()
    done = subprocess.run(
        ["bash", "-c", f'sleep {slept}; exec "{sys.executable}" "{SCRIPT}" 1 0 --hosts 1'],
        capture_output=True, text=True, timeout=120,
    )
    seen = time.monotonic() - start
    assert done.returncode == 0, done.stderr
    match = PROCESS.search(done.stdout)
    assert match, done.stdout
    # The script started after the sleep, within what this test saw: its wall leaves the sleep
    # out however slow the machine (0.05 s for the rounding and the shell's own CPU, counted).
    assert float(match.group(1)) <= seen - slept + 0.05, (match.group(1), seen)


BURNED = 1.5  # seconds of CPU the shell's child burns
BURN_AND_GROW = (
    "import time\n"
    "held = b'x' * (300 << 20)\n"
    "start = time.process_time()\n"
    f"while time.process_time() - start < {BURNED}:\n"
    "    pass\n"
)


def test_cpu_and_memory_leave_out_a_child_of_the_shell_that_exec_d_the_script() -> None:
    """Once, `pip install -e . && python3 scripts/script.py ...` (the README's first command)
    counted pip's CPU and peak memory as the script's: the shell ran pip as its child, then
    replaced itself with the script, which inherits the shell's children's usage."""
    command = (
        f'"{sys.executable}" -c "{BURN_AND_GROW}"; '
        f'exec "{sys.executable}" "{SCRIPT}" 1 0 --hosts 1'
    )
    before = os.times()
    done = subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=120)
    after = os.times()
    assert done.returncode == 0, done.stderr
    match = re.search(
        r"wall ([\d.]+) s, user ([\d.]+) s, sys ([\d.]+) s, cpu (\d+) %, max rss (\d+) MiB",
        done.stdout,
    )
    assert match, done.stdout
    wall, user, system, cpu, max_rss = (float(figure) for figure in match.groups())
    # What the shell, its child and the script used, measured from outside: the script's
    # share leaves the child's out, however busy the machine (0.05 s: rounding, clock ticks).
    outside = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    assert user + system <= outside - BURNED + 0.05, (done.stdout, outside)
    # The cpu % is made of those figures (each printed rounded).
    cpu_low = 100 * (user + system - 0.01) / (wall + 0.005) - 0.5
    cpu_high = 100 * (user + system + 0.01) / (wall - 0.005) + 0.5
    assert cpu_low <= cpu <= cpu_high, done.stdout
    # The child held 300 MiB: counted, the peak would be at least that. (The script's own
    # peak is about 22 MiB; once, on a loaded machine, it read 201.)
    assert max_rss < 300, done.stdout


@pytest.mark.parametrize("runner", ["processpool", "dask"])
def test_cpu_includes_the_worker_processes(runner: str) -> None:
    """Once, processpool's user and sys time left out its workers, which did the work; and the
    dask runner's embedded cluster, stopped only at exit, after the line was printed."""
    before = os.times()
    done = script("200", "0", "--hosts", "20000", "--runner", runner, timeout=120)
    after = os.times()
    assert done.returncode == 0, done.stderr
    match = PROCESS.search(done.stdout)
    assert match, done.stdout
    reported = float(match.group(2)) + float(match.group(3))
    # What the waited-for script and its descendants used, measured from outside.
    outside = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    assert reported >= 0.9 * outside - 0.05, (reported, outside)


@pytest.mark.parametrize("runner", ["processpool", "dask"])
def test_in_flight_shares_the_workers_out_over_the_processes(runner: str) -> None:
    """The sweep's x is the hosts in flight: processpool's num_workers is per process, so at
    the same WORKERS it once had twice the hosts in flight of the others on 2 CPUs."""
    from nornir_bench.bench.benchmark import _runner_options

    procs = os.cpu_count() or 1
    options = _runner_options(runner, 10 * procs, in_flight=True)
    assert options == {"num_workers": 10, "num_procs": procs}
    assert _runner_options(runner, 1, in_flight=True) == {"num_workers": 1, "num_procs": 1}
    assert _runner_options(runner, 10) == {"num_workers": 10}
    assert _runner_options("threadpool", 10, in_flight=True) == {"num_workers": 10}
    done = script("4", "0", "--hosts", "20", "--runner", runner, "--in-flight", timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"runner {runner}, {math.ceil(4 / min(procs, 4))} workers" in done.stdout
