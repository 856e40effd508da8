"""A NETCONF change on the NETCONF lab (yuma123 netconfd behind OpenSSH), through the change
engine: the happy paths on threadpool and asyncio, its dry run, and its faults, each one the
handling it tests would miss: a candidate another session holds locked, an ``<rpc-error>`` at
the edit or at the validation, a check that fails inside the confirm window.

A server's configuration is compared as its ``<data>`` (``lab.data``: the reply's
``last-modified`` stamp moves at every commit, a revert's too)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nornir_bench.core.changes import (
    CHANGED,
    INTERRUPTED,
    NOT_TOUCHED,
    ROLLED_BACK,
    WOULD_CHANGE,
)
from nornir_bench.core.exceptions import TaskTimeout
from nornir_bench.lab import RunningNetconfLab
from nornir_bench.tasks import anetconf_edit_config, netconf_edit_config
from tests.cli.test_run import nornir_bench_here
from tests.waiting import HANG_GUARD, still_alive, wait_until

IETF_INTERFACES = "urn:ietf:params:xml:ns:yang:ietf-interfaces"


def description(text: str, interface: str = "eth1") -> str:
    return (f"<interfaces xmlns='{IETF_INTERFACES}'><interface><name>{interface}</name>"
            f"<description>{text}</description></interface></interfaces>")


# An interface with no type: ietf-interfaces' type is mandatory, refused at the edit.
NO_TYPE = f"<interfaces xmlns='{IETF_INTERFACES}'><interface><name>eth9</name></interface>" \
          "</interfaces>"
# RADIUS first with no RADIUS server: a must of ietf-system that only <validate> catches
# (netconfd's <commit> takes it).
RADIUS_FIRST = ("<system xmlns='urn:ietf:params:xml:ns:yang:ietf-system'><authentication>"
                "<user-authentication-order xmlns:sys='urn:ietf:params:xml:ns:yang:ietf-system'>"
                "sys:radius</user-authentication-order></authentication></system>")
DESCRIPTION_CHECK = {"name": "eth1 described", "xpath": "/interfaces/interface[name='eth1']",
                     "path": "interfaces.interface.description", "expect": "present"}


@pytest.fixture
def lab(netconf_lab: RunningNetconfLab) -> RunningNetconfLab:
    """The session's NETCONF lab (tests/netconf_lab.py), put back after the test."""
    return netconf_lab


def run(lab: RunningNetconfLab, task: Any, tmp_path: Path, runner: str = "threadpool",
        hosts: tuple[str, ...] = ("nc1",), **params: Any) -> Any:
    nr = lab.nornir(runner).filter(filter_func=lambda host: host.name in hosts)
    return nr.run(task=task, backup_dir=str(tmp_path / "backups"), raise_on_error=False,
                  **params)


@contextlib.contextmanager
def other_session(lab: RunningNetconfLab, server: str) -> Iterator[Any]:
    """A NETCONF session of the test's own on ``server`` (ncclient)."""
    from ncclient import manager

    port = lab.plan.server(server).port
    session = manager.connect(host="127.0.0.1", port=port, username=lab.user,
                              password=lab.password, hostkey_verify=False, look_for_keys=False,
                              allow_agent=False, timeout=30)
    try:
        yield session
    finally:
        session.close_session()


def journal_states(path: Path) -> list[str]:
    return [json.loads(line)["state"] for line in path.read_text().splitlines()[1:]]


@pytest.mark.parametrize(("runner", "task"), [("threadpool", netconf_edit_config),
                                              ("asyncio", anetconf_edit_config)])
