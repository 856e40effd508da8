"""JSON Lines records: one per host as it finishes, errors and secrets included."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from nornir.core.task import Result, Task

from nornir_bench.core.secrets import Redactor
from nornir_bench.processors.records import JsonLinesWriter
from nornir_bench.tasks import asim_rtt, sim_rtt
from tests.conftest import make_nornir


def lines(out: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


# One blocking and one async runner; and processpool, whose hosts run elsewhere: their times
# and tracebacks come back with them (runners/_remote/results.py, dask's too).
@pytest.mark.parametrize("runner", ["threadpool", "asyncio", "processpool"])
def test_a_record_per_host_with_its_time_and_failure(runner: str) -> None:
    out = io.StringIO()
    writer = JsonLinesWriter(out)
    options = {"num_procs": 2} if runner == "processpool" else {}
    nr = make_nornir(runner, hosts=20, num_workers=5, **options)
    task = asim_rtt if getattr(nr.runner, "prefers_async_tasks", False) else sim_rtt
    result = nr.with_processors([writer]).run(task=task, rtt=0.01, fail_rate=0.4, seed=1)
    getattr(nr.runner, "close", lambda: None)()
    records = {r["host"]: r for r in lines(out)}
    assert set(records) == set(result) and writer.written == 20
    for name, multi in result.items():
        record = records[name]
        assert record["failed"] == multi.failed
        assert record["elapsed"] >= 0.009  # event loops may wake a timer a clock tick early
        if multi.failed:
            assert record["exception"] == "SimulatedFailure" and record["result"] is None
            assert "Traceback (most recent call last)" in record["traceback"]
        else:
            assert record["result"] == multi[0].result and record["traceback"] is None


async def crashes_every_20th(task: Task) -> str:
    import asyncio
    import os

    if int(task.host.name[3:]) % 20 == 7:
        os._exit(1)  # its worker process dies, with the hosts in flight beside it
    await asyncio.sleep(0.01)
    return task.host.name


def test_a_host_run_again_after_a_worker_crash_says_so_in_its_record() -> None:
    out = io.StringIO()
    nr = make_nornir("processpool", hosts=40, num_workers=20, num_procs=2)
    nr.with_processors([JsonLinesWriter(out)]).run(task=crashes_every_20th)
    records = {r["host"]: r for r in lines(out)}
    assert len(records) == 40
    assert records["dev7"]["exception"] == "WorkerCrashed"
    assert (records["dev7"]["attempts"], records["dev7"]["failed_attempts"]) == (1, [])
    again = [r for r in records.values() if r["attempts"] == 2]
    assert again and all(not r["failed"] for r in again)
    (earlier,) = again[0]["failed_attempts"]
    assert earlier["exception"] == "WorkerCrashed"
    assert "while running host 'dev" in earlier["message"]


def returns_odd_things(task: Task) -> Result:
    return Result(host=task.host, result={"when": object(), "pw": "hunter2-secret"}, failed=True)


def test_values_json_cannot_hold_are_written_as_repr_and_secrets_masked() -> None:
    out = io.StringIO()
    writer = JsonLinesWriter(out, redact=Redactor(["hunter2-secret"]))
    make_nornir("threadpool", hosts=1).with_processors([writer]).run(task=returns_odd_things)
    (record,) = lines(out)
    assert record["failed"] is True and record["exception"] is None  # failed without raising
    assert record["result"]["when"].startswith("<object object")
    assert record["result"]["pw"] == "********"
    assert "hunter2" not in out.getvalue()
