#!/usr/bin/env python3
"""The dask runner on this machine, side by side with processpool and threadpool in one run.

    python scripts/bench_dask.py [--repeat 3] [--only rtt,cpu,big,noop] [--procs 2]
    python scripts/bench_dask.py --scale [--repeat 3]

The issue's targets, on an embedded cluster of ``--procs`` worker processes (processpool gets
as many processes):

- ``rtt``: 10,000 hosts, ``asim_rtt`` 50 ms, all in flight: dask's second run against
  processpool's second run with its workers kept (target <= 1.5 x); both first runs (dask's
  with its cluster start) and the cluster start alone beside them; asyncio for reference.
- ``cpu``: ``parse_interfaces`` (TextFSM, CPU-bound) on 10,000 hosts, 20 in flight per worker:
  dask against threadpool (target >= 1.7 x faster), processpool beside it, and dask with two
  chunks in flight per worker, and without TLS; CPU seconds by process. Warm runs (after a
  200-host run started the workers); threadpool has nothing to start.
- ``big``: 100,000 hosts at 1 s, all in flight: every host present and ok; dask's run phase
  against processpool's, runs 1 and 2 (target <= 1.5 x); the process tree's peak memory.
- ``noop``: per-host cost of an ``async`` no-op, 20 and 500 in flight per worker, warm.

``--scale`` measures what the scale plan (docs/benchmarks.md) is computed from, and prints
it: the cluster start alone, Dask's scheduler on tiny tasks (tasks a second, its CPU per
task), the runner's cost per chunk (runs of 10,000 no-op hosts in chunks of 10 to 1,250),
CPU per host in the parent, the workers and the scheduler, bytes per host each way; then the
predicted wall time for 100,000 and 1,000,000 hosts on 4, 16 and 64 workers.

Figures are the run phase (``nr.run``) unless said; medians of ``--repeat`` (min-max), the
configurations interleaved. Loopback only.
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psutil

from nornir_bench.core.plugins import init_nornir
from nornir_bench.tasks import asim_rtt, parse_interfaces

SECTIONS = ("rtt", "cpu", "big", "noop")
FRACTION = 1.0  # --fraction: every host count times this


def sized(hosts: int) -> int:
    return max(400, round(hosts * FRACTION))


async def anoop(task: Any) -> None:
    return None


def build(runner: str, hosts: int, **options: Any) -> Any:
    return init_nornir(
        inventory={"plugin": "synthetic", "options": {"hosts": hosts}},
        runner={"plugin": runner, "options": options},
        logging={"enabled": False},
        connections=(),
    )


def timed(nr: Any, task: Any, **kwargs: Any) -> float:
    """Seconds of ``nr.run``; every host must be there and ok."""
    start = time.perf_counter()
    result = nr.run(task=task, **kwargs)
    elapsed = time.perf_counter() - start
    if len(result) != len(nr.inventory.hosts) or result.failed:
        raise SystemExit(
            f"{nr.runner!r}: {len(result)} of {len(nr.inventory.hosts)} hosts back, "
            f"{len(result.failed_hosts)} failed"
        )
    return elapsed


def warm(nr: Any, task: Any, hosts: int, **kwargs: Any) -> None:
    """Start the runner's workers (or cluster) with a run on the first ``hosts`` hosts."""
    names = set(list(nr.inventory.hosts)[:hosts])
    nr.filter(filter_func=lambda host: host.name in names).run(task=task, **kwargs)


def close(nr: Any) -> float:
    start = time.perf_counter()
    closer = getattr(nr.runner, "close", None)
    if callable(closer):
        closer()
    return time.perf_counter() - start


@contextmanager
def closing(nr: Any) -> Iterator[Any]:
    try:
        yield nr
    finally:
        close(nr)


def med(samples: list[float]) -> float:
    return statistics.median(samples)


def shown(samples: list[float], unit: str = "s", scale: float = 1.0, digits: int = 3) -> str:
    values = [s * scale for s in samples]
    if len(values) == 1:
        return f"{values[0]:.{digits}f} {unit}"
    return (f"{med(values):.{digits}f} {unit} ({min(values):.{digits}f}-"
            f"{max(values):.{digits}f})")


