"""A records file's line as one type (:class:`HostRecord`): records of every earlier shape still
load, records written now carry their version and read back whole, and a line of a newer
version or with a value of the wrong type is refused in one line saying what is allowed."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nornir_bench.core.attempts import FailedAttempt
from nornir_bench.core.secrets import Redactor
from nornir_bench.processors.host_record import RECORD_VERSION, HostRecord
from nornir_bench.processors.records import JsonLinesWriter, encoded
from nornir_bench.processors.records_file import (
    RecordsFileError,
    RecordsRead,
    each_record,
    each_record_at,
    record_at,
)
from nornir_bench.tasks import sim_rtt
from tests.conftest import make_nornir

EARLIER = Path(__file__).parent / "earlier_records"

# Each shape a record line had before versions, oldest first: a file of each (an ok host r1, a
# failed host r2) is in earlier_records/, as the writer of that release wrote them.
SHAPES = [
    "a-first",  # host, failed, elapsed, result, exception, message, traceback
    "b-attempts",  # attempts, failed_attempts (exception, message)
    "c-abandoned",  # abandoned; and each failed attempt's
    "d-steps",  # step, task
    "e-changes",  # job; changed, change, diff
    "f-times",  # start, end, run_start, batch, worker; an attempt's seconds and wait
    "g-session-logs",  # session_log
    "h-platform-groups",  # platform, groups
    "i-overrides",  # overrides
    "j-checks",  # checks
]

TRACEBACK = ("Traceback (most recent call last):\n  ...\nnornir_bench.core.exceptions."
             "SimulatedFailure: simulated failure on r2 after 50.0 ms\n")
CHECK = {"name": "peers", "host": "r1", "command": "show bgp summary", "path": "peers",
         "expect": "no_fewer", "before": 2, "after": 2, "held": True, "failure": None}


def expected(shape: str) -> tuple[HostRecord, HostRecord]:
    """The records of ``shape``'s file: what its lines hold, every key it lacks at its
    default."""
    def since(first: str) -> bool:
        return SHAPES.index(shape) >= SHAPES.index(first)

    crash = FailedAttempt(
        "WorkerCrashed", "worker process 4242 died while running host 'r2'",
        seconds=0.2 if since("f-times") else None, wait=0.5 if since("f-times") else None,
    )
    common: dict[str, Any] = {
        "version": 0,
        "job": "/jobs/change.yaml" if since("e-changes") else None,
        "overrides": {"limit": "r*", "workers": 5} if since("i-overrides") else {},
        "step": 1 if since("d-steps") else None,
        "task": "sim_rtt" if since("d-steps") else None,
        "run_start": "2026-11-26T19:16:08.123456+00:00" if since("f-times") else None,
    }
    ok = HostRecord(
        "r1", False, elapsed=0.412, result="hostname r1",
        start=0.013 if since("f-times") else None, end=0.425 if since("f-times") else None,
        batch=1 if since("f-times") else None,
        changed=since("e-changes"),
        change={"state": "changed", "backup": "/state/backups/r1.cfg"}
        if since("e-changes") else None,
        diff="+ip route 10.0.0.0/8 Null0" if since("e-changes") else None,
        session_log="/state/records/run.sessions/r1.log" if shape == "g-session-logs" else None,
        platform="ios" if since("h-platform-groups") else None,
        groups=("core", "edge") if since("h-platform-groups") else (),
        checks=(CHECK,) if since("j-checks") else None,
        **common,
    )
    failed = HostRecord(
        "r2", True, elapsed=0.05, exception="SimulatedFailure",
        message="simulated failure on r2 after 50.0 ms", traceback=TRACEBACK,
        attempts=2 if since("b-attempts") else 1,
        failed_attempts=(crash,) if since("b-attempts") else (),
        start=0.02 if since("f-times") else None, end=0.07 if since("f-times") else None,
        batch=2 if since("f-times") else None,
        worker="node1:4242" if since("f-times") else None,
        **common,
    )
    return ok, failed


@pytest.mark.parametrize("shape", SHAPES)
def test_a_records_file_of_each_earlier_shape_still_loads(shape: str) -> None:
    path = EARLIER / f"{shape}.jsonl"
    read = RecordsRead(path)
    assert tuple(each_record(path, strict=True, read=read)) == expected(shape)
    assert (read.lines, read.skipped) == (2, 0)


def test_the_earlier_shapes_are_each_tested() -> None:
    assert sorted(p.stem for p in EARLIER.glob("*.jsonl")) == SHAPES


def every_field() -> HostRecord:
    return HostRecord(
        "r9", True, job="/jobs/j.yaml", overrides={"limit": "r9"}, step=2, task="send_config",
        elapsed=1.5, start=0.25, end=1.75, run_start="2026-11-29T00:00:00.000000+00:00",
        batch=3, worker="w1:77", result={"lines": ["a", "b"]}, exception="ConfigChangeFailed",
        message="refused", traceback="Traceback ...", abandoned=True, attempts=3,
        failed_attempts=(FailedAttempt("TaskTimeout", "late", True, 1.0, 0.5),
                         FailedAttempt("TaskTimeout", "late again")),
        changed=True, change={"state": "rolled back", "backup": "/b/r9.cfg"}, diff="-x\n+y",
        checks=(CHECK,), session_log="/s/r9.log", platform="eos", groups=("edge",),
    )


def test_a_record_written_now_carries_its_version_and_reads_back_whole(tmp_path: Path) -> None:
    record = every_field()
    path = tmp_path / "r.jsonl"
    path.write_text(encoded(record, Redactor()) + "\n")
    assert json.loads(path.read_text())["version"] == RECORD_VERSION == record.version
    assert list(each_record(path, strict=True)) == [record]
    ((offset, again),) = each_record_at(path)
    assert record_at(path, offset) == again == record


def test_the_writer_writes_each_line_of_this_version(tmp_path: Path) -> None:
    out = io.StringIO()
    fields = {"job": "/jobs/j.yaml", "overrides": {}, "step": 1, "task": "sim_rtt"}
    writer = JsonLinesWriter(out, fields=fields)
    make_nornir("threadpool", hosts=3).with_processors([writer]).run(task=sim_rtt, rtt=0)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [line["version"] for line in lines] == [RECORD_VERSION] * 3
    path = tmp_path / "r.jsonl"
    path.write_text(out.getvalue())
    assert {(r.host, r.job, r.step, r.task, r.failed) for r in each_record(path)} == {
        (f"dev{i}", "/jobs/j.yaml", 1, "sim_rtt", False) for i in range(3)}


def test_the_writer_refuses_a_field_that_is_not_a_records() -> None:
    with pytest.raises(ValueError, match="fields stage are not a record's: give any of job, "
                                         "overrides, step, task"):
        JsonLinesWriter(io.StringIO(), fields={"stage": 1})


def line(**changed: object) -> str:
    return json.dumps({**every_field().as_json(), **changed}) + "\n"


@pytest.mark.parametrize(
    ("changed", "says"),
    [
        ({"version": 2}, "line 1 is a record of version 2, newer than this nornir-bench reads "
                         "(up to 1): read it with the nornir-bench that wrote it, or a newer one"),
        ({"version": "1"}, "line 1 is not a host's record: 'version' is '1', allowed: a whole "
                           "number from 1 to 1"),
        ({"failed": "yes"}, "line 1 is not a host's record: 'failed' is 'yes', allowed: true "
                            "or false"),
        ({"elapsed": "slow"}, "line 1 is not a host's record: 'elapsed' is 'slow', allowed: a "
                              "number or null"),
        ({"groups": [1]}, "line 1 is not a host's record: 'groups' is [1], allowed: a list of "
                          "strings"),
        ({"change": {"backup": "/b"}}, "line 1 is not a host's record: 'change' is {'backup': "
                                       "'/b'}, allowed: null or an object with a string 'state'"),
    ],
    ids=["newer", "version-text", "failed", "elapsed", "groups", "change"],
)
def test_a_line_of_a_newer_version_or_a_wrong_type_is_refused_in_one_line(
    tmp_path: Path, changed: dict[str, object], says: str
) -> None:
    (tmp_path / "r.jsonl").write_text(line(**changed))
    with pytest.raises(RecordsFileError) as raised:
        list(each_record(tmp_path / "r.jsonl"))
    assert str(raised.value) == f"{tmp_path / 'r.jsonl'}: {says}"
    done = subprocess.run([sys.executable, "-m", "nornir_bench", "report", "r.jsonl"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2
    assert done.stderr == f"nornir-bench: error: r.jsonl: {says}\n"


def test_a_wrong_type_past_the_first_line_is_skipped_and_said_or_with_strict_refused(
    tmp_path: Path,
) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(line() + line(host="r10", attempts=0) + line(host="r11"))
    read = RecordsRead(path)
    assert [r.host for r in each_record(path, read=read)] == ["r9", "r11"]
    assert read.note() == (f"{path}: skipped 1 of 3 lines that are not a host's record (corrupt "
                           "or cut short: line 2); line 2: 'attempts' is 0, allowed: a whole "
                           "number from 1")
    with pytest.raises(RecordsFileError, match="line 2 is not a host's record: 'attempts' is 0"):
        list(each_record(path, strict=True))
    newer = tmp_path / "newer.jsonl"
    newer.write_text(line() + line(host="r10", version=RECORD_VERSION + 1))
    with pytest.raises(RecordsFileError, match="line 2 is a record of version 2, newer"):
        list(each_record(newer))  # not skipped: the file is a newer nornir-bench's
