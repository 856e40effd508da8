#!/usr/bin/env python3
"""Hosts of mixed latency: does a slot come free when its host ends, or when its batch does?

    python scripts/bench_mixed.py [--hosts 2000] [--in-flight 100] [--slow-every 10]
                                  [--slow 2.0] [--fast 0.3] [--procs 2] [--only asyncio,dask]
                                  [--kill]
    python scripts/bench_mixed.py --killed-worker [--kill-at 2.5] [--repeat 2]
    python scripts/bench_mixed.py --quick [--killed-worker] [--record PATH]

Every ``--slow-every``-th host (dev0, dev10, ...) takes ``--slow`` seconds, the others
``--fast``; ``--in-flight`` hosts run at once in all (a process runner's ``--procs`` workers
share them). The ideal sliding window takes hosts x mean latency / hosts in flight; each
runner's wall is printed beside it, with its ratio. ``--kill`` also runs dask with one of its
two workers killed (SIGKILL) a second into the run. Loopback only: the hosts only sleep.

``--killed-worker``: the same hosts, a task marked ``@read_only()`` (a crashed worker's hosts
run again elsewhere), on clusters of Dask's command-line processes started here (``dask
scheduler`` and ``dask worker --nworkers 1 --nthreads 1`` on 127.0.0.1; the runner by
address, ``--in-flight`` / 2 hosts in flight on each worker): two workers; one worker only (a
cluster of its own); the two workers again, one SIGKILLed ``--kill-at`` seconds into the run
(its Dask worker process; its nanny starts another, which the run does not use; the cluster
ends after this run). Each row: the run's wall (median of ``--repeat``, the rows
interleaved), when its last host came back and how long the run went on after it, how soon
after the kill the run heard that the worker had left, hosts back and failed; the killed run
against one worker's (target <= 1.3). Every process started here is stopped at the end, on an
error and on Ctrl-C.

``--quick``: 200 hosts, 1 in 10 taking 0.5 s and the others 0.1 s, threadpool and asyncio;
with ``--killed-worker``, the kill 0.5 s in, 1 repeat.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil
from nornir.core import Nornir

import harness
from harness.fleets import close, synthetic
from nornir_bench.core.hooks import NoOpProcessor
from nornir_bench.tasks import read_only

RUNNERS = ("threadpool", "asyncio", "processpool", "dask")

PARSER = harness.parser(__doc__)
PARSER.add_argument("--hosts", type=harness.whole())
PARSER.add_argument("--in-flight", type=harness.whole(), default=100)
PARSER.add_argument("--slow-every", type=harness.whole(), default=10)
PARSER.add_argument("--slow", type=harness.number())
PARSER.add_argument("--fast", type=harness.number())
PARSER.add_argument("--procs", type=harness.whole(), default=2)
PARSER.add_argument("--only")
PARSER.add_argument("--kill", action="store_true")
PARSER.add_argument("--killed-worker", action="store_true",
                    help="dask on Dask's command-line processes, a worker SIGKILLed mid-run")
PARSER.add_argument("--kill-at", type=harness.number())
PARSER.add_argument("--repeat", type=harness.whole())


def _seconds(task: Any) -> float:
    every, slow, fast = task.host["slow_every"], task.host["slow"], task.host["fast"]
    return float(slow if int(task.host.name[3:]) % every == 0 else fast)


def naps(task: Any) -> None:
    time.sleep(_seconds(task))


async def anaps(task: Any) -> None:
    await asyncio.sleep(_seconds(task))


def with_latencies(nr: Nornir, args: Any) -> Nornir:
    """Each host told how long it takes (its data: the tasks read it)."""
    for host in nr.inventory.hosts.values():
        host.data.update(slow_every=args.slow_every, slow=args.slow, fast=args.fast)
    return nr


def build(runner: str, args: Any) -> Nornir:
    procs = {"num_procs": args.procs} if runner in ("processpool", "dask") else {}
    per_worker = args.in_flight // args.procs if procs else args.in_flight
    if runner == "dask":
        procs["crash_reruns"] = 1
    return with_latencies(
        synthetic(runner, args.hosts, lean=True, num_workers=per_worker, **procs), args)


def _kill_a_dask_worker_soon(nr: Any) -> threading.Thread:
    def kill() -> None:
        time.sleep(1.0)
        workers = [
            child for child in psutil.Process().children(recursive=True)
            if "spawn_main" in " ".join(child.cmdline())
        ]
        if workers:
            os.kill(workers[0].pid, signal.SIGKILL)

    thread = threading.Thread(target=kill, daemon=True)
    thread.start()
    return thread


def measure(runner: str, args: Any, kill: bool = False) -> tuple[float, int]:
    nr = build(runner, args)
    try:
        task = naps if runner == "threadpool" else anaps
        if runner in ("processpool", "dask"):  # workers started: the run alone is timed
            nr.filter(filter_func=lambda host: host.name == "dev1").run(task=task)
        killer = _kill_a_dask_worker_soon(nr) if kill else None
        start = time.perf_counter()
        result = nr.run(task=task)
        wall = time.perf_counter() - start
        if killer is not None:
            killer.join()
        return wall, len(result.failed_hosts)
    finally:
        close(nr)


# -- a Dask worker killed mid-run, on Dask's command-line processes ---------------------------

START_SECONDS = 60.0


@read_only()
async def reads_and_naps(task: Any) -> None:
    await asyncio.sleep(_seconds(task))


@contextmanager
def dask_processes(workers: int) -> Iterator[tuple[str, list[int]]]:
    """A ``dask scheduler`` and ``workers`` x ``dask worker --nworkers 1 --nthreads 1`` on
    127.0.0.1, importing what this process imports: the scheduler's address and the Dask worker
    processes' pids (under their nannies). All stopped on leaving, however."""
    from distributed import Client

    folder = Path(tempfile.mkdtemp(prefix="nornir-bench-mixed-"))
    scheduler_file = folder / "scheduler.json"
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join(dict.fromkeys(p or os.getcwd() for p in sys.path))}
    processes: list[subprocess.Popen[bytes]] = []

    def spawn(*command: str) -> None:
        processes.append(subprocess.Popen(
            [sys.executable, "-m", *command], env=env, cwd=folder, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True,  # a terminal's Ctrl-C is this script's to handle
        ))

    try:
        spawn("distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
              "--no-dashboard", "--scheduler-file", str(scheduler_file))
        for _ in range(workers):
            spawn("distributed.cli.dask_worker", "--scheduler-file", str(scheduler_file),
                  "--host", "127.0.0.1", "--nworkers", "1", "--nthreads", "1",
                  "--no-dashboard", "--local-directory", str(folder), "--death-timeout", "30")
        ends = time.monotonic() + START_SECONDS
        address = ""
        while not address:
            try:
                address = json.loads(scheduler_file.read_text())["address"]
            except (OSError, ValueError, KeyError):
                if time.monotonic() > ends:
                    raise SystemExit("bench_mixed: the Dask scheduler did not start") from None
                time.sleep(0.05)
        with Client(address, timeout=START_SECONDS, set_as_default=False) as client:
            client.wait_for_workers(workers, timeout=START_SECONDS)
            pids = sorted(client.run(os.getpid).values())
        yield address, pids
    finally:
        for process in reversed(processes):  # the workers first
            if process.poll() is None:
                process.terminate()
        for process in reversed(processes):
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        shutil.rmtree(folder, ignore_errors=True)