def table(header: list[str], rows: list[list[str]]) -> None:
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print(flush=True)


# -- the process tree --------------------------------------------------------------------------


def tree() -> list[psutil.Process]:
    return [psutil.Process(), *psutil.Process().children(recursive=True)]


def role(process: psutil.Process) -> str:
    """What a process of this tree is: parent, scheduler, worker (a Dask worker or a
    processpool worker), or other (Dask's worker command holding the nannies, trackers)."""
    if process.pid == os.getpid():
        return "parent"
    try:
        command = " ".join(process.cmdline())
    except psutil.Error:
        return "other"
    if "dask_scheduler" in command:
        return "scheduler"
    if "spawn_main" in command or "processpool" in command:
        return "worker"
    return "other"


def cpu_by_role() -> dict[str, float]:
    """CPU seconds (user + system) used so far by each role's processes alive now."""
    totals: dict[str, float] = {}
    for process in tree():
        try:
            times = process.cpu_times()
        except psutil.Error:
            continue
        name = role(process)
        totals[name] = totals.get(name, 0.0) + times.user + times.system
    return totals


class PeakMemory:
    """The process tree's largest total RSS while it is entered, sampled every 0.2 s."""

    def __init__(self) -> None:
        self.peak = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(0.2):
            total = 0
            for process in tree():
                try:
                    total += process.memory_info().rss
                except psutil.Error:
                    pass
            self.peak = max(self.peak, total / 2**20)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


# -- the targets -------------------------------------------------------------------------------


def section_rtt(repeat: int, procs: int, hosts: int = 10_000) -> None:
    hosts = sized(hosts)
    per_proc = hosts // procs
    runs: dict[str, list[list[float]]] = {"asyncio": [], "processpool": [], "dask": []}
    closes: list[float] = []
    start_alone: list[float] = []
    one_host: list[float] = []
    for _ in range(repeat):
        for name in runs:
            options = ({"num_workers": hosts} if name == "asyncio"
                       else {"num_workers": per_proc, "num_procs": procs})
            nr = build(name, hosts, **options)
            try:
                runs[name].append([timed(nr, asim_rtt, rtt=0.05) for _ in range(3)])
            finally:
                elapsed = close(nr)
            if name == "dask":
                closes.append(elapsed)
        nr = build("dask", 1, num_workers=1, num_procs=procs)
        with closing(nr):
            first = timed(nr, anoop)
            second = timed(nr, anoop)
        start_alone.append(first - second)
        one_host.append(second)
    print(f"## rtt: asim_rtt 50 ms on {hosts:,} hosts, all in flight, {procs} worker "
          f"processes (median of {repeat})\n")
    base = med([r[1] for r in runs["processpool"]])
    rows = []
    for name, samples in runs.items():
        second = med([r[1] for r in samples])
        rows.append([name, shown([r[0] for r in samples]), shown([r[1] for r in samples]),
                     shown([r[2] for r in samples]), f"{second / base:.2f}"])
    table(["runner", "run 1", "run 2", "run 3", "run 2 / processpool's"], rows)
    ratio = med([r[1] for r in runs["dask"]]) / base
    verdict = "met" if ratio <= 1.5 else "MISSED"
    print(f"dask run 2 / processpool run 2 (kept workers): {ratio:.2f} (target <= 1.5: "
          f"{verdict})")
    print(f"dask cluster start alone (first 1-host run minus the second): {shown(start_alone)}; "
          f"a 1-host run on the warm cluster: {shown(one_host, 'ms', 1000, 1)}; "
          f"closing the runner (cluster stopped): {shown(closes)}\n", flush=True)


