"""``nornir-bench sweep``: the study's grid of runners x workers x RTT, each run a fresh process;
tables, CSV/JSON, plots and a recommended worker count (exit 1: some run failed)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from nornir_bench.cli._common import (
    EXIT_FAILED_HOSTS,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    positive_int,
    runner_list,
    seconds_list,
    workers_list,
)

HELP = "the threads-vs-coroutines study: runners x workers x RTT, tables and plots"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``sweep``."""
    from nornir_bench.bench.sweep.grid import (
        DEFAULT_RTTS,
        DEFAULT_RUNNERS,
        DEFAULT_WORKERS,
    )

    parser.description = (
        "Run the 'how many threads are enough' benchmark (scripts/script.py) for every runner x "
        "workers x RTT, each run in a fresh process timed from outside as `time` did; print the "
        "study's tables and a recommended worker count, and write CSV, JSON and plots to DIR. "
        "Stopped (Ctrl-C) or killed, it carries on from DIR/runs.jsonl when run again with the "
        "same --out."
    )
    parser.epilog = (
        "Exit status: 0 all runs done, 1 some run failed (see DIR/results.csv), 2 bad usage or "
        "DIR holds runs of another setup, 130 Ctrl-C (what finished is written)."
    )
    parser.add_argument("--runners", metavar="R,R", type=runner_list,
                        default=list(DEFAULT_RUNNERS),
                        help=f"runner plugins (default: {','.join(DEFAULT_RUNNERS)}); nornir's own "
                        "threaded and serial are baselines")
    parser.add_argument("--workers", metavar="N,N", type=workers_list,
                        default=list(DEFAULT_WORKERS),
                        help=f"worker counts (default: {','.join(map(str, DEFAULT_WORKERS))})")
    parser.add_argument("--rtt", metavar="S,S", type=seconds_list, default=list(DEFAULT_RTTS),
                        help="simulated round-trip times in seconds "
                        f"(default: {','.join(f'{rtt:g}' for rtt in DEFAULT_RTTS)})")
    parser.add_argument("--hosts", metavar="N", type=positive_int, default=10_000,
                        help="synthetic hosts per run (default: 10000)")
    parser.add_argument("--repeat", metavar="N", type=positive_int, default=3,
                        help="runs per point; the tables show the median (default: 3)")
    parser.add_argument("--out", "-o", metavar="DIR", type=Path, default=Path("sweep-results"),
                        help="results folder, and the journal a stopped sweep resumes from "
                        "(default: sweep-results)")
    parser.add_argument("--quiet", "-q", action="store_true",
                        help="no progress bar (there is none either when stderr is not a terminal)")


def command(args: argparse.Namespace) -> int:
    from nornir_bench.bench.sweep import (
        PLOT_HINT,
        SweepGrid,
        run_sweep,
        tables,
        write_report,
    )
    from nornir_bench.core.files import why_not_written

    grid = SweepGrid(runners=args.runners, workers=args.workers, rtts=args.rtt,
                     hosts=args.hosts, repeat=args.repeat)
    result = run_sweep(grid, args.out, progress=False if args.quiet else None)
    try:
        report = write_report(result, args.out)
    except OSError as exc:
        where = Path(exc.filename) if exc.filename else args.out
        print(
            f"nornir-bench: error: cannot write the results to {where}: "
            f"{why_not_written(exc, where)}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    print(tables(result))
    print()
    names = [path.name for path in [*report.files, result.journal, *report.plots]]
    print(f"results in {args.out}: {', '.join(names)}")
    if report.plots_skipped:
        print(PLOT_HINT)
    if result.interrupted:
        print(f"interrupted: {result.runs_done} of {result.runs_planned} runs done; "
              "run the same command again to carry on")
        return EXIT_INTERRUPTED
    failed_hosts = any(point.failed for point in result.points)
    return EXIT_FAILED_HOSTS if result.failed_runs or failed_hosts else EXIT_OK