def test_a_confirmed_commit_with_a_check_is_confirmed_on_both_runners(
    lab: RunningNetconfLab, tmp_path: Path, runner: str, task: Any
) -> None:
    before = lab.data("nc2")
    journal = tmp_path / "run.journal"
    result = run(lab, task, tmp_path, runner, hosts=("nc1", "nc2"),
                 config=description("to the core"), checks=[DESCRIPTION_CHECK],
                 confirm={"within": 20}, journal_file=str(journal))
    assert not result.failed, {h: str(m[0].exception) for h, m in result.items()}
    for name in ("nc1", "nc2"):
        assert result[name][0].change["state"] == CHANGED
        assert "+    <description>to the core</description>" in result[name][0].diff
        assert result[name][0].checks[0]["after"] == "to the core"
        assert "<description>to the core</description>" in lab.config(name)
        assert lab.data(name, "candidate") == lab.data(name)
    # Each host: pending before its commit, marked confirming before the confirming one
    # (a run dying then leaves a change only the device knows), then confirmed.
    entries = [json.loads(line) for line in journal.read_text().splitlines()[1:]]
    for name in ("nc1", "nc2"):
        assert [(e["state"], e.get("confirming", False)) for e in entries
                if e["host"] == name] == [("pending", False), ("pending", True),
                                          ("confirmed", False)]
    assert lab.data("nc2") != before
    with other_session(lab, "nc1") as session:  # unlocked: another session takes the lock
        session.lock("candidate")
        session.unlock("candidate")


def test_a_dry_run_shows_the_candidate_against_running_and_changes_nothing(
    lab: RunningNetconfLab, tmp_path: Path
) -> None:
    before, candidate = lab.data("nc1"), lab.data("nc1", "candidate")
    result = run(lab, netconf_edit_config, tmp_path, config=description("dry"), dry_run=True)
    assert not result.failed, str(result["nc1"][0].exception)
    assert result["nc1"][0].change["state"] == WOULD_CHANGE
    assert "-    <description>spare</description>\n+    <description>dry</description>" in \
        result["nc1"][0].diff
    assert lab.data("nc1") == before
    assert lab.data("nc1", "candidate") == candidate
    assert not (tmp_path / "backups").exists()


def rpc_errors(session: Any) -> int:
    """The ``<rpc-error>`` replies the server has sent, counted by the server itself
    (ietf-netconf-monitoring), read on ``session``: its open sessions' counts and the
    statistics' (netconfd adds a session's count there once the session has ended, so for a
    moment after a session ends its errors are in neither: wait for a count)."""
    import xmltodict

    state = session.get(filter=("subtree", "<netconf-state xmlns='urn:ietf:params:xml:ns:"
                                           "yang:ietf-netconf-monitoring'/>"))
    data = xmltodict.parse(state.data_xml, force_list=("session",))["data"]["netconf-state"]
    return int(data["statistics"]["out-rpc-errors"]) + sum(
        int(each["out-rpc-errors"]) for each in data["sessions"]["session"])


def test_a_lock_wait_given_from_python_is_checked_as_a_jobs(
    lab: RunningNetconfLab, tmp_path: Path
) -> None:
    """Not loaded from a job, the task checks it itself: an endless wait (a lock held by an
    operator's CLI session) is refused before any login."""
    before = lab.logins()
    result = run(lab, netconf_edit_config, tmp_path, config=description("endless"),
                 lock_wait=float("inf"))
    assert str(result["nc1"][0].exception) == (
        "netconf_edit_config: lock_wait must be a number of seconds from 0 to 3600, got inf")
    assert lab.logins() == before


@pytest.mark.parametrize(("runner", "task"), [("threadpool", netconf_edit_config),
                                              ("asyncio", anetconf_edit_config)])
def test_with_lock_wait_a_lock_another_session_holds_is_asked_for_until_given_back(
    lab: RunningNetconfLab, tmp_path: Path, runner: str, task: Any
) -> None:
    """Refused twice while the holder keeps it (the server counts its errors), the change is
    made once the holder unlocks."""
    with other_session(lab, "nc1") as holder:
        holder.lock("candidate")
        errors = rpc_errors(holder)
        ended: list[Any] = []
        thread = threading.Thread(target=lambda: ended.append(run(
            lab, task, tmp_path, runner, config=description(f"waited {runner}"),
            lock_wait=HANG_GUARD)))
        thread.start()
        try:
            wait_until(lambda: rpc_errors(holder) - errors >= 2, "the lock refused twice",
                       every=0.1)
        finally:
            holder.unlock("candidate")
        assert not still_alive([thread])
    result = ended[0]
    assert not result.failed, str(result["nc1"][0].exception)
    assert result["nc1"][0].change["state"] == CHANGED
    assert f"<description>waited {runner}</description>" in lab.config("nc1")


@pytest.mark.parametrize(("lock_wait", "waited", "asks"),
                         [(None, "", 1), (0.5, " after asking for 0.5 s", 2)])
