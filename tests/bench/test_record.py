"""The record ``script.py --record`` writes: what it holds, and what a reader accepts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nornir_bench.bench.record import BenchmarkRecord, RecordError, read_record, write_record

RECORD = BenchmarkRecord(
    runner="asyncio", workers=None, task="asim_rtt", hosts=10, rtt=0.05, ok=9, failed=1,
    changed=0, run_wall=0.06, interrupted=False, wall=0.4, user=0.3, sys=0.1, cpu_percent=100.0,
    max_rss_mib=50.0,
)


def test_a_record_reads_back_as_written(tmp_path: Path) -> None:
    write_record(tmp_path / "run.json", RECORD)
    assert read_record(tmp_path / "run.json") == RECORD
    assert json.loads((tmp_path / "run.json").read_text())["version"] == 1


def test_keys_a_reader_does_not_know_are_ignored() -> None:
    text = json.dumps({**json.loads(RECORD.to_json()), "p99_ms": 51.2})
    assert BenchmarkRecord.from_json(text) == RECORD


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"workers": 0}, "the record's workers must be a whole number >= 1 or null, got 0"),
        ({"failed": True}, "the record's failed must be a whole number >= 0, got true"),
        ({"interrupted": 0}, "the record's interrupted must be true or false, got 0"),
        ({"runner": None}, "the record's runner must be a string, got null"),
        ({"wall": "x" * 100}, 'the record\'s wall must be a finite number >= 0, got "xxxx'),
    ],
)
def test_a_figure_of_the_wrong_kind_is_named(change: dict[str, object], message: str) -> None:
    text = json.dumps({**json.loads(RECORD.to_json()), **change})
    with pytest.raises(RecordError) as caught:
        BenchmarkRecord.from_json(text)
    assert str(caught.value).startswith(message)
    assert len(str(caught.value)) < 120  # a long value is cut short: one line


def test_non_finite_numbers_are_refused() -> None:
    text = RECORD.to_json().replace('"user": 0.3', '"user": NaN')
    with pytest.raises(RecordError, match="user must be a finite number >= 0, got NaN"):
        BenchmarkRecord.from_json(text)
