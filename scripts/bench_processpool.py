#!/usr/bin/env python3
"""processpool benchmark, side by side with threadpool and asyncio in one run.

    python scripts/bench_processpool.py [--hosts 10000] [--repeat 3] [--procs N]

1. **CPU-bound**: ``parse_interfaces`` (TextFSM with ntc-templates over an 8-interface Cisco
   IOS ``show interfaces``, ~4.5 ms of pure Python per host) on N hosts: ``threadpool``
   (20 workers) against ``processpool`` (``--procs`` processes, default the CPU count).
   Target: processpool >= 1.7 x faster on 2 cores.
2. **RTT 50 ms**: ``asim_rtt`` on N hosts, all in flight: ``asyncio`` (N workers) against
   ``processpool`` (N / procs workers per process). Target: within 1.5 x of asyncio.
3. **Per-host overhead** of a no-op task: ``threadpool`` against ``processpool``.

Every figure is the run phase (``nr.run``), which for processpool includes starting and
stopping its worker processes. Median of ``--repeat`` (min-max).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

from nornir import InitNornir

from nornir_bench.tasks import asim_rtt, parse_interfaces


def noop(task: Any) -> None:
    return None


def build(runner: str, hosts: int, **options: Any) -> Any:
    return InitNornir(
        inventory={"plugin": "synthetic", "options": {"hosts": hosts}},
        runner={"plugin": runner, "options": options},
        logging={"enabled": False},
    )


def timed(nr: Any, task: Any, **kwargs: Any) -> float:
    start = time.perf_counter()
    result = nr.run(task=task, **kwargs)
    elapsed = time.perf_counter() - start
    assert not result.failed, f"{len(result.failed_hosts)} hosts failed"
    return elapsed


def line(label: str, samples: list[float]) -> str:
    spread = f"{min(samples):.3f}-{max(samples):.3f}"
    return f"{label:>34}: {statistics.median(samples):7.3f} s ({spread})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--procs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--skip-cpu", action="store_true")
    args = parser.parse_args()
    n, procs = args.hosts, args.procs

    if not args.skip_cpu:
        pairs = {
            "threadpool, 20 workers": build("threadpool", n, num_workers=20),
            f"processpool, {procs} procs x 20": build(
                "processpool", n, num_workers=20, num_procs=procs
            ),
        }
        samples: dict[str, list[float]] = {k: [] for k in pairs}
        for _ in range(args.repeat):
            for label, nr in pairs.items():
                samples[label].append(timed(nr, parse_interfaces))
        print(f"## CPU-bound: parse_interfaces (TextFSM) on {n} hosts, {os.cpu_count()} CPUs")
        for label, s in samples.items():
            print(line(label, s))
        a, b = (statistics.median(s) for s in samples.values())
        print(f"{'processpool speed-up':>34}: {a / b:.2f} x (target >= 1.7)")

    per_proc = max(1, n // procs)
    pairs = {
        f"asyncio, {n} workers": build("asyncio", n, num_workers=n),
        f"processpool, {procs} procs x {per_proc}": build(
            "processpool", n, num_workers=per_proc, num_procs=procs
        ),
    }
    samples = {k: [] for k in pairs}
    for _ in range(args.repeat):
        for label, nr in pairs.items():
            samples[label].append(timed(nr, asim_rtt, rtt=0.05))
    print(f"## asim_rtt 50 ms on {n} hosts, all in flight")
    for label, s in samples.items():
        print(line(label, s))
    a, b = (statistics.median(s) for s in samples.values())
    print(f"{'processpool / asyncio':>34}: {b / a:.2f} (target <= 1.5)")

    pairs = {
        "threadpool, 20 workers": build("threadpool", n, num_workers=20),
        f"processpool, {procs} procs x 20": build(
            "processpool", n, num_workers=20, num_procs=procs
        ),
    }
    samples = {k: [] for k in pairs}
    for _ in range(args.repeat):
        for label, nr in pairs.items():
            samples[label].append(timed(nr, noop))
    print(f"## no-op task on {n} hosts: per-host cost")
    for label, s in samples.items():
        print(f"{line(label, s)} = {statistics.median(s) / n * 1e6:.1f} µs/host")


if __name__ == "__main__":
    main()
