"""A NETCONF change stopped inside its confirm window, and what its host then says holds: by
a deadline (the note the change keeps on the host's task, step by step, driven by the scripted
server of test_netconf_flow.py), and by a second Ctrl-C (its journal read: the unit, then
through ``nornir-bench run`` on the NETCONF lab, the server reverting the commit by itself)."""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from nornir_bench.core.changes import CHANGED, INTERRUPTED, ROLLED_BACK
from nornir_bench.core.exceptions import TaskTimeout
from nornir_bench.core.task_traits import traits_of
from nornir_bench.lab import RunningNetconfLab
from nornir_bench.tasks import netconf_edit_config
from nornir_bench.tasks.changes._change import ConfigChangeFailed
from nornir_bench.tasks.changes.backups import abandoned_failure
from nornir_bench.tasks.changes.journal import PENDING, append_entry, read_journal
from tests.tasks.changes.test_netconf_change import (
    change_job,
    description,
    journal_states,
    other_session,
    reverted_by_the_server,
)
from tests.tasks.changes.test_netconf_flow import BEFORE, NEVER, ScriptedServer, T, change
from tests.waiting import HANG_GUARD, wait_until


def deadline_says(note: dict[str, Any] | None) -> str:
    return str(TaskTimeout("netconf_edit_config", "nc1", 8, True, note))


def test_a_deadline_in_the_confirm_window_says_the_server_reverts_the_commit(
    tmp_path: Path,
) -> None:
    """What a deadline says, step by step (the note on the host's task when each request is
    asked): nothing known before the confirmed commit is answered; from then on, until the
    confirming ``<commit>`` is sent, that the server reverts it; once that is answered, that
    running holds the change."""
    server = ScriptedServer()
    assert change(server, tmp_path).state == CHANGED
    names, notes = server.names(), server.notes
    backup = tmp_path / "nc1.cfg"
    said = {name: deadline_says(note) for name, note in zip(names, notes, strict=True)}
    head = "task 'netconf_edit_config' on host 'nc1' timed out after 8 s: "
    assert said["Commit(confirmed)"] == \
        f"{head}interrupted during change: state unknown, backup at {backup}"
    assert said["Get"] == (
        f"{head}interrupted during change: the server reverts its confirmed commit itself "
        f"when the session ends, or {T} s after the commit; backup at {backup}")
    assert said["Commit"] == f"{head}interrupted during change: state unknown, backup at {backup}"
    assert said["Unlock"] == (f"{head}interrupted during change: committed and confirmed: "
                              f"running holds the change; backup at {backup}")
    in_window = dict(zip(names, notes, strict=True))["Get"]  # the last: the check after
    timeout = TaskTimeout("netconf_edit_config", "nc1", 8, True, in_window)
    assert timeout.change == {"state": INTERRUPTED, "backup": str(backup)}  # as recorded
    back = pickle.loads(pickle.dumps(timeout))  # from a worker process, its words kept
    assert str(back) == str(timeout) and back.change == timeout.change


def test_a_deadline_during_a_plain_commits_rollback_says_what_holds_at_each_step(
    tmp_path: Path,
) -> None:
    server = ScriptedServer()
    with pytest.raises(ConfigChangeFailed) as failed:
        change(server, tmp_path, check=NEVER, confirm=False)
    assert failed.value.state == ROLLED_BACK
    said = dict(zip(server.names(), map(deadline_says, server.notes), strict=False))
    assert said["Get"].endswith(": interrupted during change: committed: running holds the "
                                f"change; backup at {tmp_path / 'nc1.cfg'}")
    assert said["CopyConfig"].endswith(": interrupted during change: state unknown, backup "
                                       f"at {tmp_path / 'nc1.cfg'}")


def abandoned_in_window(tmp_path: Path, **entry: Any) -> tuple[dict[str, Any], float]:
    """A NETCONF change stopped in its confirm window as a second Ctrl-C finds it: its
    backup, and its journal's entry with ``entry``'s fields; its step's parameters, and
    when the step started."""
    since = time.time() - 1
    backups = tmp_path / "backups"
    backups.mkdir()
    backup = backups / "nc1-20261206T161000.000000Z.cfg"
    backup.write_text(BEFORE)
    journal = tmp_path / "run.journal"
    append_entry(journal, "nc1", PENDING, **{"backup": str(backup), "task":
                 "anetconf_edit_config", "until": since + 61, "device_reverts_at": since + T,
                 **entry})
    os.utime(backup, (since + 0.5, since + 0.5))
    params = {"config": "<x/>", "confirm": {"within": 30}, "timeout": 7.5,
              "journal_file": str(journal), "backup_dir": str(backups)}
    return params, since


