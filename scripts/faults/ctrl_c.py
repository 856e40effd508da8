"""--ctrl-c: per runner, ``nornir-bench run`` of synthetic hosts, one SIGINT to its process
group (a terminal's Ctrl-C) some seconds after its first host started; records by outcome and
the exit status."""

from __future__ import annotations

import json
import os
import signal
import time
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import harness
from harness.fleets import shared_out
from harness.jobs import nornir_bench, read_records, write_job
from harness.owned import Child

__all__ = ["ctrl_c"]

FIRST_RECORD_SECONDS = 120.0  # for a run's first record (dask: its cluster starts first)
STOP_SECONDS = 120.0  # for a run to end after its SIGINT


def ctrl_c(bench: harness.Bench, work: Path, hosts: int, workers: int, rtt: float, at: float,
           runners: list[str]) -> None:
    print(f"\n## ctrl-c: {hosts} synthetic hosts, {workers} in flight, rtt {rtt:g} s; one SIGINT "
          f"{at:g} s after the first host started\n")
    print("| runner | exit | SIGINT at s | ended s after | records | ok | failed | started "
          "after SIGINT | not in records |")
    print("|---|---:|---:|---:|---:|---:|---|---:|---:|")
    for runner in runners:
        row = _interrupted_run(work, runner, hosts, workers, rtt, at)
        print(f"| {runner} | {' | '.join(row)} |", flush=True)
        bench.record({"row": row}, part="ctrl-c", runner=runner, hosts=hosts, workers=workers,
                     rtt=rtt, at=at)


def _interrupted_run(work: Path, runner: str, hosts: int, workers: int, rtt: float,
                     at: float) -> list[str]:
    folder = work / f"ctrl-c-{runner}"
    folder.mkdir()
    write_job(folder / "job.yaml", synthetic={"hosts": hosts}, runner=runner,
              options=shared_out(runner, workers),
              task="sim_rtt" if runner == "threadpool" else "asim_rtt", params={"rtt": rtt},
              logging=True)
    records = folder / "records.jsonl"
    command = nornir_bench("run", "job.yaml", "-q", "-o", str(records))
    with Child(command, folder, "run") as child:
        first = _first_record(records, child)
        if first is None:
            return [f"no record within {FIRST_RECORD_SECONDS:g} s: {child.process.poll()}",
                    *[""] * 7]
        origin = datetime.fromisoformat(first["run_start"]).timestamp()
        began = origin + first["start"]
        time.sleep(max(0.0, began + at - time.time()))
        sent = time.time()
        os.killpg(child.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the foreground group
        status = child.wait(STOP_SECONDS)
        ended = time.time() - sent
    rows = read_records(records)
    failed = Counter(r["exception"] for r in rows if r["failed"])
    return [
        "HANG (killed)" if status is None else str(status), f"{sent - began:.2f}",
        f"{ended:.2f}", str(len(rows)), str(sum(not r["failed"] for r in rows)),
        ", ".join(f"{k} {n}" for k, n in failed.most_common()) or "0",
        _after(rows, sent - origin),
        str(hosts - len({r["host"] for r in rows})),
    ]


def _after(rows: list[dict[str, Any]], signalled: float) -> str:
    """The records of hosts that started after the SIGINT was sent, and how long after."""
    late = [r["start"] - signalled for r in rows if r["start"] > signalled]
    return f"{len(late)} (by {max(late):.3f} s at most)" if late else "0"


def _first_record(records: Path, child: Child) -> dict[str, Any] | None:
    ends = time.monotonic() + FIRST_RECORD_SECONDS
    while time.monotonic() < ends and child.process.poll() is None:
        if records.exists():
            line = records.read_text().partition("\n")
            if line[1]:
                first: dict[str, Any] = json.loads(line[0])
                return first
        time.sleep(0.02)
    return None
