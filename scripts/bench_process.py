#!/usr/bin/env python3
"""Whole-process benchmark, as the study timed it: `script.py` in a fresh process per run.

    python scripts/bench_process.py [--rtt 0.05] [--hosts 10000] [--repeat 5]
                                    [--points threaded:1000,threaded:10000,asyncio:10000,go:0]

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
it is left out, saying so.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "script.py"
GO_SOURCE = Path(__file__).resolve().parent / "gornir_standin"
# Byte code cached, as an installed package's is (pip compiles it on install): a
# PYTHONDONTWRITEBYTECODE in this shell would make every run compile the package again.
ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


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
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=ENV)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rtt", type=float, default=0.05)
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--points", default="threaded:1000,threaded:10000,threadpool:1000,asyncio:10000"
    )
    args = parser.parse_args()
    points = [(p.split(":")[0], int(p.split(":")[1])) for p in args.points.split(",")]
    with tempfile.TemporaryDirectory(prefix="bench-process-") as folder:
        go = build_go(folder) if any(runner == "go" for runner, _ in points) else None
        if go is None and any(runner == "go" for runner, _ in points):
            print("go: no go command, the Go stand-in is left out")
            points = [point for point in points if point[0] != "go"]
        samples: dict[tuple[str, int], list[tuple[float, float, float]]] = {p: [] for p in points}
        for runner, workers in points:  # a run of each first: byte code written, caches warm
            one_run(runner, workers, args.rtt, args.hosts, go)
        for _ in range(args.repeat):
            for runner, workers in points:
                samples[(runner, workers)].append(
                    one_run(runner, workers, args.rtt, args.hosts, go)
                )

    medians = {p: statistics.median(s[0] for s in runs) for p, runs in samples.items()}
    threaded = [m for (runner, _), m in medians.items() if runner == "threaded"]
    best_threaded = min(threaded) if threaded else None
    go_wall = next((m for (runner, _), m in medians.items() if runner == "go"), None)
    print(f"## whole process, {args.hosts} hosts, RTT {args.rtt * 1000:.0f} ms, "
          f"median of {args.repeat} (min-max); {sys.executable}")
    for (runner, workers), runs in samples.items():
        walls = [r[0] for r in runs]
        user = statistics.median(r[1] for r in runs)
        sys_ = statistics.median(r[2] for r in runs)
        wall = medians[(runner, workers)]
        line = (f"{runner:>10} {workers:>6} workers: "
                f"wall {wall:.3f} s ({min(walls):.3f}-{max(walls):.3f}), "
                f"user {user:.2f} s, sys {sys_:.2f} s, cpu {100 * (user + sys_) / wall:.0f} %")
        if best_threaded:
            line += f", {best_threaded / wall:.2f} x faster than the best threaded"
        if go_wall and runner != "go":
            line += f", {wall / go_wall:.2f} x the Go stand-in's wall"
        print(line)


if __name__ == "__main__":
    main()
