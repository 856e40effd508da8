#!/usr/bin/env python3
"""The run policies' targets, measured: what they cost untriggered, and whether limits hold.

    python scripts/bench_policies.py [--hosts 10000] [--repeats 7]
                                     [--runners threadpool,asyncio,processpool]
                                     [--sections overhead,rate,groups,hung] [--hung-hosts 2000]

- ``overhead``: the no-op task on ``--hosts`` synthetic hosts, without policies and with
  policies configured that never fire (``retries: 3``, a start rate far above the run's pace,
  group limits above the groups' sizes, a failure limit above the hosts), interleaved
  ``--repeats`` times; the median per host and the ratio (target: at most 1.05). threadpool
  and asyncio only, as the issue sets the target.
- ``rate``: ``max_starts_per_second: 2000`` on ``--hosts`` hosts (``sim_rtt``/``asim_rtt`` at
  50 ms); each host's start time taken by a processor: the rate over the run (target: within
  5 % of 2,000) and the most starts in any 100 ms window, against 200 plus the bucket (100).
- ``groups``: ``group_limits: {group: 5}`` on ``--hosts`` hosts in 100 groups (50 ms); the peak
  number of hosts in flight per group, counted by a processor (target: never above 5).
- ``hung``: ``--hung-hosts`` hosts against a loopback port that accepts and never answers,
  ``task_timeout: 2``, ``tcp_ping`` (``atcp_ping`` where the runner awaits) with its own timeout
  at 10 s; the run's time (target: 2 s + 10 % + start-up), hosts failed with ``TaskTimeout``,
  threads and child processes left 0.2 s after the run.

Only loopback is used; every run is bounded by its hosts and its deadlines.
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import statistics
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nornir import InitNornir  # noqa: E402
from nornir.core import Nornir  # noqa: E402

from nornir_bench import TaskTimeout  # noqa: E402
from nornir_bench.lab.rtt_server import raise_open_file_limit  # noqa: E402
from nornir_bench.processors.base import NoOpProcessor  # noqa: E402
from nornir_bench.tasks import asim_rtt, atcp_ping, sim_rtt, tcp_ping  # noqa: E402

ASYNC_RUNNERS = ("asyncio", "processpool")
WORKERS = {"threadpool": 500, "asyncio": 1000, "processpool": 500}


def noop(task: Any) -> None:
    return None


async def anoop(task: Any) -> None:
    return None


def nornir(runner: str, hosts: int, groups: int = 0, **options: Any) -> Nornir:
    return InitNornir(
        inventory={"plugin": "synthetic", "options": {"hosts": hosts, "groups": groups}},
        runner={"plugin": runner, "options": options},
        logging={"enabled": False},
    )


class Starts(NoOpProcessor):
    """Each host's start time, and the peak number in flight per group."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self.now: Counter[str] = Counter()
        self.peak: Counter[str] = Counter()
        self._lock = threading.Lock()

    def task_instance_started(self, task: Any, host: Any) -> None:
        with self._lock:
            self.times.append(time.monotonic())
            for group in host.groups:
                self.now[group.name] += 1
                self.peak[group.name] = max(self.peak[group.name], self.now[group.name])

    def task_instance_completed(self, task: Any, host: Any, result: Any) -> None:
        with self._lock:
            for group in host.groups:
                self.now[group.name] -= 1


def overhead(runners: list[str], hosts: int, repeats: int) -> None:
    print(f"\n## Untriggered policies: the no-op task on {hosts:,} hosts, median of {repeats}")
    untriggered = {
        "retries": 3,
        "max_starts_per_second": 1_000_000,
        "max_start_burst": 1_000_000,
        "group_limits": {"group": hosts},
        "max_failures": hosts,
    }
    print("| runner | workers | no policies µs/host | untriggered µs/host | ratio | target |")
    print("|---|---|---|---|---|---|")
    for runner in [r for r in runners if r in ("threadpool", "asyncio")]:
        workers = WORKERS[runner]
        plain = nornir(runner, hosts, 100, num_workers=workers)
        policed = nornir(runner, hosts, 100, num_workers=workers, **untriggered)
        task = anoop if runner in ASYNC_RUNNERS else noop
        times: dict[str, list[float]] = {"plain": [], "policed": []}
        for _ in range(repeats):  # interleaved, so drift hits both alike
            for name, nr in (("plain", plain), ("policed", policed)):
                start = time.perf_counter()
                result = nr.run(task=task)
                times[name].append(time.perf_counter() - start)
                assert len(result) == hosts and not result.failed
        a, b = (statistics.median(times[k]) / hosts * 1e6 for k in ("plain", "policed"))
        print(f"| {runner} | {workers} | {a:.2f} | {b:.2f} | {b / a:.3f} | <= 1.05 |")


