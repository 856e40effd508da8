#!/usr/bin/env python3
"""Runner overhead and RTT benchmark: nornir-bench's runners side by side with nornir's own.

    python scripts/bench_runners.py [--hosts 10000] [--repeat 5] [--rtt 0.05] [--rtt-workers 1000]
                                    [--runners serial,threaded,threadpool]

Two measurements, each repeated, every runner in the same process and run, interleaved so that
machine noise hits all of them alike; the run phase (``nr.run``) is timed with perf_counter:

1. **Per-host cost** of a no-op task on N synthetic hosts at 20 and at 1,000 workers:
   run wall / N, in µs. The issue's target: threadpool <= 1/3 of nornir's ``threaded``.
2. **RTT run**: ``sim_rtt(rtt)`` on N hosts with ``--rtt-workers`` workers, against the ideal
   ceil(N/W)·RTT; also the floor of the machine's threads: W bare ``threading.Thread`` workers
   popping from a deque and sleeping, no nornir at all (how fast threads alone can go here).

Prints medians with min-max; ``--json PATH`` also writes every sample.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import threading
import time
from collections import deque
from collections.abc import Callable
from functools import partial
from typing import Any

from nornir import InitNornir
from nornir.core import Nornir

from nornir_bench.tasks import sim_rtt


def noop(task: Any) -> None:
    return None


def build(runner: str, workers: int, hosts: int) -> Nornir:
    options = {} if runner == "serial" else {"num_workers": workers}
    return InitNornir(
        inventory={"plugin": "synthetic", "options": {"hosts": hosts}},
        runner={"plugin": runner, "options": options},
        logging={"enabled": False},
    )


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


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


def summary(samples: list[float]) -> str:
    return f"{statistics.median(samples):.4f} s (min {min(samples):.4f}, max {max(samples):.4f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rtt", type=float, default=0.05)
    parser.add_argument("--rtt-workers", type=int, default=1000)
    parser.add_argument("--runners", default="serial,threaded,threadpool")
    parser.add_argument("--json", dest="json_path", default=None)
    args = parser.parse_args()
    runners = args.runners.split(",")
    n = args.hosts
    samples: dict[str, list[float]] = {}

    # 1. per-host cost of a no-op task
    for workers in (20, 1000):
        built = {r: build(r, workers, n) for r in runners}
        for r in runners:  # warm-up: first-run costs (imports, caches) out of the figures
            built[r].run(task=noop)
        for _ in range(args.repeat):
            for r in runners:
                key = f"noop/{r}/{workers}"
                samples.setdefault(key, []).append(timed(partial(built[r].run, task=noop)))
    print(f"## per-host cost, no-op task, {n} hosts, median of {args.repeat} (min-max), µs/host")
    for workers in (20, 1000):
        line = [f"workers={workers}:"]
        for r in runners:
            s = samples[f"noop/{r}/{workers}"]
            line.append(
                f"{r} {statistics.median(s) / n * 1e6:.1f} "
                f"({min(s) / n * 1e6:.1f}-{max(s) / n * 1e6:.1f})"
            )
        if "threaded" in runners and "threadpool" in runners:
            ratio = statistics.median(samples[f"noop/threadpool/{workers}"]) / statistics.median(
                samples[f"noop/threaded/{workers}"]
            )
            line.append(f"threadpool/threaded = {ratio:.2f}")
        print("  ".join(line))

    # 2. RTT run against the ideal and the bare-thread floor
    w, rtt = args.rtt_workers, args.rtt
    ideal = math.ceil(n / w) * rtt
    rtt_runners = [r for r in runners if r != "serial"]
    built = {r: build(r, w, n) for r in rtt_runners}
    for _ in range(args.repeat):
        samples.setdefault("rtt/bare-threads", []).append(bare_threads(w, n, rtt))
        for r in rtt_runners:
            samples.setdefault(f"rtt/{r}", []).append(
                timed(partial(built[r].run, task=sim_rtt, rtt=rtt))
            )
    print(f"## sim_rtt {rtt * 1000:.0f} ms, {n} hosts, {w} workers; "
          f"ideal ceil(N/W)*RTT = {ideal:.3f} s")
    for key in ["rtt/bare-threads"] + [f"rtt/{r}" for r in rtt_runners]:
        s = samples[key]
        print(f"{key[4:]:>14}: {summary(s)}  = {statistics.median(s) / ideal:.2f} x ideal")

    if args.json_path:
        with open(args.json_path, "w", encoding="utf-8") as f:
            json.dump({"hosts": n, "samples": samples}, f, indent=1)


if __name__ == "__main__":
    main()
