"""Run-phase cost of every runner, in this fresh process importing the ``nornir_bench`` of the
checkout under measure (scripts/bench_core.py): the spec ``{"hosts": N}``; printed: each
measure's seconds (or µs a host). Only public names of the package, which every checkout
measured has."""

from __future__ import annotations

from typing import Any

from harness.child import child_main
from harness.fleets import close, noop, run_checked, synthetic
from nornir_bench.tasks import asim_rtt, sim_rtt


def measure(spec: dict[str, Any]) -> dict[str, float]:
    hosts = spec["hosts"]
    per_host = 1e6 / hosts
    out = {
        "threadpool sim_rtt 50 ms, 1000 workers (s)": run_checked(
            synthetic("threadpool", hosts, num_workers=1000), sim_rtt, rtt=0.05),
        "asyncio asim_rtt 50 ms, 10000 workers (s)": run_checked(
            synthetic("asyncio", hosts, num_workers=10_000), asim_rtt, rtt=0.05),
    }
    nr = synthetic("processpool", hosts, num_workers=5_000, num_procs=2)
    out["processpool asim_rtt 50 ms, first run (s)"] = run_checked(nr, asim_rtt, rtt=0.05)
    out["processpool asim_rtt 50 ms, kept run (s)"] = run_checked(nr, asim_rtt, rtt=0.05)
    out["processpool no-op, kept run (us/host)"] = run_checked(nr, noop) * per_host
    close(nr)
    out["threadpool no-op, 100 workers (us/host)"] = run_checked(
        synthetic("threadpool", hosts, num_workers=100), noop) * per_host
    out["asyncio no-op, 1000 workers (us/host)"] = run_checked(
        synthetic("asyncio", hosts, num_workers=1000), noop) * per_host
    return out


if __name__ == "__main__":
    child_main(measure)
