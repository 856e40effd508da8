#!/usr/bin/env python3
"""The parent's cost per host on the process runners, part by part.

    python scripts/bench_parent.py [--hosts 10000] [--repeat 5] [--runners processpool,dask]
                                   [--task noop|asim_rtt] [--profile PATH] [--quick]
                                   [--record PATH]

A run on ``--hosts`` synthetic hosts with workers kept from a first run (2 processes, every
host in flight), the task ``anoop`` (a coroutine that returns at once) or ``asim_rtt`` at 0 s.
The parent's main thread is timed with ``time.thread_time`` (its CPU, not the workers', not
the time it waits), and each part of its work per host is timed the same way around the
functions that do it:

- **send**: the hosts pickled for their worker and written to it (``pack_hosts``, the send);
- **receive**: finished hosts read back and unpickled (processpool: ``receive``; dask: the
  ``pickle.loads`` of a chunk's results; dask's own deserialization happens on its client's
  thread and is in the process's CPU, not the main thread's);
- **settle**: each host made nornir's result: relinked to the parent's ``Host``, its attempts
  and data, its hooks, stored in the ``AggregatedResult``, told to the run's plan
  (``ResultSettler.finished`` and ``failed``);
- **book**: the dispatch book's taking back of each host (``DispatchBook.back``);
- **rest**: the main thread's other work (the scheduling loop, the plan's hand-out, waiting
  calls' own CPU, the run's start and end).

Prints, per runner, the median of ``--repeat`` kept runs in µs per host for each part, the
main thread's total, the process's total (``time.process_time``: every thread of the parent)
and the wall. The timers add about a microsecond a host of their own; the untimed wall of
the same runs is printed beside. ``--profile PATH`` also writes a ``cProfile`` of one more
kept run (``python -m pstats PATH``). Only loopback is used; workers are closed at the end.
``--quick``: 200 hosts, 1 repeat, processpool.
"""

from __future__ import annotations

import cProfile
import pickle
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import harness
from harness.fleets import anoop, close, synthetic
from nornir_bench.runners._remote import book as book_module
from nornir_bench.runners._remote import results as results_module
from nornir_bench.tasks import asim_rtt

PARSER = harness.parser(__doc__)
PARSER.add_argument("--hosts", type=harness.whole())
PARSER.add_argument("--repeat", type=harness.whole())
PARSER.add_argument("--runners", help="default processpool,dask (quick: processpool)")
PARSER.add_argument("--task", choices=("noop", "asim_rtt"), default="noop")
PARSER.add_argument("--profile", default=None)

PARTS = ("send", "receive", "settle", "book", "rest")


