"""Secrets: ``${NAME}`` from the environment, and masking in text and in log records."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest

from nornir_bench.jobs.secrets import (
    MASK,
    Redactor,
    SecretError,
    encoded_forms,
    expand_env,
    is_secret_key,
)


def test_expand_env_fills_in_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NB_A", "alpha")
    assert expand_env("${NB_A}-${NB_A}", "x") == "alpha-alpha"
    assert expand_env("no reference, $NB_A stays", "x") == "no reference, $NB_A stays"


def test_an_unset_variable_is_named_with_where_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NB_UNSET", raising=False)
    with pytest.raises(
        SecretError, match=r"^hosts.yaml r1 password: environment variable NB_UNSET is not set$"
    ):
        expand_env("${NB_UNSET}", "hosts.yaml r1 password")


def test_secret_keys() -> None:
    assert all(map(is_secret_key, ["password", "enable_secret", "api_token", "Passphrase"]))
    assert not any(map(is_secret_key, ["username", "hostname", "port", 3]))


def test_the_redactor_masks_longest_first_and_inside_structures() -> None:
    redact = Redactor(["abc", "abcdef", ""])
    assert redact("x abcdef y abc") == f"x {MASK} y {MASK}"
    assert redact.value({"k": ["abc", ("abcdef",)], "abc": 1}) == {"k": [MASK, [MASK]], MASK: 1}


def test_the_redactor_masks_log_messages_arguments_and_tracebacks() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("nornir_bench.test_secrets")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        Redactor(["pw-123"]).install([logger.name])
        logger.error("login %s failed", "pw-123")
        try:
            raise ValueError("bad pw-123")
        except ValueError:
            logger.exception("boom")
    finally:
        logger.removeHandler(handler)
    text = stream.getvalue()
    assert "pw-123" not in text
    assert f"login {MASK} failed" in text and f"ValueError: bad {MASK}" in text


def test_the_escaped_forms_of_a_secret_are_masked_too() -> None:
    secret = 'ab"c\\d é/+'
    redact = Redactor([secret])
    for text in (
        json.dumps({"message": f"login failed with {secret}"}),
        repr(["login", secret]),
        repr(secret.encode()),
        f"ssh://user:{quote(secret, safe='')}@host",
        f"https://host/?pw={quote_plus(secret)}",
    ):
        assert MASK in redact(text), text
        for form in encoded_forms(secret):
            assert form not in redact(text), (text, form)


def test_installed_filters_are_removed_after_the_block() -> None:
    handler = logging.StreamHandler(io.StringIO())
    logger = logging.getLogger("nornir_bench.test_secrets.installed")
    logger.addHandler(handler)
    try:
        for _ in range(3):  # a process running job after job
            with Redactor(["pw-123"]).installed([logger.name]):
                assert len(handler.filters) == 1
        assert handler.filters == []
    finally:
        logger.removeHandler(handler)


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
    if runner != "processpool":  # its workers keep no log records but failures (runners.md)
        assert "connecting to ssh://netops:********@dev1" in log  # the library's line, masked
        assert "attempt 1 failed (RuntimeError: login failed with ********)" in log  # the retry
    records = [json.loads(line) for line in (tmp_path / "records.jsonl").read_text().splitlines()]
    assert {r["host"]: r["failed"] for r in records} == {
        "dev0": False, "dev1": True, "dev2": False, "dev3": True
    }
    # the failed hosts were retried once: their first attempt's message is kept, masked
    assert [r["failed_attempts"] for r in records if r["failed"]] == [
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


def test_a_quote_escaped_inside_a_longer_repr_is_masked() -> None:
    """repr escapes ' as \\' when the text around the secret holds both kinds of quote."""
    secret = "it's-s3cret"
    text = repr(f'"{secret}"')  # '"it\'s-s3cret"'
    assert secret.replace("'", "\\'") in text
    assert Redactor([secret])(text) == repr('"********"')


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
            inventory={"plugin": "SimpleInventory", "options": {"host_file": str(tmp_path / "hosts.yaml")}},
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
    loggers = [logging.getLogger(name) for name in ("nornir", "devicelib")]
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
