"""``nornir-bench run`` as a user runs it: a real subprocess, its exit status, output and records."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

SECRET = "Sw0rdf1sh-from-env"

# A task module the jobs name as ``jobtasks:...``: it sits next to the job file, as a user's would.
TASKS = '''
import time
from nornir.core.task import Result


class DeviceRefused(Exception):
    pass


def flaky(task, fail_every=3):
    """Fails every ``fail_every``-th host, with the password in the message (as a careless
    library might), to show it never reaches the output."""
    number = int(task.host.name[3:])
    if number % fail_every == 0:
        raise DeviceRefused(f"login refused for {task.host.username}/{task.host.password}")
    return {"host": task.host.name, "echo": task.host.password}


def slow(task, seconds):
    time.sleep(seconds)
    return task.host.name


def nested(task):
    task.run(task=flaky, fail_every=1)
'''


def job_file(tmp_path: Path, body: str, *, hosts: int = 12, runner: str = "threadpool") -> Path:
    (tmp_path / "jobtasks.py").write_text(TASKS)
    path = tmp_path / "job.yaml"
    path.write_text(
        textwrap.dedent(f"""\
        inventory:
          plugin: synthetic
          options: {{hosts: {hosts}, username: netops, password: "${{NB_TEST_SECRET}}"}}
        runner: {{plugin: {runner}, options: {{num_workers: 4}}}}
        logging: {{enabled: true, level: DEBUG, log_file: nornir.log}}
        """)
        + textwrap.dedent(body)
    )
    return path


def nornir_bench(*args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NB_TEST_SECRET": SECRET}
    return subprocess.run(
        [sys.executable, "-m", "nornir_bench", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=env,
    )


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("runner", ["threadpool", "asyncio", "processpool", "threaded"])
def test_a_good_run_exits_0_with_a_summary_and_a_record_per_host(
    tmp_path: Path, runner: str
) -> None:
    job = job_file(tmp_path, "task: {name: sim_rtt, params: {rtt: 0.01}}\n", runner=runner)
    done = nornir_bench("run", str(job), "--output", "out.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"task sim_rtt on 12 hosts, runner {runner}" in done.stdout
    assert "hosts: 12, ok: 12, failed: 0" in done.stdout
    assert "per-host records: out.jsonl" in done.stdout
    rows = records(tmp_path / "out.jsonl")
    assert sorted(r["host"] for r in rows) == sorted(f"dev{i}" for i in range(12))
    for row in rows:
        assert set(row) == {
            "host",
            "failed",
            "elapsed",
            "result",
            "exception",
            "message",
            "traceback",
        }
        assert row["failed"] is False and row["exception"] is None and row["traceback"] is None
        assert row["elapsed"] >= 0.009  # the host's own time, on every runner
        assert row["result"] == pytest.approx(0.01, abs=0.01)


def test_failed_hosts_exit_1_one_line_each_tracebacks_only_in_the_file(tmp_path: Path) -> None:
    job = job_file(tmp_path, "task: {name: 'jobtasks:flaky', params: {fail_every: 3}}\n")
    done = nornir_bench("run", str(job), "-o", "out.jsonl", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "hosts: 12, ok: 8, failed: 4" in done.stdout
    assert "failed with DeviceRefused: 4 hosts (dev0, dev3, dev6, dev9)" in done.stdout
    host_lines = [line for line in done.stdout.splitlines() if line.startswith("  dev")]
    assert sorted(host_lines) == [
        f"  dev{i}: DeviceRefused: login refused for netops/********" for i in (0, 3, 6, 9)
    ]
    assert "Traceback" not in done.stdout + done.stderr
    by_host = {r["host"]: r for r in records(tmp_path / "out.jsonl")}
    assert by_host["dev3"]["failed"] is True
    assert by_host["dev3"]["exception"] == "DeviceRefused"
    assert by_host["dev3"]["message"] == "login refused for netops/********"
    assert by_host["dev3"]["traceback"].startswith("Traceback (most recent call last)")
    assert by_host["dev3"]["result"] is None
    assert by_host["dev4"]["result"] == {"host": "dev4", "echo": "********"}


def test_a_failed_subtask_is_reported_by_its_own_exception(tmp_path: Path) -> None:
    job = job_file(tmp_path, "task: {name: 'jobtasks:nested'}\n", hosts=2)
    done = nornir_bench("run", str(job), "-o", "out.jsonl", cwd=tmp_path)
    assert done.returncode == 1
    assert "  dev0: DeviceRefused: login refused for netops/********" in done.stdout
    assert {r["exception"] for r in records(tmp_path / "out.jsonl")} == {"DeviceRefused"}


@pytest.mark.parametrize("runner", ["threadpool", "asyncio", "processpool"])
def test_the_password_never_reaches_the_terminal_the_records_or_the_log(
    tmp_path: Path, runner: str
) -> None:
    job = job_file(
        tmp_path, "task: {name: 'jobtasks:flaky', params: {fail_every: 2}}\n", runner=runner
    )
    done = nornir_bench("run", str(job), "-o", "out.jsonl", cwd=tmp_path)
    assert done.returncode == 1
    log = (tmp_path / "nornir.log").read_text()
    written = (tmp_path / "out.jsonl").read_text()
    assert "login refused" in log and "login refused" in written  # the failures were logged
    for output in (done.stdout, done.stderr, written, log):
        assert SECRET not in output
    assert "********" in written and "********" in done.stdout


def test_the_default_output_file_is_named_after_the_job(tmp_path: Path) -> None:
    job = job_file(tmp_path, "task: {name: sim_rtt, params: {rtt: 0}}\n", hosts=3)
    done = nornir_bench("run", str(job), cwd=tmp_path)
    assert done.returncode == 0
    (written,) = tmp_path.glob("job-*.jsonl")
    assert f"per-host records: {written.name}" in done.stdout
    assert len(records(written)) == 3


def test_the_jobs_output_path_is_used_unless_overridden(tmp_path: Path) -> None:
    job = job_file(
        tmp_path, "task: {name: sim_rtt, params: {rtt: 0}}\noutput: {path: res/r.jsonl}\n", hosts=3
    )
    assert nornir_bench("run", str(job), cwd=tmp_path).returncode == 0
    assert len(records(tmp_path / "res" / "r.jsonl")) == 3


def test_no_progress_bar_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    job = job_file(tmp_path, "task: {name: sim_rtt, params: {rtt: 0}}\n", hosts=3)
    done = nornir_bench("run", str(job), "-o", "out.jsonl", cwd=tmp_path)
    assert done.stderr == ""


def test_ctrl_c_keeps_the_hosts_that_finished(tmp_path: Path) -> None:
    job = job_file(
        tmp_path,
        "task: {name: 'jobtasks:slow', params: {seconds: 0.2}}\n",
        hosts=400,
        runner="asyncio",
    )
    env = {**os.environ, "NB_TEST_SECRET": SECRET}
    process = subprocess.Popen(
        [sys.executable, "-m", "nornir_bench", "run", str(job), "-o", "out.jsonl"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out_file = tmp_path / "out.jsonl"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (not out_file.exists() or len(out_file.read_text()) == 0):
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == 130, stderr
    finished = records(out_file)
    assert 0 < len(finished) < 400
    assert f"interrupted: {400 - len(finished)} of 400 hosts did not finish" in stdout
    assert "Traceback" not in stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ([], "the following arguments are required: COMMAND"),
        (["run"], "the following arguments are required: JOB.yaml"),
        (["walk"], "invalid choice: 'walk'"),
        (["run", "missing.yaml"], "missing.yaml: cannot read the job file"),
    ],
)
def test_bad_usage_exits_2_in_one_line(tmp_path: Path, args: list[str], says: str) -> None:
    done = nornir_bench(*args, cwd=tmp_path)
    assert done.returncode == 2
    assert says in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 or done.stderr.startswith("usage:")
    assert "Traceback" not in done.stderr


def test_a_bad_job_exits_2_with_file_line_and_column(tmp_path: Path) -> None:
    job = job_file(tmp_path, "task: {name: sim_rtt, params: {rtt: 0}}\nrunner_options: {}\n")
    done = nornir_bench("run", str(job), cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"nornir-bench: error: {job}:7:1: unknown key 'runner_options' in the job; allowed: "
        "inventory, runner, core, logging, ssh, user_defined, task, filter, output"
    )
    assert done.stdout == ""


def test_an_unset_secret_variable_exits_2_naming_it(tmp_path: Path) -> None:
    job = job_file(tmp_path, "task: {name: sim_rtt, params: {rtt: 0}}\n")
    env = {k: v for k, v in os.environ.items() if k != "NB_TEST_SECRET"}
    done = subprocess.run(
        [sys.executable, "-m", "nornir_bench", "run", str(job)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 2
    assert "environment variable NB_TEST_SECRET is not set" in done.stderr