def section_cpu(repeat: int, procs: int, hosts: int = 10_000) -> None:
    hosts = sized(hosts)
    dask = f"dask, {procs} workers x 20"
    configurations: dict[str, tuple[str, dict[str, Any]]] = {
        "threadpool, 20 workers": ("threadpool", {"num_workers": 20}),
        f"processpool, {procs} procs x 20": ("processpool",
                                              {"num_workers": 20, "num_procs": procs}),
        dask: ("dask", {"num_workers": 20, "num_procs": procs}),
        # Two chunks in flight per worker: one runs while the other's round trip is made.
        f"dask, {procs} workers x 40, chunk_size 20": (
            "dask", {"num_workers": 40, "num_procs": procs, "chunk_size": 20}),
        f"{dask}, tls false": ("dask", {"num_workers": 20, "num_procs": procs, "tls": False}),
    }
    samples: dict[str, list[dict[str, float]]] = {name: [] for name in configurations}
    for _ in range(repeat):
        for name, (runner, options) in configurations.items():
            nr = build(runner, hosts, **options)
            with closing(nr):
                warm(nr, parse_interfaces, 200)
                samples[name].append(measured_run(nr, parse_interfaces))
    print(f"## cpu: parse_interfaces (TextFSM) on {hosts:,} hosts, {os.cpu_count()} CPUs, warm "
          f"runs (median of {repeat}; CPU seconds by process)\n")
    base = med([r["wall"] for r in samples["threadpool, 20 workers"]])
    table(["configuration", "run", "speed-up over threadpool", "parent CPU", "workers' CPU",
           "scheduler CPU"],
          [[name, shown([r["wall"] for r in s]), f"{base / med([r['wall'] for r in s]):.2f} x",
            f"{med([r['parent'] for r in s]):.1f}", f"{med([r['worker'] for r in s]):.1f}",
            f"{med([r['scheduler'] for r in s]):.1f}"]
           for name, s in samples.items()])
    ratio = base / med([r["wall"] for r in samples[dask]])
    verdict = "met" if ratio >= 1.7 else "MISSED"
    print(f"dask speed-up over threadpool: {ratio:.2f} x (target >= 1.7: {verdict})\n",
          flush=True)


def section_big(repeat: int, procs: int, hosts: int = 100_000) -> None:
    hosts = sized(hosts)
    per_proc = hosts // procs
    runs: dict[str, list[list[float]]] = {"processpool": [], "dask": []}
    peaks: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeat):
        for name in runs:
            nr = build(name, hosts, num_workers=per_proc, num_procs=procs)
            with PeakMemory() as memory, closing(nr):
                runs[name].append([timed(nr, asim_rtt, rtt=1.0) for _ in range(2)])
            peaks[name].append(memory.peak)
            del nr
    print(f"## big: asim_rtt 1 s on {hosts:,} hosts, all in flight, {procs} worker processes "
          f"(median of {repeat}; every host back and ok)\n")
    base = [med([r[i] for r in runs["processpool"]]) for i in range(2)]
    rows = []
    for name, samples in runs.items():
        rows.append([name, shown([r[0] for r in samples]), shown([r[1] for r in samples]),
                     f"{med([r[0] for r in samples]) / base[0]:.2f}",
                     f"{med([r[1] for r in samples]) / base[1]:.2f}",
                     f"{med(peaks[name]):.0f} MiB"])
    table(["runner", "run 1", "run 2", "run 1 / processpool's", "run 2 / processpool's",
           "peak RSS, all processes"], rows)
    ratio = med([r[1] for r in runs["dask"]]) / base[1]
    verdict = "met" if ratio <= 1.5 else "MISSED"
    print(f"dask run 2 / processpool run 2: {ratio:.2f} (target <= 1.5: {verdict})\n",
          flush=True)


def section_noop(repeat: int, procs: int, hosts: int = 10_000) -> None:
    hosts = sized(hosts)
    configurations = {
        f"{runner}, {procs} x {n}": (runner, {"num_workers": n, "num_procs": procs})
        for n in (20, 500) for runner in ("processpool", "dask")
    }
    samples: dict[str, list[float]] = {name: [] for name in configurations}
    for _ in range(repeat):
        for name, (runner, options) in configurations.items():
            nr = build(runner, hosts, **options)
            with closing(nr):
                warm(nr, anoop, 200)
                samples[name].append(timed(nr, anoop))
    print(f"## noop: an async no-op task on {hosts:,} hosts, warm (median of {repeat})\n")
    table(["configuration", "run", "per host"],
          [[name, shown(s), shown(s, "µs", 1e6 / hosts, 1)] for name, s in samples.items()])


# -- the scale plan ----------------------------------------------------------------------------


