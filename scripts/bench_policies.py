#!/usr/bin/env python3
"""The run policies' targets, measured: what they cost untriggered, and whether limits hold.

    python scripts/bench_policies.py [--hosts 10000] [--repeats 7] [--hung-hosts 2000]
                                     [--runners threadpool,asyncio,processpool,dask]
                                     [--sections overhead,rate,groups,hung] [--task-timeout 2]
                                     [--own-timeout 600] [--quick] [--record PATH]

Four sections, each a table with the issue's target next to each figure:

1. ``overhead``: the no-op task (``noop``; ``anoop`` where the runner awaits) on ``--hosts``
   synthetic hosts in 100 groups: no policies, against policies configured but never
   triggered (``retries: 3``, a start rate and bucket the run cannot reach, ``group_limits``
   above every group's size, ``max_failures`` above the hosts), and the same plus a
   ``task_timeout`` of 60 s. Each configuration is built once, warmed up, then the three take
   turns ``--repeats`` times; ``nr.run`` alone is timed. Targets: the no-op at most x1.5 per
   host; with ``--overhead-rtt 0.05``, at most +1 %.
   threadpool and asyncio, as the issue sets the target for them.
2. ``rate``: ``max_starts_per_second: 2000`` (``sim_rtt``/``asim_rtt`` at 50 ms); each host's
   start taken by a processor. Targets: the rate over the run within 5 % of 2,000; the most
   starts in any 100 ms window no more than the bucket (``max_start_burst``, default
   ceil(rate / 20) = 100) above the rate's share of 100 ms (200).
3. ``groups``: ``group_limits: {group: 5}`` on hosts spread round-robin over 100 groups, at
   10 ms; a processor counts each group's hosts in flight. Target: never above 5.
4. ``hung``: ``--hung-hosts`` hosts against a loopback port that accepts and never answers,
   ``task_timeout: 2``, the package's blocking ``tcp_ping`` on every runner with its own
   timeout at ``--own-timeout`` (600 s), all hosts in flight (workers already started: a
   first run of the no-op). Target: the run within 2 s + 10 % + start-up (start-up: when the
   last host started, from a processor, as each host's deadline runs from its own start);
   every host failed with ``TaskTimeout``; no thread left 1 s after ``run()`` returned, in
   this process or its worker processes (threads and processes are counted after the run,
   1 s later, and once the peer has closed, which ends any call still in a thread; the
   section waits at most 40 s for that).

processpool and dask are more runner names: ``num_workers`` is per process there (2 processes).
The runners tune the garbage collector for the run themselves; this script leaves it alone.
Only loopback is used; every run is bounded by its hosts and its deadlines. ``--quick``: 300
hosts, 1 repeat, 20 hung hosts with a ``task_timeout`` of 0.3 s.
"""

from __future__ import annotations

import logging
import math
import os
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from nornir.core import Nornir
from nornir.core.inventory import Host
from nornir.core.task import MultiResult, Task

import harness
from harness.fleets import anoop, noop, run_checked, synthetic
from nornir_bench import TaskTimeout
from nornir_bench.core.hooks import NoOpProcessor
from nornir_bench.lab import raise_open_file_limit
from nornir_bench.tasks import asim_rtt, sim_rtt, tcp_ping

PARSER = harness.parser(__doc__)
PARSER.add_argument("--hosts", type=harness.whole())
PARSER.add_argument("--repeats", type=harness.whole())
PARSER.add_argument("--hung-hosts", type=harness.whole())
PARSER.add_argument("--task-timeout", type=harness.number(), help="hung section only (default 2)")
PARSER.add_argument(
    "--own-timeout", type=harness.number(), default=600.0,
    help="hung section: tcp_ping's own timeout"
)
PARSER.add_argument("--runners", default="threadpool,asyncio,processpool")
PARSER.add_argument("--sections", default="overhead,rate,groups,hung")
PARSER.add_argument(
    "--overhead-rtt", type=harness.number(), default=0.0,
    help="overhead section: a task of this many seconds instead of the no-op",
)

AWAITING = ("asyncio", "processpool", "dask")  # runners that run ``async def`` tasks natively
PROCS = 2  # processpool's processes: its num_workers below are per process
GROUPS = 100
# num_workers per section: what a user would pick so that the policy, not the workers, is
# what limits the run (rate: ~100 hosts in flight; groups: up to 5 x 100 in flight).
WORKERS = {
    "overhead": {"threadpool": 100, "asyncio": 1000},
    "rate": {"threadpool": 500, "asyncio": 1000, "processpool": 500, "dask": 500},
    "groups": {"threadpool": 1000, "asyncio": 1000, "processpool": 500, "dask": 500},
}


