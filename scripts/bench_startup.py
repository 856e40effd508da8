#!/usr/bin/env python3
"""Start-up cost: what importing nornir-bench and starting its commands costs, whole process.

    python scripts/bench_startup.py [--repeat 9] [--base DIR] [--quick] [--record PATH]

Measures, each in a fresh interpreter (this one, ``sys.executable``):

- ``python -c pass``: the interpreter's own start, the floor of every row below;
- ``import nornir_bench``, script.py's own imports (``from nornir_bench.cli import
  script_entry``), and every import of a whole ``script.py`` run (those its run makes too,
  such as ``InitNornir``'s plugins): what they import, from ``python -X importtime``;
- ``nornir-bench --help``: the whole process, as the console script runs it;
- ``script.py 1000 0.05`` and ``script.py 10000 0.05 --runner asyncio``: the README's benchmark
  and its asyncio twin, 10,000 hosts, whole process, as the study timed it.

``--base DIR`` measures another checkout of nornir-bench side by side (e.g. the code before a
change: ``git worktree add /tmp/base REV``), interleaved run by run with this one so machine
noise hits both alike. Each tree is put first on ``PYTHONPATH``; ``PYTHONDONTWRITEBYTECODE`` is
unset and every command runs once before timing, so byte code is compiled and cached as an
installed package's would be. Prints min and median of ``--repeat`` runs as a Markdown table.
``--quick``: 1 repeat, the script.py runs on 100 hosts.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import harness
from harness.child import ROOT as HERE
from harness.child import child_env
from harness.children import marked_imports
from harness.children.marked_imports import START

PARSER = harness.parser(__doc__)
PARSER.add_argument("--repeat", type=harness.whole(), help="runs per measure (default 9)")
PARSER.add_argument("--base", type=Path, help="another checkout, measured side by side")

# The command, without its console script's launcher file.
HELP = ["-m", "nornir_bench", "--help"]
# A module imported by the statement itself, not by another module: its cumulative time.
IMPORT_TIME = re.compile(r"^import time:\s+\d+ \|\s+(\d+) \| \S", re.MULTILINE)


def environment(tree: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return child_env(tree, env)


def wall(argv: list[str], tree: Path) -> float:
    """Seconds from spawning ``python argv`` to its exit."""
    start = time.perf_counter()
    subprocess.run([sys.executable, *argv], env=environment(tree), cwd=tree, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def import_time(*statement: str) -> Callable[[Path], float]:
    """Seconds of the imports a statement makes (``-X importtime``), not the interpreter's:
    ``import MODULE`` or ``run SCRIPT ARGS...`` (:mod:`harness.children.marked_imports`)."""

    def measure(tree: Path) -> float:
        done = subprocess.run(
            [sys.executable, "-X", "importtime", marked_imports.__file__, *statement],
            env=environment(tree), cwd=tree, check=True, capture_output=True, text=True,
        )
        ours = done.stderr.split(START)[-1]
        return sum(int(found) for found in IMPORT_TIME.findall(ours)) / 1e6

    return measure


def measures(quick: bool = False) -> dict[str, Callable[[Path], float]]:
    """Each measure by its name; ``quick``: the script.py runs on 100 hosts."""
    more = ["--hosts", "100"] if quick else []

    def script(*args: str) -> Callable[[Path], float]:
        return lambda tree: wall([str(tree / "scripts" / "script.py"), *args, *more], tree)

    def script_imports(*args: str) -> Callable[[Path], float]:
        return import_time("run", "scripts/script.py", *args, *more)

    found = {
        "python -c pass (floor)": lambda tree: wall(["-c", "pass"], tree),
        "import nornir_bench (-X importtime)": import_time("import", "nornir_bench"),
        "script.py's imports (-X importtime)": import_time("import", "nornir_bench.cli.script"),
        "script.py 1000 0.05, every import (-X importtime)": script_imports("1000", "0.05"),
        "script.py 10000 0.05 --runner asyncio, every import (-X importtime)": script_imports(
            "10000", "0.05", "--runner", "asyncio"
        ),
        "nornir-bench --help": lambda tree: wall(HELP, tree),
        "script.py 1000 0.05": script("1000", "0.05"),
        "script.py 10000 0.05 --runner asyncio": script("10000", "0.05", "--runner", "asyncio"),
    }
    if not quick:
        return found
    return {name.replace(" 0.05", " 0.05 --hosts 100"): call for name, call in found.items()}


def row(cells: list[str]) -> str:
    return f"| {' | '.join(cells)} |"


def main(bench: harness.Bench) -> None:
    args = bench.args
    repeat = args.repeat or (1 if bench.quick else 9)
    trees = {"base": args.base.resolve(), "this": HERE} if args.base else {"this": HERE}
    chosen = measures(bench.quick)
    sides = {(name, label): partial(measure, tree) for name, measure in chosen.items()
             for label, tree in trees.items()}
    # a run of each first, not timed: byte code compiled and cached
    samples = harness.alternate({f"{n}\0{label}": call for (n, label), call in sides.items()},
                                repeat, warm=True)

    print(f"## start-up, ms: min / median of {repeat} runs; {sys.executable}")
    header = ["measure", *trees, *(["this / base (median)"] if args.base else [])]
    print(row(header))
    print(row(["---"] * len(header)))
    for name in chosen:
        cells = [name]
        for label in trees:
            runs = harness.Spread.of(samples[f"{name}\0{label}"], 1000)
            cells.append(f"{runs.low:.0f} / {runs.median:.0f}")
            bench.record({"ms": runs.values}, measure=name, tree=str(trees[label]))
        if args.base:
            medians = [harness.Spread.of(samples[f"{name}\0{label}"]).median
                       for label in ("this", "base")]
            cells.append(f"{medians[0] / medians[1]:.2f}")
        print(row(cells))
    for label, tree in trees.items():
        print(f"{label}: {tree}")


if __name__ == "__main__":
    harness.run_script(main, PARSER)
