#!/usr/bin/env python3
"""processpool benchmark, side by side with threadpool and asyncio in one run.

    python scripts/bench_processpool.py [--hosts 10000] [--repeat 3] [--procs N]

1. **CPU-bound**: ``parse_interfaces`` (TextFSM with ntc-templates over an 8-interface Cisco
   IOS ``show interfaces``, ~4.5 ms of pure Python per host) on N hosts: ``threadpool``
   (20 workers) against ``processpool`` (``--procs`` processes, default the CPUs this
   process may use): a fresh pool's first run (its workers started in the run) and its
   second (workers kept), beside the machine's ceiling, a plain CPU loop in ``--procs``
   processes against one. Targets: >= 1.75 x (first run), >= 1.85 x (kept) on 2 cores.
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
import subprocess
import sys
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


SPIN = "import sys\nfor _ in range(int(sys.argv[1])): pass"
SPIN_LOOPS = 40_000_000  # about a second of one core here


def ceiling(procs: int) -> float:
    """The machine's own ceiling for ``procs`` processes: a plain CPU loop run ``procs`` times
    in one process, against one loop in each of ``procs`` processes at once."""
    one = time.perf_counter()
    subprocess.run([sys.executable, "-c", SPIN, str(SPIN_LOOPS * procs)], check=True)
    one = time.perf_counter() - one
    many = time.perf_counter()
    children = [subprocess.Popen([sys.executable, "-c", SPIN, str(SPIN_LOOPS)])
                for _ in range(procs)]
    for child in children:
        child.wait()
    return one / (time.perf_counter() - many)


def cpu_bound(n: int, procs: int, repeat: int) -> None:
    """``parse_interfaces`` on threadpool and processpool (a fresh pool each repeat: its first
    run starts the workers, its second keeps them), beside the machine's ceiling."""
    labels = ("threadpool, 20 workers", f"processpool, {procs} procs x 20, first run",
              f"processpool, {procs} procs x 20, kept workers")
    samples: dict[str, list[float]] = {label: [] for label in labels}
    ceilings = []
    threadpool = build("threadpool", n, num_workers=20)
    for _ in range(repeat):
        ceilings.append(ceiling(procs))
        samples[labels[0]].append(timed(threadpool, parse_interfaces))
        pool = build("processpool", n, num_workers=20, num_procs=procs)
        try:
            samples[labels[1]].append(timed(pool, parse_interfaces))
            samples[labels[2]].append(timed(pool, parse_interfaces))
        finally:
            pool.runner.close()
    print(f"## CPU-bound: parse_interfaces (TextFSM) on {n} hosts, {os.cpu_count()} CPUs")
    for label, values in samples.items():
        print(line(label, values))
    top = statistics.median(ceilings)
    print(f"{'the ceiling, a plain CPU loop':>34}: {top:.2f} x ({procs} processes / 1; "
          f"{min(ceilings):.2f}-{max(ceilings):.2f})")
    base, first, kept = (statistics.median(values) for values in samples.values())
    for label, wall, target in (("first run", first, 1.75), ("kept workers", kept, 1.85)):
        print(f"{'processpool speed-up, ' + label:>34}: {base / wall:.2f} x (target >= "
              f"{target}; {base / wall / top:.0%} of the ceiling)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--procs", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--skip-cpu", action="store_true")
    args = parser.parse_args()
    n, procs = args.hosts, args.procs

    if not args.skip_cpu:
        cpu_bound(n, procs, args.repeat)

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
