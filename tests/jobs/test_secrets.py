"""A job's secrets: those of its inventory expanded and collected, and masked in all it writes."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nornir_bench.core.secrets import encoded_forms

# A task module, next to the job file: a device library logging a URL with the password in it,
# and a login failure whose message holds the password.
DEVICE_TASKS = '''
import logging
from urllib.parse import quote


def login(task):
    password = task.host.password
    logging.getLogger("devicelib").warning("connecting to ssh://netops:%s@%s", password, task.host)
    logging.getLogger("devicelib").warning("encoded: ssh://netops:%s@x", quote(password, safe=""))
    logging.getLogger("devicelib").warning("as repr: %r", {"password": password})
    if int(task.host.name[3:]) % 2:
        raise RuntimeError("login failed with " + password)
    return {"sent": password}
'''

# Quotes and backslashes: escaped by JSON and by repr, which once hid it from the masking.
NASTY = 'ab"c\\d\'e'


# Masking is the job's, on one blocking and one async runner; and in the workers of a runner
# whose hosts run elsewhere, with the secrets the run sends them (runners/_remote/hosts.py,
# processpool's and dask's alike).
@pytest.mark.parametrize("runner", ["threadpool", "asyncio", "processpool"])
def test_no_output_of_a_run_holds_the_password(tmp_path: Path, runner: str) -> None:
    (tmp_path / "devicetasks.py").write_text(DEVICE_TASKS)
    (tmp_path / "job.yaml").write_text(
        textwrap.dedent(f"""\
        inventory:
          plugin: synthetic
          options: {{hosts: 4, username: netops, password: "${{NB_NASTY}}"}}
        runner:
          plugin: {runner}
          options: {{num_workers: 2, retries: 1, retry_delay: 0, retry_jitter: 0,
                     retry_on: [RuntimeError]}}
        logging:
          {{enabled: true, level: DEBUG, log_file: nornir.log,
           loggers: [nornir, devicelib, nornir_bench]}}
        task: {{name: "devicetasks:login"}}
        output: {{path: records.jsonl}}
        """)
    )
    done = subprocess.run(
        [sys.executable, "-m", "nornir_bench", "run", "job.yaml"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={**os.environ, "NB_NASTY": NASTY},
    )
    assert done.returncode == 1, done.stderr
    log = (tmp_path / "nornir.log").read_text()
    if runner != "processpool":  # workers keep no log records but failures
        assert "connecting to ssh://netops:********@dev1" in log  # the library's line, masked
        assert "attempt 1 failed (RuntimeError: login failed with ********)" in log  # the retry
    records = [json.loads(line) for line in (tmp_path / "records.jsonl").read_text().splitlines()]
    assert {r["host"]: r["failed"] for r in records} == {
        "dev0": False, "dev1": True, "dev2": False, "dev3": True
    }
    # the failed hosts were retried once: their first attempt's message is kept, masked
    assert [
        [{k: a[k] for k in ("exception", "message", "abandoned")} for a in r["failed_attempts"]]
        for r in records if r["failed"]
    ] == [
        [{"exception": "RuntimeError", "message": "login failed with ********", "abandoned": False}]
    ] * 2
    decoded = json.dumps(records, ensure_ascii=False) + "".join(
        str(value) for r in records for value in r.values()
    )
    for where, text in [("stdout", done.stdout), ("stderr", done.stderr), ("log", log),
                        ("records", decoded)]:
        for form in encoded_forms(NASTY):
            assert form not in text, (where, form)
    assert "login failed with ********" in done.stdout


# A task whose result and error hold the password inside text that was already encoded once:
# a list's str, a repr, bytes, and KeyError (whose message is the key's repr).
ECHOING_TASKS = """
def echoes(task):
    password = task.host.password
    if task.host.name == "dev1":
        raise KeyError(password)
    return {"as_list": str([password]), "as_repr": repr(password), "as_bytes": password.encode()}
"""


def secret_forms(secret: str) -> set[bytes]:
    """``secret`` as bytes in a file, as is or escaped once or twice: by repr (of the text or
    its UTF-8 bytes), then maybe by JSON (with or without escaping what is not ASCII)."""
    once = {secret, repr(secret)[1:-1], repr(secret.encode())[2:-1]}
    twice = {json.dumps(form, ensure_ascii=only)[1:-1] for form in once for only in (True, False)}
    return {form.encode() for form in once | twice}


def test_records_hold_no_form_of_a_password_escaped_before_masking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Masked after JSON encoding, a password inside a repr (a list's str, KeyError's message)
    reached the records file escaped twice, past recognition."""
    from nornir_bench.jobs.load import load_job
    from nornir_bench.jobs.run import run_job

    secret = NASTY + "\nü€"
    monkeypatch.setenv("NB_ECHOED", secret)
    (tmp_path / "echoingtasks.py").write_text(ECHOING_TASKS)
    job = tmp_path / "job.yaml"
    job.write_text(
        textwrap.dedent("""\
        inventory: {plugin: synthetic, options: {hosts: 2, password: "${NB_ECHOED}"}}
        runner: {plugin: threadpool, options: {num_workers: 2}}
        logging: {enabled: false}
        task: {name: "echoingtasks:echoes"}
        """)
    )
    run_job(load_job(job), output=tmp_path / "records.jsonl", progress=False)
    raw = (tmp_path / "records.jsonl").read_bytes()
    for form in secret_forms(secret):
        assert form not in raw, form
    records = {r["host"]: r for r in map(json.loads, raw.decode().splitlines())}
    assert records["dev0"]["result"] == {
        "as_list": "['********']",
        "as_repr": "'********'",
        "as_bytes": "b'********'",
    }
    assert (records["dev1"]["exception"], records["dev1"]["message"]) == ("KeyError", "'********'")


