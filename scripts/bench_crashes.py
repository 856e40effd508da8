#!/usr/bin/env python3
"""processpool under a crash storm: hosts that kill their worker process.

    python scripts/bench_crashes.py [--hosts 10000] [--rate 0.01] [--seed 1]
                                    [--how clean,exit,kill,segfault,mixed] [--at start|end]
                                    [--rtt 0.05] [--blocking] [--limit 600] [--quick]
                                    [--record PATH]

Each run is a fresh process (:mod:`harness.children.crash_storm`): ``--hosts`` synthetic hosts
on the ``processpool`` runner with its default options; a ``--rate`` of them (1 % by default),
drawn at random (``--seed``), kill their worker, by ``os._exit(1)``, ``SIGKILL`` (what the
out-of-memory killer sends), a segfault (``ctypes.string_at(0)``) or, with ``mixed``, each
crasher one of the three in turn; ``clean`` is the same run with no crasher, the figure the
others compare with. A crasher crashes as its task starts (``--at start``) or after its wait
(``--at end``, as a library crashing on a device's answer would); the others wait ``--rtt``
(``asyncio.sleep``, or ``time.sleep`` in a worker thread with ``--blocking``). Reported per
way of crashing: wall time of the run and its ratio to the clean run's, hosts present in the
result, hosts failed (those that crashed / the innocent others), hosts run more than once and
the most runs of one host, the parent's peak RSS, and the longest result text (a failed host's
traceback).

A run that does not end within ``--limit`` seconds is stopped, and reported as such with the
hosts it had finished (counted by a processor): to measure an older version side by side, run
this script with that version first on PYTHONPATH (``git worktree add``). ``--quick``: 200
hosts, 2 % crashing by ``exit``, 10 ms, a limit of 60 s.
"""

from __future__ import annotations

import time
from typing import Any

import harness
from harness.child import ChildFailed, run_child

PARSER = harness.parser(__doc__)
PARSER.add_argument("--hosts", type=harness.whole())
PARSER.add_argument("--rate", type=harness.number(), help="share of hosts that crash")
PARSER.add_argument("--seed", type=harness.whole(0), default=1, help="which hosts crash")
PARSER.add_argument("--how")
PARSER.add_argument("--at", choices=("start", "end"), default="start")
PARSER.add_argument("--rtt", type=harness.number())
PARSER.add_argument("--blocking", action="store_true", help="a blocking task, in threads")
PARSER.add_argument("--limit", type=harness.whole(), help="seconds before a run is stopped")


def main(bench: harness.Bench) -> None:
    args, quick = bench.args, bench.quick
    hosts = args.hosts or (200 if quick else 10_000)
    rate = args.rate or (0.02 if quick else 0.01)
    how = args.how or ("exit" if quick else "clean,exit,kill,segfault,mixed")
    rtt = args.rtt or (0.01 if quick else 0.05)
    limit = args.limit or (60 if quick else 600)
    print(
        f"{hosts} hosts, {rate:.1%} crash their worker at the {args.at} of their task, "
        f"{'blocking' if args.blocking else 'async'} task, rtt {rtt} s, processpool defaults"
    )
    clean = None
    for way in how.split(","):
        spec = {"hosts": hosts, "rate": rate, "seed": args.seed, "how": way,
                "at_end": args.at == "end", "rtt": rtt, "blocking": args.blocking,
                "limit": limit}
        started = time.perf_counter()
        try:  # exit 3: stopped at the limit, its report printed first
            r: dict[str, Any] = run_child("harness.children.crash_storm", spec,
                                          timeout=limit + 60, exits=(0, 3))
        except ChildFailed as exc:
            print(f"{way:>9}: no report: {exc}")
            continue
        state = "ended" if r["ended"] else f"STOPPED after {limit} s"
        if way == "clean":
            clean = r["wall"]
        ratio = f" = {r['wall'] / clean:.1f}x clean" if clean and way != "clean" else ""
        innocent = hosts - r.get("crashers", 0)
        print(
            f"{way:>9}: {state}, run {r['wall']:.2f} s{ratio} "
            f"(process {time.perf_counter() - started:.2f} s); "
            f"hosts present {r['present']}, finished {r['finished']}; failed: "
            f"{r['failed_crashers']} of {r.get('crashers', 0)} crashers, "
            f"{r['failed_others']} of {innocent} innocent "
            f"({r['failed_others'] / max(1, innocent):.1%}); "
            f"run again {r['twice']}, most runs of a host {r.get('most_runs', '?')}; "
            f"peak RSS {r['rss_mib']:.0f} MiB; longest result {r['longest_result']:,} chars"
        )
        bench.record(r, how=way, hosts=hosts, rate=rate, at=args.at, rtt=rtt,
                     blocking=args.blocking)


if __name__ == "__main__":
    harness.run_script(main, PARSER)
