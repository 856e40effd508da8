#!/usr/bin/env python3
"""Does a long-lived process stay flat? Many runs in a row, one process per runner.

    python scripts/bench_memory.py [--runs 50] [--hosts 10000] [--fail-rate 0.1]
                                   [--runners threaded,threadpool,asyncio,processpool]

Each runner gets a fresh process that builds one Nornir (``--hosts`` synthetic hosts) and runs
``sim_rtt``/``asim_rtt`` with RTT 0 and ``--fail-rate`` failing hosts ``--runs`` times, keeping
each run's result until the next one replaces it, as a script or a scheduler would. After
every run it reads its resident memory (VmRSS), threads, open file descriptors and the
objects the garbage collector tracks. Reported per runner: those after the first run and
after the last, the growth per run and the range of RSS over the second half of the runs (the
first runs warm caches and allocator arenas, and let garbage reach the level at which a full
collection starts), and the median run time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from typing import Any

CHILD = r"""
import gc, json, logging, os, sys, threading, time
from nornir import InitNornir
from nornir_bench.tasks import asim_rtt, sim_rtt

runner, hosts, runs, fail_rate = json.loads(sys.argv[1])
logging.getLogger().addHandler(logging.NullHandler())  # no failure tracebacks on the terminal
options = {"num_workers": 100} if runner != "serial" else {}
nr = InitNornir(inventory={"plugin": "synthetic", "options": {"hosts": hosts}},
                runner={"plugin": runner, "options": options}, logging={"enabled": False})
task = asim_rtt if getattr(nr.runner, "prefers_async_tasks", False) else sim_rtt

def rss_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024

result = None
for i in range(runs):
    start = time.perf_counter()
    result = nr.run(task=task, rtt=0, fail_rate=fail_rate, seed=i, on_failed=True)
    elapsed = time.perf_counter() - start
    print(json.dumps({
        "run": i + 1, "seconds": elapsed, "failed": len(result.failed_hosts),
        "rss_mib": rss_mib(), "threads": threading.active_count(),
        "fds": len(os.listdir("/proc/self/fd")), "objects": len(gc.get_objects()),
    }), flush=True)
"""


def slope(ys: list[float]) -> float:
    """Least-squares growth per run."""
    xs = list(range(len(ys)))
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den if den else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--fail-rate", type=float, default=0.1)
    parser.add_argument("--runners", default="threaded,threadpool,asyncio,processpool")
    args = parser.parse_args()
    print(
        f"{args.runs} runs in one process, {args.hosts} hosts, {args.fail_rate:.0%} failing, "
        "RTT 0; after the first run -> after the last; growth per run over the second half"
    )
    for runner in args.runners.split(","):
        spec = json.dumps([runner, args.hosts, args.runs, args.fail_rate])
        done = subprocess.run(
            [sys.executable, "-c", CHILD, spec], capture_output=True, text=True, timeout=3600
        )
        rows: list[dict[str, Any]] = [json.loads(line) for line in done.stdout.splitlines()]
        if len(rows) != args.runs:
            print(f"{runner:>11}: failed (exit {done.returncode}): {done.stderr[-400:]}")
            continue
        first, last = rows[0], rows[-1]
        half = rows[len(rows) // 2 :]
        print(
            f"{runner:>11}: RSS {first['rss_mib']:.0f} -> {last['rss_mib']:.0f} MiB "
            f"({slope([r['rss_mib'] for r in half]):+.2f} MiB/run, second half "
            f"{min(r['rss_mib'] for r in half):.1f}-{max(r['rss_mib'] for r in half):.1f} MiB); "
            f"objects {first['objects']:,} -> {last['objects']:,} "
            f"({slope([r['objects'] for r in half]):+,.0f}/run); "
            f"threads {first['threads']} -> {last['threads']}, "
            f"fds {first['fds']} -> {last['fds']}; "
            f"run {statistics.median(r['seconds'] for r in rows):.3f} s median"
        )


if __name__ == "__main__":
    main()
