"""What the dask runner's scale plan is computed from (scripts/bench_dask.py --scale): the
embedded cluster's start, Dask's scheduler on tiny tasks, the runner's cost per chunk, a
chunk's round trip, CPU and bytes per host."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any
from unittest.mock import patch

import harness
from dask_bench.common import build, cpu_by_role, measured_run, med, shown, sized
from harness.fleets import anoop, closing, run_checked, warm
from harness.stats import fit
from harness.tables import table
from nornir_bench.core.plugins import init_nornir
from nornir_bench.tasks import asim_rtt, parse_interfaces

__all__ = ["chunk_cost", "per_host_costs", "refill_latency", "scheduler_rate"]


def tiny(x: int) -> int:
    return x


@contextmanager
def dask_client(procs: int) -> Iterator[tuple[Any, float]]:
    """A client of a fresh embedded cluster (the runner's own kind), and its start in seconds."""
    from nornir_bench.runners.dask.address import connect
    from nornir_bench.runners.dask.cluster import EmbeddedCluster

    start = time.perf_counter()
    cluster = EmbeddedCluster(workers=procs)
    try:
        cluster.start()
        client = connect(cluster.address, cluster.security, 60)
        try:
            client.wait_for_workers(procs, timeout=60)
            yield client, time.perf_counter() - start
        finally:
            client.close()
    finally:
        cluster.close()


def scheduler_rate(bench: harness.Bench, repeat: int, procs: int,
                   fraction: float) -> dict[str, float]:
    """Tiny tasks through Dask's scheduler: ``client.map`` of n, gathered."""
    starts: list[float] = []
    rates: dict[int, list[float]] = {2_000: [], 10_000: []}
    cpu_per_task: list[float] = []
    for _ in range(repeat):
        with dask_client(procs) as (client, started):
            starts.append(started)
            client.gather(client.map(tiny, range(100), pure=False))  # warm
            for n in rates:
                before = cpu_by_role().get("scheduler", 0.0)
                begin = time.perf_counter()
                client.gather(client.map(tiny, range(n), pure=False))
                rates[n].append(n / (time.perf_counter() - begin))
                cpu_per_task.append((cpu_by_role().get("scheduler", 0.0) - before) / n)
    print(f"embedded cluster start alone ({procs} workers, TLS; started, connected, workers "
          f"registered): {shown(starts)}")
    for n, samples in rates.items():
        print(f"client.map of {n:,} tiny tasks, gathered: {shown(samples, 'tasks/s', 1, 0)}")
    print(f"scheduler CPU per tiny task: {shown(cpu_per_task, 'µs', 1e6, 0)}\n", flush=True)
    return {"start": med(starts), "rate": med(rates[10_000]),
            "sched_per_task": med(cpu_per_task)}


def chunk_cost(bench: harness.Bench, repeat: int, procs: int, fraction: float,
               hosts: int = 10_000) -> dict[str, float]:
    """Runs of ``hosts`` no-op hosts, all in flight, in chunks of several sizes: each cost's
    slope against the number of chunks is its cost per chunk, its intercept over the hosts its
    cost per host."""
    hosts = sized(hosts, fraction)
    sizes = (10, 40, 200, 1250)
    runs: dict[int, list[dict[str, float]]] = {}
    for size in sizes:
        nr = build("dask", hosts, num_workers=hosts // procs, num_procs=procs, chunk_size=size)
        with closing(nr):
            warm(nr, anoop, 200)
            runs[size] = [measured_run(nr, anoop) for _ in range(repeat)]
    chunks = [float(math.ceil(hosts / size)) for size in sizes]
    medians = {key: [med([r[key] for r in runs[size]]) for size in sizes]
               for key in ("wall", "parent", "scheduler", "worker")}
    print(f"no-op on {hosts:,} hosts, all in flight, by chunk size (median of {repeat}; CPU in "
          "seconds):\n")
    table(["chunk_size", "chunks", "run", "per host", "parent CPU", "scheduler CPU",
           "workers' CPU"],
          [[str(size), f"{count:.0f}", shown([r["wall"] for r in runs[size]]),
            shown([r["wall"] for r in runs[size]], "µs", 1e6 / hosts, 1),
            f"{medians['parent'][i]:.3f}", f"{medians['scheduler'][i]:.3f}",
            f"{medians['worker'][i]:.3f}"]
           for i, (size, count) in enumerate(zip(sizes, chunks, strict=True))], bench)
    costs = {}
    for key in ("wall", "parent", "scheduler", "worker"):
        intercept, slope = fit(chunks, medians[key])
        costs[f"{key}_per_chunk"] = slope
        costs[f"{key}_per_host_noop"] = max(0.0, intercept) / hosts
        print(f"fit, {key}: {intercept:.3f} s + {slope * 1000:.3f} ms x chunks")
    print(flush=True)
    costs["chunks_of_10"] = medians["wall"][0]
    costs["chunks_hosts"] = hosts
    return costs


def refill_latency(bench: harness.Bench, repeat: int, procs: int, fraction: float,
                   hosts: int = 2_000) -> dict[str, float]:
    """A chunk's round trip when it fills its worker (``chunk_size == num_workers``): the worker
    idles until its chunk is back and the next one arrives."""
    hosts = sized(hosts, fraction)
    nr = build("dask", hosts, num_workers=20, num_procs=procs)
    with closing(nr):
        warm(nr, anoop, 200)
        walls = [run_checked(nr, anoop) for _ in range(repeat)]
    rounds = hosts / (procs * 20)
    print(f"no-op on {hosts:,} hosts, {procs} x 20, chunks of 20 (one per worker at a time): "
          f"{shown(walls)}, {shown(walls, 'ms', 1000 / rounds, 2)} per chunk round trip",
          flush=True)
    # A check of the model: rounds of 50 ms, fewer hosts in flight than hosts.
    count = sized(20_000, fraction)
    nr = build("dask", count, num_workers=100, num_procs=procs)
    with closing(nr):
        warm(nr, asim_rtt, 200, rtt=0.05)
        check = [run_checked(nr, asim_rtt, rtt=0.05) for _ in range(repeat)]
    print(f"asim_rtt 50 ms on {count:,} hosts, {procs} x 100 ({count // (procs * 100)} rounds): "
          f"{shown(check)}\n", flush=True)
    return {"refill": med(walls) / rounds, "rounds_check": med(check),
            "rounds_check_hosts": count}


def per_host_costs(bench: harness.Bench, repeat: int, procs: int, fraction: float,
                   hosts: int = 10_000) -> dict[str, float]:
    """CPU per host in the parent, the workers and the scheduler; bytes per host each way,
    counted where the runner pickles hosts and unpickles results (wrapped here, unchanged)."""
    from nornir_bench.core._pickling import dumps
    from nornir_bench.runners._remote.spec import pack_hosts, pack_run
    from nornir_bench.runners.dask import run as dask_run

    hosts = sized(hosts, fraction)
    sent: list[int] = []
    back: list[int] = []
    payloads: list[int] = []
    settle = dask_run.DaskChunks._settle_batch

    def counted_hosts(*args: Any, **kwargs: Any) -> Any:
        chunk, pickled, unsendable = pack_hosts(*args, **kwargs)
        sent.append(len(pickled))
        return chunk, pickled, unsendable

    def counted_run(*args: Any, **kwargs: Any) -> Any:
        payload = pack_run(*args, **kwargs)
        payloads.append(len(payload))
        return payload

    def counted_settle(self: Any, chunk: Any, address: str, batch: bytes, whole: bool) -> None:
        back.append(len(batch))
        settle(self, chunk, address, batch, whole)

    tasks: tuple[tuple[str, Callable[..., Any], dict[str, Any], int], ...] = (
             ("asim_rtt 50 ms", asim_rtt, {"rtt": 0.05}, hosts),
             ("async no-op", anoop, {}, hosts),
             ("parse_interfaces", parse_interfaces, {}, hosts // 10))
    figures: dict[str, dict[str, list[float]]] = {}
    with ExitStack() as patched:  # wrapped where the runner calls them, unchanged
        patched.enter_context(patch.object(dask_run, "pack_hosts", counted_hosts))
        patched.enter_context(patch.object(dask_run, "pack_run", counted_run))
        patched.enter_context(patch.object(dask_run.DaskChunks, "_settle_batch", counted_settle))
        for label, task, kwargs, count in tasks:
            nr = build("dask", count, num_workers=max(20, count // procs), num_procs=procs)
            got: dict[str, list[float]] = {}
            with closing(nr):
                warm(nr, task, 200, **kwargs)
                for _ in range(repeat):
                    for counts in (sent, back, payloads):
                        counts.clear()
                    run = measured_run(nr, task, **kwargs)
                    for key, value in (
                        ("wall", run["wall"]), ("parent", run["parent"] / count),
                        ("worker", run["worker"] / count),
                        ("scheduler", run["scheduler"] / max(1, len(sent))),
                        ("chunks", len(sent)), ("out", sum(sent) / count),
                        ("back", sum(back) / count),
                        ("payload", sum(payloads) / max(1, len(payloads))),
                    ):
                        got.setdefault(key, []).append(value)
            figures[f"{label}, {count:,} hosts"] = got
    print(f"per host, all in flight, default chunks (median of {repeat}):\n")
    table(["task", "run", "chunks", "parent CPU / host", "workers' CPU / host",
           "scheduler CPU / chunk", "bytes out / host", "bytes back / host", "run payload"],
          [[label, shown(g["wall"]), f"{med(g['chunks']):.0f}",
            shown(g["parent"], "µs", 1e6, 1), shown(g["worker"], "µs", 1e6, 1),
            shown(g["scheduler"], "ms", 1e3, 2), f"{med(g['out']):.0f}",
            f"{med(g['back']):.0f}", f"{med(g['payload']):.0f} B"]
           for label, g in figures.items()], bench)
    # A host as a real inventory holds it: groups, a platform, credentials, data of its own.
    nr = build("threadpool", 1000, num_workers=1)
    plain = len(dumps(list(nr.inventory.hosts.values()))) / 1000
    nr = init_nornir(
        inventory={"plugin": "synthetic", "options": {
            "hosts": 1000, "groups": 50, "platform": ["ios", "eos"], "username": "netops",
            "password": "s3cret-s3cret"}},
        runner={"plugin": "threadpool"}, logging={"enabled": False}, connections=(),
    )
    for number, host in enumerate(nr.inventory.hosts.values()):
        host.hostname = f"10.{number // 256 % 256}.{number % 256}.1"
        host.data = {"site": f"site-{number % 40}", "role": "leaf", "rack": f"r{number % 90}",
                     "serial": f"FDO{number:08d}", "asset": f"A-{number:06d}"}
    rich = len(dumps(list(nr.inventory.hosts.values()))) / 1000
    print(f"a host pickled as the runner sends it: synthetic {plain:.0f} bytes; with 50 groups, "
          f"a platform, credentials, its address and 5 data keys {rich:.0f} bytes\n",
          flush=True)
    rtt = figures[f"asim_rtt 50 ms, {hosts:,} hosts"]
    parse = figures[f"parse_interfaces, {hosts // 10:,} hosts"]
    return {"parent_per_host": med(rtt["parent"]), "worker_per_host": med(rtt["worker"]),
            "out": med(rtt["out"]), "back": med(rtt["back"]), "rich_out": rich,
            "parse_parent_per_host": med(parse["parent"]),
            "parse_worker_per_host": med(parse["worker"]), "parse_back": med(parse["back"]),
            "wall_10k": med(rtt["wall"]), "hosts_10k": hosts}
