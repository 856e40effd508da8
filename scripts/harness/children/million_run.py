"""A million hosts in flight, one measurement in this fresh process (scripts/bench_million.py):
the spec ``{"kind": "floor" | "asyncio" | "processpool", "hosts", "rtt", "loop", "procs"}``;
printed: the run's wall and this process's RSS before the inventory, after it, at its peak,
and its largest child's peak (KiB)."""

from __future__ import annotations

import math
import resource
from typing import Any

from harness.child import child_main
from harness.fleets import run_checked, synthetic
from harness.timing import loop_floor
from nornir_bench.tasks import asim_rtt


def rss_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def measure(spec: dict[str, Any]) -> dict[str, float]:
    kind, hosts, rtt, loop_name = spec["kind"], spec["hosts"], spec["rtt"], spec["loop"]
    base = rss_kib()
    if kind == "floor":
        loaded = base
        wall = loop_floor(loop_name, hosts, rtt)
    else:
        options: dict[str, Any] = {"num_workers": hosts, "loop": loop_name}
        if kind != "asyncio":
            options = {"num_workers": math.ceil(hosts / spec["procs"]), "num_procs": spec["procs"],
                       "loop": loop_name, "keep_workers": False}
        nr = synthetic(kind, hosts, **options)
        loaded = rss_kib()
        wall = run_checked(nr, asim_rtt, rtt=rtt)
    return {
        "wall": wall, "base_kib": base, "loaded_kib": loaded,
        "peak_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "largest_child_kib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
    }


if __name__ == "__main__":
    child_main(measure)
