#!/usr/bin/env python3
"""processpool benchmark, side by side with threadpool and asyncio in one run.

    python scripts/bench_processpool.py [--hosts 10000] [--repeat 3] [--procs N] [--skip-cpu]
                                        [--quick] [--record PATH]

1. **CPU-bound**: ``parse_interfaces`` (TextFSM with ntc-templates over an 8-interface Cisco
   IOS ``show interfaces``, ~4.5 ms of pure Python per host) on N hosts: ``threadpool``
   (20 workers) against ``processpool`` (``--procs`` processes, default the CPUs this
   process may use): a fresh pool's first run (its workers started in the run) and its
   second (workers kept), beside the machine's ceiling, a plain CPU loop in ``--procs``
   processes against one (:func:`harness.ceiling.cpu_ceiling`). Targets: >= 1.75 x (first
   run), >= 1.85 x (kept) on 2 cores.
2. **RTT 50 ms**: ``asim_rtt`` on N hosts, all in flight: ``asyncio`` (N workers) against
   ``processpool`` (N / procs workers per process). Target: within 1.5 x of asyncio.
3. **Per-host overhead** of a no-op task: ``threadpool`` against ``processpool``.

Every figure is the run phase (``nr.run``), which for processpool includes starting and
stopping its worker processes. Median of ``--repeat`` (min-max). ``--quick``: 20 hosts, 1
repeat, a ceiling of short loops.
"""

from __future__ import annotations

import os
from functools import partial

import harness
from harness.ceiling import SPIN_LOOPS, cpu_ceiling
from harness.fleets import close, noop, run_checked, synthetic
from nornir_bench.tasks import asim_rtt, parse_interfaces

PARSER = harness.parser(__doc__)
PARSER.add_argument("--hosts", type=harness.whole())
PARSER.add_argument("--repeat", type=harness.whole())
PARSER.add_argument("--procs", type=harness.whole(), default=len(os.sched_getaffinity(0)))
PARSER.add_argument("--skip-cpu", action="store_true")


def line(label: str, samples: list[float]) -> str:
    spread = harness.Spread.of(samples)
    return f"{label:>34}: {spread.median:7.3f} s ({spread.low:.3f}-{spread.high:.3f})"


def cpu_bound(bench: harness.Bench, n: int, procs: int, repeat: int) -> None:
    """``parse_interfaces`` on threadpool and processpool (a fresh pool each repeat: its first
    run starts the workers, its second keeps them), beside the machine's ceiling."""
    labels = ("threadpool, 20 workers", f"processpool, {procs} procs x 20, first run",
              f"processpool, {procs} procs x 20, kept workers")
    samples: dict[str, list[float]] = {label: [] for label in labels}
    ceilings = []
    loops = SPIN_LOOPS // 20 if bench.quick else SPIN_LOOPS
    threadpool = synthetic("threadpool", n, num_workers=20)
    for _ in range(repeat):
        ceilings.append(cpu_ceiling(procs, loops))
        samples[labels[0]].append(run_checked(threadpool, parse_interfaces))
        pool = synthetic("processpool", n, num_workers=20, num_procs=procs)
        try:
            samples[labels[1]].append(run_checked(pool, parse_interfaces))
            samples[labels[2]].append(run_checked(pool, parse_interfaces))
        finally:
            close(pool)
    print(f"## CPU-bound: parse_interfaces (TextFSM) on {n} hosts, {os.cpu_count()} CPUs")
    for label, values in samples.items():
        print(line(label, values))
        bench.record({"wall": values}, part="cpu", configuration=label, hosts=n)
    top = harness.Spread.of(ceilings)
    print(f"{'the ceiling, a plain CPU loop':>34}: {top.median:.2f} x ({procs} processes / 1; "
          f"{top.low:.2f}-{top.high:.2f})")
    bench.record({"ceiling": top.values}, part="cpu", procs=procs)
    base, first, kept = (harness.Spread.of(values).median for values in samples.values())
    for label, wall, target in (("first run", first, 1.75), ("kept workers", kept, 1.85)):
        print(f"{'processpool speed-up, ' + label:>34}: {base / wall:.2f} x (target >= "
              f"{target}; {base / wall / top.median:.0%} of the ceiling)")


def main(bench: harness.Bench) -> None:
    args = bench.args
    n = args.hosts or (20 if bench.quick else 10_000)
    repeat = args.repeat or (1 if bench.quick else 3)
    procs = args.procs
    if not args.skip_cpu:
        cpu_bound(bench, n, procs, repeat)

    per_proc = max(1, n // procs)
    pairs = {
        f"asyncio, {n} workers": synthetic("asyncio", n, num_workers=n),
        f"processpool, {procs} procs x {per_proc}": synthetic(
            "processpool", n, num_workers=per_proc, num_procs=procs
        ),
    }
    walls = harness.alternate(
        {label: partial(run_checked, nr, asim_rtt, rtt=0.05) for label, nr in pairs.items()},
        repeat)
    print(f"## asim_rtt 50 ms on {n} hosts, all in flight")
    for label, s in walls.items():
        print(line(label, s))
        bench.record({"wall": s}, part="rtt", configuration=label, hosts=n)
    a, b = (harness.Spread.of(s).median for s in walls.values())
    print(f"{'processpool / asyncio':>34}: {b / a:.2f} (target <= 1.5)")
    for nr in pairs.values():
        close(nr)

    pairs = {
        "threadpool, 20 workers": synthetic("threadpool", n, num_workers=20),
        f"processpool, {procs} procs x 20": synthetic(
            "processpool", n, num_workers=20, num_procs=procs
        ),
    }
    walls = harness.alternate(
        {label: partial(run_checked, nr, noop) for label, nr in pairs.items()}, repeat)
    print(f"## no-op task on {n} hosts: per-host cost")
    for label, s in walls.items():
        print(f"{line(label, s)} = {harness.Spread.of(s).median / n * 1e6:.1f} µs/host")
        bench.record({"wall": s}, part="noop", configuration=label, hosts=n)
    for nr in pairs.values():
        close(nr)


if __name__ == "__main__":
    harness.run_script(main, PARSER)