# A task saying the password on the terminal: warned, printed (in two writes: text, newline),
# to standard error, and as the exit message of the process (one host).
LOUD_TASKS = """
import sys
import warnings


def loud(task):
    password = task.host.password
    warnings.warn(f"warned {password}")
    print(f"printed {password}")
    print("error", password, file=sys.stderr)
    if task.host.name == "dev1":
        sys.exit(f"cannot log in with {password}")
    return "ok"
"""


# Dask's workers write to their own standard output and error, which the run does not show.
@pytest.mark.parametrize("runner", ["threadpool", "asyncio", "processpool"])
def test_what_a_task_warns_prints_or_exits_with_is_masked_on_the_terminal(
    tmp_path: Path, runner: str
) -> None:
    """Once, the terminal showed it as is: a warning through nornir-bench's own formatter, a
    print, a worker's UserWarning, the exit message (which, on asyncio, also ended in a
    traceback of the loop's closing)."""
    (tmp_path / "loudtasks.py").write_text(LOUD_TASKS)
    (tmp_path / "job.yaml").write_text(textwrap.dedent(f"""\
        inventory: {{plugin: synthetic, options: {{hosts: 3, password: "Hunter2Secret"}}}}
        runner: {{plugin: {runner}, options: {{num_workers: 2}}}}
        task: {{name: "loudtasks:loud"}}
        logging: {{enabled: false}}
        """))
    done = subprocess.run(
        [sys.executable, "-m", "nornir_bench", "run", "job.yaml", "-o", "out.jsonl"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )
    assert "Hunter2Secret" not in done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "dev1: TaskExited: the task exited: sys.exit('cannot log in with ********')" in (
        done.stdout
    )
    assert "printed ********" in done.stdout
    assert "error ********" in done.stderr
    assert "warned ********" in done.stderr


def test_nested_extras_and_numeric_passwords_are_masked(tmp_path: Path) -> None:
    from nornir import InitNornir

    from nornir_bench.jobs.secrets import resolve_inventory

    (tmp_path / "hosts.yaml").write_text(
        textwrap.dedent("""\
        r1:
          hostname: 127.0.0.1
          password: 123456
          connection_options:
            napalm:
              extras:
                optional_args: {secret: "${NB_NESTED}", transport: ssh}
        """)
    )
    os.environ["NB_NESTED"] = "enable-Nested-9"
    try:
        nr = InitNornir(
            inventory={
                "plugin": "SimpleInventory",
                "options": {"host_file": str(tmp_path / "hosts.yaml")},
            },
            logging={"enabled": False},
        )
        secrets = resolve_inventory(nr.inventory)
    finally:
        del os.environ["NB_NESTED"]
    assert {"123456", "enable-Nested-9"} <= secrets
    assert "ssh" not in secrets
    extras = nr.inventory.hosts["r1"].connection_options["napalm"].extras
    assert extras["optional_args"]["secret"] == "enable-Nested-9"  # expanded in place


LATE_LOGGER = '''
import logging, signal, threading, time


def late(task):
    if task.host.name == "dev0":  # Ctrl-C twice, once the run is under way
        for _ in range(2):
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
            time.sleep(0.1)
    time.sleep(0.5)
    logging.getLogger("devicelib").error("late login with %s", task.host.password)
    return 1
'''


# pytest's own log capture is a root handler: nornir warns about it configuring logging too.
@pytest.mark.filterwarnings("ignore::nornir.core.exceptions.ConflictingConfigurationWarning")
def test_threads_abandoned_by_a_second_ctrl_c_still_log_masked(tmp_path: Path) -> None:
    """run_job in a long-lived process: hosts abandoned by a second Ctrl-C log after it."""
    # nornir's logging configuration changes these loggers: put them back as they were.
    loggers = [logging.getLogger(name) for name in ("nornir", "devicelib", "nornir_bench")]
    saved = [(lg, lg.level, lg.propagate, list(lg.handlers)) for lg in loggers]
    try:
        _abandoned_run_logs_masked(tmp_path)
    finally:
        for lg, level, propagate, handlers in saved:
            for handler in lg.handlers:
                if handler not in handlers:
                    handler.close()
            lg.handlers[:] = handlers
            lg.setLevel(level)
            lg.propagate = propagate


def _abandoned_run_logs_masked(tmp_path: Path) -> None:
    import time

    from nornir_bench.jobs.load import load_job
    from nornir_bench.jobs.run import run_job

    (tmp_path / "latetasks.py").write_text(LATE_LOGGER)
    job = tmp_path / "job.yaml"
    job.write_text(
        textwrap.dedent("""\
        inventory: {plugin: synthetic, options: {hosts: 2, password: "Late-Pa55word"}}
        runner: {plugin: threadpool, options: {num_workers: 2}}
        logging: {enabled: true, log_file: nornir.log, loggers: [nornir, devicelib]}
        task: {name: "latetasks:late"}
        """)
    )
    run = run_job(load_job(job), output=tmp_path / "r.jsonl", progress=False)
    assert run.abandoned
    time.sleep(1)  # the abandoned hosts log now
    log = (tmp_path / "nornir.log").read_text()
    assert "late login with ********" in log and "Late-Pa55word" not in log
