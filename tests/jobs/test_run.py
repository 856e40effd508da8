"""run_job: a job run in process. It prints nothing: what a command shows is its own."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nornir_bench.jobs import output, run, show
from nornir_bench.jobs.load import load_job
from nornir_bench.jobs.run import run_job

# dev0 presses Ctrl-C as it starts, as a user would mid-run.
CTRL_C_TASK = """
import signal
import threading
import time


def press_ctrl_c(task):
    if task.host.name == "dev0":
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
    time.sleep(0.2)
    return task.host.name
"""


def test_ctrl_c_calls_on_stopping_once_and_run_job_prints_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "ctrlc.py").write_text(CTRL_C_TASK)
    job = tmp_path / "job.yaml"
    job.write_text(
        textwrap.dedent("""\
        inventory: {plugin: synthetic, options: {hosts: 20}}
        runner: {plugin: threaded, options: {num_workers: 2}}
        task: {name: "ctrlc:press_ctrl_c"}
        logging: {enabled: false}
        """)
    )
    calls: list[str] = []
    done = run_job(
        load_job(job),
        output=tmp_path / "out.jsonl",
        progress=False,
        on_stopping=lambda: calls.append("stopping"),
    )
    assert done.interrupted and 0 < len(done.result) < 20
    assert calls == ["stopping"]
    assert capsys.readouterr() == ("", "")


def test_the_records_file_and_the_text_are_still_importable_from_jobs_run() -> None:
    assert run.open_records is output.open_records
    assert run.records_folder is output.records_folder
    assert run.default_output is output.default_output
    assert (run.failure_lines, run.step_lines) == (show.failure_lines, show.step_lines)
    assert run.interruption is show.interruption


EXITING_TASKS = """
import sys


def exits(task):
    if task.host.name == "dev2":
        sys.exit(3)
    return "ok"


async def aexits(task):
    return exits(task)
"""


@pytest.mark.parametrize(
    ("runner", "task"),
    [("threadpool", "exits"), ("asyncio", "aexits"), ("processpool", "exits"), ("dask", "exits")],
)
def test_a_task_that_exits_fails_its_host_and_the_job_goes_on(
    tmp_path: Path, runner: str, task: str
) -> None:
    # It ended the job with exit status 3 and no summary or records (threadpool, asyncio);
    # on processpool it killed its worker, whose traceback reached the terminal twice.
    (tmp_path / "exiting.py").write_text(EXITING_TASKS)
    procs = "num_procs: 2, " if runner in ("dask", "processpool") else ""
    (tmp_path / "job.yaml").write_text(textwrap.dedent(f"""\
        inventory: {{plugin: synthetic, options: {{hosts: 6}}}}
        runner: {{plugin: {runner}, options: {{{procs}num_workers: 2}}}}
        task: {{name: "exiting:{task}"}}
        logging: {{enabled: false}}
        """))
    done = subprocess.run(
        [sys.executable, "-m", "nornir_bench", "run", "job.yaml", "-o", "out.jsonl"],
        cwd=tmp_path, capture_output=True, text=True, timeout=180, check=False,
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr == ""
    assert "hosts: 6, ok: 5, failed: 1" in done.stdout
    assert "dev2: TaskExited: the task exited: sys.exit(3)" in done.stdout
    lines = (tmp_path / "out.jsonl").read_text().splitlines()
    records = {line["host"]: line for line in map(json.loads, lines)}
    assert sorted(records) == [f"dev{i}" for i in range(6)]
    assert records["dev2"]["exception"] == "TaskExited"
