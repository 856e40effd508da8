"""A run's records file: never one another run is writing."""

from __future__ import annotations

from pathlib import Path

import pytest

from nornir_bench.jobs.load import load_job
from nornir_bench.jobs.output import open_records


def a_job(tmp_path: Path) -> Path:
    path = tmp_path / "job.yaml"
    path.write_text(
        "inventory: {plugin: synthetic, options: {hosts: 2}}\n"
        "task: {name: sim_rtt, params: {rtt: 0}}\n"
        "logging: {enabled: false}\n"
    )
    return path


def test_runs_started_in_the_same_second_never_share_a_records_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once, two runs of one job in the same second wrote into one file: corrupt lines."""
    monkeypatch.chdir(tmp_path)
    job = load_job(a_job(tmp_path))
    first_path, first = open_records(None, job)
    second_path, second = open_records(None, job)
    with first, second:
        assert first_path != second_path
        assert second_path.name == first_path.name.replace(".jsonl", "-2.jsonl")


def test_a_records_file_another_run_is_writing_is_refused(tmp_path: Path) -> None:
    job = load_job(a_job(tmp_path))
    path = tmp_path / "shared.jsonl"
    _, writing = open_records(path, job)
    with writing:
        writing.write("a line of the first run\n")
        writing.flush()
        with pytest.raises(OSError, match="another run is writing it"):
            open_records(path, job)
        assert path.read_text() == "a line of the first run\n"  # not truncated
    _, again = open_records(path, job)  # the first run is over: the file is free again
    again.close()
    assert path.read_text() == ""
