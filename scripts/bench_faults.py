#!/usr/bin/env python3
"""The faults of the runner core (issue 37): runs that hang, deadlines a hung device outlives,
Ctrl-C.

    python scripts/bench_faults.py [--dask-connections] [--hung-change] [--ctrl-c] [--quick]
        [--runs 200] [--busy 2] [--timeout 120]
        [--routers 6] [--lines 150] [--task-timeout 5]
        [--hosts 10000] [--workers 100] [--rtt 0.5] [--at 2] [--runners NAME ...]

Without a part flag, every part runs. Each run is a process (and session) of its own, bounded
in time, killed with what it started (its Dask cluster too) when it ends, hangs, or this script
is stopped (Ctrl-C, SIGTERM): nothing is left, labs and busy processes included. Everything
listens on 127.0.0.1. The code measured is the nornir_bench this interpreter imports (run from
another checkout with ``PYTHONPATH=<checkout>``: the runs import it too).

**--dask-connections**: ``--runs`` times (default 200), a fresh process, killed at
``--timeout`` seconds (a *hang*), while ``--busy`` processes spin on the cores: 40 synthetic
hosts on the ``dask`` runner (``num_workers: 10``, its embedded cluster), a connection plugin
registered at run time (``counting``: its ``open()`` appends a line to a file), an async task
opening it, three ``nr.run`` in a row, then ``nr.close_connections()`` and
``nr.runner.close()``. Runs, hangs, failures (another non-zero exit; a failed host exits 1),
logins per run (40 when connections are kept across runs), each process's wall.

**--hung-change** (root: a router lab of ``--routers`` FRR routers, see
:mod:`bench_faults_change`): a change of ``--lines`` static routes on h1 (3 on the others),
``task_timeout: --task-timeout``, each exchange's own timeout 60 s, through ``nornir-bench
run`` on six runner and task pairs; r1's vtysh stopped (SIGSTOP) once it holds 10 of the lines.

**--ctrl-c**: per runner, ``nornir-bench run`` of ``--hosts`` synthetic hosts, ``--workers``
in flight (shared out over a process per CPU on processpool and dask), ``sim_rtt`` (threadpool)
or ``asim_rtt`` of ``--rtt`` s; one SIGINT to its process group (a terminal's Ctrl-C) ``--at``
seconds after its first host started (the first record's ``run_start`` + ``start``); records
by outcome and the exit status (130 expected; every host in flight finishes).

**--quick**: everything small, for tests/test_scripts.py (2 runs of 1 busy process, 2 routers
on threadpool and asyncio, 500 hosts on threadpool and asyncio).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import signal
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn

from faults_processes import Busy, Child, measured_commit, median_max

from nornir_bench.core.library_warnings import quiet_library_deprecations

PARTS = ("dask-connections", "hung-change", "ctrl-c")
RUNNERS = ("threadpool", "asyncio", "processpool", "dask")
HOSTS, LOGINS_FILE = 40, "FAULTS_LOGINS_FILE"
FIRST_RECORD_SECONDS = 120.0  # for a run's first record (dask: its cluster starts first)
STOP_SECONDS = 120.0  # for a run to end after its SIGINT


class Parser(argparse.ArgumentParser):
    """Errors in one line: what was wrong and what is allowed."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def whole(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text!r}")
    return int(text)


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value < 3600:
        raise argparse.ArgumentTypeError(f"must be seconds, more than 0 and under 3600, got "
                                         f"{text!r}")
    return value


