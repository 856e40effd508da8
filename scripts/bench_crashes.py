#!/usr/bin/env python3
"""processpool under a crash storm: hosts that kill their worker process.

    python scripts/bench_crashes.py [--hosts 10000] [--every 100] [--how exit,kill,segfault]
                                    [--rtt 0.05] [--blocking] [--limit 600]

Each run is a fresh process: ``--hosts`` synthetic hosts on the ``processpool`` runner with its
default options; every ``--every``-th host (1 % by default) kills its worker at once, by
``os._exit(1)``, ``SIGKILL`` (what the out-of-memory killer sends) or a segfault
(``ctypes.string_at(0)``); the others wait ``--rtt`` (``asyncio.sleep``, or ``time.sleep`` in a
worker thread with ``--blocking``). Reported per way of crashing: wall time of the run, hosts
present in the result, hosts failed (those that crashed / the others), hosts run twice, the
parent's peak RSS, and the longest result text (a failed host's traceback).

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
import asyncio, ctypes, json, os, resource, signal, sys, threading, time, logging
from nornir import InitNornir

hosts, every, how, rtt, blocking, limit = json.loads(sys.argv[1])

def crash():
    if how == "exit":
        os._exit(1)
    if how == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    ctypes.string_at(0)

async def crashes_async(task):
    if int(task.host.name[3:]) % every == 7:
        crash()
    await asyncio.sleep(rtt)
    return 0

def crashes_blocking(task):
    if int(task.host.name[3:]) % every == 7:
        crash()
    time.sleep(rtt)
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
    crashers = {f"dev{i}" for i in range(hosts) if i % every == 7}
    twice = sum(1 for m in (result or {}).values() if getattr(m[0], "attempts", 1) > 1)
    longest = max((len(str(m[0].result)) for m in (result or {}).values()), default=0)
    print(json.dumps({
        "ended": ended, "wall": time.perf_counter() - start,
        "present": len(result) if result is not None else 0, "finished": Done.count,
        "failed_crashers": len(failed & crashers), "failed_others": len(failed - crashers),
        "twice": twice, "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
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
    parser.add_argument("--every", type=int, default=100, help="every N-th host crashes")
    parser.add_argument("--how", default="exit,kill,segfault")
    parser.add_argument("--rtt", type=float, default=0.05)
    parser.add_argument("--blocking", action="store_true", help="a blocking task, in threads")
    parser.add_argument("--limit", type=int, default=600, help="seconds before a run is stopped")
    args = parser.parse_args()
    print(
        f"{args.hosts} hosts, every {args.every}th crashes its worker, "
        f"{'blocking' if args.blocking else 'async'} task, rtt {args.rtt} s, processpool defaults"
    )
    for how in args.how.split(","):
        spec = json.dumps([args.hosts, args.every, how, args.rtt, args.blocking, args.limit])
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
        print(
            f"{how:>9}: {state}, run {r['wall']:.2f} s "
            f"(process {time.perf_counter() - started:.2f} s); "
            f"hosts present {r['present']}, finished {r['finished']}; failed: "
            f"{r['failed_crashers']} crashers, {r['failed_others']} others; "
            f"run twice {r['twice']}; "
            f"peak RSS {r['rss_mib']:.0f} MiB; longest result {r['longest_result']:,} chars"
        )


if __name__ == "__main__":
    main()