def test_a_candidate_another_session_holds_fails_the_host_naming_it_and_sends_nothing(
    lab: RunningNetconfLab, tmp_path: Path, lock_wait: float | None, waited: str, asks: int
) -> None:
    """Asked once, or again and again until ``lock_wait`` runs out (the server counting its
    refusals): the host fails naming the holder, the candidate untouched."""
    before = lab.data("nc1")
    with other_session(lab, "nc1") as holder:
        holder.lock("candidate")
        errors = rpc_errors(holder)
        result = run(lab, netconf_edit_config, tmp_path, config=description("locked out"),
                     lock_wait=lock_wait)
        candidate = lab.data("nc1", "candidate")
        wait_until(lambda: rpc_errors(holder) - errors >= asks, f"{asks} locks refused",
                   every=0.1)
    error = result["nc1"][0].exception
    assert str(error) == (f"<lock> refused: lock-denied: lock denied (held by session "
                          f"{holder.session_id}): nothing sent{waited}")
    assert error.change == {"state": NOT_TOUCHED, "backup": None}
    assert lab.data("nc1") == before
    assert "locked out" not in candidate


@pytest.mark.parametrize(
    ("runner", "task", "config", "said"),
    [
        ("threadpool", netconf_edit_config, NO_TYPE,
         "<edit-config> refused: data-missing: required value instance not found"),
        ("asyncio", anetconf_edit_config, RADIUS_FIRST,
         "<validate> refused: operation-failed: When 'radius' is used, a RADIUS server must "
         "be configured."),
    ],
)
def test_an_rpc_error_at_the_edit_or_the_validation_is_named_the_candidate_discarded(
    lab: RunningNetconfLab, tmp_path: Path, runner: str, task: Any, config: str, said: str
) -> None:
    before = lab.data("nc1")
    result = run(lab, task, tmp_path, runner, config=config)
    error = result["nc1"][0].exception
    assert str(error).startswith(said), str(error)
    assert str(error).endswith(": candidate discarded, running untouched")
    assert error.change == {"state": NOT_TOUCHED, "backup": None}
    assert lab.data("nc1") == before
    assert lab.data("nc1", "candidate") == before
    with other_session(lab, "nc1") as session:  # the lock was given back
        session.lock("candidate")
        session.unlock("candidate")


def test_a_check_failing_in_the_confirm_window_cancels_the_commit_byte_for_byte(
    lab: RunningNetconfLab, tmp_path: Path
) -> None:
    before = lab.data("nc1")
    journal = tmp_path / "run.journal"
    never = {**DESCRIPTION_CHECK, "expect": {"equals": "something else"}}
    result = run(lab, anetconf_edit_config, tmp_path, "asyncio", config=description("bad"),
                 checks=[never], confirm={"within": 1}, journal_file=str(journal))
    error = result["nc1"][0].exception
    assert error.change["state"] == ROLLED_BACK
    assert "after the change, check 'eth1 described' (equals 'something else'): 'bad', not " \
           "'something else' (not confirmed within 1 s); <cancel-commit> sent: the server " \
           "reverted its confirmed commit" in str(error)
    assert lab.data("nc1") == before
    assert journal_states(journal) == ["pending", "reverted"]
    pending = json.loads(journal.read_text().splitlines()[1])
    assert pending["task"] == "anetconf_edit_config"  # the twin run, not the blocking one it runs


def change_job(lab: RunningNetconfLab, tmp_path: Path, params: str) -> Path:
    """A job changing nc1 with ``params`` (YAML flow mapping's entries), on the lab's
    inventory."""
    assert lab.inventory is not None
    path = tmp_path / "job.yaml"
    path.write_text(
        "inventory:\n  plugin: SimpleInventory\n  options:\n"
        f"    host_file: {lab.inventory / 'hosts.yaml'}\n"
        f"    group_file: {lab.inventory / 'groups.yaml'}\n"
        f"    defaults_file: {lab.inventory / 'defaults.yaml'}\n"
        "logging: {enabled: false}\nfilter: {hosts: [nc1]}\n"
        f"task: {{name: anetconf_edit_config, params: {{{params}}}}}\n"
    )
    return path


