#!/usr/bin/env python3
"""processpool under a crash storm: hosts that kill their worker process.

    python scripts/bench_crashes.py [--hosts 10000] [--rate 0.01] [--seed 1]
                                    [--how clean,exit,kill,segfault,mixed] [--at start|end]
                                    [--rtt 0.05] [--blocking] [--limit 600]

Each run is a fresh process: ``--hosts`` synthetic hosts on the ``processpool`` runner with its
default options; a ``--rate`` of them (1 % by default), drawn at random (``--seed``), kill their
worker, by ``os._exit(1)``, ``SIGKILL`` (what the out-of-memory killer sends), a segfault
(``ctypes.string_at(0)``) or, with ``mixed``, each crasher one of the three in turn; ``clean``
is the same run with no crasher, the figure the others compare with. A crasher crashes as its
task starts (``--at start``) or after its wait (``--at end``, as a library crashing on a
device's answer would); the others wait ``--rtt`` (``asyncio.sleep``, or ``time.sleep`` in a
worker thread with ``--blocking``). Reported per way of crashing: wall time of the run and its
ratio to the clean run's, hosts present in the result, hosts failed (those that crashed / the
innocent others), hosts run more than once and the most runs of one host, the parent's peak
RSS, and the longest result text (a failed host's traceback).

A run that does not end within ``--limit`` seconds is stopped, and reported as such with the
hosts it had finished (counted by a processor): to measure an older version side by side, run
this script with that version first on PYTHONPATH (``git worktree add``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from typing import Any

CHILD = r"""
import asyncio, ctypes, json, os, random, resource, signal, sys, threading, time, logging
from nornir import InitNornir

hosts, rate, seed, how, at_end, rtt, blocking, limit = json.loads(sys.argv[1])
drawn = [] if how == "clean" else random.Random(seed).sample(range(hosts), round(hosts * rate))
ways = {i: ("exit", "kill", "segfault")[n % 3] if how == "mixed" else how
        for n, i in enumerate(sorted(drawn))}

def crash(way):
    if way == "exit":
        os._exit(1)
    if way == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    ctypes.string_at(0)

async def crashes_async(task):
    way = ways.get(int(task.host.name[3:]))
    if way and not at_end:
        crash(way)
    await asyncio.sleep(rtt)
    if way:
        crash(way)
    return 0

def crashes_blocking(task):
    way = ways.get(int(task.host.name[3:]))
    if way and not at_end:
        crash(way)
    time.sleep(rtt)
    if way:
        crash(way)
    return 0

class Done:
    count = 0
    def task_started(self, task): pass
    def task_completed(self, task, result): pass
    def task_instance_started(self, task, host): pass
    def task_instance_completed(self, task, host, result): Done.count += 1
    def subtask_instance_started(self, task, host): pass
    def subtask_instance_completed(self, task, host, result): pass

logging.getLogger().addHandler(logging.NullHandler())
nr = InitNornir(inventory={"plugin": "synthetic", "options": {"hosts": hosts}},
                runner={"plugin": "processpool"}, logging={"enabled": False})
start = time.perf_counter()

def report(result, ended):
    failed = set(result.failed_hosts) if result is not None else set()
    crashers = {f"dev{i}" for i in ways}
    runs = [getattr(m[0], "attempts", 1) for m in (result or {}).values()]
    twice = sum(1 for r in runs if r > 1)
    longest = max((len(str(m[0].result)) for m in (result or {}).values()), default=0)
    print(json.dumps({
        "ended": ended, "wall": time.perf_counter() - start,
        "present": len(result) if result is not None else 0, "finished": Done.count,
        "failed_crashers": len(failed & crashers), "failed_others": len(failed - crashers),
        "crashers": len(crashers), "twice": twice, "most_runs": max(runs, default=0),
        "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "longest_result": longest,
    }), flush=True)

def out_of_time(signum, frame):
    report(None, False)
    os._exit(3)

signal.signal(signal.SIGALRM, out_of_time)
signal.alarm(limit)
task = crashes_blocking if blocking else crashes_async
result = nr.with_processors([Done()]).run(task=task)
signal.alarm(0)
report(result, True)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--rate", type=float, default=0.01, help="share of hosts that crash")
    parser.add_argument("--seed", type=int, default=1, help="which hosts crash")
    parser.add_argument("--how", default="clean,exit,kill,segfault,mixed")
    parser.add_argument("--at", choices=("start", "end"), default="start")
    parser.add_argument("--rtt", type=float, default=0.05)
    parser.add_argument("--blocking", action="store_true", help="a blocking task, in threads")
    parser.add_argument("--limit", type=int, default=600, help="seconds before a run is stopped")
    args = parser.parse_args()
    print(
        f"{args.hosts} hosts, {args.rate:.1%} crash their worker at the {args.at} of their task, "
        f"{'blocking' if args.blocking else 'async'} task, rtt {args.rtt} s, processpool defaults"
    )
    clean = None
    for how in args.how.split(","):
        spec = json.dumps(
            [
                args.hosts,
                args.rate,
                args.seed,
                how,
                args.at == "end",
                args.rtt,
                args.blocking,
                args.limit,
            ]
        )
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", CHILD, spec],
            capture_output=True,
            text=True,
            timeout=args.limit + 60,
        )
        lines = done.stdout.strip().splitlines()
        if not lines:
            print(f"{how:>9}: no report (exit {done.returncode}): {done.stderr[-500:]}")
            continue
        r: dict[str, Any] = json.loads(lines[-1])
        state = "ended" if r["ended"] else f"STOPPED after {args.limit} s"
        if how == "clean":
            clean = r["wall"]
        ratio = f" = {r['wall'] / clean:.1f}x clean" if clean and how != "clean" else ""
        innocent = args.hosts - r.get("crashers", 0)
        print(
            f"{how:>9}: {state}, run {r['wall']:.2f} s{ratio} "
            f"(process {time.perf_counter() - started:.2f} s); "
            f"hosts present {r['present']}, finished {r['finished']}; failed: "
            f"{r['failed_crashers']} of {r.get('crashers', 0)} crashers, "
            f"{r['failed_others']} of {innocent} innocent "
            f"({r['failed_others'] / max(1, innocent):.1%}); "
            f"run again {r['twice']}, most runs of a host {r.get('most_runs', '?')}; "
            f"peak RSS {r['rss_mib']:.0f} MiB; longest result {r['longest_result']:,} chars"
        )


if __name__ == "__main__":
    main()