def most_in_window(times: list[float], window: float) -> int:
    ordered, most, first = sorted(times), 0, 0
    for last, t in enumerate(ordered):
        while t - ordered[first] > window:
            first += 1
        most = max(most, last - first + 1)
    return most


def rate(runners: list[str], hosts: int) -> None:
    per_second, bucket = 2000, 100  # the default bucket: a twentieth of a second's starts
    print(f"\n## max_starts_per_second: {per_second} on {hosts:,} hosts at 50 ms")
    print("| runner | workers | run s | starts/s over the run | vs 2,000 | most in 100 ms "
          f"| limit (200 + bucket {bucket}) |")
    print("|---|---|---|---|---|---|---|")
    for runner in runners:
        starts = Starts()
        nr = nornir(runner, hosts, num_workers=WORKERS[runner], max_starts_per_second=per_second)
        task = asim_rtt if runner in ASYNC_RUNNERS else sim_rtt
        start = time.perf_counter()
        result = nr.with_processors([starts]).run(task=task, rtt=0.05)
        wall = time.perf_counter() - start
        assert len(result) == hosts and not result.failed
        measured = (len(starts.times) - 1) / (max(starts.times) - min(starts.times))
        print(
            f"| {runner} | {WORKERS[runner]} | {wall:.2f} | {measured:,.0f} | "
            f"{measured / per_second - 1:+.1%} | {most_in_window(starts.times, 0.1)} | "
            f"{per_second // 10 + bucket} |"
        )


def groups(runners: list[str], hosts: int) -> None:
    limit = 5
    print(f"\n## group_limits: {{group: {limit}}} on {hosts:,} hosts in 100 groups at 50 ms")
    print("| runner | workers | run s | peak in flight in any group | limit |")
    print("|---|---|---|---|---|")
    for runner in runners:
        starts = Starts()
        nr = nornir(
            runner, hosts, 100, num_workers=WORKERS[runner], group_limits={"group": limit}
        )
        task = asim_rtt if runner in ASYNC_RUNNERS else sim_rtt
        start = time.perf_counter()
        result = nr.with_processors([starts]).run(task=task, rtt=0.05)
        wall = time.perf_counter() - start
        assert len(result) == hosts and not result.failed
        print(f"| {runner} | {WORKERS[runner]} | {wall:.2f} | {max(starts.peak.values())} | "
              f"{limit} |")


def children() -> int:
    """This process's child processes now (Linux: /proc)."""
    count = 0
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        count += len((task / "children").read_text().split())
    return count


def hung(runners: list[str], hosts: int) -> None:
    raise_open_file_limit()
    print(f"\n## {hosts:,} hosts on a port that accepts and never answers, task_timeout: 2")
    print("| runner | workers | run s | target s | TaskTimeout | threads left | "
          "processes left |")
    print("|---|---|---|---|---|---|---|")
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(4096)  # connections queue in the kernel; nothing reads or writes
        port = server.getsockname()[1]
        # threadpool last: its calls, which cannot be stopped, stay until tcp_ping's own timeout
        for runner in sorted(runners, key=lambda r: r == "threadpool"):
            options: dict[str, Any] = {"num_workers": hosts, "task_timeout": 2}
            if runner == "processpool":
                options.update(num_procs=2, num_workers=hosts // 2)
            threads = threading.active_count()
            nr = InitNornir(
                inventory={
                    "plugin": "synthetic",
                    "options": {"hosts": hosts, "hostname": "127.0.0.1", "port": port},
                },
                runner={"plugin": runner, "options": options},
                logging={"enabled": False},
            )
            task: Callable[..., Any] = atcp_ping if runner in ASYNC_RUNNERS else tcp_ping
            start = time.perf_counter()
            result = nr.run(task=task, probe="show version", timeout=10)
            wall = time.perf_counter() - start
            time.sleep(0.2)
            timeouts = sum(isinstance(m[0].exception, TaskTimeout) for m in result.values())
            print(f"| {runner} | {options['num_workers']} | {wall:.2f} | 2.2 + start-up | "
                  f"{timeouts:,} of {hosts:,} | {threading.active_count() - threads} | "
                  f"{children()} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--hung-hosts", type=int, default=2_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--runners", default="threadpool,asyncio,processpool")
    parser.add_argument("--sections", default="overhead,rate,groups,hung")
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)  # failed hosts are counted here, not logged
    runners = args.runners.split(",")
    sections = args.sections.split(",")
    if "overhead" in sections:
        overhead(runners, args.hosts, args.repeats)
    if "rate" in sections:
        rate(runners, args.hosts)
    if "groups" in sections:
        groups(runners, args.hosts)
    if "hung" in sections:
        hung(runners, args.hung_hosts)


if __name__ == "__main__":
    main()