def parse_arguments() -> argparse.Namespace:
    parser = Parser(prog="bench_faults.py", description=__doc__.split("\n\n")[0])
    for part in PARTS:
        parser.add_argument(f"--{part}", action="store_true", help=f"run the {part} part")
    parser.add_argument("--quick", action="store_true", help="everything small, for a test")
    add = parser.add_argument
    add("--runs", type=whole, help="dask-connections: runs (default 200; quick 2)")
    add("--busy", type=int, choices=range(9), metavar="0-8",
        help="dask-connections: busy processes (default 2; quick 1)")
    add("--timeout", type=seconds, default=120.0, help="dask-connections: a run's hard timeout")
    add("--routers", type=whole, help="hung-change: routers (default 6; quick 2)")
    add("--lines", type=int, choices=range(20, 251), default=150, metavar="20-250",
        help="hung-change: h1's static routes (default 150)")
    add("--task-timeout", type=seconds, default=5.0, help="hung-change: task_timeout (s)")
    add("--hosts", type=whole, help="ctrl-c: synthetic hosts (default 10000; quick 500)")
    add("--workers", type=whole, default=100, help="ctrl-c: hosts in flight (default 100)")
    add("--rtt", type=seconds, default=0.5, help="ctrl-c: each host's round trip (s)")
    add("--at", type=seconds, default=2.0, help="ctrl-c: SIGINT after the first host's start")
    add("--runners", nargs="+", choices=RUNNERS, help="hung-change and ctrl-c: the runners")
    add("--dask-child", action="store_true", help=argparse.SUPPRESS)  # one run, in its process
    return parser.parse_args()


def main() -> int:
    args = parse_arguments()
    if args.dask_child:
        return dask_child()
    quick = args.quick
    chosen = [p for p in PARTS if getattr(args, p.replace("-", "_"))] or list(PARTS)
    if "hung-change" in chosen and os.geteuid() != 0:
        print("bench_faults.py: error: --hung-change needs root (the router lab)",
              file=sys.stderr)
        return 2
    signal.signal(signal.SIGINT, signal.default_int_handler)  # also when started in background
    signal.signal(signal.SIGTERM, _interrupt)
    print(f"bench_faults: parts {', '.join(chosen)}; nornir_bench of commit {measured_commit()};"
          f" {os.cpu_count()} CPUs; load {_load()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-faults-") as work:
        if "dask-connections" in chosen:
            busy = args.busy if args.busy is not None else (1 if quick else 2)
            dask_connections(Path(work), args.runs or (2 if quick else 200), busy, args.timeout)
        if "hung-change" in chosen:
            from bench_faults_change import hung_change

            runners = args.runners or (["threadpool", "asyncio"] if quick else list(RUNNERS))
            hung_change(Path(work), args.routers or (2 if quick else 6), args.lines,
                        args.task_timeout, runners)
        if "ctrl-c" in chosen:
            runners = args.runners or (["threadpool", "asyncio"] if quick else list(RUNNERS))
            ctrl_c(Path(work), args.hosts or (500 if quick else 10_000), args.workers, args.rtt,
                   args.at, runners)
    print(f"load at the end {_load()}")
    return 0


def _interrupt(signum: int, frame: FrameType | None) -> NoReturn:
    raise KeyboardInterrupt  # SIGTERM: stop as Ctrl-C does, every block ending what it started


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


# -- dask-connections ---------------------------------------------------------------------------


class Counting:
    """A connection plugin registered at run time: each open() is a login, a line in a file."""

    connection: bool | None = None

    def open(self, hostname: str | None, username: str | None, password: str | None,
             port: int | None, platform: str | None, extras: dict[str, Any] | None = None,
             configuration: Any = None) -> None:
        with open(os.environ[LOGINS_FILE], "a") as logins:
            logins.write(f"{hostname}\n")
        self.connection = True

    def close(self) -> None:
        self.connection = None


async def opens_counting(task: Any) -> str:
    task.host.get_connection("counting", task.nornir.config)
    await asyncio.sleep(0)
    return str(task.host.name)


def dask_child() -> int:
    """One run of the dask-connections part, in this fresh process: a JSON line."""
    from nornir import InitNornir
    from nornir.core.plugins.connections import ConnectionPluginRegister

    ConnectionPluginRegister.register("counting", Counting)
    nr = InitNornir(inventory={"plugin": "synthetic", "options": {"hosts": HOSTS}},
                    runner={"plugin": "dask", "options": {"num_workers": 10}},
                    logging={"enabled": False})
    walls, failed = [], Counter[str]()
    try:
        for _ in range(3):
            began = time.perf_counter()
            result = nr.run(task=opens_counting)
            walls.append(round(time.perf_counter() - began, 3))
            failed.update(type(m.exception).__name__ for m in result.values() if m.failed)
        nr.close_connections()
    finally:
        runner: Any = nr.runner
        runner.close()
    print(json.dumps({"walls": walls, "failed": failed}), flush=True)
    return 1 if failed else 0


