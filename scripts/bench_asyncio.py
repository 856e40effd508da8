#!/usr/bin/env python3
"""asyncio runner benchmark: the run phase against the floor of bare coroutines.

    python scripts/bench_asyncio.py [--hosts 10000] [--rtt 0.05] [--repeat 7] \
        [--loops asyncio,uvloop] [--memory] [--quick] [--record PATH]
    python scripts/bench_asyncio.py --hosts 100000 --rtt 1 --repeat 1     # the 100,000-host case

For each loop implementation, interleaved in one process and run:

- **floor**: a new loop of that kind runs ``asyncio.gather`` of N bare
  ``asyncio.sleep(RTT)`` coroutines, then closes (what the runner does, minus nornir);
- **runner**: ``nr.run(task=asim_rtt, rtt=RTT)`` on N synthetic hosts, ``num_workers=N``.

Prints medians with min-max and the ratio runner / floor (the issue's target: <= 1.25 at
10,000 hosts and 50 ms; <= 1.5 at 100,000 hosts and 1 s). ``--memory`` runs each measurement in
a fresh process instead (:mod:`harness.children.asyncio_floor`) and reports its peak RSS per
host. ``--quick``: 200 hosts, 10 ms, 1 repeat.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import harness
from harness.child import run_child
from harness.children.asyncio_floor import build, runner_run
from harness.timing import loop_floor

PARSER = harness.parser(__doc__)
PARSER.add_argument("--hosts", type=harness.whole())
PARSER.add_argument("--rtt", type=harness.number())
PARSER.add_argument("--repeat", type=harness.whole())
PARSER.add_argument("--loops", default="asyncio,uvloop")
PARSER.add_argument("--memory", action="store_true", help="each measurement in a fresh process")

CHILD_SECONDS = 3600.0


def main(bench: harness.Bench) -> None:
    args, quick = bench.args, bench.quick
    hosts = args.hosts or (200 if quick else 10_000)
    rtt = args.rtt or (0.01 if quick else 0.05)
    repeat = args.repeat or (1 if quick else 7)
    loops = args.loops.split(",")
    sides: dict[str, Callable[[], dict[str, float]]] = {}
    for name in loops:
        if args.memory:
            for kind in ("floor", "runner"):
                spec = {"kind": kind, "loop": name, "hosts": hosts, "rtt": rtt}
                sides[f"{name}/{kind}"] = partial(run_child, "harness.children.asyncio_floor",
                                                  spec, timeout=CHILD_SECONDS)
        else:
            nr = build(name, hosts)
            loop_floor(name, min(hosts, 1000), 0.001)  # warm-up
            runner_run(nr, 0.001)
            sides[f"{name}/floor"] = partial(lambda n: {"wall": loop_floor(n, hosts, rtt)}, name)
            sides[f"{name}/runner"] = partial(lambda nr: {"wall": runner_run(nr, rtt)}, nr)
    runs = harness.alternate(sides, repeat)

    print(f"## {hosts} hosts, RTT {rtt * 1000:.0f} ms, median of {repeat} (min-max)")
    for name in loops:
        f = harness.Spread.of(r["wall"] for r in runs[f"{name}/floor"])
        r = harness.Spread.of(r["wall"] for r in runs[f"{name}/runner"])
        print(f"{name:>8}: floor {f.median:.3f} s ({f.low:.3f}-{f.high:.3f})  "
              f"runner {r.median:.3f} s ({r.low:.3f}-{r.high:.3f})  "
              f"runner/floor {r.median / f.median:.2f}")
        bench.record({"floor": f.values, "runner": r.values}, loop=name, hosts=hosts, rtt=rtt)
        if args.memory:
            for kind in ("floor", "runner"):
                rows = runs[f"{name}/{kind}"]
                grown = harness.Spread.of(x["rss_peak_kib"] - x["rss_loaded_kib"]
                                          for x in rows).median
                total = harness.Spread.of(x["rss_peak_kib"] for x in rows).median
                print(
                    f"          {kind}: peak RSS {total / 1024:.0f} MiB, "
                    f"run added {grown / 1024:.0f} MiB "
                    f"= {grown * 1024 / hosts:.0f} bytes/host"
                )
                bench.record({"peak_rss_kib": total, "added_kib": grown}, loop=name, kind=kind,
                             hosts=hosts, rtt=rtt)


if __name__ == "__main__":
    harness.run_script(main, PARSER)
