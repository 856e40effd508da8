"""The asyncio runner against bare coroutines, one measurement in this fresh process
(scripts/bench_asyncio.py --memory): the spec ``{"kind": "floor" | "runner", "loop": NAME,
"hosts": N, "rtt": S}``; printed: the run's wall and the process's peak RSS before the
inventory, after it and at the end (KiB)."""

from __future__ import annotations

import resource
from typing import Any

from nornir.core import Nornir

from harness.child import child_main
from harness.fleets import run_checked, synthetic
from harness.timing import loop_floor
from nornir_bench.tasks import asim_rtt


def build(loop_name: str, hosts: int) -> Nornir:
    """The asyncio runner on ``hosts`` synthetic hosts, every host in flight."""
    return synthetic("asyncio", hosts, num_workers=hosts, loop=loop_name)


def runner_run(nr: Nornir, rtt: float) -> float:
    return run_checked(nr, asim_rtt, rtt=rtt)


def measure(spec: dict[str, Any]) -> dict[str, float]:
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    nr = build(spec["loop"], spec["hosts"]) if spec["kind"] == "runner" else None
    loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    wall = (runner_run(nr, spec["rtt"]) if nr is not None
            else loop_floor(spec["loop"], spec["hosts"], spec["rtt"]))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"wall": wall, "rss_base_kib": base, "rss_loaded_kib": loaded, "rss_peak_kib": peak}


if __name__ == "__main__":
    child_main(measure)
