"""A run's journal beside its records: started anew when the run replaces an earlier run's
records (``-o`` again), unless that journal still has changes no revert undid. Reverting on
routers is in tests/runners/test_checks_routers.py."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from nornir_bench.jobs.load import JobError
from nornir_bench.jobs.recover import held_journal, journal_beside
from nornir_bench.tasks.changes.journal import (
    CONFIRMED,
    PENDING,
    REVERT_FAILED,
    append_entry,
    read_journal,
    start_journal,
)
from tests.cli.test_run import job_file, nornir_bench


def job(tmp_path: Path) -> Any:
    return SimpleNamespace(path=tmp_path / "job.yaml")


def test_a_run_replacing_an_earlier_runs_records_starts_its_journal_anew(tmp_path: Path) -> None:
    records = tmp_path / "out.jsonl"
    records.write_text("")
    journal = journal_beside(records)
    assert journal == tmp_path / "out.journal"
    with held_journal(journal, job(tmp_path), records):
        append_entry(journal, "r1", PENDING, backup="b")
        append_entry(journal, "r1", CONFIRMED)
    with held_journal(journal, job(tmp_path), records):  # -o out.jsonl again
        assert read_journal(journal).hosts == {}


def test_a_journal_with_changes_still_pending_is_not_replaced(tmp_path: Path) -> None:
    records = tmp_path / "out.jsonl"
    records.write_text("")
    journal = journal_beside(records)
    with held_journal(journal, job(tmp_path), records):
        append_entry(journal, "r1", PENDING, backup="b")
    with pytest.raises(JobError, match=r"changes still pending on r1, not reverted .*: run "
                       r"nornir-bench recover .*out.journal, or give this run another --output"):
        with held_journal(journal, job(tmp_path), records):
            pytest.fail("the run must not start")
    assert list(read_journal(journal).pending()) == ["r1"]


def test_a_revert_that_fails_is_journaled_revert_failed_and_exits_non_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The backup a dead run left is gone: the revert fails, and the journal keeps the change
    to revert (``revert failed``), for the next recover to try again."""
    from nornir_bench.cli._common import EXIT_FAILED_HOSTS
    from nornir_bench.cli.main import main

    job = tmp_path / "job.yaml"
    job.write_text("inventory: {plugin: synthetic, options: {hosts: 1}}\n"
                        "task: {name: sim_rtt, params: {rtt: 0}}\n"
                        "logging: {enabled: false}\n")
    journal = tmp_path / "run.journal"
    start_journal(journal, job=str(job), records=None)
    backup = tmp_path / "backups" / "dev0.cfg"  # never written: nothing to restore
    append_entry(journal, "dev0", PENDING, backup=str(backup), task="send_config")
    for _ in range(2):  # and again: still pending, tried again
        assert main(["recover", str(journal)]) == EXIT_FAILED_HOSTS
        said = capsys.readouterr().out
        assert said.startswith("recover: dev0: ROLLBACK FAILED: no backup of dev0 to restore: ")
        assert said.count("\n") == 1, said
        left = read_journal(journal)
        assert left.hosts["dev0"]["state"] == REVERT_FAILED
        assert list(left.pending()) == ["dev0"] and left.hosts["dev0"]["by"] == "recover"


def test_a_run_recovering_a_dead_runs_change_prints_no_logging_warning(tmp_path: Path) -> None:
    """The run sets its logging up, then loads the dead run's job again to revert its change:
    nornir's second set-up must not take the run's own for the user's logging (nornir's
    "Native Python logging configuration has been detected" on standard error)."""
    job = job_file(tmp_path, "task: {name: sim_rtt, params: {rtt: 0}}\n", hosts=2)
    dead = tmp_path / "dead.journal"
    start_journal(dead, job=str(job), records=None)
    append_entry(dead, "gone", PENDING, backup=str(tmp_path / "gone.cfg"))
    done = nornir_bench("run", str(job), "-o", "out.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        f"recover: gone: ROLLBACK FAILED: not in the job's hosts any more ({job}) "
        f"(journal {dead})"
    ]
    assert read_journal(dead).hosts["gone"]["state"] == REVERT_FAILED  # recovery ran


@pytest.mark.parametrize("confirming", [False, True])
def test_a_netconf_change_left_pending_is_the_devices_unless_the_run_died_confirming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], confirming: bool
) -> None:
    """A confirmed commit the run left pending is reverted by the device itself: nothing to
    send. Once the confirming commit was on its way, the device may hold the change: recover
    says the state is unknown (exit 1) and never that it was reverted; nothing is sent either
    way, and a second recover has nothing left to do."""
    from nornir_bench.cli._common import EXIT_FAILED_HOSTS, EXIT_OK
    from nornir_bench.cli.main import main

    journal = tmp_path / "run.journal"
    start_journal(journal, job=str(tmp_path / "gone.yaml"), records=None)  # no job: none sent
    append_entry(journal, "nc1", PENDING, backup=str(tmp_path / "nc1.xml"),
                 task="netconf_edit_config", device_reverts_at=1_800_000_000.0)
    if confirming:
        append_entry(journal, "nc1", PENDING, confirming=True)
    status = main(["recover", str(journal)])
    said = capsys.readouterr().out
    entry = read_journal(journal).hosts["nc1"]
    if confirming:
        assert status == EXIT_FAILED_HOSTS
        assert said.startswith("recover: nc1: state unknown: the run died sending the commit "
                               "that confirms the change: the device holds the change"), said
        assert entry["state"] == "unknown" and "reverts" not in said
    else:
        assert status == EXIT_OK
        assert said.startswith("recover: nc1: nothing to send: the device reverts its confirmed "
                               "commit itself"), said
        assert entry["state"] == "reverted" and entry["by"] == "device"
    assert not read_journal(journal).pending()
    assert main(["recover", str(journal)]) == EXIT_OK
