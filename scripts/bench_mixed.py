#!/usr/bin/env python3
"""Hosts of mixed latency: does a slot come free when its host ends, or when its batch does?

    python scripts/bench_mixed.py [--hosts 2000] [--in-flight 100] [--slow-every 10]
                                  [--slow 2.0] [--fast 0.3] [--procs 2] [--only asyncio,dask]
                                  [--kill]

Every ``--slow-every``-th host (dev0, dev10, ...) takes ``--slow`` seconds, the others
``--fast``; ``--in-flight`` hosts run at once in all (a process runner's ``--procs`` workers
share them). The ideal sliding window takes hosts x mean latency / hosts in flight; each
runner's wall is printed beside it, with its ratio. ``--kill`` also runs dask with one of its
two workers killed (SIGKILL) a second into the run. Loopback only: the hosts only sleep.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import threading
import time
from typing import Any

import psutil

from nornir_bench.core.plugins import init_nornir

RUNNERS = ("threadpool", "asyncio", "processpool", "dask")


def _seconds(task: Any) -> float:
    every, slow, fast = task.host["slow_every"], task.host["slow"], task.host["fast"]
    return slow if int(task.host.name[3:]) % every == 0 else fast


def naps(task: Any) -> None:
    time.sleep(_seconds(task))


async def anaps(task: Any) -> None:
    await asyncio.sleep(_seconds(task))


def build(runner: str, args: argparse.Namespace) -> Any:
    procs = {"num_procs": args.procs} if runner in ("processpool", "dask") else {}
    per_worker = args.in_flight // args.procs if procs else args.in_flight
    if runner == "dask":
        procs["crash_reruns"] = 1
    nr = init_nornir(
        inventory={"plugin": "synthetic", "options": {"hosts": args.hosts}},
        runner={"plugin": runner, "options": {"num_workers": per_worker, **procs}},
        logging={"enabled": False},
        connections=(),
    )
    for host in nr.inventory.hosts.values():
        host.data.update(slow_every=args.slow_every, slow=args.slow, fast=args.fast)
    return nr


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


def measure(runner: str, args: argparse.Namespace, kill: bool = False) -> tuple[float, int]:
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
        close = getattr(nr.runner, "close", None)
        if close is not None:
            close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=2000)
    parser.add_argument("--in-flight", type=int, default=100)
    parser.add_argument("--slow-every", type=int, default=10)
    parser.add_argument("--slow", type=float, default=2.0)
    parser.add_argument("--fast", type=float, default=0.3)
    parser.add_argument("--procs", type=int, default=2)
    parser.add_argument("--only", default=",".join(RUNNERS))
    parser.add_argument("--kill", action="store_true")
    args = parser.parse_args()
    slow = len(range(0, args.hosts, args.slow_every))
    mean = (slow * args.slow + (args.hosts - slow) * args.fast) / args.hosts
    ideal = args.hosts * mean / args.in_flight
    print(
        f"{args.hosts} hosts, {args.in_flight} in flight, 1 in {args.slow_every} taking "
        f"{args.slow:g} s, the others {args.fast:g} s: ideal {ideal:.1f} s"
    )
    cases = [(runner, False) for runner in args.only.split(",")]
    if args.kill:
        cases.append(("dask", True))
    for runner, kill in cases:
        wall, failed = measure(runner, args, kill)
        name = f"{runner} (a worker killed)" if kill else runner
        print(f"{name:28} {wall:6.1f} s  {wall / ideal:4.2f} x ideal  failed {failed}")


if __name__ == "__main__":
    main()
