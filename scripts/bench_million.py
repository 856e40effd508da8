#!/usr/bin/env python3
"""A million hosts, every one in flight: run time and memory per host, against the bare floor.

    python scripts/bench_million.py [--hosts 1000000] [--rtt 0.5] [--repeat 3] [--tree PATH ...]
                                    [--runners asyncio,processpool] [--loop uvloop]
    python scripts/bench_million.py --breakdown [--hosts 20000] [--tree PATH]

Each measurement runs in a fresh process, so its peak memory is its own:

- **floor**: bare coroutines on a new event loop (``--loop``), ``asyncio.gather`` of N
  ``asyncio.sleep(RTT)``, run and closed: the same sleeps without nornir;
- **asyncio**: ``nr.run(task=asim_rtt, rtt=RTT)`` on N synthetic hosts, ``num_workers=N``;
- **processpool**: the same on 2 worker processes, ``num_workers=N/2`` each (every host in
  flight), workers started and stopped by the run.

For every ``--tree`` (a checkout of nornir-bench, put first on ``PYTHONPATH``; default this
one), the runners are measured in turn, interleaved with the floor, ``--repeat`` times. Printed:
the run's seconds (``perf_counter`` around ``nr.run``; the floor's around its loop), the peak
memory and the bytes per host (peak / hosts, interpreter and inventory included), what the run
added on top of the loaded inventory, and the ratio of the run time to the floor's. The peak
is the process's ``ru_maxrss``; for processpool, the largest sum of resident memory over the
process and its descendants, read every 0.1 s from ``/proc`` (pages the workers share with the
fork server are counted in each).

``--breakdown`` says where the bytes go (``tracemalloc``, one process, the asyncio runner,
default 20,000 hosts): per host loaded (nornir's ``Host`` and its dicts), per host in flight
(when every host has started), per host finished (its results), by owner and by line; and what
nornir's own result objects cost alone, the floor of any runner returning nornir's results.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import asyncio, json, math, resource, sys, time

kind, hosts, rtt, loop_name, procs = json.loads(sys.argv[1])

def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])

def new_loop():
    if loop_name == "uvloop":
        import uvloop
        return uvloop.new_event_loop()
    return asyncio.new_event_loop()

base = rss_kib()
if kind == "floor":
    loaded = base
    start = time.perf_counter()
    loop = new_loop()
    try:
        async def main():
            await asyncio.gather(*(asyncio.sleep(rtt) for _ in range(hosts)))
        loop.run_until_complete(main())
    finally:
        loop.close()
    wall = time.perf_counter() - start
else:
    from nornir import InitNornir
    from nornir_bench.tasks import asim_rtt
    if kind == "asyncio":
        options = {"num_workers": hosts, "loop": loop_name}
    else:
        options = {"num_workers": math.ceil(hosts / procs), "num_procs": procs,
                   "loop": loop_name, "keep_workers": False}
    nr = InitNornir(inventory={"plugin": "synthetic", "options": {"hosts": hosts}},
                    runner={"plugin": kind, "options": options}, logging={"enabled": False})
    loaded = rss_kib()
    start = time.perf_counter()
    result = nr.run(task=asim_rtt, rtt=rtt)
    wall = time.perf_counter() - start
    assert len(result) == hosts and not result.failed, "hosts missing or failed"
print(json.dumps({
    "wall": wall, "base_kib": base, "loaded_kib": loaded,
    "peak_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    "largest_child_kib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
}))
"""


def tree_rss_kib(pid: int) -> int:
    """Resident memory of ``pid`` and all its descendants (KiB), read from ``/proc``."""
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        try:
            with open(f"/proc/{current}/status") as f:
                total += next(
                    (int(line.split()[1]) for line in f if line.startswith("VmRSS:")), 0
                )
            for tid in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{tid}/children") as f:
                    todo.extend(int(child) for child in f.read().split())
        except (FileNotFoundError, ProcessLookupError):
            continue  # it ended while being read
    return total


