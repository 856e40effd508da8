#!/usr/bin/env python3
"""Run-phase cost of every runner, side by side for two (or more) checkouts of the package.

    python scripts/bench_core.py [--tree PATH ...] [--hosts 10000] [--repeat 5] [--quick]
                                 [--record PATH]

For each checkout given with ``--tree`` (default: this one), a fresh interpreter imports the
package from that checkout (``PYTHONPATH``) and times ``nr.run`` with ``perf_counter``
(:mod:`harness.children.core_run`):

- ``sim_rtt`` 50 ms on threadpool (1,000 workers) and ``asim_rtt`` 50 ms on asyncio (10,000);
- ``asim_rtt`` 50 ms on processpool (2 processes x 5,000): the first run (workers started) and
  the second (workers kept);
- a no-op task, per host: threadpool (100 workers), asyncio (1,000), processpool (kept run).

Checkouts alternate within each repeat, so machine noise hits them alike; the table gives the
median and min-max of each measure per checkout. Use it to compare the code before a change
with the code after (``git worktree add ../before HEAD~3``). ``--quick``: 200 hosts, 1 repeat.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import harness
from harness.child import ROOT, ChildFailed, run_child

PARSER = harness.parser(__doc__)
PARSER.add_argument("--tree", action="append", type=Path, default=[])
PARSER.add_argument("--hosts", type=harness.whole())
PARSER.add_argument("--repeat", type=harness.whole())

CHILD_SECONDS = 600.0


def measure(tree: Path, hosts: int) -> dict[str, float]:
    try:
        figures: dict[str, float] = run_child("harness.children.core_run", {"hosts": hosts},
                                              timeout=CHILD_SECONDS, tree=tree, cwd=tree)
    except ChildFailed as exc:
        raise SystemExit(f"bench_core: {tree}: {exc}") from None
    return figures


def main(bench: harness.Bench) -> None:
    args = bench.args
    hosts = args.hosts or (200 if bench.quick else 10_000)
    repeat = args.repeat or (1 if bench.quick else 5)
    trees = [tree.resolve() for tree in args.tree] or [ROOT]
    runs = harness.alternate({str(tree): partial(measure, tree, hosts) for tree in trees},
                             repeat)
    keys = list(runs[str(trees[0])][0])
    print(f"{hosts} hosts, medians (min-max) of {repeat}")
    print("| measure | " + " | ".join(tree.name for tree in trees) + " |")
    print("|---|" + "---|" * len(trees))
    for key in keys:
        cells = [harness.Spread.of(run[key] for run in runs[str(tree)]).text()
                 for tree in trees]
        print(f"| {key} | " + " | ".join(cells) + " |")
    for tree in trees:
        bench.record({key: [run[key] for run in runs[str(tree)]] for key in keys},
                     tree=str(tree), hosts=hosts)


if __name__ == "__main__":
    harness.run_script(main, PARSER)
