"""Jobs of several steps: read and checked like ``task``, run one after the other on one Nornir,
hosts that failed a step left out of the later ones unless a step says ``on_failed``."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from nornir.core.plugins.connections import ConnectionPluginRegister

from nornir_bench.jobs.load import load_job
from nornir_bench.jobs.run import JobRun, run_job
from nornir_bench.jobs.show import failure_lines, step_lines
from nornir_bench.tasks import asim_rtt, sim_rtt
from tests.devices import LabProcess, counting_server
from tests.jobs.test_load import error_of

# 12 synthetic hosts; with fail_rate 0.3, seed 1 fails dev2, dev4, dev6 and seed 3 fails
# dev1, dev3, dev8, dev10 (plan_round_trip draws by seed and host name alone).
HEAD = """\
inventory: {plugin: synthetic, options: {hosts: 12, groups: 2}}
logging: {enabled: false}
"""
FAIL_SOME = "{rtt: 0, fail_rate: 0.3, seed: 1}"
FAIL_OTHERS = "{rtt: 0, fail_rate: 0.3, seed: 3}"


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "job.yaml"
    path.write_text(HEAD + textwrap.dedent(body), encoding="utf-8")
    return path


def run(tmp_path: Path, body: str) -> tuple[JobRun, list[dict[str, Any]]]:
    output = tmp_path / "records.jsonl"
    done = run_job(load_job(write(tmp_path, body)), output=output, progress=False)
    return done, [json.loads(line) for line in output.read_text().splitlines()]


def test_steps_load_in_order_with_their_filters_and_on_failed(tmp_path: Path) -> None:
    job = load_job(write(tmp_path, f"""\
        runner: {{plugin: asyncio}}
        steps:
          - {{name: sim_rtt, params: {FAIL_SOME}}}
          - name: asim_rtt
            params: {{rtt: 0}}
            filter: {{hosts: [dev1, dev2]}}
            on_failed: true
        """))
    assert job.stepped and [s.number for s in job.steps] == [1, 2]
    assert [(s.task, s.on_failed) for s in job.steps] == [(sim_rtt, False), (asim_rtt, True)]
    assert job.steps[1].filter.hosts == ("dev1", "dev2")
    assert job.task is sim_rtt  # the first step's, as a job of one task has
    assert job.connections() == frozenset()


def test_a_job_whose_steps_are_all_async_gets_asyncio(tmp_path: Path) -> None:
    job = load_job(write(tmp_path, """\
        steps: [{name: asim_rtt, params: {rtt: 0}}, {name: asim_rtt, params: {rtt: 0}}]
        """))
    assert job.runner_plugin == "asyncio"


def test_a_job_of_one_task_is_one_step(tmp_path: Path) -> None:
    job = load_job(write(tmp_path, "task: {name: sim_rtt, params: {rtt: 0}}\n"))
    assert not job.stepped and len(job.steps) == 1 and job.steps[0].task_name == "sim_rtt"


STEP = "{name: sim_rtt, params: {rtt: 0}}"
BAD_STEPS = {
    "task and steps": (
        f"task: {STEP}\nsteps: [{STEP}]\n",
        "job.yaml:4:1: the job has both 'task' and 'steps': give one task, or a list of steps",
    ),
    "no task nor steps": (
        "filter: {hosts: dev1}\n",
        "job.yaml:1:1: the job has no 'task' (with 'name' and 'params'), nor 'steps' (a list "
        "of tasks)",
    ),
    "empty steps": (
        "steps: []\n",
        "job.yaml:3:1: steps must be a list of 1 to 100 tasks, each a mapping with name, "
        "params, filter, on_failed (filter and on_failed optional), got list []",
    ),
    "steps not a list": (
        f"steps: {STEP}\n",
        "job.yaml:3:1: steps must be a list of 1 to 100 tasks, each a mapping with name, "
        "params, filter, on_failed (filter and on_failed optional), got dict {'name': "
        "'sim_rtt', 'params': {'rtt': 0}}",
    ),
    "too many steps": (
        f"steps: [{', '.join([STEP] * 101)}]\n",
        "job.yaml:3:1: steps must be a list of 1 to 100 tasks, each a mapping with name, "
        "params, filter, on_failed (filter and on_failed optional), got a list of 101",
    ),
    "a step not a mapping": (
        f"steps: [{STEP}, sim_rtt]\n",
        "job.yaml:3:44: step 2 must be a mapping with keys name, params, filter, on_failed, "
        "got str 'sim_rtt'",
    ),
    "unknown key in a step": (
        f"steps:\n  - {STEP}\n  - {{name: sim_rtt, params: {{rtt: 0}}, when: always}}\n",
        "job.yaml:5:39: unknown key 'when' in step 2; allowed: name, params, filter, on_failed",
    ),
    "a step without a name": (
        "steps:\n  - params: {rtt: 0}\n",
        "job.yaml:4:5: step 1 has no 'name': a built-in task or module:function",
    ),
    "a bad task parameter, checked as for task": (
        "steps:\n  - name: sim_rtt\n    params: {rtt: .inf}\n",
        "job.yaml:5:5: task sim_rtt: rtt must be a number of seconds from 0 to 3600 (an hour: "
        "longer than any device takes to answer), got inf",
    ),
    "a bad on_failed": (
        f"steps:\n  - {STEP}\n  - {{name: sim_rtt, params: {{rtt: 0}}, on_failed: yes please}}\n",
        "job.yaml:5:50: step 2 on_failed must be true or false, got str 'yes please'",
    ),
    "a bad step filter": (
        "steps:\n  - {name: sim_rtt, params: {rtt: 0}, filter: {hosts: [1]}}\n",
        "job.yaml:4:48: step 1 filter hosts must be a name or a list of names, got list [1]",
    ),
    "a step filter matching none of the job's hosts": (
        f"filter: {{hosts: [dev1, dev2]}}\nsteps:\n  - {STEP}\n"
        "  - {name: sim_rtt, params: {rtt: 0}, filter: {hosts: dev3}}\n",
        "job.yaml:6:5: step 2 sim_rtt: filter: no such host among the job's hosts: dev3",
    ),
    "a step filter leaving no host": (
        f"steps:\n  - {STEP}\n  - {{name: sim_rtt, params: {{rtt: 0}}, "
        "filter: {platform: junos}}\n",
        "job.yaml:5:5: step 2 sim_rtt: its filter matches none of the job's hosts",
    ),
    "an async step on a runner that cannot await it": (
        "runner: {plugin: threadpool}\n"
        f"steps: [{STEP}, {{name: asim_rtt, params: {{rtt: 0}}}}]\n",
        "job.yaml:3:18: step 2: task asim_rtt is async (async def) and runner 'threadpool' "
        "cannot await it; use one of: asyncio, dask, processpool",
    ),
    "an async step on the default runner of mixed steps": (
        f"steps: [{STEP}, {{name: asim_rtt, params: {{rtt: 0}}}}]\n",
        "job.yaml:3:44: step 2: task asim_rtt is async (async def) and runner 'threadpool' "
        "cannot await it (the default when not every step is async); name a runner that can, "
        "which runs the blocking steps too: one of: asyncio, dask, processpool",
    ),
}


@pytest.mark.parametrize(("body", "says"), BAD_STEPS.values(), ids=BAD_STEPS)
def test_each_bad_steps_input_is_one_line_at_its_place(
    tmp_path: Path, body: str, says: str
) -> None:
    assert error_of(write(tmp_path, body)) == f"{tmp_path / 'job.yaml'}{says[8:]}"


def test_hosts_that_failed_a_step_are_left_out_of_the_later_ones(tmp_path: Path) -> None:
    done, rows = run(tmp_path, f"""\
        steps:
          - {{name: sim_rtt, params: {FAIL_SOME}}}
          - {{name: sim_rtt, params: {FAIL_OTHERS}}}
          - {{name: sim_rtt, params: {{rtt: 0}}}}
        """)
    first, second, third = done.steps
    assert sorted(first.result.failed_hosts) == ["dev2", "dev4", "dev6"]
    assert first.left_out == () and second.left_out == ("dev2", "dev4", "dev6")
    assert sorted(second.result.failed_hosts) == ["dev1", "dev10", "dev3", "dev8"]
    assert (len(second.result), len(third.result), len(third.left_out)) == (9, 5, 7)
    # the job: a host that failed any step failed, once
    assert (done.summary.hosts, done.summary.ok, done.summary.failed) == (12, 5, 7)
    assert not done.interrupted
    # one line per host that ran a step, none for the hosts a step left out
    assert [sum(r["step"] == n for r in rows) for n in (1, 2, 3)] == [12, 9, 5]
    assert {r["task"] for r in rows} == {"sim_rtt"}
    assert {r["host"] for r in rows if r["failed"]} == {f"dev{i}" for i in (1, 2, 3, 4, 6, 8, 10)}
    assert step_lines(done)[1].startswith(
        "step 2 sim_rtt (rtt: 0, fail_rate: 0.3, seed: 3): hosts: 9, ok: 5, failed: 4, "
    )
    assert step_lines(done)[1].endswith("; left out: 3 hosts that failed an earlier step")
    lines = failure_lines(done)
    for host, step in (("dev2", 1), ("dev3", 2)):
        assert (
            f"  {host} (step {step} sim_rtt): SimulatedFailure: simulated failure on {host} "
            "after 0.0 ms"
        ) in lines


def test_an_on_failed_step_runs_the_failed_hosts_too_and_they_stay_failed(tmp_path: Path) -> None:
    done, rows = run(tmp_path, f"""\
        runner: {{plugin: asyncio}}
        steps:
          - {{name: asim_rtt, params: {FAIL_SOME}}}
          - {{name: sim_rtt, params: {{rtt: 0}}, on_failed: true}}
          - {{name: asim_rtt, params: {{rtt: 0}}}}
        """)
    first, cleanup, after = done.steps
    assert len(cleanup.result) == 12 and not cleanup.result.failed and cleanup.left_out == ()
    # succeeding a later step does not recover a host: later steps still leave it out...
    assert len(after.result) == 9 and after.left_out == ("dev2", "dev4", "dev6")
    # ...and the job counts it failed
    assert (done.summary.failed, sorted(done.result.failed_hosts)) == (3, ["dev2", "dev4", "dev6"])
    assert [(r["step"], r["failed"]) for r in rows if r["host"] == "dev2"] == [
        (1, True), (2, False)
    ]


def test_a_step_filter_narrows_the_jobs_hosts_for_that_step(tmp_path: Path) -> None:
    done, rows = run(tmp_path, """\
        filter: {groups: [group0]}
        steps:
          - {name: sim_rtt, params: {rtt: 0}}
          - {name: sim_rtt, params: {rtt: 0}, filter: {hosts: [dev0, dev2, dev4]}}
        """)
    assert done.hosts == len(done.steps[0].result) == 6  # group0: the even hosts
    assert sorted(done.steps[1].result) == ["dev0", "dev2", "dev4"]
    assert sorted(r["host"] for r in rows if r["step"] == 2) == ["dev0", "dev2", "dev4"]


def test_raise_on_error_ends_the_job_after_the_step_a_host_failed(tmp_path: Path) -> None:
    done, rows = run(tmp_path, f"""\
        core: {{raise_on_error: true}}
        steps:
          - {{name: sim_rtt, params: {FAIL_SOME}}}
          - {{name: sim_rtt, params: {{rtt: 0}}}}
        """)
    assert len(done.steps[0].result) == 12 and done.summary.failed == 3
    assert done.steps[1].not_run == (
        "core.raise_on_error: a host failed at step 1, which ended the job"
    )
    assert step_lines(done)[1] == (
        "step 2 sim_rtt (rtt: 0): not run: core.raise_on_error: a host failed at step 1, "
        "which ended the job"
    )
    assert {r["step"] for r in rows} == {1}


def test_connections_opened_by_a_step_are_there_for_the_next(tmp_path: Path) -> None:
    (tmp_path / "conntasks.py").write_text(textwrap.dedent("""\
        import itertools
        from nornir_bench.tasks import needs

        OPENED = itertools.count()

        class Session:
            def close(self):
                pass

        @needs(connections=[])
        def open_session(task):
            task.host.connections["session"] = Session()
            task.host.data["session"] = next(OPENED)

        @needs(connections=[])
        def use_session(task):
            return id(task.host.connections["session"]), task.host.data["session"]
        """))
    done, _ = run(tmp_path, """\
        steps:
          - {name: 'conntasks:open_session'}
          - {name: 'conntasks:use_session'}
        """)
    assert done.summary.failed == 0 and len(done.steps[1].result) == 12


COUNTED_TASKS = '''
import asyncio, json, socket

from nornir.core.plugins.connections import ConnectionPluginRegister


class Counted:
    def open(self, hostname, username, password, port, platform, extras=None, configuration=None):
        self.connection = socket.create_connection((hostname, port), timeout=10)
        self.connection.sendall(b"{}\\n")

    def close(self):
        self.connection.close()


ConnectionPluginRegister.register(__name__, Counted)  # a name of its own: one per test


def step(task, what):
    task.host.get_connection(__name__, task.nornir.config)
    return what


class AsyncCounted:
    def __init__(self, writer):
        self.writer, self.loop = writer, asyncio.get_running_loop()

    async def aclose(self):
        self.writer.close()
        await self.writer.wait_closed()

    def close(self):
        self.loop.call_soon_threadsafe(self.writer.close)


async def astep(task, what):
    if "acounted" not in task.host.connections:
        _, writer = await asyncio.open_connection(task.host.hostname, task.host.port)
        writer.write(b"{}\\n")
        task.host.connections["acounted"] = AsyncCounted(writer)
    return what
'''


@pytest.mark.usefixtures("no_leaked_processes")
@pytest.mark.parametrize(
    ("runner", "task"),
    [
        ("threadpool", "step"),
        ("asyncio", "step"),
        ("asyncio", "astep"),
        ("processpool", "step"),
        ("processpool", "astep"),
        ("dask", "step"),
        ("dask", "astep"),
    ],
)
def test_a_device_sees_one_login_per_job_not_one_per_step(
    tmp_path: Path, runner: str, task: str
) -> None:
    module = f"counted_{runner}_{task}"
    options = ", options: {num_procs: 2}" if runner == "dask" else ""
    (tmp_path / f"{module}.py").write_text(COUNTED_TASKS, encoding="utf-8")
    with counting_server() as server:
        path = tmp_path / "job.yaml"
        path.write_text(textwrap.dedent(f"""\
            inventory:
              plugin: synthetic
              options: {{hosts: 6, hostname: 127.0.0.1, port: {server.port}}}
            logging: {{enabled: false}}
            runner: {{plugin: {runner}{options}}}
            steps:
              - {{name: "{module}:{task}", params: {{what: version}}}}
              - {{name: "{module}:{task}", params: {{what: clock}}}}
              - {{name: "{module}:{task}", params: {{what: interfaces}}}}
            """), encoding="utf-8")
        try:
            done = run_job(load_job(path), output=tmp_path / "records.jsonl", progress=False)
        finally:
            ConnectionPluginRegister.available.pop(module, None)
        assert not done.summary.failed and len(done.steps) == 3
        assert server.wait_open(0) == 0  # all closed when the job ended
        assert server.accepted == 6  # one login per device for the three steps


SCRAPLI_STEP = '''
import os
from nornir_bench.tasks import asend_command

async def step(task, command, enable=False):
    output = (await asend_command(task, command, enable=enable)).result
    driver = task.host.connections["scrapli_async"].connection
    return {"session": [os.getpid(), id(driver)], "output": output}
'''


@pytest.mark.usefixtures("no_leaked_processes")
@pytest.mark.parametrize("runner", ["asyncio", "processpool", "dask"])
def test_the_labs_three_steps_on_scrapli_log_in_once_per_device(
    tmp_path: Path, runner: str, fakenos_lab: LabProcess
) -> None:
    """tasks/lab_three_steps.yaml's commands, each step reading which scrapli session ran it."""
    module = f"scrapli_steps_{runner}"
    (tmp_path / f"{module}.py").write_text(SCRAPLI_STEP, encoding="utf-8")
    inventory = fakenos_lab.inventory
    path = tmp_path / "job.yaml"
    path.write_text(textwrap.dedent(f"""\
        inventory:
          plugin: SimpleInventory
          options: {{host_file: {inventory}/hosts.yaml, group_file: {inventory}/groups.yaml,
                     defaults_file: {inventory}/defaults.yaml}}
        logging: {{enabled: false}}
        runner: {{plugin: {runner}}}
        filter: {{platform: cisco_ios}}
        steps:
          - {{name: "{module}:step", params: {{command: show version, enable: true}}}}
          - {{name: "{module}:step", params: {{command: show clock}}}}
          - {{name: "{module}:step", params: {{command: show interfaces}}}}
        """), encoding="utf-8")
    done = run_job(load_job(path), output=tmp_path / "records.jsonl", progress=False)
    assert not done.summary.failed and len(done.steps) == 3
    for host in ("rtr1", "rtr2"):
        sessions = {tuple(step.result[host].result["session"]) for step in done.steps}
        assert len(sessions) == 1, sessions  # one login for the three steps
        outputs = [step.result[host].result["output"] for step in done.steps]
        assert "Cisco IOS XE" in outputs[0] and "UTC" in outputs[1]
        assert "line protocol" in outputs[2]