def test_a_change_abandoned_in_its_confirm_window_says_the_server_reverts_it(
    tmp_path: Path,
) -> None:
    """A second Ctrl-C abandons a host whose confirmed commit is pending (its journal says
    so): the run's session ends with it, and the server reverts the commit."""
    params, since = abandoned_in_window(tmp_path)
    said = traits_of(netconf_edit_config).abandoned_failure
    assert said is not None
    error = said("nc1", params, since)
    backup = tmp_path / "backups" / "nc1-20261206T161000.000000Z.cfg"
    assert str(error) == (
        "interrupted during change: the server reverts its confirmed commit itself when the "
        f"session ends, or {T} s after the commit; backup at {backup}")
    assert getattr(error, "change", None) == {"state": INTERRUPTED, "backup": str(backup)}
    # A CLI change's words are as they were.
    assert str(abandoned_failure("nc1", params, since)) == \
        f"interrupted during change: state unknown, backup at {backup}"


@pytest.mark.parametrize(("entry", "params"), [
    ({"confirming": True}, {}),  # the confirmation may have been sent: not known
    ({"backup": "another-backup.cfg"}, {}),  # an earlier change's entry
    ({}, {"confirm": None}),  # a plain commit: no journal of its own, nothing the server reverts
], ids=["confirming", "another-change", "no-confirm"])
def test_a_change_abandoned_without_its_confirmed_commit_pending_says_state_unknown(
    tmp_path: Path, entry: dict[str, Any], params: dict[str, Any]
) -> None:
    given, since = abandoned_in_window(tmp_path, **entry)
    said = traits_of(netconf_edit_config).abandoned_failure
    assert said is not None
    error = said("nc1", {**given, **params}, since)
    assert str(error).startswith("interrupted during change: state unknown, backup at ")
    assert read_journal(tmp_path / "run.journal").hosts["nc1"]["state"] == PENDING


def test_a_second_ctrl_c_in_the_confirm_window_leaves_the_commit_to_the_server(
    netconf_lab: RunningNetconfLab, tmp_path: Path
) -> None:
    """``nornir-bench run``, its host inside a 600 s window whose check never holds: the
    first Ctrl-C waits for it, the second abandons it (exit 130). Its record says the server
    reverts the confirmed commit; the run's session gone with the run, the server does,
    byte for byte; the lock is free; ``recover`` sends nothing."""
    lab = netconf_lab
    before = lab.data("nc1")
    never = "{xpath: \"/interfaces/interface[name='eth1']\", " \
            "path: interfaces.interface.description, expect: {equals: never}}"
    path = change_job(lab, tmp_path, f"config: \"{description('abandoned')}\", "
                                     f"checks: [{never}], confirm: {{within: 600}}")
    journal, out, err = tmp_path / "out.journal", tmp_path / "stdout", tmp_path / "stderr"
    with out.open("w") as stdout, err.open("w") as stderr:
        run = subprocess.Popen(
            [sys.executable, "-m", "nornir_bench", "run", str(path), "-o",
             str(tmp_path / "out.jsonl")], cwd=tmp_path, stdout=stdout, stderr=stderr,
            start_new_session=True)
    try:
        wait_until(lambda: journal.exists() and "pending" in journal_states(journal)
                   and "<description>abandoned</description>" in lab.config("nc1"),
                   "the confirmed commit on nc1", every=0.2)
        run.send_signal(signal.SIGINT)
        wait_until(lambda: "stopping:" in err.read_text(), "the first Ctrl-C taken")
        run.send_signal(signal.SIGINT)
        assert run.wait(HANG_GUARD) == 130, err.read_text()
    finally:
        run.kill()
        run.wait()
    (record,) = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    backup = record["change"]["backup"]
    assert record["change"] == {"state": INTERRUPTED, "backup": backup} and backup
    assert record["exception"] == "ConfigChangeFailed"
    assert record["message"] == (
        "interrupted during change: the server reverts its confirmed commit itself when the "
        f"session ends, or 660 s after the commit; backup at {backup}")
    said = out.read_text()  # the host's own line under "failed hosts:"
    assert f"  nc1: ConfigChangeFailed: {record['message']}\n" in said, said
    wait_until(lambda: lab.data("nc1") == before, "nc1 reverted by itself", every=0.5)
    with other_session(lab, "nc1") as session:  # the lock went with the run's session
        session.lock("candidate")
        session.unlock("candidate")
    reverted_by_the_server(lab, before, journal, tmp_path)
