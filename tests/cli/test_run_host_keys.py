"""A job's SSH host-key settings: bad ones stop it before any device is touched (exit 2, one
line), ``off`` is said once a run (the logins themselves:
tests/tasks/sessions/test_host_keys.py)."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.test_run import job_file, nornir_bench
from tests.devices import LabProcess

TASK = """\
task:
  name: sim_rtt
  params: {rtt: 0}
"""


def simple_inventory(folder: Path, data: str, *, host_data: str = "") -> str:
    (folder / "hosts.yaml").write_text(
        "r1: {hostname: 127.0.0.1, port: 2201}\n"
        f"r2: {{hostname: 127.0.0.1, port: 2202{host_data}}}\n"
    )
    (folder / "defaults.yaml").write_text(data)
    return (
        "inventory:\n  plugin: SimpleInventory\n  options:\n"
        "    host_file: hosts.yaml\n    defaults_file: defaults.yaml\n"
    )


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ("host_key_checking: maybe\n", "job.yaml:9:20: host_key_checking must be one of "
         "strict, accept-new, off, not 'maybe'"),
        ("host_key_checking: [strict]\n", "host_key_checking must be one of strict, "
         "accept-new, off, not ['strict']"),
    ],
)
def test_a_job_value_not_allowed_is_one_line_and_exit_2(
    tmp_path: Path, body: str, said: str
) -> None:
    job = job_file(tmp_path, TASK + body)
    done = nornir_bench("run", str(job), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and said in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_an_inventory_value_not_allowed_names_the_host(tmp_path: Path) -> None:
    inventory = simple_inventory(
        tmp_path, "username: u\n", host_data=", data: {host_key_checking: nope}"
    )
    (tmp_path / "job.yaml").write_text(inventory + TASK)
    done = nornir_bench("run", "job.yaml", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        "nornir-bench: error: job.yaml: inventory: host r2: host_key_checking "
        "must be one of strict, accept-new, off, not 'nope'\n"
    )


_PR_CAPBSET_DROP = 24
_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH = 1, 2


def _reading_as_any_user() -> None:
    """In the child, before it runs the command: root without the capabilities that let it
    read any file, so that a file no one may read is unreadable to it too."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH):
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def test_an_unreadable_known_hosts_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    known = tmp_path / "known"
    known.write_text("")
    known.chmod(0)
    inventory = simple_inventory(tmp_path, "data: {known_hosts: known}\n")
    (tmp_path / "job.yaml").write_text(inventory + TASK)
    done = subprocess.run(
        [sys.executable, "-m", "nornir_bench", "run", "job.yaml"], cwd=tmp_path,
        capture_output=True, text=True, timeout=60,
        preexec_fn=_reading_as_any_user if os.geteuid() == 0 else None,
    )
    assert done.returncode == 2, done.stderr
    assert "cannot read the known hosts file" in done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_a_known_hosts_folder_is_one_line_and_exit_2(tmp_path: Path) -> None:
    """A path that cannot be read as a file (here a folder), relative to the inventory file."""
    (tmp_path / "inv").mkdir()
    (tmp_path / "inv" / "known").mkdir()
    inventory = simple_inventory(tmp_path / "inv", "data: {known_hosts: known}\n")
    (tmp_path / "job.yaml").write_text(inventory.replace("hosts.yaml", "inv/hosts.yaml")
                                       .replace("defaults.yaml", "inv/defaults.yaml") + TASK)
    done = nornir_bench("run", "job.yaml", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        "nornir-bench: error: job.yaml: inventory: cannot read the known "
        f"hosts file {tmp_path / 'inv' / 'known'}: Is a directory\n"
    )


