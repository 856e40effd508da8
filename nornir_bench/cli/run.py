"""``nornir-bench run JOB.yaml``: a job file's task on its inventory, with a progress bar,
per-host JSON Lines records, a summary and one line per failed host."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from nornir_bench.cli._common import (
    EXIT_FAILED_HOSTS,
    EXIT_OK,
    EXIT_USAGE,
    by_signal,
    hosts_text,
    interrupted_status,
)

HELP = "run a YAML job file's task on its inventory"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``run``."""
    parser.description = (
        "Run the task of a YAML job file (a nornir configuration plus task, filter, output) on "
        "its hosts. Per-host records go to a JSON Lines file as hosts finish."
    )
    parser.add_argument("job", metavar="JOB.yaml", type=Path, help="the job file")
    parser.add_argument("--output", "-o", metavar="PATH", type=Path,
                        help="JSON Lines file for per-host records (default: the job's "
                        "output.path, else JOBNAME-DATE.jsonl here)")
    parser.add_argument("--quiet", "-q", action="store_true",
                        help="no progress bar (there is none either when stderr is not a "
                        "terminal)")


def command(args: argparse.Namespace) -> int:
    from nornir_bench.jobs.load import load_job
    from nornir_bench.jobs.run import failure_lines, run_job

    job = load_job(args.job)
    try:
        run = run_job(job, output=args.output, progress=False if args.quiet else None)
    except OSError as exc:
        print(f"nornir-bench: error: cannot write the results: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print(
        f"job {job.path}: task {job.task_name} on {hosts_text(run.hosts)}, runner {job.runner_plugin}"
    )
    for line in run.summary.lines():
        print(run.redact(line))
    failures = failure_lines(run)
    if failures:
        print("failed hosts:")
        print("\n".join(failures))
    if run.interrupted:
        print(
            f"interrupted{by_signal(args.terminated)}: {run.hosts - len(run.result)} of "
            f"{hosts_text(run.hosts)} did not finish"
            + (" (hosts in flight abandoned: their devices may not have finished)"
               if run.abandoned else "")
        )
    print(f"per-host records: {run.output}")
    if run.interrupted:
        return interrupted_status(args.terminated)
    return EXIT_FAILED_HOSTS if run.summary.failed else EXIT_OK
