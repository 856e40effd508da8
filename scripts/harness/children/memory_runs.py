"""Many runs in one process (scripts/bench_memory.py): one Nornir of synthetic hosts, runs of
``sim_rtt``/``asim_rtt`` with RTT 0 and failing hosts, each result kept until the next one
replaces it. The spec ``{"runner", "hosts", "runs", "fail_rate"}``; after each run a JSON line:
its seconds, failed hosts, RSS (MiB), threads, open file descriptors, objects the garbage
collector tracks."""

from __future__ import annotations

import gc
import json
import logging
import os
import threading
import time
from typing import Any

from harness.child import child_main
from harness.fleets import synthetic
from nornir_bench.tasks import asim_rtt, sim_rtt


def rss_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def runs(spec: dict[str, Any]) -> None:
    runner, hosts, count, fail_rate = spec["runner"], spec["hosts"], spec["runs"], spec["fail_rate"]
    logging.getLogger().addHandler(logging.NullHandler())  # no failure tracebacks on the terminal
    nr = synthetic(runner, hosts) if runner == "serial" else synthetic(runner, hosts,
                                                                         num_workers=100)
    task = asim_rtt if getattr(nr.runner, "prefers_async_tasks", False) else sim_rtt
    result = None
    for i in range(count):
        start = time.perf_counter()
        result = nr.run(task=task, rtt=0, fail_rate=fail_rate, seed=i, on_failed=True)
        elapsed = time.perf_counter() - start
        print(json.dumps({
            "run": i + 1, "seconds": elapsed, "failed": len(result.failed_hosts),
            "rss_mib": rss_mib(), "threads": threading.active_count(),
            "fds": len(os.listdir("/proc/self/fd")), "objects": len(gc.get_objects()),
        }), flush=True)


if __name__ == "__main__":
    child_main(runs)
