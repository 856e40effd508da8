"""Passwords from a command (``password_command``, as ``pass show net/ro``): run once per
distinct command before any device is touched, masked like any password, and a command that
fails stops the job in one line without its output."""

from __future__ import annotations

import hashlib
import json
import shlex
import sys
from pathlib import Path

import pytest

from tests.cli.test_run import nornir_bench

SECRET = "from-the-vault-7c1e"

TASKS = """\
import hashlib


def password_digest(task):
    return hashlib.sha256(task.host.password.encode()).hexdigest()


def says_password(task):
    return f"the password is {task.host.password}"
"""


def write_job(tmp_path: Path, command: str, task: str = "jobtasks:password_digest") -> Path:
    (tmp_path / "jobtasks.py").write_text(TASKS)
    (tmp_path / "hosts.yaml").write_text(
        "r1: {groups: [core]}\nr2: {groups: [core]}\nr3: {password: own-one}\n"
    )
    (tmp_path / "groups.yaml").write_text("core: {}\n")
    (tmp_path / "defaults.yaml").write_text(
        json.dumps({"username": "netops", "data": {"password_command": command}})
    )
    job = tmp_path / "job.yaml"
    job.write_text(
        "inventory:\n  plugin: SimpleInventory\n  options:\n    host_file: hosts.yaml\n"
        "    group_file: groups.yaml\n    defaults_file: defaults.yaml\n"
        "logging: {enabled: true, log_file: nornir.log}\n"
        f"task: {{name: '{task}'}}\noutput: {{path: out.jsonl}}\n"
    )
    return job


def vault(tmp_path: Path, *, exit_status: int = 0, prints: str = SECRET) -> str:
    """A password manager's stand-in: counts its runs, prints ``prints`` and a second line."""
    script = tmp_path / "vault.py"
    script.write_text(
        "import sys\n"
        f"open({str(tmp_path / 'runs')!r}, 'a').write('run\\n')\n"
        f"print({prints!r}); print('second line, not the password')\n"
        "print('vault noise: token=abc', file=sys.stderr)\n"
        f"sys.exit({exit_status})\n"
    )
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(script))} show net/ro"


def test_the_password_comes_from_the_command_run_once_and_masked(tmp_path: Path) -> None:
    job = write_job(tmp_path, vault(tmp_path))
    done = nornir_bench("run", str(job), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "runs").read_text() == "run\n"  # once, for the defaults all share
    records = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    digests = {r["host"]: r["result"] for r in records}
    assert digests["r1"] == digests["r2"] == hashlib.sha256(SECRET.encode()).hexdigest()
    assert digests["r3"] == hashlib.sha256(b"own-one").hexdigest()  # its own wins
    for text in (done.stdout, done.stderr, (tmp_path / "out.jsonl").read_text(),
                 (tmp_path / "nornir.log").read_text()):
        assert SECRET not in text


