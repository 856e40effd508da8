"""--dask-connections: runs that hang. A fresh process each run
(:mod:`harness.children.dask_connections`), killed at a timeout (a *hang*), while busy processes
spin on the cores; the logins each run counted (40 when connections are kept across runs)."""

from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path

import harness
from harness.child import child_command, child_env
from harness.children.dask_connections import HOSTS, LOGINS_FILE
from harness.owned import Busy, Child

__all__ = ["dask_connections", "median_max"]


def median_max(values: list[float]) -> str:
    if not values:
        return "n/a"
    spread = harness.Spread.of(values)
    return f"median {spread.median:.1f} s, max {spread.high:.1f} s"


def dask_connections(bench: harness.Bench, work: Path, runs: int, busy: int,
                     timeout: float) -> None:
    print(f"\n## dask-connections: {runs} runs, {HOSTS} hosts, dask num_workers 10 (embedded "
          f"cluster), 3 nr.run each; {busy} busy processes; a run killed at {timeout:g} s",
          flush=True)
    hangs, failures, walls, left = 0, Counter[str](), [], 0
    logins = Counter[int]()
    with Busy(busy):
        for number in range(1, runs + 1):
            count = work / f"logins-{number}"
            count.touch()
            env = {**os.environ, LOGINS_FILE: str(count)}
            with Child(child_command("harness.children.dask_connections"), work,
                       f"dask-{number}", child_env(env=env)) as child:
                status = child.wait(timeout)
                wall = time.perf_counter() - child.began
            left += child.left
            said = (child.output().strip().splitlines() or [""])[-1][:200]
            done = len(count.read_text().splitlines())
            if status is None:
                hangs += 1
                print(f"run {number}: HANG, killed at {timeout:g} s ({done} logins)", flush=True)
                continue
            walls.append(wall)
            logins[done] += 1
            if status != 0:
                out = child.output("out").strip().splitlines()
                failures[f"exit {status}: {said or (out or [''])[-1][:200]}"] += 1
                print(f"run {number}: FAILED, exit {status}: {said}", flush=True)
            elif done != HOSTS:
                print(f"run {number}: {done} logins, not {HOSTS}", flush=True)
    per_run = ", ".join(f"{n} ({c} runs)" for n, c in sorted(logins.items())) or "n/a"
    print(f"dask-connections: runs {runs}, hangs {hangs}, failures {sum(failures.values())}, "
          f"logins per run {per_run}, wall {median_max(walls)}, processes left {left}")
    bench.record({"hangs": hangs, "failures": dict(failures), "logins": dict(logins),
                  "walls": walls, "left": left}, part="dask-connections", runs=runs,
                 busy=busy, timeout=timeout)
    for why, times in failures.most_common():
        print(f"  {times}x {why}")
