"""``nornir-bench run JOB --limit/--runner/--workers/-e``: the job narrowed and tuned from the
command line, each option checked as the job is (one line, exit 2), and the records and the
first line saying what was changed. Run in the test's process (tests/cli/in_process.py), synthetic
hosts."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_run import nornir_bench_here, records

TASKS = '''
def workers(task):
    runner = task.nornir.runner
    return {"runner": type(runner).__name__, "workers": getattr(runner, "num_workers", None)}


def templated(task, variables=None, backup_dir=None):
    return {"variables": variables, "backup_dir": backup_dir}
'''


def job(tmp_path: Path, steps: str = "", narrowed: str = "") -> Path:
    """Eight synthetic hosts dev0-dev7 in group0 (even) and group1 (odd); a step reporting
    the runner it ran on, and one a template's variables reach."""
    (tmp_path / "mytasks.py").write_text(TASKS)
    path = tmp_path / "job.yaml"
    path.write_text(textwrap.dedent("""\
        inventory: {plugin: synthetic, options: {hosts: 8, groups: 2}}
        runner: {plugin: threadpool, options: {num_workers: 4}}
        logging: {enabled: false}
        steps:
          - name: mytasks:workers
        """) + (steps or "  - {name: mytasks:templated, params: {variables: {a: '1'}}}\n")
        + narrowed)
    return path