class Timers:
    """CPU time of the main thread spent in each part, while ``on``; a part timed inside
    another (the book's taking back, inside settling) counts for itself alone."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = defaultdict(float)
        self.on = False
        self._inner = [0.0]  # per open timer: the time its inner timers took

    def timed(self, part: str, call: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if not self.on:
                return call(*args, **kwargs)
            started = time.thread_time()
            self._inner.append(0.0)
            try:
                return call(*args, **kwargs)
            finally:
                took = time.thread_time() - started
                self.spent[part] += took - self._inner.pop()
                self._inner[-1] += took

        return wrapper


def instrument(timers: Timers) -> None:
    """Wrap the functions of each part, where the runners call them."""
    from nornir_bench.runners._remote import shipments
    from nornir_bench.runners.dask import run as dask_run
    from nornir_bench.runners.processpool import pool

    shipments.pack_hosts = timers.timed(  # type: ignore[attr-defined]
        "send", shipments.pack_hosts  # type: ignore[attr-defined]
    )  # both runners pack their shipments there
    pool.send = timers.timed("send", pool.send)  # type: ignore[attr-defined]
    pool.receive = timers.timed("receive", pool.receive)  # type: ignore[attr-defined]

    class TimedPickle:
        loads = staticmethod(timers.timed("receive", pickle.loads))
        dumps = staticmethod(pickle.dumps)

    dask_run.pickle = TimedPickle  # type: ignore[attr-defined,assignment]
    settler = results_module.ResultSettler
    settler.finished = timers.timed("settle", settler.finished)  # type: ignore[method-assign]
    settler.failed = timers.timed("settle", settler.failed)  # type: ignore[method-assign]
    book = book_module.DispatchBook
    book.back = timers.timed("book", book.back)  # type: ignore[method-assign]


def one_run(nr: Any, task: Any, params: dict[str, Any], hosts: int) -> tuple[float, float, float]:
    """(wall, main thread CPU, process CPU) of one run, in seconds."""
    wall, thread, process = time.perf_counter(), time.thread_time(), time.process_time()
    result = nr.run(task=task, **params)
    out = (
        time.perf_counter() - wall,
        time.thread_time() - thread,
        time.process_time() - process,
    )
    if result.failed or len(result) != hosts:
        raise SystemExit(f"bench_parent: the run failed: {sorted(result.failed_hosts)[:3]}")
    return out


def measure(runner: str, args: Any, timers: Timers) -> dict[str, float]:
    task: Any = anoop if args.task == "noop" else asim_rtt
    params: dict[str, Any] = {} if args.task == "noop" else {"rtt": 0.0}
    nr = synthetic(runner, args.hosts, num_workers=args.hosts // 2, num_procs=2)
    per_host = 1e6 / args.hosts
    samples: dict[str, list[float]] = defaultdict(list)
    try:
        one_run(nr, task, params, args.hosts)  # the workers start
        for _ in range(args.repeat):
            samples["wall, untimed"].append(one_run(nr, task, params, args.hosts)[0] * per_host)
            timers.spent.clear()
            timers.on = True
            wall, thread, process = one_run(nr, task, params, args.hosts)
            timers.on = False
            for part in PARTS[:-1]:
                samples[part].append(timers.spent[part] * per_host)
            samples["rest"].append((thread - sum(timers.spent.values())) * per_host)
            samples["main thread"].append(thread * per_host)
            samples["process"].append(process * per_host)
            samples["wall"].append(wall * per_host)
        if args.profile:
            profile = cProfile.Profile()
            profile.enable()
            nr.run(task=task, **params)
            profile.disable()
            profile.dump_stats(f"{args.profile}.{runner}")
    finally:
        close(nr)
    return {key: harness.Spread.of(values).median for key, values in samples.items()}


def main(bench: harness.Bench) -> None:
    args = bench.args
    args.hosts = args.hosts or (200 if bench.quick else 10_000)
    args.repeat = args.repeat or (1 if bench.quick else 5)
    if args.hosts < 2 or args.repeat < 1:
        PARSER.error("--hosts must be at least 2 and --repeat at least 1")
    chosen = args.runners or ("processpool" if bench.quick else "processpool,dask")
    runners = [name for name in chosen.split(",") if name]
    unknown = set(runners) - {"processpool", "dask"}
    if unknown:
        PARSER.error(f"--runners: {', '.join(sorted(unknown))}: one of processpool, dask")
    timers = Timers()
    instrument(timers)
    figures = {runner: measure(runner, args, timers) for runner in runners}
    print(
        f"{args.hosts} hosts, task {args.task}, kept workers (2 processes), "
        f"µs a host, median of {args.repeat}"
    )
    keys = [*PARTS, "main thread", "process", "wall", "wall, untimed"]
    print("| part | " + " | ".join(runners) + " |")
    print("|---|" + "---:|" * len(runners))
    for key in keys:
        print(f"| {key} | " + " | ".join(f"{figures[r][key]:.1f}" for r in runners) + " |")
    for runner in runners:
        bench.record(figures[runner], runner=runner, hosts=args.hosts, task=args.task)


if __name__ == "__main__":
    harness.run_script(main, PARSER)