def measure(tree: Path, kind: str, args: argparse.Namespace) -> dict[str, Any]:
    """One measurement in a fresh process importing nornir-bench from ``tree``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(tree), os.environ.get("PYTHONPATH")])
    )}
    spec = json.dumps([kind, args.hosts, args.rtt, args.loop, 2])
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, spec],
        cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    peak_tree = 0
    ended = threading.Event()

    def sample() -> None:  # bounded: stops when the child ends or is killed
        nonlocal peak_tree
        while not ended.wait(0.1):
            peak_tree = max(peak_tree, tree_rss_kib(child.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        out, err = child.communicate(timeout=args.timeout)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        raise SystemExit(f"bench_million: {kind} from {tree} ran past {args.timeout} s") from None
    finally:
        ended.set()
        sampler.join()
    if child.returncode != 0:
        raise SystemExit(f"bench_million: {kind} from {tree}: {err.strip().splitlines()[-3:]}")
    record: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    record["peak_tree_kib"] = peak_tree
    return record


def mib(kib: float) -> str:
    return f"{kib / 1024:,.0f} MiB"


def report(samples: dict[str, list[dict[str, Any]]], args: argparse.Namespace) -> None:
    hosts = args.hosts
    floor = samples["floor"]
    floor_wall = statistics.median(r["wall"] for r in floor)
    print(f"## {hosts:,} hosts, RTT {args.rtt:g} s, loop {args.loop}; "
          f"median (min-max) of {args.repeat}; bytes per host: peak / hosts (run added)")
    print("| what | run s | / floor | peak | bytes per host | run added per host |")
    print("|---|---|---|---|---|---|")
    for label, runs in samples.items():
        walls = [r["wall"] for r in runs]
        tree_wide = "processpool" in label
        peaks = [max(r["peak_tree_kib"], r["peak_kib"]) if tree_wide else r["peak_kib"]
                 for r in runs]
        peak = statistics.median(peaks)
        added = statistics.median(p - r["loaded_kib"] for p, r in zip(peaks, runs, strict=True))
        wall = statistics.median(walls)
        print(f"| {label} | {wall:.2f} ({min(walls):.2f}-{max(walls):.2f}) | "
              f"{wall / floor_wall:.2f} | {mib(peak)} | {peak * 1024 / hosts:,.0f} | "
              f"{added * 1024 / hosts:,.0f} |")
    for label, runs in samples.items():
        if "processpool" in label:
            print(f"{label}: parent's peak {mib(statistics.median(r['peak_kib'] for r in runs))}, "
                  f"largest worker's {mib(statistics.median(r['largest_child_kib'] for r in runs))}"
                  " (the sum over the process tree is in the table)")


BREAKDOWN = r"""
import asyncio, json, linecache, sys, tracemalloc
tracemalloc.start()
from nornir import InitNornir
from nornir.core.task import MultiResult, Result
from nornir_bench.tasks import asim_rtt

hosts, rtt = json.loads(sys.argv[1])
OWNERS = (("nornir/core", "nornir"), ("asyncio", "asyncio"), ("uvloop", "asyncio"),
          ("nornir_bench", "nornir-bench"))

def owner(filename):
    return next((name for part, name in OWNERS if part in filename), "other")

def per_host(before, after):
    diff = [d for d in after.compare_to(before, "lineno") if d.size_diff]
    owners = {}
    for d in diff:
        key = owner(d.traceback[0].filename)
        owners[key] = owners.get(key, 0) + d.size_diff / hosts
    lines = [(d.size_diff / hosts, d.traceback[0].filename.split("site-packages/")[-1]
              .split("nornir_bench/")[-1] + f":{d.traceback[0].lineno}",
              linecache.getline(d.traceback[0].filename, d.traceback[0].lineno).strip()[:70])
             for d in diff[:12]]
    return {"total": sum(owners.values()), "owners": owners, "lines": lines}

def build(count):
    return InitNornir(
        inventory={"plugin": "synthetic", "options": {"hosts": count}},
        runner={"plugin": "asyncio", "options": {"num_workers": count, "loop": "asyncio"}},
        logging={"enabled": False},
    )

build(1).run(task=asim_rtt, rtt=0)  # every import a run makes, before the first snapshot
loaded_before = tracemalloc.take_snapshot()
nr = build(hosts)
loaded = tracemalloc.take_snapshot()
state = {"started": 0, "finished": 0}