def dask_connections(work: Path, runs: int, busy: int, timeout: float) -> None:
    print(f"\n## dask-connections: {runs} runs, {HOSTS} hosts, dask num_workers 10 (embedded "
          f"cluster), 3 nr.run each; {busy} busy processes; a run killed at {timeout:g} s",
          flush=True)
    hangs, failures, walls, left = 0, Counter[str](), [], 0
    logins = Counter[int]()
    with Busy(busy):
        for number in range(1, runs + 1):
            count = work / f"logins-{number}"
            count.touch()
            env = {**os.environ, LOGINS_FILE: str(count)}
            with Child([sys.executable, __file__, "--dask-child"], work, f"dask-{number}",
                       env) as child:
                status = child.wait(timeout)
                wall = time.perf_counter() - child.began
            left += child.left
            said = (child.output().strip().splitlines() or [""])[-1][:200]
            done = len(count.read_text().splitlines())
            if status is None:
                hangs += 1
                print(f"run {number}: HANG, killed at {timeout:g} s ({done} logins)", flush=True)
                continue
            walls.append(wall)
            logins[done] += 1
            if status != 0:
                out = child.output("out").strip().splitlines()
                failures[f"exit {status}: {said or (out or [''])[-1][:200]}"] += 1
                print(f"run {number}: FAILED, exit {status}: {said}", flush=True)
            elif done != HOSTS:
                print(f"run {number}: {done} logins, not {HOSTS}", flush=True)
    per_run = ", ".join(f"{n} ({c} runs)" for n, c in sorted(logins.items())) or "n/a"
    print(f"dask-connections: runs {runs}, hangs {hangs}, failures {sum(failures.values())}, "
          f"logins per run {per_run}, wall {median_max(walls)}, processes left {left}")
    for why, times in failures.most_common():
        print(f"  {times}x {why}")


# -- ctrl-c -------------------------------------------------------------------------------------


def ctrl_c(work: Path, hosts: int, workers: int, rtt: float, at: float,
           runners: list[str]) -> None:
    print(f"\n## ctrl-c: {hosts} synthetic hosts, {workers} in flight, rtt {rtt:g} s; one SIGINT "
          f"{at:g} s after the first host started\n")
    print("| runner | exit | SIGINT at s | ended s after | records | ok | failed | started "
          "after SIGINT | not in records |")
    print("|---|---:|---:|---:|---:|---:|---|---:|---:|")
    for runner in runners:
        row = _interrupted_run(work, runner, hosts, workers, rtt, at)
        print(f"| {runner} | {' | '.join(row)} |", flush=True)


def _interrupted_run(work: Path, runner: str, hosts: int, workers: int, rtt: float,
                     at: float) -> list[str]:
    folder = work / f"ctrl-c-{runner}"
    folder.mkdir()
    options: dict[str, Any] = {"num_workers": workers}
    if runner in ("processpool", "dask"):  # num_workers is per process there
        procs = min(os.cpu_count() or 1, workers)
        options = {"num_workers": math.ceil(workers / procs), "num_procs": procs}
    (folder / "job.yaml").write_text(json.dumps({
        "inventory": {"plugin": "synthetic", "options": {"hosts": hosts}},
        "runner": {"plugin": runner, "options": options},
        "task": {"name": "sim_rtt" if runner == "threadpool" else "asim_rtt",
                 "params": {"rtt": rtt}},
    }))
    records = folder / "records.jsonl"
    command = [sys.executable, "-m", "nornir_bench", "run", "job.yaml", "-q", "-o", str(records)]
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
    rows = [json.loads(line) for line in records.read_text().splitlines() if line.strip()]
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


if __name__ == "__main__":
    quiet_library_deprecations()
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("interrupted: every run, lab and busy process this script started is stopped",
              file=sys.stderr)
        sys.exit(130)