def build(runner: str, inventory: dict[str, Any], **options: Any) -> Nornir:
    if runner == "processpool":
        options["num_procs"] = PROCS
    return synthetic(runner, inventory["hosts"], inventory=inventory, **options)


def pick(runner: str, blocking: Callable[..., Any], awaitable: Callable[..., Any]) -> Any:
    return awaitable if runner in AWAITING else blocking


def met(ok: bool) -> str:
    return "yes" if ok else "**NO**"


class StartTimes(NoOpProcessor):
    """Each host's start, on the ``time.monotonic`` clock (list.append is atomic: no lock)."""

    def __init__(self) -> None:
        self.times: list[float] = []

    def task_instance_started(self, task: Task, host: Host) -> None:
        self.times.append(time.monotonic())


class InFlightPerGroup(NoOpProcessor):
    """Each group's hosts in flight, and the most it ever had (its peak)."""

    def __init__(self) -> None:
        self.now: Counter[str] = Counter()
        self.peak: Counter[str] = Counter()
        self._lock = threading.Lock()  # threadpool's hooks run in its worker threads

    def task_instance_started(self, task: Task, host: Host) -> None:
        with self._lock:
            for group in host.extended_groups():  # the membership the plan limits by
                self.now[group.name] += 1
                self.peak[group.name] = max(self.peak[group.name], self.now[group.name])

    def task_instance_completed(self, task: Task, host: Host, result: MultiResult) -> None:
        with self._lock:
            for group in host.extended_groups():
                self.now[group.name] -= 1


def overhead(bench: harness.Bench, runners: list[str], hosts: int, repeats: int,
             rtt: float = 0.0) -> None:
    """Section 1: median µs per host of the no-op task (``rtt`` > 0: ``sim_rtt`` for a task of
    that many seconds), without and with untriggered policies."""
    untriggered = {
        "retries": 3,
        "max_starts_per_second": 1_000_000,  # the option's maximum
        "max_start_burst": max(1, hosts),  # a bucket as big as the run never empties
        "group_limits": {"group": hosts},  # above any group's size
        "max_failures": hosts,
    }
    configs = {
        "none": {},
        "untriggered": untriggered,
        "+ task_timeout 60": {**untriggered, "task_timeout": 60},
    }
    what = "no-op task" if not rtt else f"a {rtt * 1e3:g} ms task (sim_rtt)"
    print(f"\n## 1. Untriggered policies: {what} on {hosts:,} hosts in {GROUPS} groups, "
          f"µs/host, median of {repeats} (min-max)")
    print(f"untriggered = {untriggered}; gc: as the runners tune it")
    print("| runner | workers | no policies | untriggered | ratio | "
          "+ task_timeout 60 | ratio | target | met |")
    print("|---|---|---|---|---|---|---|---|---|")
    for runner in [r for r in runners if r in WORKERS["overhead"]]:
        workers = WORKERS["overhead"][runner]
        task = pick(runner, noop, anoop) if not rtt else pick(runner, sim_rtt, asim_rtt)
        params = {"rtt": rtt} if rtt else {}
        built = {
            name: build(runner, {"hosts": hosts, "groups": GROUPS}, num_workers=workers, **opts)
            for name, opts in configs.items()
        }
        # interleaved, so that drift hits every configuration alike; warm: first-run costs out
        samples = {name: harness.Spread.of(seconds, 1e6 / hosts) for name, seconds in
                   harness.alternate({name: partial(run_checked, nr, task, **params)
                                      for name, nr in built.items()}, repeats,
                                     warm=True).items()}
        cells = {name: s.text(2) for name, s in samples.items()}
        base = samples["none"].median
        ratios = [samples[name].median / base for name in list(configs)[1:]]
        bench.record({name: s.values for name, s in samples.items()}, section="overhead",
                     runner=runner, workers=workers, hosts=hosts, rtt=rtt)
        target = 1.01 if rtt else 1.5  # the no-op: at most x1.5; a 50 ms task: at most +1 %
        print(f"| {runner} | {workers} | {cells['none']} | {cells['untriggered']} | "
              f"{ratios[0]:.3f} | {cells['+ task_timeout 60']} | {ratios[1]:.3f} | "
              f"<= {target:g} | {met(ratios[0] <= target)} / {met(ratios[1] <= target)} |")