def test_what_a_task_shows_of_it_is_masked(tmp_path: Path) -> None:
    job = write_job(tmp_path, vault(tmp_path), task="jobtasks:says_password")
    done = nornir_bench("run", str(job), "--show", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "the password" in done.stdout and "********" in done.stdout
    for text in (done.stdout, done.stderr, (tmp_path / "out.jsonl").read_text()):
        assert SECRET not in text


@pytest.mark.parametrize(
    ("command", "said"),
    [
        ("exit-3", "exited with status 3 (its output is not shown: it may hold a secret)"),
        ("empty", "printed no password"),
        ("missing", "no such command: /no/such/vault"),
        ("quote", "No closing quotation"),
    ],
)
def test_a_command_that_fails_stops_the_job_before_any_device(
    tmp_path: Path, command: str, said: str
) -> None:
    line = {
        "exit-3": lambda: vault(tmp_path, exit_status=3),
        "empty": lambda: vault(tmp_path, prints=""),
        "missing": lambda: "/no/such/vault show net/ro",
        "quote": lambda: "pass show 'net/ro",
    }[command]()
    job = write_job(tmp_path, line)
    done = nornir_bench("run", str(job), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("nornir-bench: error: ")
    assert "inventory defaults password_command" in done.stderr and said in done.stderr
    for leaked in (SECRET, "vault noise", "token=abc", "second line"):
        assert leaked not in done.stderr + done.stdout
    assert not (tmp_path / "out.jsonl").exists()  # no host ran


SECRETS_TASK = """\
import hashlib


def secrets_digest(task):
    extras = task.host.get_connection_parameters("netmiko").extras
    jump = task.host.get("jump_host")
    return [hashlib.sha256(str(v).encode()).hexdigest()
            for v in (extras["secret"], jump["password"])]
"""


def test_the_jobs_other_secrets_come_from_commands_too(tmp_path: Path) -> None:
    """An enable secret in a plugin's extras (``secret_command``) and a jump host's password
    (``password_command``): run once per distinct command, given to the task, masked."""
    (tmp_path / "jobtasks.py").write_text(SECRETS_TASK)
    command = vault(tmp_path)
    (tmp_path / "hosts.yaml").write_text("r1: {}\nr2: {}\n")
    (tmp_path / "defaults.yaml").write_text(json.dumps({
        "username": "netops", "password": "plain",
        "connection_options": {"netmiko": {"extras": {"secret_command": command}}},
        "data": {"jump_host": {"host": "127.0.0.1", "username": "ops",
                               "password_command": command}},
    }))
    job = tmp_path / "job.yaml"
    job.write_text(
        "inventory:\n  plugin: SimpleInventory\n  options:\n    host_file: hosts.yaml\n"
        "    defaults_file: defaults.yaml\n"
        "task: {name: 'jobtasks:secrets_digest'}\noutput: {path: out.jsonl}\n"
    )
    done = nornir_bench("run", str(job), "--show", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "runs").read_text() == "run\n"  # one command, run once
    digest = hashlib.sha256(SECRET.encode()).hexdigest()
    records = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [r["result"] for r in records] == [[digest, digest]] * 2
    for text in (done.stdout, done.stderr, (tmp_path / "out.jsonl").read_text()):
        assert SECRET not in text


SHOWS_SECRETS_TASK = """\
import logging


def shows_secrets(task):
    extras = task.host.get_connection_parameters("netmiko").extras
    jump = task.host.get("jump_host")
    print("printed", extras["secret"], jump["password"])
    logging.getLogger("jobtasks").warning("logged %s %s", extras["secret"], jump["password"])
    return {"first": extras["secret"], "second": jump["password"]}
"""


def test_the_values_a_plugins_and_a_jump_hosts_commands_print_are_masked_everywhere(
    tmp_path: Path,
) -> None:
    """A task that prints, logs and returns the values of a ``secret_command`` and of a jump
    host's ``password_command`` (two vaults, two values): neither reaches the terminal, the
    records or the log, each masked where it was."""
    (tmp_path / "jobtasks.py").write_text(SHOWS_SECRETS_TASK)
    (tmp_path / "enable").mkdir()
    (tmp_path / "jump").mkdir()
    enable, jump = "enable-from-vault-41d9", "jump-from-vault-9b2e"
    (tmp_path / "hosts.yaml").write_text("r1: {}\n")
    (tmp_path / "defaults.yaml").write_text(json.dumps({
        "username": "netops", "password": "plain",
        "connection_options": {"netmiko": {"extras": {
            "secret_command": vault(tmp_path / "enable", prints=enable)}}},
        "data": {"jump_host": {"host": "127.0.0.1", "username": "ops",
                               "password_command": vault(tmp_path / "jump", prints=jump)}},
    }))
    job = tmp_path / "job.yaml"
    job.write_text(
        "inventory:\n  plugin: SimpleInventory\n  options:\n    host_file: hosts.yaml\n"
        "    defaults_file: defaults.yaml\n"
        "logging: {enabled: true, log_file: nornir.log, loggers: [nornir, jobtasks]}\n"
        "task: {name: 'jobtasks:shows_secrets'}\noutput: {path: out.jsonl}\n"
    )
    done = nornir_bench("run", str(job), "--show", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert records[0]["result"] == {"first": "********", "second": "********"}
    log = (tmp_path / "nornir.log").read_text()
    assert "printed ******** ********" in done.stdout
    assert "logged ******** ********" in log
    for text in (done.stdout, done.stderr, (tmp_path / "out.jsonl").read_text(), log):
        assert enable not in text and jump not in text
