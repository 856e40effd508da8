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


def a_refused_job(tmp_path: Path) -> Path:
    """A job refused once its run began, before any host runs: a replace on a platform with
    no configuration driver."""
    (tmp_path / "hosts.yaml").write_text("r1: {hostname: 127.0.0.1, port: 9, platform: fakeos}\n")
    path = tmp_path / "job.yaml"
    path.write_text(
        "inventory: {plugin: SimpleInventory, options: {host_file: hosts.yaml}}\n"
        "task: {name: send_config, params: {lines: [ip route 192.0.2.0/24 Null0], "
        "mode: replace}}\n"
        "logging: {enabled: false}\n"
    )
    return path


@pytest.mark.parametrize("earlier", [None, '{"host": "r1", "from": "an earlier run"}\n'])
def test_a_run_refused_before_its_first_record_leaves_the_records_path_as_it_was(
    tmp_path: Path, earlier: str | None, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from nornir_bench.jobs.run import run_job
    from nornir_bench.tasks.changes._change import ConfigInputError

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    out = tmp_path / "out.jsonl"
    if earlier is not None:
        out.write_text(earlier)
    job = load_job(a_refused_job(tmp_path))
    for output in (out, None):  # -o, and the default file in the state folder
        with pytest.raises(ConfigInputError, match="mode: replace has no configuration driver"):
            run_job(job, output=output, progress=False)
    assert (out.read_text() if out.exists() else None) == earlier
    assert list((tmp_path / "state").rglob("*.jsonl")) == []


def test_a_run_ending_with_no_record_still_replaces_an_earlier_runs(tmp_path: Path) -> None:
    """Emptied when the run ends, whatever it wrote: never an earlier run's records read as
    this one's."""
    job = load_job(a_job(tmp_path))
    path = tmp_path / "out.jsonl"
    path.write_text("an earlier run's line\n")
    _, records = open_records(path, job)
    assert path.read_text() == "an earlier run's line\n"  # held, not emptied yet
    records.close()
    assert path.read_text() == ""
