#!/usr/bin/env python3
"""Does a long-lived process stay flat? Many runs in a row, one process per runner.

    python scripts/bench_memory.py [--runs 50] [--hosts 10000] [--fail-rate 0.1]
                                   [--runners threaded,threadpool,asyncio,processpool]
                                   [--quick] [--record PATH]

Each runner gets a fresh process (:mod:`harness.children.memory_runs`) that builds one Nornir
(``--hosts`` synthetic hosts) and runs ``sim_rtt``/``asim_rtt`` with RTT 0 and ``--fail-rate``
failing hosts ``--runs`` times, keeping each run's result until the next one replaces it, as a
script or a scheduler would. After every run it reads its resident memory (VmRSS), threads,
open file descriptors and the objects the garbage collector tracks. Reported per runner: those
after the first run and after the last, the growth per run and the range of RSS over the
second half of the runs (the first runs warm caches and allocator arenas, and let garbage
reach the level at which a full collection starts), and the median run time. ``--quick``: 2
runs of 200 hosts, threadpool and asyncio.
"""

from __future__ import annotations

import harness
from harness.child import ChildFailed, run_child_lines
from harness.stats import slope

PARSER = harness.parser(__doc__)
PARSER.add_argument("--runs", type=harness.whole())
PARSER.add_argument("--hosts", type=harness.whole())
PARSER.add_argument("--fail-rate", type=harness.number(), default=0.1)
PARSER.add_argument("--runners")

CHILD_SECONDS = 3600.0


def main(bench: harness.Bench) -> None:
    args, quick = bench.args, bench.quick
    runs = args.runs or (2 if quick else 50)
    hosts = args.hosts or (200 if quick else 10_000)
    runners = args.runners or ("threadpool,asyncio" if quick else
                               "threaded,threadpool,asyncio,processpool")
    print(
        f"{runs} runs in one process, {hosts} hosts, {args.fail_rate:.0%} failing, "
        "RTT 0; after the first run -> after the last; growth per run over the second half"
    )
    for runner in runners.split(","):
        spec = {"runner": runner, "hosts": hosts, "runs": runs, "fail_rate": args.fail_rate}
        try:
            rows = run_child_lines("harness.children.memory_runs", spec, timeout=CHILD_SECONDS)
        except ChildFailed as exc:
            print(f"{runner:>11}: failed: {exc}")
            continue
        first, last = rows[0], rows[-1]
        half = rows[len(rows) // 2 :]
        rss = harness.Spread.of(r["rss_mib"] for r in half)
        grows = slope([r["rss_mib"] for r in half])
        print(
            f"{runner:>11}: RSS {first['rss_mib']:.0f} -> {last['rss_mib']:.0f} MiB "
            f"({grows:+.2f} MiB/run, second half {rss.low:.1f}-{rss.high:.1f} MiB); "
            f"objects {first['objects']:,} -> {last['objects']:,} "
            f"({slope([r['objects'] for r in half]):+,.0f}/run); "
            f"threads {first['threads']} -> {last['threads']}, "
            f"fds {first['fds']} -> {last['fds']}; "
            f"run {harness.Spread.of(r['seconds'] for r in rows).median:.3f} s median"
        )
        bench.record({"runs": rows, "rss_growth_mib_per_run": grows}, runner=runner,
                     hosts=hosts, fail_rate=args.fail_rate)


if __name__ == "__main__":
    harness.run_script(main, PARSER)
