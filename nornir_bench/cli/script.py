"""``scripts/script.py WORKERS RTT``: the "how many threads are enough" benchmark, one point.

Ends with one line: hosts ok/failed, run time, and the process's wall, user, sys and CPU % as
``time`` reports them. That line is for people; ``--record PATH`` writes the same figures for
programs (:mod:`nornir_bench.bench.record`), which is what the sweep reads.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from nornir_bench.bench.benchmark import run_benchmark
from nornir_bench.bench.record import BenchmarkRecord, write_record
from nornir_bench.bench.usage import process_usage
from nornir_bench.cli._common import (
    EXIT_FAILED_HOSTS,
    EXIT_OK,
    EXIT_USAGE,
    Parser,
    by_signal,
    exit_with,
    interrupted_status,
    positive_int,
    probability,
    seconds,
)
from nornir_bench.core.wording import hosts_text
from nornir_bench.runners.registry import available_runners
from nornir_bench.tasks.synthetic.simulated import MAX_RTT

__all__ = ["script_entry", "script_main"]


def _script_parser() -> Parser:
    parser = Parser(
        prog="script.py",
        description=(
            "The 'how many threads are enough' study: one simulated device round trip on each "
            "synthetic host, on any nornir runner. Ends with one line: hosts ok/failed, run "
            "time, and the process's wall, user, sys and CPU %% as `time` reports them."
        ),
        epilog="Exit status: 0 all hosts ok, 1 some host failed, 2 bad usage, 130 Ctrl-C, "
        "143 SIGTERM.",
    )
    parser.add_argument("workers", metavar="WORKERS", type=positive_int,
                        help="the runner's num_workers (hosts in flight at once)")
    parser.add_argument("rtt", metavar="RTT", type=seconds,
                        help="simulated round-trip time per host, in seconds (e.g. 0.05; "
                        f"at most {MAX_RTT:g})")
    parser.add_argument("--hosts", type=positive_int, default=10_000,
                        help="number of synthetic hosts (default: 10000)")
    parser.add_argument("--runner", default="threadpool",
                        help="runner plugin name (default: threadpool); nornir's own: threaded")
    parser.add_argument("--jitter", type=seconds, default=0.0,
                        help="each host's delay is drawn from RTT ± JITTER seconds")
    parser.add_argument("--fail-rate", type=probability, default=0.0,
                        help="probability that a host's round trip fails (0 to 1)")
    parser.add_argument("--seed", type=int, default=None,
                        help="make jitter and failures the same on every run")
    parser.add_argument("--in-flight", action="store_true",
                        help="WORKERS is the hosts in flight in all: processpool and dask share "
                        "it out over their processes (one per CPU); without it, WORKERS is "
                        "their num_workers in each process")
    parser.add_argument("--record", metavar="PATH", type=Path, default=None,
                        help="also write the run's figures to PATH as one JSON object, for "
                        "programs (nornir-bench sweep reads it); the last line is for people "
                        "and may be reworded")
    parser.add_argument("--progress", action="store_true",
                        help="draw a bar of the hosts done on standard error, also when it is "
                        "not a terminal (it costs the run a little)")
    return parser


def script_main(
    argv: Sequence[str] | None = None, *, terminated: threading.Event | None = None
) -> int:
    """Run ``script.py WORKERS RTT [options]``; returns the exit status.

    ``terminated`` is set when SIGTERM stopped the run (see :func:`sigterm_as_ctrl_c`).
    """
    parser = _script_parser()
    args = parser.parse_args(argv)
    runners = available_runners()
    if args.runner not in runners:
        parser.error(f"unknown runner {args.runner!r}; available: {', '.join(runners)}")
    if args.record is not None:
        try:
            args.record.write_text("")  # now: a path that cannot be written costs no run
        except OSError as exc:
            parser.error(f"--record: cannot write {args.record}: {exc.strerror or exc}")

    def announce(runner: str, workers: int | None, task: str) -> None:
        shown = "no workers option" if workers is None else f"{workers} workers"
        print(f"runner {runner}, {shown}, {hosts_text(args.hosts)}, task {task}(rtt={args.rtt})",
              flush=True)

    run = run_benchmark(
        args.workers,
        args.rtt,
        hosts=args.hosts,
        runner=args.runner,
        jitter=args.jitter,
        fail_rate=args.fail_rate,
        seed=args.seed,
        on_start=announce,
        in_flight=args.in_flight,
        progress=sys.stderr if args.progress else None,
    )
    for line in run.summary.lines():
        print(line)
    if run.interrupted:
        not_run = args.hosts - run.summary.hosts
        print(f"interrupted{by_signal(terminated)}: {hosts_text(not_run)} did not run")
    usage = process_usage()
    summary = run.summary
    print(
        f"{summary.ok} ok, {summary.failed} failed | run {summary.wall or 0:.3f} s | "
        f"process: wall {usage.wall:.2f} s, user {usage.user:.2f} s, sys {usage.sys:.2f} s, "
        f"cpu {usage.cpu_percent:.0f} %, max rss {usage.max_rss_mib:.0f} MiB"
    )
    if args.record is not None:
        try:
            write_record(
                args.record, BenchmarkRecord.of(run, usage, hosts=args.hosts, rtt=args.rtt)
            )
        except OSError as exc:
            print(f"script.py: error: cannot write the record {args.record}: "
                  f"{exc.strerror or exc}", file=sys.stderr)
            return EXIT_USAGE
    if run.interrupted:
        return interrupted_status(terminated)
    return EXIT_FAILED_HOSTS if summary.failed else EXIT_OK


def script_entry() -> NoReturn:
    """``sys.exit`` wrapper for ``scripts/script.py``; see :func:`exit_with`."""
    exit_with(script_main)
