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
from nornir_bench.tasks.journal import CONFIRMED, PENDING, append_entry, read_journal


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
