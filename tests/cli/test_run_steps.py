"""``nornir-bench run`` on jobs of several steps, and ``--show``: its exit status, what it
prints and the records it writes.

In the test's process (``nornir_bench_here``), but for Ctrl-C and --show's terminal with no
traceback, each in a process of its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.test_run import (
    SECRET,
    ctrl_c_after_the_first_record,
    job_file,
    nornir_bench,
    nornir_bench_here,
    one_error_line,
    records,
)
from tests.jobs.test_steps import BAD_STEPS

# Tasks whose results hold what a device would answer: lines of text, the password echoed
# (as a device's config dump might), data, a subtask's answer.
SHOW_TASKS = '''
from nornir.core.task import Result


def show_run(task, lines=3):
    number = int(task.host.name[3:])
    if number == 1:
        raise ValueError(f"refused\\nfor {task.host.password}\\nsecond line")
    text = "\\n".join(f"line {i} of {task.host.name}" for i in range(lines))
    return text + f"\\nenable secret {task.host.password}"


def facts(task):
    return {"hostname": task.host.name, "secret": task.host.password, "uptime": 7}


def with_subtask(task):
    task.run(task=facts, name="gather facts")
    return "parent done"
'''


def show_job(tmp_path: Path, body: str, hosts: int = 3) -> Path:
    job = job_file(tmp_path, body, hosts=hosts)
    (tmp_path / "showtasks.py").write_text(SHOW_TASKS)
    return job


def test_a_job_of_steps_prints_a_line_per_step_and_where_each_host_failed(
    tmp_path: Path,
) -> None:
    job = job_file(tmp_path, """\
        steps:
          - {name: sim_rtt, params: {rtt: 0, fail_rate: 0.3, seed: 1}}
          - {name: sim_rtt, params: {rtt: 0, fail_rate: 0.3, seed: 3}}
          - {name: 'jobtasks:slow', params: {seconds: 0}, on_failed: true,
             filter: {hosts: [dev1, dev2, dev5]}}
        """)
    done = nornir_bench_here("run", str(job), "-o", "out.jsonl", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"job {job}: 3 steps on 12 hosts, runner threadpool"
    assert lines[1].startswith("step 1 sim_rtt (rtt: 0, fail_rate: 0.3, seed: 1): hosts: 12, "
                               "ok: 9, failed: 3, ")
    assert lines[2].startswith("step 2 sim_rtt (rtt: 0, fail_rate: 0.3, seed: 3): hosts: 9, "
                               "ok: 5, failed: 4, ")
    assert lines[2].endswith("; left out: 3 hosts that failed an earlier step")
    assert lines[3].startswith("step 3 jobtasks:slow (seconds: 0): hosts: 3, ok: 3, failed: 0")
    assert "hosts: 12, ok: 5, failed: 7, changed: 0" in lines
    for host, step in (("dev2", 1), ("dev1", 2)):
        assert (
            f"  {host} (step {step} sim_rtt): SimulatedFailure: simulated failure on {host} "
            "after 0.0 ms"
        ) in lines
    rows = records(tmp_path / "out.jsonl")
    assert [(r["step"], r["task"]) for r in rows if r["host"] == "dev2"] == [
        (1, "sim_rtt"), (3, "jobtasks:slow")
    ]
    assert len(rows) == 12 + 9 + 3


@pytest.mark.parametrize(("body", "says"), BAD_STEPS.values(), ids=BAD_STEPS)
def test_each_bad_steps_input_exits_2_in_one_line(tmp_path: Path, body: str, says: str) -> None:
    job = tmp_path / "job.yaml"
    job.write_text("inventory: {plugin: synthetic, options: {hosts: 12, groups: 2}}\n"
                   "logging: {enabled: false}\n" + body)
    line = one_error_line(nornir_bench_here("run", "job.yaml", "-o", "out.jsonl", cwd=tmp_path))
    assert line == says
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.slow  # a process of its own
def test_ctrl_c_in_a_step_keeps_what_finished_and_runs_no_later_step(tmp_path: Path) -> None:
    job = job_file(
        tmp_path,
        """\
        steps:
          - {name: 'jobtasks:slow', params: {seconds: 0.2}}
          - {name: 'jobtasks:slow', params: {seconds: 0}}
        """,
        hosts=400,
        runner="asyncio",
    )
    kept, stdout, stderr = ctrl_c_after_the_first_record(job, tmp_path)
    assert 0 < len(kept) < 400 and {r["step"] for r in kept} == {1}
    # The hosts in flight finish their step, on the asyncio runner too: none is abandoned.
    finished = [r for r in kept if r["exception"] != "HostAbandoned"]
    assert finished == kept
    assert (
        f"interrupted: at step 1 of 2, {400 - len(finished)} of 400 hosts did not finish it; "
        "1 later step not run"
    ) in stdout
    assert "step 2 jobtasks:slow (seconds: 0): not run: the job was interrupted at step 1" in stdout
    # No host ran every step: none is ok. Once, the job's line read "ok: N", all is well.
    ok = sum(not r["failed"] for r in kept)
    assert f"hosts: {len(kept)}, ok: 0, failed: {len(kept) - ok}" in stdout
    assert f"not finished: {ok}" in stdout
    assert "Traceback" not in stderr


@pytest.mark.slow  # a process of its own
def test_show_prints_each_hosts_result_masked_without_tracebacks(tmp_path: Path) -> None:
    job = show_job(tmp_path, """\
        steps:
          - {name: 'showtasks:show_run'}
          - {name: 'showtasks:with_subtask'}
        """)
    done = nornir_bench("run", str(job), "--show", "--quiet", "-o", "out.jsonl", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert SECRET not in done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    shown = done.stdout.split("runner threadpool\n", 1)[1].split("\nstep 1 ", 1)[0]
    assert shown.splitlines() == [
        "dev0 (step 1 showtasks:show_run): ok",
        "    line 0 of dev0",
        "    line 1 of dev0",
        "    line 2 of dev0",
        "    enable secret ********",
        "dev0 (step 2 showtasks:with_subtask): ok",
        "    parent done",
        "    -- gather facts: ok",
        "        {",
        '          "hostname": "dev0",',
        '          "secret": "********",',
        '          "uptime": 7',
        "        }",
        "dev1 (step 1 showtasks:show_run): failed: ValueError: refused",
        "dev1 (step 2 showtasks:with_subtask): not run: it failed an earlier step",
        "dev2 (step 1 showtasks:show_run): ok",
        "    line 0 of dev2",
        "    line 1 of dev2",
        "    line 2 of dev2",
        "    enable secret ********",
        "dev2 (step 2 showtasks:with_subtask): ok",
        "    parent done",
        "    -- gather facts: ok",
        "        {",
        '          "hostname": "dev2",',
        '          "secret": "********",',
        '          "uptime": 7',
        "        }",
    ]


def test_show_of_a_one_task_job_and_its_bound_per_host(tmp_path: Path) -> None:
    job = show_job(tmp_path, "task: {name: 'showtasks:show_run', params: {lines: 1000}}\n", hosts=1)
    done = nornir_bench_here("run", str(job), "--show", "-o", "out.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1] == "dev0: ok"
    assert lines[2:202] == [f"    line {i} of dev0" for i in range(200)]
    assert lines[202] == (
        "    ... cut: 801 more lines, 16,026 characters (at most 200 lines, 20,000 characters a "
        "host); the task's full result is in out.jsonl"
    )
    assert lines[203] == "hosts: 1, ok: 1, failed: 0, changed: 0"


def test_shows_cut_line_counts_only_what_it_cut(tmp_path: Path) -> None:
    """One line of 30,000 characters: 20,000 shown (with the indent). Once, the cut line said
    ``1 more lines, 30,004 characters``, counting what was shown."""
    (tmp_path / "wide.py").write_text("def wide(task):\n    return 'x' * 30_000 + '\\nlast'\n")
    job = job_file(tmp_path, "task: {name: 'wide:wide'}\n", hosts=1)
    done = nornir_bench_here("run", str(job), "--show", "-o", "out.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[2] == "    " + "x" * 19_996
    assert lines[3] == (
        "    ... cut: the rest of this line and 1 more line, 10,012 characters (at most 200 "
        "lines, 20,000 characters a host); the task's full result is in out.jsonl"
    )


def test_show_of_a_secret_given_through_the_environment_is_masked(tmp_path: Path) -> None:
    """The job's own password, not the inventory's: ``${ENV}`` in a task parameter."""
    (tmp_path / "echo.py").write_text(
        "def echo(task, password):\n    return f'logged in with {password}\\nok'\n"
    )
    job = job_file(
        tmp_path, "task: {name: 'echo:echo', params: {password: '${NB_TEST_SECRET}'}}\n", hosts=2
    )
    done = nornir_bench_here("run", str(job), "--show", "-o", "out.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "    logged in with ********\n    ok\n" in done.stdout
    assert SECRET not in done.stdout + done.stderr + (tmp_path / "out.jsonl").read_text()
