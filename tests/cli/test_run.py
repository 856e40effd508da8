"""``nornir-bench run`` as a user runs it: its exit status, output and records.

Run in the test's process (``nornir_bench_here``, tests/cli/in_process.py) where the
behaviour is the command's, not its process's. In a process of its own (``nornir_bench``):
Ctrl-C, the exit path of a run whose runner started processes (processpool, dask) or left
calls running (abandoned at a deadline), a warning's line, a file-size limit, records on
the process's own standard output, and a failed run's terminal with no traceback.
"""

from __future__ import annotations

import json
import os
import re
import resource
import signal
import socket
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.cli.in_process import nornir_bench_here as in_process
from tests.waiting import HANG_GUARD, wait_until

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


def job_file(
    tmp_path: Path,
    body: str,
    *,
    hosts: int = 12,
    runner: str = "threadpool",
    options: str = "num_workers: 4",
) -> Path:
    (tmp_path / "jobtasks.py").write_text(TASKS)
    path = tmp_path / "job.yaml"
    path.write_text(
        textwrap.dedent(f"""\
        inventory:
          plugin: synthetic
          options: {{hosts: {hosts}, username: netops, password: "${{NB_TEST_SECRET}}"}}
        runner: {{plugin: {runner}, options: {{{options}}}}}
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


def nornir_bench_here(
    *args: str, cwd: Path, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``nornir-bench ARGS`` in this process, as ``nornir_bench`` runs it in a process of its
    own: the job's password in the environment, ``env`` added."""
    return in_process(*args, cwd=cwd, env={"NB_TEST_SECRET": SECRET, **(env or {})})


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# processpool and dask: the command's process ends the processes its runner started
@pytest.mark.parametrize("runner", ["threadpool", "asyncio", "processpool", "dask"])
def test_a_good_run_exits_0_with_a_summary_and_a_record_per_host(
    tmp_path: Path, runner: str
) -> None:
    job = job_file(
        tmp_path, "task: {name: sim_rtt, params: {rtt: 0.01}}\n", runner=runner,
        options="num_workers: 4" + (", num_procs: 2" if runner == "dask" else ""),
    )
    command = nornir_bench if runner in ("processpool", "dask") else nornir_bench_here
    done = command("run", str(job), "--output", "out.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"task sim_rtt on 12 hosts, runner {runner}" in done.stdout
    assert "hosts: 12, ok: 12, failed: 0" in done.stdout
    assert "per-host records: out.jsonl" in done.stdout
    rows = records(tmp_path / "out.jsonl")
    assert sorted(r["host"] for r in rows) == sorted(f"dev{i}" for i in range(12))
    for row in rows:
        assert row["version"] == 1
        assert set(row) == {
            "version",
            "host",
            "job",
            "overrides",
            "step",
            "task",
            "failed",
            "elapsed",
            "start",
            "end",
            "run_start",
            "batch",
            "worker",
            "result",
            "exception",
            "message",
            "traceback",
            "abandoned",
            "attempts",
            "failed_attempts",
            "changed",
            "change",
            "diff",
            "checks",
            "session_log",
            "platform",
            "groups",
        }
        assert row["job"] == str((tmp_path / "job.yaml").resolve())
        assert row["overrides"] == {}  # nothing changed from the command line
        assert (row["changed"], row["change"], row["diff"]) == (False, None, None)
        assert row["checks"] is None  # no state check read
        assert (row["step"], row["task"]) == (1, "sim_rtt")  # a job of one task: step 1
        assert (row["attempts"], row["failed_attempts"], row["abandoned"]) == (1, [], False)
        assert row["failed"] is False and row["exception"] is None and row["traceback"] is None
        assert row["elapsed"] >= 0.009  # the host's own time, on every runner
        assert row["result"] == pytest.approx(0.01, abs=0.01)


@pytest.mark.slow  # a process of its own
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
    done = nornir_bench_here("run", str(job), "-o", "out.jsonl", cwd=tmp_path)
    assert done.returncode == 1
    assert "  dev0: DeviceRefused: login refused for netops/********" in done.stdout
    assert {r["exception"] for r in records(tmp_path / "out.jsonl")} == {"DeviceRefused"}


# In this process and in a worker process; every runner: tests/jobs/test_secrets.py
@pytest.mark.parametrize("runner", ["threadpool", "processpool"])
def test_the_password_never_reaches_the_terminal_the_records_or_the_log(
    tmp_path: Path, runner: str
) -> None:
    job = job_file(
        tmp_path, "task: {name: 'jobtasks:flaky', params: {fail_every: 2}}\n", runner=runner,
        options="num_workers: 4" + (", num_procs: 2" if runner == "dask" else ""),
    )
    done = nornir_bench_here("run", str(job), "-o", "out.jsonl", cwd=tmp_path)
    assert done.returncode == 1
    log = (tmp_path / "nornir.log").read_text()
    written = (tmp_path / "out.jsonl").read_text()
    assert "login refused" in log and "login refused" in written  # the failures were logged
    for output in (done.stdout, done.stderr, written, log):
        assert SECRET not in output
    assert "********" in written and "********" in done.stdout


def test_the_default_output_file_is_named_after_the_job_in_the_state_folder(
    tmp_path: Path, records_state_folder: Path
) -> None:
    job = job_file(tmp_path, "task: {name: sim_rtt, params: {rtt: 0}}\n", hosts=3)
    done = nornir_bench_here("run", str(job), cwd=tmp_path)
    assert done.returncode == 0
    (written,) = records_state_folder.glob("job-*.jsonl")
    assert f"per-host records: {written}\n" in done.stdout
    assert len(records(written)) == 3
    assert not list(tmp_path.glob("*.jsonl"))  # nothing left in the current folder
    # made readable by the user alone, as the XDG specification asks of the state folder
    for folder in (records_state_folder, *records_state_folder.parents[:2]):
        assert folder.stat().st_mode & 0o777 == 0o700, folder
    again = nornir_bench_here("run", str(job), cwd=tmp_path)  # the same second, maybe: its own file
    assert again.returncode == 0
    assert len(list(records_state_folder.glob("job-*.jsonl"))) == 2


@pytest.mark.parametrize("state", ["", "relative/state"], ids=["empty", "relative"])
def test_without_an_absolute_xdg_state_home_records_go_to_the_home_state_folder(
    tmp_path: Path, state: str
) -> None:
    """As the XDG specification says: a relative path there is to be ignored."""
    job = job_file(tmp_path, "task: {name: sim_rtt, params: {rtt: 0}}\n", hosts=2)
    done = nornir_bench_here("run", str(job), cwd=tmp_path,
                             env={"HOME": str(tmp_path / "home"), "XDG_STATE_HOME": state})
    assert done.returncode == 0, done.stderr
    (written,) = (tmp_path / "home" / ".local" / "state" / "nornir-bench" / "records").glob(
        "job-*.jsonl"
    )
    assert f"per-host records: {written}\n" in done.stdout
    assert not (tmp_path / "relative").exists()


def test_a_state_folder_that_cannot_be_made_is_the_one_line_write_error(tmp_path: Path) -> None:
    job = job_file(tmp_path, "task: {name: sim_rtt, params: {rtt: 0}}\n", hosts=2)
    (tmp_path / "state").write_text("a file, not a folder\n")
    done = nornir_bench_here("run", str(job), cwd=tmp_path,
                             env={"XDG_STATE_HOME": str(tmp_path / "state")})
    assert done.returncode == 2 and done.stdout == ""
    [line] = done.stderr.splitlines()
    folder = tmp_path / "state" / "nornir-bench" / "records"
    assert line.startswith(f"nornir-bench: error: cannot write the results to {folder}/job-"), line
    assert line.endswith(f".jsonl: {tmp_path / 'state'} is a file, not a folder"), line


def test_an_output_inside_a_file_says_which_is_a_file(tmp_path: Path) -> None:
    """Once: ``[Errno 17] File exists: 'FILE'`` for ``-o FILE/out.jsonl``."""
    job = job_file(tmp_path, "task: {name: sim_rtt, params: {rtt: 0}}\n", hosts=2)
    (tmp_path / "FILE").write_text("a file\n")
    done = nornir_bench_here("run", str(job), "-o", "FILE/out.jsonl", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines() == [
        "nornir-bench: error: cannot write the results to FILE/out.jsonl: FILE is a file, not a "
        "folder"
    ]


@pytest.mark.slow  # a process of its own
def test_records_past_the_file_size_limit_name_the_file_and_the_limit(tmp_path: Path) -> None:
    """Once: ``cannot write the results: [Errno 27] File too large``, no path, no limit."""
    job = job_file(tmp_path, "task: {name: sim_rtt, params: {rtt: 0}}\n", hosts=50)

    def small_files() -> None:  # in the child: its records file may not pass 2,000 bytes
        resource.setrlimit(resource.RLIMIT_FSIZE, (2000, 2000))

    done = subprocess.run(
        [sys.executable, "-m", "nornir_bench", "run", str(job), "-o", "out.jsonl", "-q"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path, preexec_fn=small_files,
        env={**os.environ, "NB_TEST_SECRET": SECRET},
    )
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "nornir-bench: error: cannot write the results to out.jsonl: file too large: the "
        "file-size limit is 2,000 bytes (ulimit -f)"
    )


def test_the_jobs_output_path_is_used_unless_overridden(tmp_path: Path) -> None:
    job = job_file(
        tmp_path, "task: {name: sim_rtt, params: {rtt: 0}}\noutput: {path: res/r.jsonl}\n", hosts=3
    )
    assert nornir_bench_here("run", str(job), cwd=tmp_path).returncode == 0
    assert len(records(tmp_path / "res" / "r.jsonl")) == 3


def test_no_progress_bar_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    job = job_file(tmp_path, "task: {name: sim_rtt, params: {rtt: 0}}\n", hosts=3)
    done = nornir_bench_here("run", str(job), "-o", "out.jsonl", cwd=tmp_path)
    assert done.stderr == ""


def ctrl_c_after_the_first_record(
    job: Path, tmp_path: Path
) -> tuple[list[dict[str, Any]], str, str]:
    """Run ``job`` (records to out.jsonl), press Ctrl-C once a host has finished; the records,
    stdout and stderr, once it exited 130."""
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
    wait_until(
        lambda: process.poll() is not None or (out_file.exists() and out_file.read_text()),
        "the first record",
        every=0.05,
    )
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == 130, stderr
    return records(out_file), stdout, stderr


@pytest.mark.slow  # a process of its own
def test_ctrl_c_keeps_the_hosts_that_finished(tmp_path: Path) -> None:
    job = job_file(
        tmp_path,
        "task: {name: 'jobtasks:slow', params: {seconds: 0.2}}\n",
        hosts=400,
        runner="asyncio",
    )
    kept, stdout, stderr = ctrl_c_after_the_first_record(job, tmp_path)
    # The hosts in flight finish, on the asyncio runner too: once, it cancelled them (each
    # then recorded HostAbandoned) while the other runners let them finish.
    assert not [r for r in kept if r["exception"] == "HostAbandoned"]
    finished = len(kept)
    assert 0 < finished < 400 and not any(r["failed"] for r in kept)
    assert f"interrupted: {400 - finished} of 400 hosts did not finish" in stdout
    assert "Traceback" not in stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["run"], "the following arguments are required: JOB.yaml"),
        (["walk"], "invalid choice: 'walk'"),
        (["run", "missing.yaml"], "missing.yaml: cannot read the job file"),
        (["run", "--bogus", "job.yaml"], "unrecognized arguments: --bogus"),
    ],
)
def test_bad_usage_exits_2_in_one_line(tmp_path: Path, args: list[str], says: str) -> None:
    """No usage dump: that is for no command at all (test_no_command_shows_the_commands)."""
    done = nornir_bench_here(*args, cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    (line,) = done.stderr.splitlines()
    assert line.startswith("nornir-bench") and ": error: " in line and says in line, line


@pytest.mark.slow  # a process of its own
def test_a_capped_num_procs_is_one_warning_line(tmp_path: Path) -> None:
    job = job_file(tmp_path, "task: {name: asim_rtt, params: {rtt: 0}}\n", runner="processpool")
    job.write_text(job.read_text().replace("{num_workers: 4}", "{num_procs: 1000000}"))
    done = nornir_bench("run", str(job), "-o", "r.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("nornir-bench: warning: processpool runner: num_procs 1000000 capped")


def test_no_command_shows_the_commands(tmp_path: Path) -> None:
    """Once: only "error: the following arguments are required: COMMAND"."""
    done = nornir_bench_here(cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("usage: nornir-bench [-h] COMMAND ...")
    for command in ("run", "lab", "wait-lab", "rtt-server", "sweep"):
        assert re.search(rf"^    {command}\b", done.stderr, re.M), command
    assert "Traceback" not in done.stderr


def test_a_bad_job_exits_2_with_file_line_and_column(tmp_path: Path) -> None:
    job = job_file(tmp_path, "task: {name: sim_rtt, params: {rtt: 0}}\nrunner_options: {}\n")
    done = nornir_bench_here("run", str(job), cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"nornir-bench: error: {job}:7:1: unknown key 'runner_options' in the job; allowed: "
        "inventory, runner, core, logging, ssh, user_defined, task, steps, filter, output, "
        "host_key_checking, known_hosts"
    )
    assert done.stdout == ""


def test_an_unset_secret_variable_exits_2_naming_it(tmp_path: Path) -> None:
    job = job_file(tmp_path, "task: {name: sim_rtt, params: {rtt: 0}}\n")
    assert "NB_TEST_SECRET" not in os.environ
    done = in_process("run", str(job), cwd=tmp_path)
    assert done.returncode == 2
    assert "environment variable NB_TEST_SECRET is not set" in done.stderr


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    """The one line a bad job gets: exit 2, nothing run, no traceback."""
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == "" and "Traceback" not in done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("nornir-bench: error: ")
    return line.removeprefix("nornir-bench: error: ")


def test_a_job_with_no_inventory_and_no_hosts_file_says_what_to_add(tmp_path: Path) -> None:
    (tmp_path / "noinv.yaml").write_text("task: {name: sim_rtt, params: {rtt: 0}}\n")
    done = nornir_bench_here("run", "noinv.yaml", cwd=tmp_path)
    assert one_error_line(done) == (
        "noinv.yaml:1:1: the job has no inventory section, and SimpleInventory (nornir's "
        "default) found no hosts.yaml next to the job; add inventory: {plugin: ..., options: "
        "{...}}"
    )


def alias_bomb(levels: int = 9, *, indent: str = "  ") -> str:
    """YAML lines, each a list of 9 aliases of the line before: 9**levels values expanded."""
    lines = [f"{indent}l0: &l0 [x, x, x, x, x, x, x, x, x]"]
    for level in range(1, levels):
        lines.append(f"{indent}l{level}: &l{level} [{', '.join([f'*l{level - 1}'] * 9)}]")
    return "\n".join(lines) + "\n"


GOOD = "task: {name: asim_rtt, params: {rtt: 0}}\n"


@pytest.mark.timeout(HANG_GUARD)
@pytest.mark.parametrize(
    ("text", "encoding", "says"),
    [
        (GOOD + "user_defined: {city: Zürich}\n", "latin-1",
         "job.yaml:7:23: the job file is not UTF-8 text (byte 0xfc); save it as UTF-8"),
        (GOOD, "utf-16", "job.yaml: the job file is UTF-16; save it as UTF-8"),
        (GOOD + "user_defined: {x: a\x00b}\n", "utf-8",
         "job.yaml:7:20: the job file contains a NUL byte: not a text file; a job is YAML text"),
        (GOOD + "user_defined: " + "[" * 2000 + "\n", "utf-8",
         "job.yaml:7:79: nesting deeper than 64 levels; a job holds settings, not deep data"),
        # l5 (line 13, after 5 lines of job_file's own) is the first list past 100,000
        (GOOD + "user_defined:\n" + alias_bomb(), "utf-8",
         "job.yaml:13:3: user_defined.l5 expands to more than 100,000 values (each use of a "
         "YAML alias counts in full)"),
        ("task: {name: asim_rtt, params: {rtt: .inf}}\n", "utf-8",
         "job.yaml:6:24: task asim_rtt: rtt must be a number of seconds from 0 to 3600"),
    ],
    ids=["latin-1", "UTF-16", "NUL", "2000 levels", "alias bomb", "endless round trip"],
)
def test_a_file_no_job_is_exits_2_at_once_in_one_line(
    tmp_path: Path, text: str, encoding: str, says: str
) -> None:
    """None of these may hang (the last one, unchecked, would sleep for ever on asyncio)."""
    job = job_file(tmp_path, text, runner="asyncio")
    job.write_bytes(job.read_text().encode(encoding))
    line = one_error_line(nornir_bench_here("run", str(job), "-o", "out.jsonl", cwd=tmp_path))
    assert line.startswith(str(job)) and says in line, line
    assert not (tmp_path / "out.jsonl").exists()


def test_a_task_module_exiting_0_on_import_is_an_error_not_a_run(tmp_path: Path) -> None:
    (tmp_path / "nb_quits.py").write_text("raise SystemExit(0)\n\ndef run(task):\n    pass\n")
    job = job_file(tmp_path, "task: {name: 'nb_quits:run'}\n")
    line = one_error_line(nornir_bench_here("run", str(job), "-o", "out.jsonl", cwd=tmp_path))
    assert line == (
        f"{job}:6:14: task nb_quits:run: module 'nb_quits' stopped the program while being "
        "imported (SystemExit 0); a task module must only define functions when imported"
    )
    assert not (tmp_path / "out.jsonl").exists()


def test_a_misspelt_send_command_parameter_exits_2_before_connecting(tmp_path: Path) -> None:
    with socket.socket() as device:  # a device's SSH port, on loopback
        device.bind(("127.0.0.1", 0))
        device.listen(8)
        (tmp_path / "hosts.yaml").write_text(
            f"r1: {{hostname: 127.0.0.1, port: {device.getsockname()[1]}, platform: cisco_ios, "
            "username: u, password: p}\n"
        )
        job = tmp_path / "job.yaml"
        job.write_text(
            "task:\n  name: send_command\n  params:\n    command: show clock\n    enabel: true\n"
        )
        line = one_error_line(nornir_bench_here("run", "job.yaml", cwd=tmp_path))
        device.setblocking(False)
        with pytest.raises(BlockingIOError):  # no connection waiting: nothing connected
            device.accept()
    assert line.startswith(
        "job.yaml:3:3: task send_command: send_command has no parameter 'enabel', nor has "
        "netmiko's send_command; it takes: command, enable, use_timing, expect_string, "
    ), line


@pytest.mark.timeout(HANG_GUARD)
def test_an_alias_bomb_in_inventory_data_exits_2_instead_of_hanging(tmp_path: Path) -> None:
    """The processpool runner compares each host's data after the task, value by value:
    with 12 levels of aliases, for hours."""
    (tmp_path / "hosts.yaml").write_text("r1:\n  data:\n" + alias_bomb(12, indent="    "))
    job = tmp_path / "job.yaml"
    job.write_text(
        "runner: {plugin: processpool, options: {num_workers: 1}}\n"
        "logging: {enabled: false}\n"
        "task: {name: asim_rtt, params: {rtt: 0}}\n"
    )
    line = one_error_line(nornir_bench_here("run", "job.yaml", "-o", "out.jsonl", cwd=tmp_path))
    assert line == (
        "job.yaml: inventory: host r1 data expands to more than 100,000 values (each use of a "
        "YAML alias counts in full); at most 100,000 values per host, group or defaults"
    )


@pytest.mark.slow  # a process of its own
def test_records_can_go_to_standard_output(tmp_path: Path) -> None:
    """A pipe or a terminal cannot be truncated or locked: they are written as they are."""
    job = job_file(tmp_path, "task: {name: sim_rtt, params: {rtt: 0}}\n", hosts=3)
    done = nornir_bench("run", str(job), "-o", "/dev/stdout", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert sorted(r["host"] for r in lines) == ["dev0", "dev1", "dev2"]


# What the command says of it; each runner's abort: tests/runners/test_policies.py
@pytest.mark.parametrize("runner", ["threadpool", "asyncio"])
def test_a_run_aborted_by_a_failure_limit_exits_1_saying_which_limit(
    tmp_path: Path, runner: str
) -> None:
    job = job_file(
        tmp_path,
        "task: {name: 'jobtasks:flaky', params: {fail_every: 1}}\n",
        runner=runner,
        options="num_workers: 1, max_failures: 1"
        + (", num_procs: 1" if runner in ("processpool", "dask") else ""),
    )
    done = nornir_bench_here("run", str(job), "-o", "out.jsonl", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "run aborted by max_failures: 2 hosts failed, more than 1" in done.stdout
    assert "not started: 10 hosts" in done.stdout
    # the hosts that ran one line each; those kept from starting one line for all
    assert done.stdout.split("failed hosts:\n")[1].splitlines()[:3] == [
        "  dev0: DeviceRefused: login refused for netops/********",
        "  dev1: DeviceRefused: login refused for netops/********",
        "  10 hosts (dev2, dev3, dev4, dev5, dev6, ... (+5)): RunAborted: not run: the run was "
        "aborted by max_failures: 2 hosts failed, more than 1",
    ]
    rows = records(tmp_path / "out.jsonl")
    assert sorted(r["host"] for r in rows) == sorted(f"dev{i}" for i in range(12))
    assert [r["exception"] for r in rows].count("RunAborted") == 10


@pytest.mark.slow  # a process of its own
def test_retried_and_timed_out_hosts_are_counted_in_the_summary(tmp_path: Path) -> None:
    (tmp_path / "jobtasks.py").write_text(TASKS)
    job = job_file(
        tmp_path,
        "task: {name: 'jobtasks:slow', params: {seconds: 5}}\n",
        hosts=2,
        options="num_workers: 2, task_timeout: 0.2, retries: 1, retry_delay: 0, retry_jitter: 0",
    )
    done = nornir_bench("run", str(job), "-o", "out.jsonl", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "retried: 2 hosts" in done.stdout
    assert "timed out: 2 hosts" in done.stdout
    assert "abandoned calls: 4" in done.stdout  # two attempts on each host
    for row in records(tmp_path / "out.jsonl"):
        assert (row["exception"], row["abandoned"], row["attempts"]) == ("TaskTimeout", True, 2)
        assert row["failed_attempts"][0]["abandoned"] is True


BATCHES = (
    "batches must be a list of 1 to 1000 batch sizes, each a host count (a whole number >= 1) "
    "or a percentage of the run's hosts (more than '0%', at most '100%'), such as "
    "[1, '10%', '100%']"
)
GROUPS = (
    "{} must be a mapping of a host attribute or 'group' to a whole number >= {}, or to a "
    "mapping of its values to one (e.g. {{site: 5}}, {{group: {{core: 2}}}})"
)
# One bad value per run policy option, and what the job's one error line says of it (after
# "runner plugin threadpool: ValueError: threadpool runner: ").
BAD_POLICIES = [
    ("task_timeout: .nan", "task_timeout must be a number of seconds > 0, or None for no limit, "
     "got nan"),
    ("retries: -1", "retries must be a whole number from 0 to 100, got -1"),
    ("retries: 1000", "retries must be a whole number from 0 to 100, got 1000"),
    ("retry_delay: -1", "retry_delay must be a number of seconds from 0 to 86400, got -1"),
    ("retry_backoff: 0.5", "retry_backoff must be a number from 1 to 10, got 0.5"),
    ("retry_max_delay: .inf", "retry_max_delay must be a number of seconds from 0 to 86400, "
     "got inf"),
    ("retry_jitter: some", "retry_jitter must be a number of seconds from 0 to 86400, got 'some'"),
    ("retry_on: [NoSuchError]", "retry_on: 'NoSuchError' is not a builtin exception; give other "
     "types by dotted name ('module.Class')"),
    ("retry_on: [no.such.Module]", "retry_on: no exception type 'no.such.Module' "
     "(ModuleNotFoundError: No module named 'no')"),
    ("retry_never: [os.path]", "retry_never: 'os.path' is not an exception type"),
    ("max_failures: -1", "max_failures must be a whole number >= 0, got -1"),
    ("max_fail_percentage: 150", "max_fail_percentage must be a number from 0 to 100, got 150"),
    ("batches: []", f"{BATCHES}, got []"),
    ("batches: ['0%']", f"{BATCHES}, got '0%'"),
    ("batches: [abc]", f"{BATCHES}, got 'abc'"),
    ("max_starts_per_second: 0", "max_starts_per_second must be a number > 0 and <= 1000000, "
     "got 0"),
    ("max_starts_per_second: 10, max_start_burst: 0",
     "max_start_burst must be a whole number from 1 to 1000000, got 0"),
    ("max_start_burst: 5", "max_start_burst sizes the bucket of max_starts_per_second, which is "
     "not set: set it too, or drop max_start_burst"),
    ("retries: 2, retry_on: []", "retry_on is empty, so retries 2 would retry nothing: name the "
     "exception types to retry, or leave retry_on out for the defaults"),
    ("group_limits: {site: 0}", f"{GROUPS.format('group_limits', 1)}, got site: 0"),
    ("group_limits: [1]", f"{GROUPS.format('group_limits', 1)}, got [1]"),
    ("group_max_failures: {site: {a: -1}}",
     f"{GROUPS.format('group_max_failures', 0)}, got site: {{'a': -1}}"),
    ("run_timeout: -1", "run_timeout must be a number of seconds > 0, or None for no limit, "
     "got -1"),
]


@pytest.mark.parametrize(("options", "says"), BAD_POLICIES, ids=[o for o, _ in BAD_POLICIES])
def test_a_bad_run_policy_in_a_job_is_one_line_and_exit_2(
    tmp_path: Path, options: str, says: str
) -> None:
    job = job_file(tmp_path, "task: {name: sim_rtt, params: {rtt: 0}}\n", options=options)
    line = one_error_line(nornir_bench_here("run", str(job), "-o", "out.jsonl", cwd=tmp_path))
    # at the runner's options (line 4, column 39), as for any value the runner refuses
    assert line == f"{job}:4:39: runner plugin threadpool: ValueError: threadpool runner: {says}"
    assert not (tmp_path / "out.jsonl").exists()


def test_a_misspelt_run_policy_is_one_line_listing_the_policies_too(tmp_path: Path) -> None:
    job = job_file(tmp_path, "task: {name: sim_rtt, params: {rtt: 0}}\n", options="retrys: 2")
    line = one_error_line(nornir_bench_here("run", str(job), cwd=tmp_path))
    assert line == (
        f"{job}:4:40: runner plugin threadpool has no option 'retrys'; options: num_workers, "
        "task_timeout, retries, retry_delay, retry_backoff, retry_max_delay, retry_jitter, "
        "retry_on, retry_never, max_failures, max_fail_percentage, batches, "
        "max_starts_per_second, max_start_burst, group_limits, group_max_failures, run_timeout, "
        "login_retries"
    )


@pytest.mark.parametrize("runner", ["asyncio", "processpool", "dask"])
def test_a_bad_run_policy_is_refused_by_every_runner_before_the_run(
    tmp_path: Path, runner: str
) -> None:
    job = job_file(
        tmp_path, "task: {name: asim_rtt, params: {rtt: 0}}\n", runner=runner, options="retries: -1"
    )
    line = one_error_line(nornir_bench_here("run", str(job), cwd=tmp_path))
    assert line.endswith(f"{runner} runner: retries must be a whole number from 0 to 100, got -1")


# -- --check and --rerun-failed, refused before anything runs ---------------------------------


def test_check_with_a_task_that_cannot_dry_run_exits_2_in_one_line(tmp_path: Path) -> None:
    job = job_file(tmp_path, "task: {name: 'jobtasks:flaky'}\n")
    line = one_error_line(nornir_bench_here("run", "--check", str(job), cwd=tmp_path))
    assert line == (
        f"{job}: --check: task jobtasks:flaky (step 1) cannot run "
        "as a dry run: it is neither read-only nor marked as honouring nornir's dry_run "
        "(decorate it with @with_traits(honours_dry_run=True) once it does)"
    )


def test_check_runs_a_read_only_task_as_it_is(tmp_path: Path) -> None:
    job = job_file(tmp_path, "task: {name: sim_rtt, params: {rtt: 0}}\n")
    done = nornir_bench_here("run", "--check", str(job), "-o", "out.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "a dry run (--check): nothing changed" in done.stdout


def test_rerun_failed_runs_only_the_hosts_that_failed_or_never_started(tmp_path: Path) -> None:
    job = job_file(tmp_path, "task: {name: sim_rtt, params: {rtt: 0}}\n", hosts=4)
    done = nornir_bench_here("run", str(job), "-o", "first.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = (tmp_path / "first.jsonl").read_text().splitlines()
    failed = json.loads(rows[1])
    failed["failed"] = True
    (tmp_path / "first.jsonl").write_text("\n".join([rows[0], json.dumps(failed)]) + "\n")
    again = nornir_bench_here("run", str(job), "--rerun-failed", "first.jsonl", "-o", "again.jsonl",
                         cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    ran = sorted(r["host"] for r in records(tmp_path / "again.jsonl"))
    never = sorted(json.loads(r)["host"] for r in rows[2:])  # no record: never started
    assert ran == sorted([failed["host"], *never])


@pytest.mark.parametrize(
    ("records_text", "says"),
    [
        (None, "cannot read the records file: No such file or directory"),
        ("", "empty: not a records file of nornir-bench run"),
        ("not json\n", "line 1 is not a host's record: not a records file of nornir-bench run"),
        ('{"host": "dev0", "failed": true, "job": "/elsewhere/other.yaml"}\n',
         "line 1 is a record of job '/elsewhere/other.yaml', not of {job}: give a records "
         "file of this job"),
    ],
    ids=["missing", "empty", "not-json", "another-job"],
)
def test_rerun_failed_with_a_file_that_is_not_this_jobs_records_exits_2_in_one_line(
    tmp_path: Path, records_text: str | None, says: str
) -> None:
    job = job_file(tmp_path, "task: {name: sim_rtt, params: {rtt: 0}}\n")
    given = tmp_path / "old.jsonl"
    if records_text is not None:
        given.write_text(records_text)
    line = one_error_line(nornir_bench_here("run", str(job), "--rerun-failed", str(given),
                                       cwd=tmp_path))
    assert line == f"--rerun-failed {given}: {says.format(job=job)}"


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ("{lines: []}", "the config is empty: give at least one line to send"),
        ("{template_file: missing.j2}", "template_file: no such file: {folder}/missing.j2"),
        ('{lines: ["ip route 1.1.1.0/24 Null0\\nreload"]}', "config line 1 holds a line break: "
         "give one line per list item, got 'ip route 1.1.1.0/24 Null0\\nreload'"),
        ("{lines: [a], config_file: c.txt}", "give the config as exactly one of lines, "
         "config_file, template_file, from_history, not lines and config_file"),
    ],
    ids=["empty", "missing-template", "line-break", "two-sources"],
)
def test_a_config_change_with_bad_lines_exits_2_before_any_device(
    tmp_path: Path, params: str, says: str
) -> None:
    job = job_file(tmp_path, f"task: {{name: send_config, params: {params}}}\n")
    line = one_error_line(nornir_bench_here("run", str(job), cwd=tmp_path))
    assert line.endswith(f": task send_config: {says.format(folder=tmp_path)}"), line


@pytest.mark.parametrize("runner", ["threadpool", "processpool"])
def test_records_carry_each_hosts_times_batch_worker_and_attempts(
    tmp_path: Path, runner: str
) -> None:
    """What a timeline needs: start and end from the run's start, the run's wall-clock start
    (the same in every line), the canary batch, the worker process, each failed attempt's
    seconds and wait."""
    job = job_file(
        tmp_path, "task: {name: 'jobtasks:flaky', params: {fail_every: 4}}\n", hosts=7,
        runner=runner,
        options="num_workers: 2, batches: [1, 2], retries: 1, retry_delay: 0.01, retry_jitter: 0,"
        " retry_on: [Exception]",
    )
    done = nornir_bench_here("run", str(job), "-o", "out.jsonl", cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # dev0 and dev4 fail twice
    rows = records(tmp_path / "out.jsonl")
    assert len(rows) == 7 and len({r["run_start"] for r in rows}) == 1
    for row in rows:
        assert 0 <= row["start"] <= row["end"], row
        assert row["end"] - row["start"] == pytest.approx(row["elapsed"], abs=0.01)
        assert (row["worker"] is not None) is (runner == "processpool")
    # Batches of 1, 2, 2, 2, by the order the hosts started in.
    by_start = sorted(rows, key=lambda r: r["start"])
    assert [r["batch"] for r in by_start] == [1, 2, 2, 3, 3, 4, 4]
    retried = [r for r in rows if r["failed_attempts"]]
    assert sorted(r["host"] for r in retried) == ["dev0", "dev4"]
    for row in retried:
        (attempt,) = row["failed_attempts"]
        assert attempt["seconds"] >= 0 and attempt["wait"] == 0.01