def test_a_run_killed_inside_the_confirm_window_is_reverted_by_the_server_not_recover(
    lab: RunningNetconfLab, tmp_path: Path
) -> None:
    """SIGKILL while the run waits for a check inside its window: the server reverts the
    confirmed commit by itself (its session gone), byte for byte, with no controller
    running; ``recover`` afterwards sends nothing and changes nothing."""
    before = lab.data("nc1")
    never = "{xpath: \"/interfaces/interface[name='eth1']\", " \
            "path: interfaces.interface.description, expect: {equals: never}}"
    path = change_job(lab, tmp_path, f"config: \"{description('killed')}\", "
                                     f"checks: [{never}], confirm: {{within: 600}}")
    journal = tmp_path / "out.journal"
    run = subprocess.Popen([sys.executable, "-m", "nornir_bench", "run", str(path), "-q", "-o",
                            str(tmp_path / "out.jsonl")], cwd=tmp_path,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: journal.exists() and "pending" in journal_states(journal)
                   and "<description>killed</description>" in lab.config("nc1"),
                   "the confirmed commit on nc1", every=0.2)
    finally:
        run.kill()
        run.wait()
    reverted_by_the_server(lab, before, journal, tmp_path)


def reverted_by_the_server(lab: RunningNetconfLab, before: str, journal: Path,
                           folder: Path) -> None:
    """nc1 back to ``before`` by itself; ``recover`` then sends nothing, journaling it
    reverted by the device."""
    wait_until(lambda: lab.data("nc1") == before, "nc1 reverted by itself", every=0.5)
    done = nornir_bench_here("recover", str(journal), cwd=folder)
    assert done.returncode == 0, done.stderr
    assert "recover: nc1: nothing to send: the device reverts its confirmed commit itself" \
        in done.stdout
    assert lab.data("nc1") == before
    assert journal_states(journal) == ["pending", "reverted"]
    assert json.loads(journal.read_text().splitlines()[-1])["by"] == "device"


def test_a_server_hung_mid_change_ends_the_host_at_its_task_timeout_its_state_said(
    lab: RunningNetconfLab, tmp_path: Path
) -> None:
    """netconfd stopped (SIGSTOP) once the confirmed commit is in (it answered the commit
    before the read that shows it), while the change waits to read its check: the host ends
    at its task_timeout, saying what holds; its session dropped, the server reverts the commit
    once it runs again."""
    before = lab.data("nc1")
    nr = lab.nornir("threadpool", task_timeout=8).filter(name="nc1")
    ended: list[Any] = []
    thread = threading.Thread(target=lambda: ended.append(nr.run(
        task=netconf_edit_config, config=description("hung"), checks=[DESCRIPTION_CHECK],
        settle=3, confirm={"within": 30}, journal_file=str(tmp_path / "run.journal"),
        backup_dir=str(tmp_path / "backups"), raise_on_error=False)))
    thread.start()
    pids = lab.pids("nc1")
    try:
        wait_until(lambda: "<description>hung</description>" in lab.config("nc1"),
                   "the confirmed commit on nc1", every=0.1)
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        assert not still_alive([thread])
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)
    error = ended[0]["nc1"][0].exception
    assert isinstance(error, TaskTimeout), error
    assert error.change is not None and error.change["state"] == INTERRUPTED
    # The confirmed commit in (T = 30 s window + 60 s, the RPC timeout), the session dropped.
    assert ": interrupted during change: the server reverts its confirmed commit itself when " \
           "the session ends, or 90 s after the commit; backup at " in str(error), str(error)
    wait_until(lambda: lab.data("nc1") == before, "nc1 reverted", every=0.5)


def test_a_secret_in_the_xml_is_masked_in_the_diff_and_kept_in_the_backup(
    lab: RunningNetconfLab, tmp_path: Path
) -> None:
    user = ("<system xmlns='urn:ietf:params:xml:ns:yang:ietf-system'><authentication><user>"
            "<name>ops</name><password>$0$hunter2</password></user></authentication></system>")
    result = run(lab, netconf_edit_config, tmp_path, config=user)
    assert not result.failed, str(result["nc1"][0].exception)
    change = result["nc1"][0]
    assert "+      <password>********</password>" in change.diff
    assert "hunter2" not in change.diff + change.result
    assert "hunter2" in lab.config("nc1")
    backup = Path(change.change["backup"])
    assert oct(backup.stat().st_mode & 0o777) == "0o600"