class LastBack(NoOpProcessor):
    """When the run's last host came back here (``time.perf_counter``)."""

    def __init__(self) -> None:
        self.last = 0.0

    def task_instance_completed(self, task: Any, host: Any, result: Any) -> None:
        self.last = time.perf_counter()


class HeardLeft(logging.Handler):
    """When the runner said that a worker left the cluster (``time.perf_counter``)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.at: float | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if self.at is None and "left the cluster" in record.getMessage():
            self.at = time.perf_counter()


def killed_worker_run(args: Any, address: str, victim: int | None) -> dict[str, Any]:
    """One run at the scheduler ``address``; the Dask worker process ``victim`` SIGKILLed
    ``--kill-at`` seconds in, if one is given."""
    nr = with_latencies(synthetic("dask", args.hosts, lean=True,
                                  num_workers=args.in_flight // 2, address=address), args)
    heard = HeardLeft()
    runner_log = logging.getLogger("nornir_bench.runners.dask")
    runner_log.addHandler(heard)
    killed: list[float] = []

    def kill() -> None:
        time.sleep(args.kill_at)
        assert victim is not None
        os.kill(victim, signal.SIGKILL)
        killed.append(time.perf_counter())

    try:
        nr.filter(filter_func=lambda host: host.name == "dev1").run(task=reads_and_naps)
        last = LastBack()
        killer = threading.Thread(target=kill, daemon=True) if victim is not None else None
        start = time.perf_counter()
        if killer is not None:
            killer.start()
        result = nr.with_processors([last]).run(task=reads_and_naps)
        wall = time.perf_counter() - start
        if killer is not None:
            killer.join()
    finally:
        runner_log.removeHandler(heard)
        close(nr)
    return {
        "wall": wall, "last": last.last - start, "present": len(result),
        "failed": len(result.failed_hosts),
        "heard": None if heard.at is None or not killed else heard.at - killed[0],
    }


def section_killed_worker(bench: harness.Bench, args: Any) -> None:
    """Each repeat: a cluster of one worker for its row; one of two workers for the two
    others, the kill last."""
    per_worker = args.in_flight // 2
    both, alone, kill = (f"2 workers x {per_worker}", f"1 worker x {per_worker}",
                         f"2 workers x {per_worker}, one SIGKILLed {args.kill_at:g} s in")
    runs: dict[str, list[dict[str, Any]]] = {both: [], alone: [], kill: []}
    for _ in range(args.repeat):
        with dask_processes(2) as (address, pids):
            runs[both].append(killed_worker_run(args, address, None))
            runs[kill].append(killed_worker_run(args, address, pids[0]))
        with dask_processes(1) as (address, _):
            runs[alone].append(killed_worker_run(args, address, None))
    print(f"\n## a Dask worker killed mid-run: {args.hosts:,} hosts of a @read_only() task, "
          f"on Dask's command-line processes (median of {args.repeat}; min-max)\n")
    print("| workers | run | last host back at | the run after it | the worker's death "
          "heard after | hosts back / failed | x one worker |")
    print("|---|---|---|---|---|---|---|")
    one = harness.Spread.of(r["wall"] for r in runs[alone]).median
    for name, samples in runs.items():
        walls = harness.Spread.of(r["wall"] for r in samples)
        heard = [r["heard"] for r in samples if r["heard"] is not None]
        print(f"| {name} | {walls.unit_text('s', 2)} | "
              f"{harness.Spread.of(r['last'] for r in samples).unit_text('s', 2)} | "
              f"{harness.Spread.of(r['wall'] - r['last'] for r in samples).unit_text('s', 2)} | "
              f"{heard_text(heard) if name == kill else '-'} | "
              f"{min(r['present'] for r in samples)} / {max(r['failed'] for r in samples)} | "
              f"{walls.median / one:.2f} |")
        bench.record({"runs": samples}, section="killed-worker", workers=name,
                     hosts=args.hosts, kill_at=args.kill_at)
    killed = harness.Spread.of(r["wall"] for r in runs[kill]).median
    verdict = "met" if killed / one <= 1.3 else "MISSED"
    print(f"\nkilled / one worker: {killed / one:.2f} (target <= 1.3: {verdict})", flush=True)


def heard_text(heard: list[float]) -> str:
    return harness.Spread.of(heard, 1000).unit_text("ms", 2) if heard else "never"


def main(bench: harness.Bench) -> None:
    args, quick = bench.args, bench.quick
    args.hosts = args.hosts or (200 if quick else 2000)
    args.slow = args.slow or (0.5 if quick else 2.0)
    args.fast = args.fast or (0.1 if quick else 0.3)
    args.kill_at = args.kill_at or (0.5 if quick else 2.5)
    args.repeat = args.repeat or (1 if quick else 2)
    only = args.only or ("threadpool,asyncio" if quick else ",".join(RUNNERS))
    slow = len(range(0, args.hosts, args.slow_every))
    mean = (slow * args.slow + (args.hosts - slow) * args.fast) / args.hosts
    ideal = args.hosts * mean / args.in_flight
    print(
        f"{args.hosts} hosts, {args.in_flight} in flight, 1 in {args.slow_every} taking "
        f"{args.slow:g} s, the others {args.fast:g} s: ideal {ideal:.1f} s"
    )
    if args.killed_worker:
        section_killed_worker(bench, args)
        return
    cases = [(runner, False) for runner in only.split(",")]
    if args.kill:
        cases.append(("dask", True))
    for runner, kill in cases:
        wall, failed = measure(runner, args, kill)
        name = f"{runner} (a worker killed)" if kill else runner
        print(f"{name:28} {wall:6.1f} s  {wall / ideal:4.2f} x ideal  failed {failed}")
        bench.record({"wall": wall, "ideal": ideal, "failed": failed}, runner=runner,
                     killed=kill, hosts=args.hosts, in_flight=args.in_flight)


if __name__ == "__main__":
    harness.run_script(main, PARSER)
