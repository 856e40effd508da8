#!/usr/bin/env python3
"""Run-phase cost of every runner, side by side for two (or more) checkouts of the package.

    python scripts/bench_core.py [--tree PATH ...] [--hosts 10000] [--repeat 5] [--json PATH]

For each checkout given with ``--tree`` (default: this one), a fresh interpreter imports the
package from that checkout (``PYTHONPATH``) and times ``nr.run`` with ``perf_counter``:

- ``sim_rtt`` 50 ms on threadpool (1,000 workers) and ``asim_rtt`` 50 ms on asyncio (10,000);
- ``asim_rtt`` 50 ms on processpool (2 processes x 5,000): the first run (workers started) and
  the second (workers kept);
- a no-op task, per host: threadpool (100 workers), asyncio (1,000), processpool (kept run).

Checkouts alternate within each repeat, so machine noise hits them alike; the table gives the
median and min-max of each measure per checkout. Use it to compare the code before a change
with the code after (``git worktree add ../before HEAD~3``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time
from nornir import InitNornir
from nornir_bench.tasks import asim_rtt, sim_rtt

hosts = int(sys.argv[1])

def noop(task):
    return None

def build(runner, **options):
    return InitNornir(
        inventory={"plugin": "synthetic", "options": {"hosts": hosts}},
        runner={"plugin": runner, "options": options},
        logging={"enabled": False},
    )

def timed(nr, task, **params):
    started = time.perf_counter()
    result = nr.run(task=task, **params)
    elapsed = time.perf_counter() - started
    assert not result.failed and len(result) == hosts
    return elapsed

out = {}
out["threadpool sim_rtt 50 ms, 1000 workers (s)"] = timed(
    build("threadpool", num_workers=1000), sim_rtt, rtt=0.05)
out["asyncio asim_rtt 50 ms, 10000 workers (s)"] = timed(
    build("asyncio", num_workers=10_000), asim_rtt, rtt=0.05)
nr = build("processpool", num_workers=5_000, num_procs=2)
out["processpool asim_rtt 50 ms, first run (s)"] = timed(nr, asim_rtt, rtt=0.05)
out["processpool asim_rtt 50 ms, kept run (s)"] = timed(nr, asim_rtt, rtt=0.05)
out["processpool no-op, kept run (us/host)"] = timed(nr, noop) / hosts * 1e6
nr.runner.close()
out["threadpool no-op, 100 workers (us/host)"] = timed(
    build("threadpool", num_workers=100), noop) / hosts * 1e6
out["asyncio no-op, 1000 workers (us/host)"] = timed(
    build("asyncio", num_workers=1000), noop) / hosts * 1e6
print(json.dumps(out))
"""


def measure(tree: Path, hosts: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(hosts)],
        cwd=tree, env=env, capture_output=True, text=True, timeout=600, check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"bench_core: {tree}: {done.stderr.strip().splitlines()[-1:]}")
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", action="append", type=Path, default=[])
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", dest="json_path", type=Path, default=None)
    args = parser.parse_args()
    trees = [tree.resolve() for tree in args.tree] or [ROOT]
    samples: dict[str, dict[str, list[float]]] = {str(t): {} for t in trees}
    for _ in range(args.repeat):
        for tree in trees:
            for key, value in measure(tree, args.hosts).items():
                samples[str(tree)].setdefault(key, []).append(value)
    keys = list(next(iter(samples.values())))
    names = [tree.name for tree in trees]
    print(f"{args.hosts} hosts, medians (min-max) of {args.repeat}")
    print("| measure | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for key in keys:
        cells = []
        for tree in trees:
            values = samples[str(tree)][key]
            cells.append(
                f"{statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f})"
            )
        print(f"| {key} | " + " | ".join(cells) + " |")
    if args.json_path is not None:
        args.json_path.write_text(json.dumps(samples, indent=1))


if __name__ == "__main__":
    main()
