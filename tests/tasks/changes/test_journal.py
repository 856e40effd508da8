"""The journal of changes pending confirmation: whole lines, fsync'd, readable by its owner
alone; read back as each host's last state; anything else refused in one line."""

from __future__ import annotations

import multiprocessing
import os
import stat
from pathlib import Path

import pytest

from nornir_bench.tasks.changes.journal import (
    CONFIRMED,
    PENDING,
    REVERTED,
    JournalError,
    append_entry,
    read_journal,
    start_journal,
)


def test_each_hosts_last_entry_says_whether_its_change_is_still_pending(tmp_path: Path) -> None:
    path = tmp_path / "run.journal"
    start_journal(path, job="/jobs/change.yaml", records=str(tmp_path / "run.jsonl"))
    append_entry(path, "r1", PENDING, backup="r1.cfg", task="asend_config")
    append_entry(path, "r2", PENDING, backup="r2.cfg", task="send_config")
    append_entry(path, "r3", PENDING, backup="r3.cfg", task="send_config")
    append_entry(path, "r1", CONFIRMED)
    append_entry(path, "r3", REVERTED)
    journal = read_journal(path)
    assert journal.header["job"] == "/jobs/change.yaml"
    assert journal.header["folder"] == str(tmp_path)
    assert sorted(journal.pending()) == ["r2"]
    assert journal.pending()["r2"]["backup"] == "r2.cfg"
    assert journal.hosts["r1"]["backup"] == "r1.cfg"  # kept from the pending entry
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_a_journal_started_by_a_change_run_from_python_has_no_job(tmp_path: Path) -> None:
    path = tmp_path / "api.journal"
    append_entry(path, "r1", PENDING, backup="b")
    journal = read_journal(path)
    assert journal.header["job"] is None and list(journal.pending()) == ["r1"]


def test_a_last_line_cut_by_a_crash_leaves_the_lines_before_it(tmp_path: Path) -> None:
    path = tmp_path / "run.journal"
    start_journal(path, job=None, records=None)
    append_entry(path, "r1", PENDING, backup="b")
    with open(path, "a") as file:
        file.write('{"host": "r1", "sta')
    assert list(read_journal(path).pending()) == ["r1"]


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("garbage\n", "not a nornir-bench journal"),
        ('{"host": "r1", "state": "pending"}\n', "not a nornir-bench journal"),
        ('{"journal": 1}\n{"host": "r1", "state": "lost"}\n', r":2: not a journal entry"),
        ('{"journal": 1}\nnot json\n{"host": "r1", "state": "pending"}\n', ":2: not a journal"),
        ("", "not a nornir-bench journal"),
    ],
)
def test_a_file_that_is_not_a_journal_is_refused(tmp_path: Path, text: str, error: str) -> None:
    path = tmp_path / "x.journal"
    path.write_text(text)
    with pytest.raises(JournalError, match=error):
        read_journal(path)


def test_binary_garbage_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "x.journal"
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(JournalError, match="not UTF-8 text"):
        read_journal(path)


def test_each_entry_is_fsynced_and_the_folder_once_the_journal_is_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a machine that lost power keeps: each entry's file fsync'd as it is written, and
    the folder as the journal is created (else its name may be lost with every entry)."""
    synced: list[tuple[int, int, bool]] = []  # device, inode, a folder
    fsync = os.fsync

    def counted(descriptor: int) -> None:
        found = os.fstat(descriptor)
        synced.append((found.st_dev, found.st_ino, stat.S_ISDIR(found.st_mode)))
        fsync(descriptor)

    monkeypatch.setattr(os, "fsync", counted)
    path = tmp_path / "run.journal"
    start_journal(path, job=None, records=None)
    file, folder = os.stat(path), os.stat(tmp_path)
    the_file = (file.st_dev, file.st_ino, False)
    the_folder = (folder.st_dev, folder.st_ino, True)
    assert sorted(synced) == sorted([the_file, the_folder])
    synced.clear()
    append_entry(path, "r1", PENDING, backup="b")
    append_entry(path, "r1", CONFIRMED)
    assert synced == [the_file, the_file]


def _append_many(path: str, worker: int, count: int) -> None:
    for k in range(count):
        append_entry(path, f"w{worker}-{k}", PENDING, backup="x" * 200)


def test_processes_appending_at_once_lose_and_mix_no_line(tmp_path: Path) -> None:
    path = tmp_path / "run.journal"
    start_journal(path, job=None, records=None)
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_append_many, args=(str(path), w, 100)) for w in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
        assert worker.exitcode == 0
    journal = read_journal(path)
    assert len(journal.pending()) == 400
    assert len(path.read_text().splitlines()) == 401
