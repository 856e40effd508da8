#!/usr/bin/env python3
"""The dask runner on this machine, side by side with processpool and threadpool in one run.

    python scripts/bench_dask.py [--repeat 3] [--only rtt,cpu,big,noop] [--procs 2]
    python scripts/bench_dask.py --scale [--repeat 3]
    python scripts/bench_dask.py --quick [--only ...] [--record PATH]

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
configurations interleaved. Loopback only. The parts are in scripts/dask_bench/.
``--quick``: the ``noop`` section on 400 hosts (``--only`` another), 1 repeat, 1 worker process.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from types import FrameType
from typing import NoReturn

from dask_bench.model import scale
from dask_bench.targets import section_big, section_cpu, section_noop, section_rtt

import harness

SECTIONS: dict[str, Callable[[harness.Bench, int, int, float], None]] = {
    "rtt": section_rtt, "cpu": section_cpu, "big": section_big, "noop": section_noop,
}

PARSER = harness.parser(__doc__)
PARSER.add_argument("--repeat", type=harness.whole())
PARSER.add_argument("--procs", type=harness.whole(),
                    help="worker processes of the embedded cluster and of processpool (2; "
                    "quick 1)")
PARSER.add_argument("--only", help=f"sections, comma-separated: {', '.join(SECTIONS)}")
PARSER.add_argument("--scale", action="store_true", help="the scale plan's measurements")
PARSER.add_argument("--fraction", type=harness.number(),
                    help="run every host count times this (a quick try: 0.1)")
PARSER.add_argument("--section-timeout", type=harness.number(), default=1800,
                    help="seconds a section may take before the script stops (SIGALRM)")


def main(bench: harness.Bench) -> None:
    args, quick = bench.args, bench.quick
    repeat = args.repeat or (1 if quick else 3)
    procs = args.procs or (1 if quick else 2)
    fraction = args.fraction if args.fraction is not None else (0.0 if quick else 1.0)
    chosen = (["scale"] if args.scale else
              (args.only or ("noop" if quick else ",".join(SECTIONS))).split(","))
    unknown = [name for name in chosen if name not in SECTIONS and name != "scale"]
    if unknown:
        PARSER.error(f"unknown section {unknown[0]!r}; sections: {', '.join(SECTIONS)}")

    def overran(signum: int, frame: FrameType | None) -> NoReturn:
        raise TimeoutError(f"a section took more than {args.section_timeout:g} s")

    signal.signal(signal.SIGALRM, overran)
    print(f"# bench_dask.py: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, "
          f"{procs} worker processes, median of {repeat}\n", flush=True)
    for name in chosen:
        signal.alarm(int(args.section_timeout))
        try:
            (scale if name == "scale" else SECTIONS[name])(bench, repeat, procs, fraction)
        finally:
            signal.alarm(0)


if __name__ == "__main__":
    harness.run_script(main, PARSER)