class AllStarted:
    def task_started(self, task): pass
    def task_completed(self, task, result): pass
    def task_instance_started(self, task, host):
        state["started"] += 1
        if state["started"] == hosts:  # once the last host's first step has run
            asyncio.get_running_loop().call_soon(self.snap)
    def snap(self):
        state["in_flight"] = tracemalloc.take_snapshot()
        state["finished_then"] = state["finished"]
    def task_instance_completed(self, task, host, result):
        state["finished"] += 1
    def subtask_instance_started(self, task, host): pass
    def subtask_instance_completed(self, task, host, result): pass

result = nr.with_processors([AllStarted()]).run(task=asim_rtt, rtt=rtt)
assert len(result) == hosts and not result.failed
done = tracemalloc.take_snapshot()
host = next(iter(nr.inventory.hosts.values()))

def alone(make):
    before = tracemalloc.take_snapshot()
    kept = [make() for _ in range(hosts)]
    return per_host(before, tracemalloc.take_snapshot())["total"] - 8  # the list's slot

def nornirs_result():
    multi = MultiResult("asim_rtt")
    item = Result(host=host, result=0.5)
    item.name, item.severity_level = "asim_rtt", 20
    multi.insert(0, item)
    return multi

print(json.dumps({
    "loaded": per_host(loaded_before, loaded),
    "in_flight": per_host(loaded, state["in_flight"]),
    "finished_when_all_started": state["finished_then"],
    "finished": per_host(loaded, done),
    "nornir_result_alone": alone(nornirs_result),
}))
"""


def breakdown(tree: Path, args: argparse.Namespace) -> None:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    rtt = args.rtt if args.rtt_given else 10.0  # long enough for every host to start first
    done = subprocess.run(
        [sys.executable, "-c", BREAKDOWN, json.dumps([args.hosts, rtt])],
        cwd=tree, env=env, capture_output=True, text=True, timeout=args.timeout, check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"bench_million --breakdown: {done.stderr.strip().splitlines()[-3:]}")
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"## where the bytes go: {tree.name}, asyncio runner (loop asyncio), {args.hosts:,} "
          f"hosts, RTT {rtt:g} s, tracemalloc; bytes per host")
    for stage, title in (("loaded", "loaded (the inventory)"),
                         ("in_flight", "in flight, every host started, over the loaded"),
                         ("finished", "finished (results kept), over the loaded")):
        part = figures[stage]
        owners = ", ".join(f"{name} {size:,.0f}" for name, size in
                           sorted(part["owners"].items(), key=lambda kv: -kv[1]))
        print(f"- {title}: {part['total']:,.0f} ({owners})")
        for size, where, code in part["lines"]:
            print(f"    {size:6,.0f}  {where:<40} {code}")
    print(f"  (hosts already finished when the last one started: "
          f"{figures['finished_when_all_started']:,})")
    print(f"- nornir's own results alone (a MultiResult holding one Result): "
          f"{figures['nornir_result_alone']:,.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=None,
                        help="default 1,000,000 (20,000 with --breakdown)")
    parser.add_argument("--rtt", type=float, default=None, help="seconds (default 0.5)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tree", action="append", type=Path, default=[])
    parser.add_argument("--runners", default="asyncio,processpool")
    parser.add_argument("--loop", default="uvloop", choices=("uvloop", "asyncio"))
    parser.add_argument("--timeout", type=float, default=1800,
                        help="seconds one measurement may take (default 1800)")
    parser.add_argument("--breakdown", action="store_true")
    args = parser.parse_args()
    args.rtt_given = args.rtt is not None
    args.rtt = 0.5 if args.rtt is None else args.rtt
    args.hosts = args.hosts or (20_000 if args.breakdown else 1_000_000)
    trees = [tree.resolve() for tree in args.tree] or [ROOT]
    if args.breakdown:
        for tree in trees:
            breakdown(tree, args)
        return
    samples: dict[str, list[dict[str, Any]]] = {"floor": []}
    labels = {(tree, runner): f"{runner} ({tree.name})" for tree in trees
              for runner in args.runners.split(",")}
    for _ in range(args.repeat):
        samples["floor"].append(measure(trees[0], "floor", args))
        for (tree, runner), label in labels.items():
            samples.setdefault(label, []).append(measure(tree, runner, args))
            print(f"  {label}: {samples[label][-1]['wall']:.2f} s", file=sys.stderr, flush=True)
    uptime = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else []
    report(samples, args)
    print(f"load average at the end: {' '.join(uptime)}")


if __name__ == "__main__":
    main()