def test_off_is_said_once_a_run(tmp_path: Path) -> None:
    inventory = simple_inventory(tmp_path, "data: {host_key_checking: off}\n")
    (tmp_path / "job.yaml").write_text(inventory + TASK)
    done = nornir_bench("run", "job.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("host_key_checking is off") == 1
    assert ("warning: host_key_checking is off for 2 hosts: any server answering at their "
            "addresses is sent their passwords") in done.stderr


def test_strict_is_said_nothing(tmp_path: Path) -> None:
    inventory = simple_inventory(tmp_path, "username: u\n")
    (tmp_path / "job.yaml").write_text(inventory + TASK)
    done = nornir_bench("run", "job.yaml", cwd=tmp_path)
    assert done.returncode == 0 and "host_key_checking" not in done.stderr


def test_a_jump_host_not_in_the_inventory_is_one_line_and_exit_2(tmp_path: Path) -> None:
    inventory = simple_inventory(tmp_path, "data: {jump_host: bastion9}\n")
    (tmp_path / "job.yaml").write_text(inventory + TASK)
    done = nornir_bench("run", "job.yaml", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        "nornir-bench: error: job.yaml: inventory: defaults: jump_host 'bastion9' is not in "
        "the inventory; name one of its hosts, or give {host: ADDRESS, port: PORT, username: "
        "USER, password: ...}\n"
    )


def test_a_jump_host_named_is_the_inventory_hosts_address_and_not_its_own(
    tmp_path: Path,
) -> None:
    (tmp_path / "hoptasks.py").write_text(
        "from nornir_bench.tasks.sessions.jump_hosts import jump_host_of\n"
        "def hop(task):\n"
        "    jump = jump_host_of(task.host)\n"
        "    return None if jump is None else [jump.hostname, jump.port, jump.username]\n"
    )
    (tmp_path / "hosts.yaml").write_text(
        "r1: {hostname: 127.0.0.1, port: 2201}\n"
        "bastion: {hostname: 127.0.0.7, port: 2222, username: hop, password: hop-secret-1}\n"
    )
    (tmp_path / "defaults.yaml").write_text("username: u\ndata: {jump_host: bastion}\n")
    (tmp_path / "job.yaml").write_text(
        "inventory:\n  plugin: SimpleInventory\n  options:\n"
        "    host_file: hosts.yaml\n    defaults_file: defaults.yaml\n"
        "task: {name: 'hoptasks:hop'}\noutput: {path: out.jsonl}\n"
    )
    done = nornir_bench("run", "job.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    import json

    results = {
        r["host"]: r["result"]
        for r in map(json.loads, (tmp_path / "out.jsonl").read_text().splitlines())
    }
    assert results == {"r1": ["127.0.0.7", 2222, "hop"], "bastion": None}


@pytest.mark.parametrize(
    ("jump", "said"),
    [
        ("{port: 22, password: 'sec\"ret\\\\leak'}", "defaults: jump_host must be an inventory "
         "host's name or a mapping with host (and port, username, password, max_sessions), got "
         "keys port, password"),
        ("{host: 10.0.0.1, port: 70000}", "defaults: jump_host port must be a whole number "
         "from 1 to 65535, got 70000"),
        ("{host: 10.0.0.1, max_sessions: 0}", "defaults: jump_host max_sessions must be a "
         "whole number >= 1, got 0"),
    ],
    ids=["no-host", "port", "sessions"],
)
def test_a_bad_jump_host_is_one_line_without_its_password(
    tmp_path: Path, jump: str, said: str
) -> None:
    inventory = simple_inventory(tmp_path, f"data: {{jump_host: {jump}}}\n")
    (tmp_path / "job.yaml").write_text(inventory + TASK)
    done = nornir_bench("run", "job.yaml", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"nornir-bench: error: job.yaml: inventory: {said}\n"
    assert "leak" not in done.stderr


# In this process, and from the workers of a runner whose hosts run elsewhere: their keys come
# back with their hosts (runners/_remote/results.py, processpool's and dask's alike).
@pytest.mark.parametrize(
    ("runner", "task"), [("threadpool", "send_command"), ("processpool", "send_command")]
)
def test_accept_new_logs_each_key_by_default_and_says_them_once(
    fakenos_lab: LabProcess, tmp_path: Path, runner: str, task: str
) -> None:
    """A trust decision made for the user: in the job's default log (no logging section) and
    in one line on the terminal, from the processes whose logins recorded the keys too; a
    second run, with every key known, says nothing."""
    known = tmp_path / "known_hosts"
    for name in ("hosts.yaml", "groups.yaml"):
        (tmp_path / name).write_text((fakenos_lab.inventory / name).read_text())
    (tmp_path / "defaults.yaml").write_text(
        f"username: user\npassword: fakenos-lab\ndata: {{known_hosts: {known}}}\n"
    )
    options = "num_procs: 2" if runner == "processpool" else ""
    (tmp_path / "job.yaml").write_text(
        "inventory:\n  plugin: SimpleInventory\n  options: {host_file: hosts.yaml, "
        "group_file: groups.yaml, defaults_file: defaults.yaml}\n"
        f"runner: {{plugin: {runner}, options: {{{options}}}}}\n"
        "host_key_checking: accept-new\n"
        f"task: {{name: {task}, params: {{command: show clock}}}}\n"
    )
    ports = {device.name: device.port for device in fakenos_lab.devices}
    for run in ("first", "again"):
        done = nornir_bench("run", "job.yaml", "-o", f"{run}.jsonl", cwd=tmp_path, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        said = [line for line in done.stderr.splitlines() if "SSH host key" in line]
        logged = (tmp_path / "nornir.log").read_text().count("accepted the new SSH host key")
        if run == "first":
            assert said == [f"accepted the new SSH host keys of 4 hosts (rtr1, rtr2, sw1, sw2), "
                            f"recorded in {known}"]
            assert logged == 4
            for name, port in ports.items():
                assert (f"{name}: accepted the new SSH host key of 127.0.0.1:{port} "
                        in (tmp_path / "nornir.log").read_text())
            lines = known.read_text()
        else:
            assert said == [] and logged == 4 and known.read_text() == lines
    assert len(lines.splitlines()) == 4