def tiny(x: int) -> int:
    return x


@contextmanager
def dask_client(procs: int) -> Iterator[tuple[Any, float]]:
    """A client of a fresh embedded cluster (the runner's own kind), and its start in seconds."""
    from nornir_bench.runners.dask.cluster import EmbeddedCluster, connect

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


def scheduler_rate(repeat: int, procs: int) -> dict[str, float]:
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


def fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least squares: (intercept, slope) of ``ys`` against ``xs``."""
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    slope = (sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True))
             / sum((x - mean_x) ** 2 for x in xs))
    return mean_y - slope * mean_x, slope


def measured_run(nr: Any, task: Any, **kwargs: Any) -> dict[str, float]:
    """One run: its wall, and the CPU seconds the parent, the scheduler and the workers used."""
    before = cpu_by_role()
    own = time.process_time()
    wall = timed(nr, task, **kwargs)
    own = time.process_time() - own  # every thread of the parent: Dask's client loop too
    after = cpu_by_role()
    return {"wall": wall, "parent": own,
            **{name: after.get(name, 0.0) - before.get(name, 0.0)
               for name in ("scheduler", "worker")}}


def chunk_cost(repeat: int, procs: int, hosts: int = 10_000) -> dict[str, float]:
    """Runs of ``hosts`` no-op hosts, all in flight, in chunks of several sizes: each cost's
    slope against the number of chunks is its cost per chunk, its intercept over the hosts its
    cost per host."""
    hosts = sized(hosts)
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
           for i, (size, count) in enumerate(zip(sizes, chunks, strict=True))])
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


def refill_latency(repeat: int, procs: int, hosts: int = 2_000) -> dict[str, float]:
    """A chunk's round trip when it fills its worker (``chunk_size == num_workers``): the worker
    idles until its chunk is back and the next one arrives."""
    hosts = sized(hosts)
    nr = build("dask", hosts, num_workers=20, num_procs=procs)
    with closing(nr):
        warm(nr, anoop, 200)
        walls = [timed(nr, anoop) for _ in range(repeat)]
    rounds = hosts / (procs * 20)
    print(f"no-op on {hosts:,} hosts, {procs} x 20, chunks of 20 (one per worker at a time): "
          f"{shown(walls)}, {shown(walls, 'ms', 1000 / rounds, 2)} per chunk round trip",
          flush=True)
    # A check of the model: rounds of 50 ms, fewer hosts in flight than hosts.
    count = sized(20_000)
    nr = build("dask", count, num_workers=100, num_procs=procs)
    with closing(nr):
        warm(nr, asim_rtt, 200, rtt=0.05)
        check = [timed(nr, asim_rtt, rtt=0.05) for _ in range(repeat)]
    print(f"asim_rtt 50 ms on {count:,} hosts, {procs} x 100 ({count // (procs * 100)} rounds): "
          f"{shown(check)}\n", flush=True)
    return {"refill": med(walls) / rounds, "rounds_check": med(check),
            "rounds_check_hosts": count}


def per_host_costs(repeat: int, procs: int, hosts: int = 10_000) -> dict[str, float]:
    """CPU per host in the parent, the workers and the scheduler; bytes per host each way,
    counted where the runner pickles hosts and unpickles results (wrapped here, unchanged)."""
    from nornir_bench.core._pickling import dumps
    from nornir_bench.runners.dask import run as dask_run

    hosts = sized(hosts)
    sent: list[int] = []
    back: list[int] = []
    payloads: list[int] = []
    pack_hosts, pack_run = dask_run.pack_hosts, dask_run.pack_run
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

    tasks = (("asim_rtt 50 ms", asim_rtt, {"rtt": 0.05}, hosts),
             ("async no-op", anoop, {}, hosts),
             ("parse_interfaces", parse_interfaces, {}, hosts // 10))
    figures: dict[str, dict[str, list[float]]] = {}
    dask_run.pack_hosts, dask_run.pack_run = counted_hosts, counted_run  # type: ignore[assignment]
    dask_run.DaskChunks._settle_batch = counted_settle  # type: ignore[method-assign]
    try:
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
    finally:
        dask_run.pack_hosts, dask_run.pack_run = pack_hosts, pack_run  # type: ignore[assignment]
        dask_run.DaskChunks._settle_batch = settle  # type: ignore[method-assign]
    print(f"per host, all in flight, default chunks (median of {repeat}):\n")
    table(["task", "run", "chunks", "parent CPU / host", "workers' CPU / host",
           "scheduler CPU / chunk", "bytes out / host", "bytes back / host", "run payload"],
          [[label, shown(g["wall"]), f"{med(g['chunks']):.0f}",
            shown(g["parent"], "µs", 1e6, 1), shown(g["worker"], "µs", 1e6, 1),
            shown(g["scheduler"], "ms", 1e3, 2), f"{med(g['out']):.0f}",
            f"{med(g['back']):.0f}", f"{med(g['payload']):.0f} B"]
           for label, g in figures.items()])
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
    from nornir_bench.runners.dask.run import default_chunk_size

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


def scale(repeat: int, procs: int) -> None:
    print(f"## scale: what the plan is computed from ({procs} worker processes, median of "
          f"{repeat})\n")
    costs = scheduler_rate(repeat, procs)
    costs |= chunk_cost(repeat, procs)
    costs |= refill_latency(repeat, procs)
    costs |= per_host_costs(repeat, procs)
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
    table(["run", "hosts", "chunk", "predicted", "bottleneck", "measured"], rows)
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
           "wall, n=1000"], rows)
    print("## predictions: parse_interfaces (its CPU and its results), n=1000\n")
    rows = []
    for hosts in (100_000, 1_000_000):
        row = [f"{hosts:,}"]
        for workers in (4, 16, 64):
            wall, bottleneck, _ = predict(hosts, workers, 1000, 0.05, costs, task="parse_")
            row.append(f"{wall:.0f} s ({bottleneck})")
        row.append(f"{hosts * costs['parse_back'] / 2**20:,.0f} MiB")
        rows.append(row)
    table(["hosts", "W=4", "W=16", "W=64", "results into the parent"], rows)
    smallest = math.ceil(costs["scheduler_per_chunk"] / costs["parent_per_host"])
    print(f"the scheduler stays below the parent while chunk_size >= scheduler CPU per chunk / "
          f"parent CPU per host = {costs['scheduler_per_chunk'] * 1e3:.2f} ms / "
          f"{costs['parent_per_host'] * 1e6:.1f} µs = {smallest} hosts\n")
    print("costs used: " + ", ".join(f"{k}={v:.3g}" for k, v in sorted(costs.items())))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--procs", type=int, default=2,
                        help="worker processes of the embedded cluster and of processpool")
    parser.add_argument("--only", default=",".join(SECTIONS),
                        help=f"sections, comma-separated: {', '.join(SECTIONS)}")
    parser.add_argument("--scale", action="store_true", help="the scale plan's measurements")
    parser.add_argument("--fraction", type=float, default=1.0,
                        help="run every host count times this (a quick try: 0.1)")
    parser.add_argument("--section-timeout", type=float, default=1800,
                        help="seconds a section may take before the script stops (SIGALRM)")
    args = parser.parse_args()
    global FRACTION
    FRACTION = args.fraction
    sections: dict[str, Callable[[int, int], None]] = {
        "rtt": section_rtt, "cpu": section_cpu, "big": section_big, "noop": section_noop,
    }
    chosen = ["scale"] if args.scale else args.only.split(",")
    unknown = [name for name in chosen if name not in sections and name != "scale"]
    if unknown:
        parser.error(f"unknown section {unknown[0]!r}; sections: {', '.join(SECTIONS)}")

    def overran(signum: int, frame: Any) -> None:
        raise TimeoutError(f"a section took more than {args.section_timeout:g} s")

    signal.signal(signal.SIGALRM, overran)
    print(f"# bench_dask.py: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, "
          f"{args.procs} worker processes, median of {args.repeat}\n", flush=True)
    for name in chosen:
        signal.alarm(int(args.section_timeout))
        try:
            (scale if name == "scale" else sections[name])(args.repeat, args.procs)
        finally:
            signal.alarm(0)


if __name__ == "__main__":
    main()
