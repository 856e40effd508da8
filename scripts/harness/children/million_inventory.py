"""1,000,000 synthetic hosts loaded in this fresh process (scripts/bench_inventory.py
--million): the load's seconds and the process's peak RSS before and after it (KiB)."""

from __future__ import annotations

import resource
import time
from typing import Any

from harness.child import child_main
from nornir_bench import SyntheticInventory


def load(spec: dict[str, Any]) -> dict[str, float]:
    hosts = spec["hosts"]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    inventory = SyntheticInventory(hosts=hosts, groups=10).load()
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if len(inventory.hosts) != hosts:
        raise SystemExit(f"{len(inventory.hosts)} hosts loaded, not {hosts}")
    return {"seconds": elapsed, "before_kib": before, "after_kib": after}


if __name__ == "__main__":
    child_main(load)