@pytest.mark.parametrize(("new_login", "logins"), [(False, 1), (True, 2)])
def test_a_new_login_is_part_of_the_confirmation_only_when_asked(
    lab: RunningNetconfLab, tmp_path: Path, new_login: bool, logins: int
) -> None:
    """The device reverts a confirmed commit whose session is lost: confirming needs the
    checks; a new login (a change that refuses new sessions) only with ``new_login``."""
    before = lab.logins()
    result = run(lab, netconf_edit_config, tmp_path, config=description("logged"),
                 checks=[DESCRIPTION_CHECK], journal_file=str(tmp_path / "run.journal"),
                 confirm={"within": 20, "new_login": new_login})
    assert not result.failed, str(result["nc1"][0].exception)
    assert lab.logins() - before == logins


def test_sigterm_in_the_confirm_window_lets_the_change_end_cancelled_and_unlocked(
    lab: RunningNetconfLab, tmp_path: Path
) -> None:
    """SIGTERM (as a first Ctrl-C) starts no new host and lets the one in its window end: its
    check never holds, so at the window's end <cancel-commit>, journaled reverted by the run
    itself, the candidate unlocked; exit 143."""
    before = lab.data("nc1")
    never = "{xpath: \"/interfaces/interface[name='eth1']\", " \
            "path: interfaces.interface.description, expect: {equals: never}}"
    path = change_job(lab, tmp_path, f"config: \"{description('stopped')}\", "
                                     f"checks: [{never}], confirm: {{within: 4}}")
    journal = tmp_path / "out.journal"
    run = subprocess.Popen([sys.executable, "-m", "nornir_bench", "run", str(path), "-q", "-o",
                            str(tmp_path / "out.jsonl")], cwd=tmp_path,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: journal.exists() and "pending" in journal_states(journal),
                   "the confirmed commit on nc1", every=0.1)
        run.send_signal(signal.SIGTERM)
        assert run.wait(HANG_GUARD) == 143
    finally:
        run.kill()
        run.wait()
    assert journal_states(journal) == ["pending", "reverted"]
    assert lab.data("nc1") == before
    with other_session(lab, "nc1") as session:
        session.lock("candidate")
        session.unlock("candidate")


def test_check_from_the_command_line_records_the_diff_and_changes_nothing(
    lab: RunningNetconfLab, tmp_path: Path
) -> None:
    """``nornir-bench run --check``: the candidate against running as the record's diff,
    ``would change``, the server's running and candidate as before."""
    before = lab.data("nc1")
    path = change_job(lab, tmp_path, f"config: \"{description('checked')}\"")
    done = nornir_bench_here("run", str(path), "--check", "-q", "-o", "out.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    (record,) = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert record["change"] == {"state": WOULD_CHANGE, "backup": None}
    assert "+    <description>checked</description>" in record["diff"]
    assert lab.data("nc1") == before == lab.data("nc1", "candidate")


@pytest.mark.parametrize("runner", ["processpool", "dask"])
def test_a_confirmed_change_runs_on_the_process_runners_as_on_threads(
    lab: RunningNetconfLab, tmp_path: Path, runner: str
) -> None:
    """Through ``nornir-bench run``, on processpool's workers and a Dask cluster's: the
    change confirmed by the device with its check, journaled pending, confirming, confirmed,
    and the server's running configuration holding it."""
    path = change_job(lab, tmp_path, f"config: \"{description(f'from {runner}')}\", "
                                     f"checks: [{json.dumps(DESCRIPTION_CHECK)}], "
                                     "confirm: {within: 20}")
    with path.open("a") as job:
        job.write(f"runner: {{plugin: {runner}, options: {{num_workers: 2}}}}\n")
    done = nornir_bench_here("run", str(path), "-q", "-o", "out.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    (record,) = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert record["change"]["state"] == CHANGED, record
    assert f"<description>from {runner}</description>" in lab.config("nc1")
    assert lab.data("nc1", "candidate") == lab.data("nc1")
    entries = [json.loads(line) for line in
               (tmp_path / "out.journal").read_text().splitlines()[1:]]
    assert [(e["state"], e.get("confirming", False)) for e in entries] == [
        ("pending", False), ("pending", True), ("confirmed", False)]
    assert entries[0]["task"] == "anetconf_edit_config"  # the job's task, not its twin
