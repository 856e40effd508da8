#!/usr/bin/env python3
"""The faults of the runner core (issue 37): runs that hang, deadlines a hung device outlives,
Ctrl-C.

    python scripts/bench_faults.py [--dask-connections] [--hung-change] [--ctrl-c] [--quick]
        [--runs 200] [--busy 2] [--timeout 120]
        [--routers 6] [--lines 150] [--task-timeout 5]
        [--hosts 10000] [--workers 100] [--rtt 0.5] [--at 2] [--runners NAME ...]
        [--lab NAME] [--record PATH]

Without a part flag, every part runs. Each run is a process (and session) of its own, bounded
in time, killed with what it started (its Dask cluster too) when it ends, hangs, or this script
is stopped (Ctrl-C, SIGTERM): nothing is left, labs and busy processes included. Everything
listens on 127.0.0.1. The code measured is the nornir_bench this interpreter imports (run from
another checkout with ``PYTHONPATH=<checkout>``: the runs import it too). The parts are modules
of scripts/faults/.

**--dask-connections**: ``--runs`` times (default 200), a fresh process
(:mod:`harness.children.dask_connections`), killed at
``--timeout`` seconds (a *hang*), while ``--busy`` processes spin on the cores: 40 synthetic
hosts on the ``dask`` runner (``num_workers: 10``, its embedded cluster), a connection plugin
registered at run time (``counting``: its ``open()`` appends a line to a file), an async task
opening it, three ``nr.run`` in a row, then ``nr.close_connections()`` and
``nr.runner.close()``. Runs, hangs, failures (another non-zero exit; a failed host exits 1),
logins per run (40 when connections are kept across runs), each process's wall.

**--hung-change** (root: a router lab of ``--routers`` FRR routers, or the running lab ``--lab
NAME``, see :mod:`faults.hung_change`): a change of ``--lines`` static routes on h1 (3 on the
others), ``task_timeout: --task-timeout``, each exchange's own timeout 60 s, through
``nornir-bench run`` on six runner and task pairs; r1's vtysh stopped (SIGSTOP) once it holds 10
of the lines.

**--ctrl-c**: per runner, ``nornir-bench run`` of ``--hosts`` synthetic hosts, ``--workers``
in flight (shared out over a process per CPU on processpool and dask), ``sim_rtt`` (threadpool)
or ``asim_rtt`` of ``--rtt`` s; one SIGINT to its process group (a terminal's Ctrl-C) ``--at``
seconds after its first host started (the first record's ``run_start`` + ``start``); records
by outcome and the exit status (130 expected; every host in flight finishes).

**--quick**: everything small, for tests/test_scripts.py (1 run, no busy process; 2 routers on
threadpool and asyncio, a task_timeout of 2 s; 500 hosts on threadpool and asyncio, SIGINT 0.5
s in).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
from pathlib import Path

from faults.ctrl_c import ctrl_c
from faults.dask_connections import dask_connections
from faults.hung_change import hung_change

import harness
from harness.lab import add_lab_option
from harness.records import load_text

PARTS = ("dask-connections", "hung-change", "ctrl-c")
RUNNERS = ("threadpool", "asyncio", "processpool", "dask")


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value < 3600:
        raise argparse.ArgumentTypeError(f"must be seconds, more than 0 and under 3600, got "
                                         f"{text!r}")
    return value


PARSER = harness.parser(__doc__)
for _part in PARTS:
    PARSER.add_argument(f"--{_part}", action="store_true", help=f"run the {_part} part")
_add = PARSER.add_argument
_add("--runs", type=harness.whole(), help="dask-connections: runs (default 200; quick 1)")
_add("--busy", type=int, choices=range(9), metavar="0-8",
     help="dask-connections: busy processes (default 2; quick 0)")
_add("--timeout", type=seconds, default=120.0, help="dask-connections: a run's hard timeout")
_add("--routers", type=harness.whole(), help="hung-change: routers (default 6; quick 2)")
_add("--lines", type=int, choices=range(20, 251), default=150, metavar="20-250",
     help="hung-change: h1's static routes (default 150)")
_add("--task-timeout", type=seconds, help="hung-change: task_timeout (s; default 5, quick 2)")
_add("--hosts", type=harness.whole(), help="ctrl-c: synthetic hosts (default 10000; quick 500)")
_add("--workers", type=harness.whole(), default=100, help="ctrl-c: hosts in flight (default 100)")
_add("--rtt", type=seconds, default=0.5, help="ctrl-c: each host's round trip (s)")
_add("--at", type=seconds, help="ctrl-c: SIGINT after the first host's start (default 2; "
     "quick 0.5)")
_add("--runners", nargs="+", choices=RUNNERS, help="hung-change and ctrl-c: the runners")
add_lab_option(PARSER)


def main(bench: harness.Bench) -> int:
    args, quick = bench.args, bench.quick
    chosen = [p for p in PARTS if getattr(args, p.replace("-", "_"))] or list(PARTS)
    if "hung-change" in chosen and os.geteuid() != 0:
        print("bench_faults.py: error: --hung-change needs root (the router lab)",
              file=sys.stderr)
        return 2
    bench.heading(f"parts {', '.join(chosen)}")
    with tempfile.TemporaryDirectory(prefix="bench-faults-") as work:
        if "dask-connections" in chosen:
            busy = args.busy if args.busy is not None else (0 if quick else 2)
            dask_connections(bench, Path(work), args.runs or (1 if quick else 200), busy,
                             args.timeout)
        if "hung-change" in chosen:
            runners = args.runners or (["threadpool", "asyncio"] if quick else list(RUNNERS))
            hung_change(bench, Path(work), args.routers or (2 if quick else 6), args.lines,
                        args.task_timeout or (2.0 if quick else 5.0), runners, args.lab)
        if "ctrl-c" in chosen:
            runners = args.runners or (["threadpool", "asyncio"] if quick else list(RUNNERS))
            ctrl_c(bench, Path(work), args.hosts or (500 if quick else 10_000), args.workers,
                   args.rtt, args.at or (0.5 if quick else 2.0), runners)
    print(f"load at the end {load_text()}")
    return 0


if __name__ == "__main__":
    harness.run_script(main, PARSER, interrupted="every run, lab and busy process this script "
                       "started is stopped")
