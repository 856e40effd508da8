"""The dask runner's scale plan (scripts/bench_dask.py --scale): the model, checked against
runs measured here, and its predictions for 100,000 and 1,000,000 hosts."""

from __future__ import annotations

import math
import os

import harness
from dask_bench.scale import chunk_cost, per_host_costs, refill_latency, scheduler_rate
from harness.tables import table

__all__ = ["MODEL_RESOURCES", "predict", "scale"]


MODEL_RESOURCES = ("waiting", "parent CPU", "scheduler CPU", "worker CPU")


def predict(hosts: int, workers: int, num_workers: int, rtt: float, costs: dict[str, float],
            *, task: str = "", cores: int | None = None, chunk_size: int | None = None,
            ) -> tuple[float, str, int]:
    """The scale plan's model. Each resource's busy time: the rounds of round trips, each
    round also a chunk's round trip (a host's place on its worker is free again only once its
    chunk is back, and the next chunk there), the parent's CPU, the
    scheduler's, one worker's (each process a core of its own), or with ``cores`` all of it on
    that many cores (this machine); the run takes the largest, plus one round trip that
    nothing overlaps when that is not the waiting. ``task``: ``"parse_"`` for the CPU and
    results of ``parse_interfaces``. Returns (wall, bottleneck, chunk size)."""
    from nornir_bench.runners.dask.chunks import default_chunk_size

    chunk = chunk_size or default_chunk_size(hosts, workers, num_workers)
    chunks = math.ceil(hosts / chunk)
    refill = costs["refill"]
    parent = hosts * costs[f"{task}parent_per_host"] + chunks * costs["parent_per_chunk"]
    scheduler = chunks * costs["scheduler_per_chunk"]
    worker = hosts * costs[f"{task}worker_per_host"] + chunks * costs["worker_per_chunk"]
    busy = {
        "waiting": math.ceil(hosts / (workers * num_workers)) * (rtt + refill),
        "parent CPU": parent,
        "scheduler CPU": scheduler,
        "worker CPU": worker / workers,
    }
    if cores is not None:
        busy["all CPU on the machine"] = (parent + scheduler + worker) / cores
    bottleneck = max(busy, key=busy.__getitem__)
    return busy[bottleneck] + (rtt if bottleneck != "waiting" else 0.0), bottleneck, chunk


def scale(bench: harness.Bench, repeat: int, procs: int, fraction: float) -> None:
    print(f"## scale: what the plan is computed from ({procs} worker processes, median of "
          f"{repeat})\n")
    costs = scheduler_rate(bench, repeat, procs, fraction)
    costs |= chunk_cost(bench, repeat, procs, fraction)
    costs |= refill_latency(bench, repeat, procs, fraction)
    costs |= per_host_costs(bench, repeat, procs, fraction)
    print("## the model against runs measured here (its processes sharing this machine's "
          f"{os.cpu_count()} cores)\n")
    hosts = int(costs["hosts_10k"])
    rounds_hosts = int(costs["rounds_check_hosts"])
    checks = [
        (f"asim_rtt 50 ms, {procs} x {hosts // procs}", hosts, hosts // procs, 0.05, None,
         costs["wall_10k"]),
        (f"asim_rtt 50 ms, {procs} x 100", rounds_hosts, 100, 0.05, None,
         costs["rounds_check"]),
        ("no-op, all in flight, chunks of 10", int(costs["chunks_hosts"]),
         int(costs["chunks_hosts"]) // procs, 0.0, 10, costs["chunks_of_10"]),
    ]
    rows = []
    for label, count, n, rtt, chunk_size, measured in checks:
        wall, bottleneck, chunk = predict(count, procs, n, rtt, costs, cores=os.cpu_count(),
                                          chunk_size=chunk_size)
        rows.append([label, f"{count:,}", str(chunk), f"{wall:.3f} s", bottleneck,
                     f"{measured:.3f} s"])
    table(["run", "hosts", "chunk", "predicted", "bottleneck", "measured"], rows, bench)
    print("## predictions: asim_rtt, a cluster already running, W workers x n hosts each\n")
    rows = []
    for hosts in (100_000, 1_000_000):
        for rtt in (0.05, 1.0):
            for workers in (4, 16, 64):
                row = [f"{hosts:,}", f"{rtt:g} s", str(workers)]
                for n in (100, 1000):
                    wall, bottleneck, chunk = predict(hosts, workers, n, rtt, costs)
                    row += [str(chunk), f"{wall:.1f} s ({bottleneck})"]
                rows.append(row)
    table(["hosts", "RTT", "W", "chunk, n=100", "wall, n=100", "chunk, n=1000",
           "wall, n=1000"], rows, bench)
    print("## predictions: parse_interfaces (its CPU and its results), n=1000\n")
    rows = []
    for hosts in (100_000, 1_000_000):
        row = [f"{hosts:,}"]
        for workers in (4, 16, 64):
            wall, bottleneck, _ = predict(hosts, workers, 1000, 0.05, costs, task="parse_")
            row.append(f"{wall:.0f} s ({bottleneck})")
        row.append(f"{hosts * costs['parse_back'] / 2**20:,.0f} MiB")
        rows.append(row)
    table(["hosts", "W=4", "W=16", "W=64", "results into the parent"], rows, bench)
    smallest = math.ceil(costs["scheduler_per_chunk"] / costs["parent_per_host"])
    print(f"the scheduler stays below the parent while chunk_size >= scheduler CPU per chunk / "
          f"parent CPU per host = {costs['scheduler_per_chunk'] * 1e3:.2f} ms / "
          f"{costs['parent_per_host'] * 1e6:.1f} µs = {smallest} hosts\n")
    print("costs used: " + ", ".join(f"{k}={v:.3g}" for k, v in sorted(costs.items())))
