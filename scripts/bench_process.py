#!/usr/bin/env python3
"""Whole-process benchmark, as the study timed it: `script.py` in a fresh process per run.

    python scripts/bench_process.py [--rtt 0.05] [--hosts 10000] [--repeat 5]
                                    [--points threaded:1000,threaded:10000,asyncio:10000,go:0]
                                    [--quick] [--record PATH]

Each point runs ``scripts/script.py WORKERS RTT --runner R`` with this interpreter
(``sys.executable``, so no launcher script such as a version manager's shim adds its own start-up)
and is timed from outside, start to exit, as ``time`` did in the study; the child's own user
and sys CPU come from ``resource.getrusage(RUSAGE_CHILDREN)``. Points are interleaved, so
machine noise hits them alike, after one run of each that is not counted (byte code written
and cached, as an installed package's is: ``PYTHONDONTWRITEBYTECODE`` is not passed on).
Prints medians with min-max, and each point's speed-up over the best nornir ``threaded``
point.

The point ``go:0`` is the study's Go side, gornir's design (``scripts/gornir_standin``: one
goroutine per host sleeping one RTT), built once with ``go build`` into a temporary folder and
timed the same way; each point is then also given as a multiple of it. Without a ``go`` command
it is left out, saying so. ``--quick``: 200 hosts, 10 ms, 1 repeat, threadpool with 50 workers
and asyncio with 200.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import harness

SCRIPT = Path(__file__).resolve().parent / "script.py"
GO_SOURCE = Path(__file__).resolve().parent / "gornir_standin"
# Byte code cached, as an installed package's is (pip compiles it on install): a
# PYTHONDONTWRITEBYTECODE in this shell would make every run compile the package again.
ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}

PARSER = harness.parser(__doc__)
PARSER.add_argument("--rtt", type=harness.number())
PARSER.add_argument("--hosts", type=harness.whole())
PARSER.add_argument("--repeat", type=harness.whole())
PARSER.add_argument("--points",
                    help="RUNNER:WORKERS,... (default threaded:1000,threaded:10000,"
                    "threadpool:1000,asyncio:10000; go:0 the Go stand-in)")


def build_go(folder: str) -> str | None:
    """The Go stand-in, built in ``folder``; ``None`` without a ``go`` command."""
    go = shutil.which("go")
    if go is None:
        return None
    binary = str(Path(folder) / "gornir_standin")
    subprocess.run([go, "build", "-o", binary, "."], cwd=GO_SOURCE, check=True)
    return binary


def one_run(
    runner: str, workers: int, rtt: float, hosts: int, go: str | None = None
) -> tuple[float, float, float]:
    """Wall, user and sys seconds of one ``script.py`` process (``go``: the Go stand-in's)."""
    argv = (
        [go, str(hosts), str(rtt)] if runner == "go" and go
        else [sys.executable, str(SCRIPT), str(workers), str(rtt),
              "--hosts", str(hosts), "--runner", runner]
    )
    with harness.Stopwatch() as took:
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=ENV)
    return took.wall, took.children_user, took.children_sys


def main(bench: harness.Bench) -> None:
    args, quick = bench.args, bench.quick
    rtt = args.rtt or (0.01 if quick else 0.05)
    hosts = args.hosts or (200 if quick else 10_000)
    repeat = args.repeat or (1 if quick else 5)
    spec = args.points or ("threadpool:50,asyncio:200" if quick else
                           "threaded:1000,threaded:10000,threadpool:1000,asyncio:10000")
    points = [(p.split(":")[0], int(p.split(":")[1])) for p in spec.split(",")]
    with tempfile.TemporaryDirectory(prefix="bench-process-") as folder:
        go = build_go(folder) if any(runner == "go" for runner, _ in points) else None
        if go is None and any(runner == "go" for runner, _ in points):
            print("go: no go command, the Go stand-in is left out")
            points = [point for point in points if point[0] != "go"]
        samples = harness.alternate(
            {f"{runner}:{workers}": functools.partial(one_run, runner, workers, rtt, hosts, go)
             for runner, workers in points},
            repeat, warm=True)  # a run of each first: byte code written, caches warm

    medians = {p: harness.Spread.of(s[0] for s in runs).median for p, runs in samples.items()}
    threaded = [m for point, m in medians.items() if point.startswith("threaded:")]
    best_threaded = min(threaded) if threaded else None
    go_wall = next((m for point, m in medians.items() if point.startswith("go:")), None)
    print(f"## whole process, {hosts} hosts, RTT {rtt * 1000:.0f} ms, "
          f"median of {repeat} (min-max); {sys.executable}")
    for point, runs in samples.items():
        runner, workers = point.split(":")
        walls = harness.Spread.of(r[0] for r in runs)
        user = harness.Spread.of(r[1] for r in runs).median
        sys_ = harness.Spread.of(r[2] for r in runs).median
        cpu = 100 * (user + sys_) / walls.median
        line = (f"{runner:>10} {int(workers):>6} workers: "
                f"wall {walls.median:.3f} s ({walls.low:.3f}-{walls.high:.3f}), "
                f"user {user:.2f} s, sys {sys_:.2f} s, cpu {cpu:.0f} %")
        if best_threaded:
            line += f", {best_threaded / walls.median:.2f} x faster than the best threaded"
        if go_wall and runner != "go":
            line += f", {walls.median / go_wall:.2f} x the Go stand-in's wall"
        print(line)
        bench.record({"wall": walls.values, "user": user, "sys": sys_}, runner=runner,
                     workers=int(workers), hosts=hosts, rtt=rtt)


if __name__ == "__main__":
    harness.run_script(main, PARSER)
