#!/usr/bin/env python3
"""A million hosts, every one in flight: run time and memory per host, against the bare floor.

    python scripts/bench_million.py [--hosts 1000000] [--rtt 0.5] [--repeat 3] [--tree PATH ...]
                                    [--runners asyncio,processpool] [--loop uvloop]
    python scripts/bench_million.py --breakdown [--hosts 20000] [--tree PATH]
    python scripts/bench_million.py --quick [--breakdown] [--record PATH]

Each measurement runs in a fresh process (:mod:`harness.children.million_run`), so its peak
memory is its own:

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
nornir's own result objects cost alone, the floor of any runner returning nornir's results
(:mod:`harness.children.million_breakdown`). ``--quick``: 2,000 hosts at 50 ms, 1 repeat
(``--breakdown``: 200 hosts, 1 s).
"""

from __future__ import annotations

import json
import subprocess
from functools import partial
from pathlib import Path
from typing import Any

import harness
from harness.child import ROOT, ChildFailed, child_command, child_env, run_child
from harness.memory import PeakMemory

PARSER = harness.parser(__doc__)
PARSER.add_argument("--hosts", type=harness.whole(), default=None,
                    help="default 1,000,000 (20,000 with --breakdown)")
PARSER.add_argument("--rtt", type=harness.number(), default=None, help="seconds (default 0.5)")
PARSER.add_argument("--repeat", type=harness.whole())
PARSER.add_argument("--tree", action="append", type=Path, default=[])
PARSER.add_argument("--runners", default="asyncio,processpool")
PARSER.add_argument("--loop", default="uvloop", choices=("uvloop", "asyncio"))
PARSER.add_argument("--timeout", type=harness.number(), default=1800,
                    help="seconds one measurement may take (default 1800)")
PARSER.add_argument("--breakdown", action="store_true")


def measure(tree: Path, kind: str, args: Any) -> dict[str, Any]:
    """One measurement in a fresh process importing nornir-bench from ``tree``, the peak of
    its process tree's memory sampled every 0.1 s meanwhile."""
    spec = {"kind": kind, "hosts": args.hosts, "rtt": args.rtt, "loop": args.loop, "procs": 2}
    child = subprocess.Popen(
        child_command("harness.children.million_run", json.dumps(spec)), cwd=tree,
        env=child_env(tree), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        with PeakMemory(child.pid, every=0.1) as peak:
            out, err = child.communicate(timeout=args.timeout)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        raise SystemExit(f"bench_million: {kind} from {tree} ran past {args.timeout} s") from None
    if child.returncode != 0:
        raise SystemExit(f"bench_million: {kind} from {tree}: {err.strip().splitlines()[-3:]}")
    record: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    record["peak_tree_kib"] = peak.kib
    return record


def mib(kib: float) -> str:
    return f"{kib / 1024:,.0f} MiB"


def report(bench: harness.Bench, samples: dict[str, list[dict[str, Any]]], args: Any) -> None:
    hosts = args.hosts
    floor_wall = harness.Spread.of(r["wall"] for r in samples["floor"]).median
    print(f"## {hosts:,} hosts, RTT {args.rtt:g} s, loop {args.loop}; "
          f"median (min-max) of {args.repeat}; bytes per host: peak / hosts (run added)")
    print("| what | run s | / floor | peak | bytes per host | run added per host |")
    print("|---|---|---|---|---|---|")
    for label, runs in samples.items():
        walls = harness.Spread.of(r["wall"] for r in runs)
        tree_wide = "processpool" in label
        peaks = [max(r["peak_tree_kib"], r["peak_kib"]) if tree_wide else r["peak_kib"]
                 for r in runs]
        peak = harness.Spread.of(peaks).median
        added = harness.Spread.of(p - r["loaded_kib"] for p, r in zip(peaks, runs, strict=True))
        print(f"| {label} | {walls.median:.2f} ({walls.low:.2f}-{walls.high:.2f}) | "
              f"{walls.median / floor_wall:.2f} | {mib(peak)} | {peak * 1024 / hosts:,.0f} | "
              f"{added.median * 1024 / hosts:,.0f} |")
        bench.record({"runs": runs}, what=label, hosts=hosts, rtt=args.rtt, loop=args.loop)
    for label, runs in samples.items():
        if "processpool" in label:
            parent = harness.Spread.of(r["peak_kib"] for r in runs).median
            largest = harness.Spread.of(r["largest_child_kib"] for r in runs).median
            print(f"{label}: parent's peak {mib(parent)}, largest worker's {mib(largest)}"
                  " (the sum over the process tree is in the table)")


def breakdown(bench: harness.Bench, tree: Path, args: Any) -> None:
    rtt = args.rtt if args.rtt_given else 10.0  # long enough for every host to start first
    if bench.quick and not args.rtt_given:
        rtt = 1.0
    try:
        figures = run_child("harness.children.million_breakdown",
                            {"hosts": args.hosts, "rtt": rtt}, timeout=args.timeout, tree=tree,
                            cwd=tree)
    except ChildFailed as exc:
        raise SystemExit(f"bench_million --breakdown: {exc}") from None
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
    bench.record(figures, tree=str(tree), hosts=args.hosts, rtt=rtt)


def main(bench: harness.Bench) -> None:
    args, quick = bench.args, bench.quick
    args.rtt_given = args.rtt is not None
    args.rtt = args.rtt if args.rtt is not None else (0.05 if quick else 0.5)
    args.repeat = args.repeat or (1 if quick else 3)
    args.hosts = args.hosts or (
        (200 if quick else 20_000) if args.breakdown else (2_000 if quick else 1_000_000))
    trees = [tree.resolve() for tree in args.tree] or [ROOT]
    if args.breakdown:
        for tree in trees:
            breakdown(bench, tree, args)
        return
    sides = {"floor": partial(measure, trees[0], "floor", args)}
    for tree in trees:
        for runner in args.runners.split(","):
            sides[f"{runner} ({tree.name})"] = partial(measure, tree, runner, args)
    samples = harness.alternate(sides, args.repeat)
    uptime = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else []
    report(bench, samples, args)
    print(f"load average at the end: {' '.join(uptime)}")


if __name__ == "__main__":
    harness.run_script(main, PARSER)
