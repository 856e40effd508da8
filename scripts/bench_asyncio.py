#!/usr/bin/env python3
"""asyncio runner benchmark: the run phase against the floor of bare coroutines.

    python scripts/bench_asyncio.py [--hosts 10000] [--rtt 0.05] [--repeat 7] \
        [--loops asyncio,uvloop]
    python scripts/bench_asyncio.py --hosts 100000 --rtt 1 --repeat 1     # the 100,000-host case

For each loop implementation, interleaved in one process and run:

- **floor**: a new loop of that kind runs ``asyncio.gather`` of N bare
  ``asyncio.sleep(RTT)`` coroutines, then closes (what the runner does, minus nornir);
- **runner**: ``nr.run(task=asim_rtt, rtt=RTT)`` on N synthetic hosts, ``num_workers=N``.

Prints medians with min-max and the ratio runner / floor (the issue's target: <= 1.25 at
10,000 hosts and 50 ms; <= 1.5 at 100,000 hosts and 1 s). ``--memory`` runs each measurement in
a fresh process instead and reports its peak RSS per host.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import subprocess
import sys
import time

from nornir import InitNornir

from nornir_bench.core.loops import new_event_loop
from nornir_bench.tasks import asim_rtt


def floor(loop_name: str, hosts: int, rtt: float) -> float:
    """N bare coroutines on a new loop of the same kind, created, run and closed."""
    start = time.perf_counter()
    loop = new_event_loop(loop_name)
    try:

        async def main() -> None:
            await asyncio.gather(*(asyncio.sleep(rtt) for _ in range(hosts)))

        loop.run_until_complete(main())
    finally:
        loop.close()
    return time.perf_counter() - start


def build(loop_name: str, hosts: int):  # type: ignore[no-untyped-def]
    return InitNornir(
        inventory={"plugin": "synthetic", "options": {"hosts": hosts}},
        runner={"plugin": "asyncio", "options": {"num_workers": hosts, "loop": loop_name}},
        logging={"enabled": False},
    )


def runner_run(nr, rtt: float) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    result = nr.run(task=asim_rtt, rtt=rtt)
    elapsed = time.perf_counter() - start
    assert len(result) == len(nr.inventory.hosts) and not result.failed
    return elapsed


def one_in_this_process(kind: str, loop_name: str, hosts: int, rtt: float) -> None:
    """--child: one measurement, printed as JSON with the process's peak RSS."""
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    nr = build(loop_name, hosts) if kind == "runner" else None
    loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    wall = runner_run(nr, rtt) if nr is not None else floor(loop_name, hosts, rtt)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps(
        {"wall": wall, "rss_base_kib": base, "rss_loaded_kib": loaded, "rss_peak_kib": peak}
    ))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--rtt", type=float, default=0.05)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--loops", default="asyncio,uvloop")
    parser.add_argument("--memory", action="store_true", help="each measurement in a fresh process")
    parser.add_argument("--child", nargs=2, metavar=("KIND", "LOOP"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        one_in_this_process(args.child[0], args.child[1], args.hosts, args.rtt)
        return

    loops = args.loops.split(",")
    samples: dict[str, list[float]] = {}
    memory: dict[str, list[int]] = {}
    built = {} if args.memory else {name: build(name, args.hosts) for name in loops}
    for name in loops:  # warm-up
        if not args.memory:
            floor(name, min(args.hosts, 1000), 0.001)
            runner_run(built[name], 0.001)
    for _ in range(args.repeat):
        for name in loops:
            for kind in ("floor", "runner"):
                key = f"{name}/{kind}"
                if args.memory:
                    out = subprocess.run(
                        [sys.executable, __file__, "--child", kind, name,
                         "--hosts", str(args.hosts), "--rtt", str(args.rtt)],
                        check=True, capture_output=True, text=True,
                    ).stdout
                    record = json.loads(out)
                    samples.setdefault(key, []).append(record["wall"])
                    grown = record["rss_peak_kib"] - record["rss_loaded_kib"]
                    memory.setdefault(key, []).append(grown)
                    memory.setdefault(key + "/total", []).append(record["rss_peak_kib"])
                elif kind == "floor":
                    samples.setdefault(key, []).append(floor(name, args.hosts, args.rtt))
                else:
                    samples.setdefault(key, []).append(runner_run(built[name], args.rtt))

    print(f"## {args.hosts} hosts, RTT {args.rtt * 1000:.0f} ms, median of {args.repeat} (min-max)")
    for name in loops:
        f, r = samples[f"{name}/floor"], samples[f"{name}/runner"]
        print(
            f"{name:>8}: floor {statistics.median(f):.3f} s ({min(f):.3f}-{max(f):.3f})  "
            f"runner {statistics.median(r):.3f} s ({min(r):.3f}-{max(r):.3f})  "
            f"runner/floor {statistics.median(r) / statistics.median(f):.2f}"
        )
        if memory:
            for kind in ("floor", "runner"):
                grown = statistics.median(memory[f"{name}/{kind}"])
                total = statistics.median(memory[f"{name}/{kind}/total"])
                print(
                    f"          {kind}: peak RSS {total / 1024:.0f} MiB, "
                    f"run added {grown / 1024:.0f} MiB "
                    f"= {grown * 1024 / args.hosts:.0f} bytes/host"
                )


if __name__ == "__main__":
    main()