def most_in_window(times: list[float], window: float) -> int:
    """The most of ``times`` within any ``window`` seconds (both ends included)."""
    ordered, most, first = sorted(times), 0, 0
    for last, t in enumerate(ordered):
        while t - ordered[first] > window:
            first += 1
        most = max(most, last - first + 1)
    return most


def rate(bench: harness.Bench, runners: list[str], hosts: int) -> None:
    """Section 2: the start rate over the run, and its worst 100 ms, against the limit."""
    per_second = 2000
    bucket = math.ceil(per_second / 20)  # max_start_burst's default
    share = per_second // 10  # the rate's share of a 100 ms window
    print(f"\n## 2. max_starts_per_second: {per_second} on {hosts:,} hosts, 50 ms each; "
          f"bucket {bucket} (the default)")
    print("| runner | workers | run s | starts/s over the run | vs 2,000 (target ±5 %) | "
          f"most in 100 ms - {share} | target (<= bucket) | met |")
    print("|---|---|---|---|---|---|---|---|")
    for runner in runners:
        workers = WORKERS["rate"][runner]
        starts = StartTimes()
        nr = build(runner, {"hosts": hosts}, num_workers=workers, max_starts_per_second=per_second)
        start = time.perf_counter()
        result = nr.with_processors([starts]).run(task=pick(runner, sim_rtt, asim_rtt), rtt=0.05)
        wall = time.perf_counter() - start
        assert len(result) == hosts and not result.failed and len(starts.times) == hosts
        measured = hosts / (max(starts.times) - min(starts.times))
        off = measured / per_second - 1
        excess = most_in_window(starts.times, 0.1) - share
        print(f"| {runner} | {workers} | {wall:.2f} | {measured:,.0f} | {off:+.1%} | {excess} | "
              f"{bucket} | {met(abs(off) <= 0.05)} / {met(excess <= bucket)} |")
        bench.record({"wall": wall, "rate": measured, "excess_in_100ms": excess},
                     section="rate", runner=runner, workers=workers, hosts=hosts)


def groups(bench: harness.Bench, runners: list[str], hosts: int) -> None:
    """Section 3: the most hosts ever in flight in one group, against the group limit."""
    limit = 5
    print(f"\n## 3. group_limits: {{group: {limit}}} on {hosts:,} hosts in {GROUPS} groups, "
          "10 ms each")
    print("| runner | workers | run s | peak in flight, any group | groups that reached "
          f"{limit} | target (<= {limit}) | met |")
    print("|---|---|---|---|---|---|---|")
    for runner in runners:
        workers = WORKERS["groups"][runner]
        in_flight = InFlightPerGroup()
        nr = build(
            runner, {"hosts": hosts, "groups": GROUPS}, num_workers=workers,
            group_limits={"group": limit},
        )
        start = time.perf_counter()
        result = nr.with_processors([in_flight]).run(task=pick(runner, sim_rtt, asim_rtt), rtt=0.01)
        wall = time.perf_counter() - start
        assert len(result) == hosts and not result.failed
        peak = max(in_flight.peak.values())
        reached = sum(p >= limit for p in in_flight.peak.values())
        print(f"| {runner} | {workers} | {wall:.2f} | {peak} | {reached} of {len(in_flight.peak)} "
              f"| {limit} | {met(peak <= limit)} |")
        bench.record({"wall": wall, "peak": peak, "reached": reached}, section="groups",
                     runner=runner, workers=workers, hosts=hosts)


