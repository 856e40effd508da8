"""Ctrl-C and SIGTERM on any runner: no host starts after them, and what finished is kept."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from nornir.core.task import Task

from nornir_bench.core.ctrl_c import CtrlC
from nornir_bench.core.stoppable import stoppable
from tests.conftest import make_nornir
from tests.runners.test_conformance import RUNNERS
from tests.waiting import HANG_GUARD, wait_until

# Every installed runner of the conformance suite (its first entry of each plugin name, with its
# marks): a new runner is stopped here too.
RUNNER_NAMES = [
    pytest.param(runner.name, id=runner.name, marks=runner.marks)
    for i, runner in enumerate(RUNNERS)
    if runner.installed and runner.name not in {earlier.name for earlier in RUNNERS[:i]}
]

ROOT = Path(__file__).resolve().parents[2]
HOSTS = 200


def slow_job(tmp_path: Path, runner: str, rtt: float = 0.5) -> Path:
    options = "{num_workers: 20}" if runner != "serial" else "{}"
    path = tmp_path / "slow.yaml"
    path.write_text(
        textwrap.dedent(f"""\
        inventory: {{plugin: synthetic, options: {{hosts: {HOSTS}}}}}
        runner: {{plugin: {runner}, options: {options}}}
        task: {{name: sim_rtt, params: {{rtt: {rtt}}}}}
        logging: {{enabled: false}}
        """)
    )
    return path


@contextmanager
def spawned(args: list[str], cwd: Path) -> Iterator[subprocess.Popen[str]]:
    """``args`` running with pipes, in a session of its own (not the test's process group; and
    not a shell's background job, which would ignore SIGINT); killed if still running after."""
    process = subprocess.Popen(
        args, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()  # reaped, its pipes closed (not left to a later collection)


def wait_for_lines(path: Path, count: int, process: subprocess.Popen[str]) -> None:
    """Until ``path`` has ``count`` lines (hosts finished), while the process runs."""

    def lines() -> bool:
        return path.exists() and path.read_text().count("\n") >= count

    wait_until(lambda: lines() or process.poll() is not None, f"{count} lines in {path}")
    assert lines(), f"{path} never reached {count} lines: the process ended"


def interrupted_run(
    tmp_path: Path, runner: str, *signals: signal.Signals, after: int = 20
) -> tuple[subprocess.CompletedProcess[str], list[dict[str, object]]]:
    """``nornir-bench run`` on 200 slow hosts, ``signals`` sent once ``after`` have finished."""
    out = tmp_path / "records.jsonl"
    args = [sys.executable, "-m", "nornir_bench", "run", str(slow_job(tmp_path, runner))]
    with spawned([*args, "-o", str(out)], tmp_path) as process:
        wait_for_lines(out, after, process)
        for sig in signals:
            process.send_signal(sig)
            time.sleep(0.1)
        stdout, stderr = process.communicate(timeout=60)
    done = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    return done, [json.loads(line) for line in out.read_text().splitlines()]


def finished_in_summary(stdout: str) -> int:
    match = re.search(r"^hosts: (\d+), ok", stdout, re.M)
    assert match, stdout
    return int(match.group(1))


def ended(records: list[dict[str, object]]) -> int:
    """How many hosts of ``records`` finished: the others were stopped in flight (a second
    Ctrl-C abandons them), each recorded as such."""
    stopped = [r for r in records if r["exception"] == "HostAbandoned"]
    for record in stopped:
        assert record["message"] == "stopped in flight by Ctrl-C: what its task did is not known"
    return len(records) - len(stopped)


@pytest.mark.parametrize("runner", [*RUNNER_NAMES, "serial"])
def test_ctrl_c_stops_starting_hosts_and_reports_what_finished(
    tmp_path: Path, runner: str
) -> None:
    """Once, with nornir's threaded runner (nornir-bench run's default then), Ctrl-C did
    nothing until every host had run, and the summary said that none had finished."""
    done, records = interrupted_run(tmp_path, runner, signal.SIGINT)
    assert done.returncode == 130, done.stderr
    finished = ended(records)
    assert 20 <= finished < HOSTS  # the hosts in flight finished (or were stopped); no more
    assert len(records) == finished_in_summary(done.stdout) == len({r["host"] for r in records})
    assert f"interrupted: {HOSTS - finished} of {HOSTS} hosts did not finish" in done.stdout
    assert "Traceback" not in done.stderr
    # Every runner waits for its hosts in flight after Ctrl-C, made to or by itself: the
    # command says so at once (a second Ctrl-C abandons them).
    assert done.stderr.count("stopping: no new host starts; waiting for the hosts in flight") == 1


STUCK_TASK = """
import time
from pathlib import Path


def stuck(task):
    Path("started").touch()  # the run is under way: the runner handles Ctrl-C from now on
    Path(f"started-{task.host.name}").touch()
    time.sleep(3600)  # a blocking call that cannot be interrupted, as on a hung device
    Path(f"finished-{task.host.name}").touch()
    return task.host.name
"""


@pytest.mark.parametrize("runner", RUNNER_NAMES)
def test_a_second_ctrl_c_abandons_the_hosts_in_flight(tmp_path: Path, runner: str) -> None:
    """The first Ctrl-C waits for the hosts in flight; the second must not."""
    (tmp_path / "stuck.py").write_text(STUCK_TASK)
    job = tmp_path / "stuck.yaml"
    job.write_text(
        textwrap.dedent(f"""\
        inventory: {{plugin: synthetic, options: {{hosts: 8}}}}
        runner: {{plugin: {runner}, options: {{num_workers: 4}}}}
        task: {{name: "stuck:stuck"}}
        logging: {{enabled: false}}
        """)
    )
    args = [sys.executable, "-m", "nornir_bench", "run", str(job), "-o", "records.jsonl"]
    with spawned(args, tmp_path) as process:
        wait_until((tmp_path / "started").exists, "a host started")
        process.send_signal(signal.SIGINT)
        time.sleep(0.5)
        process.send_signal(signal.SIGINT)
        # A command that waited for the hosts in flight would hang: the hang guard stops it.
        stdout, stderr = process.communicate(timeout=HANG_GUARD)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert not list(tmp_path.glob("finished-*"))  # the command did not wait for them
    assert "interrupted: 8 of 8 hosts did not finish" in stdout
    # Each host in flight has a record: stopped, what it did not known; the others none.
    records = [json.loads(line) for line in (tmp_path / "records.jsonl").read_text().splitlines()]
    hosts = {r["host"] for r in records}
    assert len(hosts) == len(records)
    assert {p.name.removeprefix("started-") for p in tmp_path.glob("started-*")} <= hosts
    for record in records:
        assert record["failed"] and record["exception"] == "HostAbandoned", record
        assert record["message"] == (
            "stopped in flight by Ctrl-C: what its task did is not known"
        )
    assert "failed with HostAbandoned" in stdout


@pytest.mark.parametrize("runner", RUNNER_NAMES)
def test_sigterm_is_ctrl_c_with_exit_status_143(tmp_path: Path, runner: str) -> None:
    """Once, SIGTERM ended the run at once: no summary, and hosts in flight had no record."""
    done, records = interrupted_run(tmp_path, runner, signal.SIGTERM)
    assert done.returncode == 143, done.stderr
    finished = ended(records)
    assert 20 <= finished < HOSTS and len(records) == finished_in_summary(done.stdout)
    assert f"interrupted (SIGTERM): {HOSTS - finished} of {HOSTS} hosts did not finish" in (
        done.stdout
    )


RETRYING_TASKS = """
from pathlib import Path

def refused(task):
    Path(f"tried-{task.host.name}").touch()
    raise ConnectionRefusedError("refused")

async def arefused(task):
    return refused(task)
"""


@pytest.mark.parametrize(
    "runner", [r for r in RUNNER_NAMES if r.values[0] != "threaded"]  # it has no retries
)
def test_ctrl_c_does_not_wait_for_hosts_waiting_to_retry(tmp_path: Path, runner: str) -> None:
    """Once, processpool's workers went on retrying after Ctrl-C: an hour per host here."""
    (tmp_path / "retrying.py").write_text(RETRYING_TASKS)
    task = "refused" if runner == "threadpool" else "arefused"
    job = tmp_path / "job.yaml"
    job.write_text(textwrap.dedent(f"""\
        inventory: {{plugin: synthetic, options: {{hosts: 40}}}}
        runner: {{plugin: {runner}, options: {{num_workers: 4, retries: 3,
                                                retry_delay: 3600, retry_max_delay: 3600}}}}
        task: {{name: 'retrying:{task}'}}
        logging: {{enabled: false}}
        """))
    args = [sys.executable, "-m", "nornir_bench", "run", str(job), "-o", "out.jsonl"]
    with spawned(args, tmp_path) as process:
        # Until a host has failed once: it waits an hour to retry now.
        wait_until(lambda: list(tmp_path.glob("tried-*")), "a host tried")
        time.sleep(0.2)
        process.send_signal(signal.SIGINT)
        # A command that waited for the retries would hang: the hang guard stops it.
        stdout, stderr = process.communicate(timeout=HANG_GUARD)
    assert process.returncode == 130, stderr
    assert "interrupted" in stdout


def test_the_benchmark_keeps_what_finished_on_the_serial_runner() -> None:
    """Once: "interrupted before any result could be kept" though ~50 hosts had finished."""
    args = [sys.executable, "scripts/script.py", "1", "0.05", "--runner", "serial",
            "--hosts", "400"]
    with spawned(args, ROOT) as process:
        assert process.stdout is not None
        assert process.stdout.readline().startswith("runner serial")  # the run has started
        time.sleep(1.5)
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    finished = finished_in_summary(stdout)
    assert 1 <= finished < 400
    assert f"interrupted: {400 - finished} hosts did not run" in stdout
    assert "could be kept" not in stderr


def test_stoppable_stops_nornirs_serial_runner_in_process() -> None:
    nr = make_nornir("serial", hosts=100)
    main = threading.main_thread().ident
    assert main is not None

    def presses_ctrl_c_on_dev10(task: Task) -> str:
        if task.host.name == "dev10":  # Ctrl-C while the eleventh host runs
            signal.pthread_kill(main, signal.SIGINT)
        return "ok"

    with stoppable(nr.runner, presses_ctrl_c_on_dev10) as stop:
        with pytest.raises(BaseException) as caught:  # NotStarted, from the next host
            nr.with_processors([stop.finished]).run(task=stop.task)
    assert type(caught.value).__name__ == "NotStarted"
    # The ten before it and the one in flight finished and are kept; no other host started.
    assert sorted(stop.finished.results) == sorted(f"dev{i}" for i in range(11))
    assert stop.pressed.is_set()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # restored


class _Transport:
    def interrupt(self) -> None:
        raise KeyboardInterrupt


def test_the_ctrl_c_handler_holds_the_runs_transport_only_while_it_runs() -> None:
    """The handler holds how a second press ends the wait for the run's block alone: held
    after it, the run's transport (and the run, and a pool's processes) lived on until a full
    collection, and a benchmark found processpool's workers still there in the next run."""
    transport = _Transport()
    held = weakref.ref(transport)
    ctrl_c = CtrlC(lambda: None)
    with ctrl_c.handled(interrupt=transport.interrupt):
        pass
    del transport
    assert held() is None
