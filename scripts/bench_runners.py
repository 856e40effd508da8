#!/usr/bin/env python3
"""Runner overhead and RTT benchmark: nornir-bench's runners side by side with nornir's own.

    python scripts/bench_runners.py [--hosts 10000] [--repeat 5] [--rtt 0.05] [--rtt-workers 1000]
                                    [--runners serial,threaded,threadpool] [--quick]
                                    [--record PATH]

Two measurements, each repeated, every runner in the same process and run, interleaved so that
machine noise hits all of them alike; the run phase (``nr.run``) is timed with perf_counter:

1. **Per-host cost** of a no-op task on N synthetic hosts at 20 and at 1,000 workers:
   run wall / N, in µs. The issue's target: threadpool <= 1/3 of nornir's ``threaded``.
2. **RTT run**: ``sim_rtt(rtt)`` on N hosts with ``--rtt-workers`` workers, against the ideal
   ceil(N/W)·RTT; also the floor of the machine's threads: W bare ``threading.Thread`` workers
   popping from a deque and sleeping, no nornir at all (how fast threads alone can go here).

Prints medians with min-max; ``--record PATH`` also writes every sample. ``--quick``: 200
hosts, 1 repeat, 10 ms on 50 workers.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from functools import partial

import harness
from harness.fleets import noop, run_timed, synthetic
from nornir_bench.tasks import sim_rtt

PARSER = harness.parser(__doc__)
PARSER.add_argument("--hosts", type=harness.whole())
PARSER.add_argument("--repeat", type=harness.whole())
PARSER.add_argument("--rtt", type=harness.number())
PARSER.add_argument("--rtt-workers", type=harness.whole())
PARSER.add_argument("--runners", default="serial,threaded,threadpool")


def bare_threads(workers: int, hosts: int, rtt: float) -> float:
    """W plain threads draining a deque of N items, sleeping RTT per item: the threads' floor."""
    pending = deque(range(hosts))
    done: dict[int, int] = {}

    def work() -> None:
        take = pending.popleft
        try:
            while True:
                i = take()
                time.sleep(rtt)
                done[i] = i
        except IndexError:
            return

    start = time.perf_counter()
    threads = [threading.Thread(target=work) for _ in range(min(workers, hosts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(done) == hosts
    return time.perf_counter() - start


def main(bench: harness.Bench) -> None:
    args, quick = bench.args, bench.quick
    n = args.hosts or (200 if quick else 10_000)
    repeat = args.repeat or (1 if quick else 5)
    rtt = args.rtt or (0.01 if quick else 0.05)
    w = args.rtt_workers or (50 if quick else 1000)
    runners = args.runners.split(",")

    # 1. per-host cost of a no-op task
    noops: dict[int, dict[str, list[float]]] = {}
    for workers in (20, 1000):
        built = {r: synthetic(r, n) if r == "serial" else synthetic(r, n, num_workers=workers)
                 for r in runners}
        noops[workers] = harness.alternate(
            {r: partial(run_timed, built[r], noop) for r in runners},
            repeat, warm=True)  # warm: first-run costs (imports, caches) out of the figures
    print(f"## per-host cost, no-op task, {n} hosts, median of {repeat} (min-max), µs/host")
    for workers, samples in noops.items():
        line = [f"workers={workers}:"]
        for r in runners:
            per_host = harness.Spread.of(samples[r], 1e6 / n)
            line.append(f"{r} {per_host.text(1)}")
            bench.record({"us_per_host": per_host.values}, part="noop", runner=r,
                         workers=workers, hosts=n)
        if "threaded" in runners and "threadpool" in runners:
            ratio = (harness.Spread.of(samples["threadpool"]).median
                     / harness.Spread.of(samples["threaded"]).median)
            line.append(f"threadpool/threaded = {ratio:.2f}")
        print("  ".join(line))

    # 2. RTT run against the ideal and the bare-thread floor
    ideal = math.ceil(n / w) * rtt
    rtt_runners = [r for r in runners if r != "serial"]
    built = {r: synthetic(r, n, num_workers=w) for r in rtt_runners}
    sides = {"bare-threads": partial(bare_threads, w, n, rtt)}
    sides |= {r: partial(run_timed, built[r], sim_rtt, rtt=rtt) for r in rtt_runners}
    walls = harness.alternate(sides, repeat)
    print(f"## sim_rtt {rtt * 1000:.0f} ms, {n} hosts, {w} workers; "
          f"ideal ceil(N/W)*RTT = {ideal:.3f} s")
    for name, seconds in walls.items():
        s = harness.Spread.of(seconds)
        print(f"{name:>14}: {s.median:.4f} s (min {s.low:.4f}, max {s.high:.4f})  "
              f"= {s.median / ideal:.2f} x ideal")
        bench.record({"wall": s.values, "ideal": ideal}, part="rtt", runner=name, workers=w,
                     hosts=n, rtt=rtt)


if __name__ == "__main__":
    harness.run_script(main, PARSER)