def ran(tmp_path: Path, *args: str) -> tuple[list[dict[str, Any]], str]:
    done = nornir_bench_here("run", str(job(tmp_path)), "-q", "-o", "out.jsonl", *args,
                             cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    return records(tmp_path / "out.jsonl"), done.stdout


@pytest.mark.parametrize(
    ("limit", "hosts"),
    [
        ("dev1,dev2", {"dev1", "dev2"}),
        ("dev[0-2]", {"dev0", "dev1", "dev2"}),
        ("group:group1", {"dev1", "dev3", "dev5", "dev7"}),
        ("group:group1,!dev3", {"dev1", "dev5", "dev7"}),
        ("!dev0,!group:group1", {"dev2", "dev4", "dev6"}),
        ("dev*,&group:group0,!dev4", {"dev0", "dev2", "dev6"}),
    ],
)
def test_limit_runs_the_hosts_its_patterns_choose_as_ansibles_would(
    tmp_path: Path, limit: str, hosts: set[str]
) -> None:
    rows, out = ran(tmp_path, "--limit", limit)
    assert {row["host"] for row in rows if row["step"] == 1} == hosts
    assert f"on {len(hosts)} hosts, runner threadpool; from the command line: --limit " in out
    assert all(row["overrides"] == {"limit": limit} for row in rows)


def test_limit_narrows_what_the_jobs_filter_leaves(tmp_path: Path) -> None:
    path = job(tmp_path, narrowed="filter: {groups: group0}\n")
    done = nornir_bench_here("run", str(path), "-q", "-o", "out.jsonl", "-l", "dev*", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert {r["host"] for r in records(tmp_path / "out.jsonl")} == {"dev0", "dev2", "dev4", "dev6"}
    odd = nornir_bench_here("run", str(path), "-q", "-o", "out.jsonl", "-l", "dev1", cwd=tmp_path)
    assert odd.returncode == 2
    assert odd.stderr.startswith("nornir-bench: error: --limit 'dev1': 'dev1' matches none of "
                                 "the job's 4 hosts (dev0, dev2, dev4, dev6)")


def test_runner_and_workers_replace_the_jobs_and_are_recorded(tmp_path: Path) -> None:
    rows, out = ran(tmp_path, "--runner", "asyncio", "--workers", "3")
    assert {tuple(r["result"].values()) for r in rows if r["step"] == 1} == {("AsyncioRunner", 3)}
    assert "runner asyncio; from the command line: --runner asyncio, --workers 3" in out
    assert rows[0]["overrides"] == {"runner": "asyncio", "workers": 3}
    rows, _ = ran(tmp_path, "--runner", "serial")  # the job's num_workers means nothing there
    assert {r["result"]["runner"] for r in rows if r["step"] == 1} == {"SerialRunner"}


def test_e_adds_variables_over_the_jobs_and_a_secret_among_them_is_masked(tmp_path: Path) -> None:
    rows, out = ran(tmp_path, "-e", "a=2", "-e", "b=x y", "-e", "password=Zz9s3cret")
    (variables,) = {str(r["result"]["variables"]) for r in rows if r["step"] == 2}
    assert variables == str({"a": "2", "b": "x y", "password": "********"})
    assert "Zz9s3cret" not in out + (tmp_path / "out.jsonl").read_text()
    assert rows[0]["overrides"] == {"variables": {"a": "2", "b": "x y", "password": "********"}}


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--limit", "dev9"], "nornir-bench: error: --limit 'dev9': 'dev9' matches none of the "
         "job's 8 hosts (dev0, dev1, dev2, dev3, dev4, ... (+3))"),
        (["--limit", "dev1,!dev1"], "nornir-bench: error: --limit 'dev1,!dev1': no host is left"),
        (["--limit", "group:nope"], "--limit 'group:nope': 'group:nope' matches none of the "
         "job's 8 hosts (dev0, dev1, dev2, dev3, dev4, ... (+3)); their groups: group0, group1"),
        (["--limit", "dev1,,dev2"], "argument --limit/-l: '' is not a pattern"),
        (["--limit", "!!dev1"], "argument --limit/-l: '!!dev1' is not a pattern"),
        (["--runner", "thread"], "argument --runner: unknown runner 'thread'; available: "),
        (["--workers", "0"], "argument --workers: must be a whole number >= 1, got '0'"),
        (["--workers", "many"], "argument --workers: must be a whole number >= 1, got 'many'"),
        (["--runner", "serial", "--workers", "2"],
         "--workers 2: runner serial has no worker count (num_workers)"),
        (["-e", "novalue"], "argument -e/--extra-var: give KEY=VALUE"),
        (["-e", "host=r1"], "argument -e/--extra-var: give KEY=VALUE"),
        (["-e", "=1"], "argument -e/--extra-var: give KEY=VALUE"),
    ],
)
def test_each_mistake_is_one_line_and_exit_2(
    tmp_path: Path, args: list[str], error: str
) -> None:
    done = nornir_bench_here("run", str(job(tmp_path)), "-o", "out.jsonl", *args, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert len(done.stderr.splitlines()) == 1 and error in done.stderr, done.stderr
    assert not (tmp_path / "out.jsonl").exists() and "Traceback" not in done.stderr


def test_e_for_a_job_whose_tasks_take_no_variables_is_refused(tmp_path: Path) -> None:
    path = job(tmp_path, steps="  - name: mytasks:workers\n")
    done = nornir_bench_here("run", str(path), "-e", "a=1", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == (
        "nornir-bench: error: -e a=...: no task of the job takes variables (mytasks:workers); "
        "send_config, asend_config, netconf_edit_config and anetconf_edit_config do, for their "
        "template\n"
    )


def test_an_async_task_on_a_runner_named_by_runner_that_cannot_await_it(tmp_path: Path) -> None:
    path = job(tmp_path, steps="  - {name: asim_rtt, params: {rtt: 0}}\n")
    done = nornir_bench_here("run", str(path), "--runner", "asyncio", "-o", "o.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    path.write_text(path.read_text().replace("  - name: mytasks:workers\n", ""))
    done = nornir_bench_here("run", str(path), "--runner", "threadpool", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith(
        "nornir-bench: error: --runner threadpool: step 1: task asim_rtt is async (async def) and "
        "runner 'threadpool' cannot await it; use one of: asyncio, "
    )


def test_a_step_the_limit_leaves_no_host_to_runs_on_none(tmp_path: Path) -> None:
    """A step's filter is checked against the job's hosts, not the limited ones: ``--limit``
    leaving it none is no mistake in the job."""
    path = job(tmp_path, steps="  - {name: mytasks:workers, filter: {groups: group1}}\n")
    done = nornir_bench_here("run", str(path), "-q", "-o", "o.jsonl", "-l", "group:group0",
                             cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "step 2 mytasks:workers: hosts: 0, ok: 0, failed: 0" in done.stdout
    assert {r["step"] for r in records(tmp_path / "o.jsonl")} == {1}