def descendants() -> list[int]:
    """This process's children and theirs (zombies included: not reaped is left over too)."""
    children: dict[str, list[str]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = stat.read_text().rsplit(")", 1)[1].split()[1]
        except OSError:  # it ended meanwhile
            continue
        children.setdefault(ppid, []).append(stat.parent.name)
    found, todo = [], [str(os.getpid())]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(int(child))
            todo.append(child)
    return found


def leftovers(threads: int) -> str:
    """Threads this process has more than ``threads``; its descendants and their threads."""
    pids = descendants()
    in_children = 0
    for pid in pids:
        try:
            in_children += len(os.listdir(f"/proc/{pid}/task"))
        except OSError:
            continue
    return f"{threading.active_count() - threads} thr, {len(pids)} proc ({in_children} thr)"


def hung(bench: harness.Bench, runners: list[str], hosts: int, task_timeout: float,
         own_timeout: float) -> None:
    """Section 4: hosts that never answer; the package's blocking ``tcp_ping`` with a long
    timeout of its own, under the runner's ``task_timeout``."""
    raise_open_file_limit()  # a socket per host in flight
    print(f"\n## 4. {hosts:,} hosts on a loopback port that accepts and never answers, "
          f"task_timeout: {task_timeout:g}, tcp_ping(timeout={own_timeout:g}), all hosts in "
          "flight")
    print("| runner | workers | start-up s | run s | target s | met | TaskTimeout (abandoned "
          "calls) | left after the run | 1 s later | once the peer closed |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    # threadpool last: calls it abandoned that outlive its run would count as the next one's
    for runner in sorted(runners, key=lambda r: r == "threadpool"):
        workers = hosts if runner in ("threadpool", "asyncio") else math.ceil(hosts / PROCS)
        # A peer per runner: the kernel completes each handshake into the listen queue, and
        # nothing ever reads or writes; closing it resets them all (ends calls still in it).
        with socket.socket() as server:
            server.bind(("127.0.0.1", 0))
            server.listen(hosts)
            inventory = {"hosts": hosts, "hostname": "127.0.0.1", "port": server.getsockname()[1]}
            try:
                nr = build(runner, inventory, num_workers=workers, task_timeout=task_timeout)
            except Exception as exc:  # noqa: BLE001 - a runner this checkout does not have
                print(f"| {runner} | - | not measured: {type(exc).__name__}: {exc} |")
                continue
            if runner not in ("threadpool", "asyncio"):  # its workers start: not measured
                nr.run(task=noop)
            threads = threading.active_count()
            starts = StartTimes()
            began, start = time.monotonic(), time.perf_counter()
            result = nr.with_processors([starts]).run(
                task=tcp_ping, probe="show version", timeout=own_timeout
            )
            wall = time.perf_counter() - start
            after = leftovers(threads)
            time.sleep(1)
            later = leftovers(threads)
            close = getattr(nr.runner, "close", None)
        closed = time.monotonic()  # each call left gets a reset now; 2,000 threads take turns
        while threading.active_count() > threads and time.monotonic() - closed < 40:
            time.sleep(0.05)
        drained = time.monotonic() - closed
        if close is not None:
            close()
        errors = [m[0].exception for m in result.values()]
        timeouts = [e for e in errors if isinstance(e, TaskTimeout)]
        abandoned = sum(bool(e.abandoned) for e in timeouts)
        startup = max(starts.times) - began
        target = task_timeout * 1.1 + startup
        print(f"| {runner} | {workers} | {startup:.2f} | {wall:.2f} | {target:.2f} | "
              f"{met(wall <= target and len(timeouts) == hosts)} | {len(timeouts):,} of "
              f"{hosts:,} ({abandoned:,}) | {after} | {later} | {leftovers(threads)} "
              f"({drained:.1f} s later) |")
        bench.record({"startup": startup, "wall": wall, "timeouts": len(timeouts),
                      "abandoned": abandoned, "left": after, "left_1s": later},
                     section="hung", runner=runner, workers=workers, hosts=hosts,
                     task_timeout=task_timeout)


def main(bench: harness.Bench) -> None:
    args, quick = bench.args, bench.quick
    hosts = args.hosts or (300 if quick else 10_000)
    repeats = args.repeats or (1 if quick else 7)
    hung_hosts = args.hung_hosts or (20 if quick else 2_000)
    task_timeout = args.task_timeout or (0.3 if quick else 2.0)
    logging.disable(logging.CRITICAL)  # failed hosts are counted here, not logged
    runners = args.runners.split(",")
    sections = args.sections.split(",")
    print(f"CPUs: {os.cpu_count()}; runners: {', '.join(runners)}")
    if "overhead" in sections:
        overhead(bench, runners, hosts, repeats, args.overhead_rtt)
    if "rate" in sections:
        rate(bench, runners, hosts)
    if "groups" in sections:
        groups(bench, runners, hosts)
    if "hung" in sections:
        hung(bench, runners, hung_hosts, task_timeout, args.own_timeout)


if __name__ == "__main__":
    harness.run_script(main, PARSER)
