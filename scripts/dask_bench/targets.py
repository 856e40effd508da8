"""The dask runner's targets (scripts/bench_dask.py): against processpool and threadpool on
round trips (``rtt``), CPU-bound parsing (``cpu``), 100,000 hosts (``big``), and the per-host
cost of a no-op (``noop``)."""

from __future__ import annotations

import os
from typing import Any

import harness
from dask_bench.common import build, measured_run, med, shown, sized
from harness.fleets import anoop, close, closing, run_checked, warm
from harness.memory import PeakMemory
from harness.tables import table
from nornir_bench.tasks import asim_rtt, parse_interfaces

__all__ = ["section_big", "section_cpu", "section_noop", "section_rtt"]


def section_rtt(bench: harness.Bench, repeat: int, procs: int, fraction: float,
                hosts: int = 10_000) -> None:
    hosts = sized(hosts, fraction)
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
                runs[name].append([run_checked(nr, asim_rtt, rtt=0.05) for _ in range(3)])
            finally:
                elapsed = close(nr)
            if name == "dask":
                closes.append(elapsed)
        nr = build("dask", 1, num_workers=1, num_procs=procs)
        with closing(nr):
            first = run_checked(nr, anoop)
            second = run_checked(nr, anoop)
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
    table(["runner", "run 1", "run 2", "run 3", "run 2 / processpool's"], rows, bench)
    ratio = med([r[1] for r in runs["dask"]]) / base
    verdict = "met" if ratio <= 1.5 else "MISSED"
    print(f"dask run 2 / processpool run 2 (kept workers): {ratio:.2f} (target <= 1.5: "
          f"{verdict})")
    print(f"dask cluster start alone (first 1-host run minus the second): {shown(start_alone)}; "
          f"a 1-host run on the warm cluster: {shown(one_host, 'ms', 1000, 1)}; "
          f"closing the runner (cluster stopped): {shown(closes)}\n", flush=True)


def section_cpu(bench: harness.Bench, repeat: int, procs: int, fraction: float,
                hosts: int = 10_000) -> None:
    hosts = sized(hosts, fraction)
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
           for name, s in samples.items()], bench)
    ratio = base / med([r["wall"] for r in samples[dask]])
    verdict = "met" if ratio >= 1.7 else "MISSED"
    print(f"dask speed-up over threadpool: {ratio:.2f} x (target >= 1.7: {verdict})\n",
          flush=True)


def section_big(bench: harness.Bench, repeat: int, procs: int, fraction: float,
                hosts: int = 100_000) -> None:
    hosts = sized(hosts, fraction)
    per_proc = hosts // procs
    runs: dict[str, list[list[float]]] = {"processpool": [], "dask": []}
    peaks: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeat):
        for name in runs:
            nr = build(name, hosts, num_workers=per_proc, num_procs=procs)
            with PeakMemory() as memory, closing(nr):
                runs[name].append([run_checked(nr, asim_rtt, rtt=1.0) for _ in range(2)])
            peaks[name].append(memory.mib)
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
           "peak RSS, all processes"], rows, bench)
    ratio = med([r[1] for r in runs["dask"]]) / base[1]
    verdict = "met" if ratio <= 1.5 else "MISSED"
    print(f"dask run 2 / processpool run 2: {ratio:.2f} (target <= 1.5: {verdict})\n",
          flush=True)


def section_noop(bench: harness.Bench, repeat: int, procs: int, fraction: float,
                 hosts: int = 10_000) -> None:
    hosts = sized(hosts, fraction)
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
                samples[name].append(run_checked(nr, anoop))
    print(f"## noop: an async no-op task on {hosts:,} hosts, warm (median of {repeat})\n")
    table(["configuration", "run", "per host"],
          [[name, shown(s), shown(s, "µs", 1e6 / hosts, 1)] for name, s in samples.items()], bench)


# -- the scale plan ----------------------------------------------------------------------------
