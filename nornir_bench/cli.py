"""Command lines of nornir-bench: thin layers over the public API.

- ``nornir-bench run JOB.yaml`` (:func:`main`): a job file's task on its inventory, with a
  progress bar, per-host JSON Lines records, a summary and one line per failed host.
- ``nornir-bench lab`` / ``nornir-bench rtt-server``: the local device lab.
- ``nornir-bench sweep``: the study's grid of runners x workers x RTT, each run a fresh process;
  tables, CSV/JSON, plots and a recommended worker count (exit 1: some run failed).
- ``scripts/script.py WORKERS RTT`` (:func:`script_main`): the "how many threads" benchmark.

Exit status, for all: 0 every host ok, 1 some host failed, 2 bad usage or a bad job (one-line
error, no traceback), 130 interrupted by Ctrl-C, 143 stopped by SIGTERM (as by Ctrl-C: the
hosts that finished are still reported).
"""

from __future__ import annotations

import argparse
import gc
import logging
import math
import os
import sys
import threading
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn, TextIO, TypeVar

from nornir_bench.benchmark import available_runners, run_benchmark
from nornir_bench.stopping import sigterm_as_ctrl_c
from nornir_bench.tasks.simulated import MAX_RTT
from nornir_bench.usage import process_usage

__all__ = [
    "EXIT_BROKEN_PIPE",
    "EXIT_FAILED_HOSTS",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_TERMINATED",
    "EXIT_USAGE",
    "main",
    "script_entry",
    "script_main",
]

EXIT_OK = 0
EXIT_FAILED_HOSTS = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143  # 128 + SIGTERM, as shells report a process SIGTERM ended
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: the reader of the output went away (``| head``)


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line: what was wrong and what is allowed."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text!r}")
    return value


def _float_argument(allowed: str, accept: Callable[[float], bool]) -> Callable[[str], float]:
    """An argparse type: a float that ``accept`` approves, else an error naming ``allowed``."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not accept(value):  # NaN fails every comparison, so it is rejected too
            raise argparse.ArgumentTypeError(f"must be {allowed}, got {text!r}")
        return value

    return parse


# Round trips and jitter: past MAX_RTT a run would sleep for ever, or overflow.
_seconds = _float_argument(
    f"a number of seconds from 0 to {MAX_RTT:g} (an hour: longer than any device takes to answer)",
    lambda v: 0 <= v <= MAX_RTT,
)
_probability = _float_argument("a probability from 0 to 1", lambda v: 0 <= v <= 1)

_Item = TypeVar("_Item")


def _comma_list(item: Callable[[str], _Item], allowed: str) -> Callable[[str], list[_Item]]:
    """An argparse type: comma-separated ``item``s, at least one.

    An empty list or item is an error naming ``allowed``; a bad item, the item's own error.
    """

    def parse(text: str) -> list[_Item]:
        parts = [part.strip() for part in text.split(",")]
        if not all(parts):
            raise argparse.ArgumentTypeError(f"must be {allowed}, got {text!r}")
        return [item(part) for part in parts]

    return parse


def _known_runner(name: str) -> str:
    runners = available_runners()
    if name not in runners:
        raise argparse.ArgumentTypeError(f"unknown runner {name!r}; available: {', '.join(runners)}")
    return name


_runner_list = _comma_list(_known_runner, "comma-separated runner names")
_workers_list = _comma_list(_positive_int, "comma-separated whole numbers >= 1 (e.g. 100,1000)")
_seconds_list = _comma_list(
    _seconds, f"comma-separated seconds from 0 to {MAX_RTT:g} (e.g. 0.05,0.1)"
)


def _script_parser() -> _Parser:
    parser = _Parser(
        prog="script.py",
        description=(
            "The 'how many threads are enough' study: one simulated device round trip on each "
            "synthetic host, on any nornir runner. Ends with one line: hosts ok/failed, run "
            "time, and the process's wall, user, sys and CPU %% as `time` reports them."
        ),
        epilog="Exit status: 0 all hosts ok, 1 some host failed, 2 bad usage, 130 Ctrl-C, "
        "143 SIGTERM.",
    )
    parser.add_argument("workers", metavar="WORKERS", type=_positive_int,
                        help="the runner's num_workers (hosts in flight at once)")
    parser.add_argument("rtt", metavar="RTT", type=_seconds,
                        help="simulated round-trip time per host, in seconds (e.g. 0.05; "
                        f"at most {MAX_RTT:g})")
    parser.add_argument("--hosts", type=_positive_int, default=10_000,
                        help="number of synthetic hosts (default: 10000)")
    parser.add_argument("--runner", default="threadpool",
                        help="runner plugin name (default: threadpool); nornir's own: threaded")
    parser.add_argument("--jitter", type=_seconds, default=0.0,
                        help="each host's delay is drawn from RTT ± JITTER seconds")
    parser.add_argument("--fail-rate", type=_probability, default=0.0,
                        help="probability that a host's round trip fails (0 to 1)")
    parser.add_argument("--seed", type=int, default=None,
                        help="make jitter and failures the same on every run")
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

    def announce(runner: str, workers: int | None, task: str) -> None:
        shown = "no workers option" if workers is None else f"{workers} workers"
        print(f"runner {runner}, {shown}, {_hosts(args.hosts)}, task {task}(rtt={args.rtt})",
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
    )
    for line in run.summary.lines():
        print(line)
    if run.interrupted:
        print(f"interrupted{_by(terminated)}: {args.hosts - run.summary.hosts} hosts did not run")
    usage = process_usage()
    summary = run.summary
    print(
        f"{summary.ok} ok, {summary.failed} failed | run {summary.wall or 0:.3f} s | "
        f"process: wall {usage.wall:.2f} s, user {usage.user:.2f} s, sys {usage.sys:.2f} s, "
        f"cpu {usage.cpu_percent:.0f} %, max rss {usage.max_rss_mib:.0f} MiB"
    )
    if run.interrupted:
        return _interrupted(terminated)
    return EXIT_FAILED_HOSTS if summary.failed else EXIT_OK


def _hosts(count: int) -> str:
    return f"{count} host{'s' * (count != 1)}"


def _by(terminated: threading.Event | None) -> str:
    """`` (SIGTERM)`` when SIGTERM stopped the run: say which signal it was."""
    return " (SIGTERM)" if terminated is not None and terminated.is_set() else ""


def _interrupted(terminated: threading.Event | None) -> int:
    return EXIT_TERMINATED if terminated is not None and terminated.is_set() else EXIT_INTERRUPTED


def _main_parser() -> _Parser:
    # Imported here, not at the top: script.py, timed as a whole process, needs none of it.
    from nornir_bench.lab.commands import (
        LAB_HELP,
        RTT_SERVER_HELP,
        WAIT_LAB_HELP,
        add_lab_arguments,
        add_rtt_server_arguments,
        add_wait_lab_arguments,
        lab_command,
        rtt_server_command,
        wait_lab_command,
    )
    from nornir_bench.sweep.grid import DEFAULT_RTTS, DEFAULT_RUNNERS, DEFAULT_WORKERS

    parser = _Parser(
        prog="nornir-bench",
        description="Fast, safe nornir runners: run jobs on devices, or try them on a local lab.",
        epilog="Exit status: 0 all hosts ok, 1 some host failed, 2 bad usage or job, 130 Ctrl-C, "
        "143 SIGTERM (what finished is reported).",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands",
                                     parser_class=_Parser)
    run = commands.add_parser(
        "run", help="run a YAML job file's task on its inventory",
        description="Run the task of a YAML job file (a nornir configuration plus task, filter, "
        "output) on its hosts. Per-host records go to a JSON Lines file as hosts finish.",
    )
    run.add_argument("job", metavar="JOB.yaml", type=Path, help="the job file")
    run.add_argument("--output", "-o", metavar="PATH", type=Path,
                     help="JSON Lines file for per-host records (default: the job's output.path, "
                     "else JOBNAME-DATE.jsonl here)")
    run.add_argument("--quiet", "-q", action="store_true",
                     help="no progress bar (there is none either when stderr is not a terminal)")
    run.set_defaults(handler=_run_command)
    lab = commands.add_parser("lab", help=LAB_HELP, description=LAB_HELP)
    add_lab_arguments(lab)
    lab.set_defaults(handler=lab_command)
    wait_lab = commands.add_parser(
        "wait-lab", help=WAIT_LAB_HELP, description=WAIT_LAB_HELP,
        epilog="Exit status: 0 every device accepts connections, 1 not within --timeout, "
        "2 bad usage.",
    )
    add_wait_lab_arguments(wait_lab)
    wait_lab.set_defaults(handler=wait_lab_command)
    rtt = commands.add_parser("rtt-server", help=RTT_SERVER_HELP, description=RTT_SERVER_HELP)
    add_rtt_server_arguments(rtt)
    rtt.set_defaults(handler=rtt_server_command)
    sweep = commands.add_parser(
        "sweep", help="the threads-vs-coroutines study: runners x workers x RTT, tables and plots",
        description="Run the 'how many threads are enough' benchmark (scripts/script.py) for "
        "every runner x workers x RTT, each run in a fresh process timed from outside as `time` "
        "did; print the study's tables and a recommended worker count, and write CSV, JSON and "
        "plots to DIR. Stopped (Ctrl-C) or killed, it carries on from DIR/runs.jsonl when run "
        "again with the same --out.",
        epilog="Exit status: 0 all runs done, 1 some run failed (see DIR/results.csv), "
        "2 bad usage or DIR holds runs of another setup, 130 Ctrl-C (what finished is written).",
    )
    sweep.add_argument("--runners", metavar="R,R", type=_runner_list,
                       default=list(DEFAULT_RUNNERS),
                       help=f"runner plugins (default: {','.join(DEFAULT_RUNNERS)}); nornir's own "
                       "threaded and serial are baselines")
    sweep.add_argument("--workers", metavar="N,N", type=_workers_list,
                       default=list(DEFAULT_WORKERS),
                       help=f"worker counts (default: {','.join(map(str, DEFAULT_WORKERS))})")
    sweep.add_argument("--rtt", metavar="S,S", type=_seconds_list, default=list(DEFAULT_RTTS),
                       help="simulated round-trip times in seconds "
                       f"(default: {','.join(f'{rtt:g}' for rtt in DEFAULT_RTTS)})")
    sweep.add_argument("--hosts", metavar="N", type=_positive_int, default=10_000,
                       help="synthetic hosts per run (default: 10000)")
    sweep.add_argument("--repeat", metavar="N", type=_positive_int, default=3,
                       help="runs per point; the tables show the median (default: 3)")
    sweep.add_argument("--out", "-o", metavar="DIR", type=Path, default=Path("sweep-results"),
                       help="results folder, and the journal a stopped sweep resumes from "
                       "(default: sweep-results)")
    sweep.add_argument("--quiet", "-q", action="store_true",
                       help="no progress bar (there is none either when stderr is not a terminal)")
    sweep.set_defaults(handler=_sweep_command)
    return parser


def main(argv: Sequence[str] | None = None, *, terminated: threading.Event | None = None) -> int:
    """The ``nornir-bench`` command; returns the exit status.

    ``terminated`` is set when SIGTERM stopped the run (see :func:`sigterm_as_ctrl_c`).
    """
    from nornir_bench.job import JobError
    from nornir_bench.lab import LabError

    parser = _main_parser()
    args = parser.parse_args(argv)
    if args.command is None:  # the commands, rather than one line saying one is required
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    args.terminated = terminated
    try:
        return int(args.handler(args))
    except (JobError, LabError) as exc:
        print(f"nornir-bench: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


def _run_command(args: argparse.Namespace) -> int:
    from nornir_bench.job import load_job
    from nornir_bench.jobrun import failure_lines, run_job

    job = load_job(args.job)
    try:
        run = run_job(job, output=args.output, progress=False if args.quiet else None)
    except OSError as exc:
        print(f"nornir-bench: error: cannot write the results: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print(
        f"job {job.path}: task {job.task_name} on {_hosts(run.hosts)}, runner {job.runner_plugin}"
    )
    for line in run.summary.lines():
        print(run.redact(line))
    failures = failure_lines(run)
    if failures:
        print("failed hosts:")
        print("\n".join(failures))
    if run.interrupted:
        print(
            f"interrupted{_by(args.terminated)}: {run.hosts - len(run.result)} of "
            f"{_hosts(run.hosts)} did not finish"
            + (" (hosts in flight abandoned: their devices may not have finished)"
               if run.abandoned else "")
        )
    print(f"per-host records: {run.output}")
    if run.interrupted:
        return _interrupted(args.terminated)
    return EXIT_FAILED_HOSTS if run.summary.failed else EXIT_OK


def _sweep_command(args: argparse.Namespace) -> int:
    from nornir_bench.sweep import PLOT_HINT, SweepError, SweepGrid, run_sweep, tables, write_report

    grid = SweepGrid(runners=args.runners, workers=args.workers, rtts=args.rtt,
                     hosts=args.hosts, repeat=args.repeat)
    try:
        result = run_sweep(grid, args.out, progress=False if args.quiet else None)
    except SweepError as exc:
        print(f"nornir-bench: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        report = write_report(result, args.out)
    except OSError as exc:
        print(f"nornir-bench: error: cannot write the results: {exc}", file=sys.stderr)
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


def script_entry() -> NoReturn:
    """``sys.exit`` wrapper for ``scripts/script.py``; see :func:`_exit_with`."""
    _exit_with(script_main)


def entry() -> NoReturn:
    """``sys.exit`` wrapper for the ``nornir-bench`` console script."""
    _exit_with(main)


def _exit_with(command: Callable[..., int]) -> NoReturn:
    """Run ``command`` and exit with its status.

    SIGTERM does what Ctrl-C does (the status is then 143, not 130). Ctrl-C before a run
    started exits quietly. After a run whose hosts in flight were abandoned (Ctrl-C twice),
    threads that cannot be stopped may still be running a blocking call: the process exits
    without waiting for them, as Ctrl-C asked.
    """
    warnings.showwarning = _one_line_warning
    with sigterm_as_ctrl_c() as terminated:
        try:
            status = command(terminated=terminated)
            sys.stdout.flush()
        except KeyboardInterrupt:
            # Runs report what finished themselves; this is Ctrl-C while starting up.
            print(f"interrupted{_by(terminated)} before any host ran", file=sys.stderr)
            status = _interrupted(terminated)
        except BrokenPipeError:
            # What was left to print has nowhere to go; as a shell tool killed by SIGPIPE.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            status = EXIT_BROKEN_PIPE
    if status in (EXIT_INTERRUPTED, EXIT_TERMINATED) and _threads_left():
        sys.stderr.flush()
        logging.shutdown()
        os._exit(status)
    # The work is done and reported. The interpreter's last act would be a full collection
    # walking every object the run made (43 ms of a 0.4 s process at 10,000 hosts) only to
    # free them all at exit anyway; frozen objects are skipped. atexit handlers still run.
    gc.freeze()
    sys.exit(status)


def _one_line_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """Warnings as users of a command read them: one line, no source file or code."""
    print(f"nornir-bench: warning: {message}", file=file or sys.stderr)


def _threads_left() -> bool:
    """Whether threads the interpreter would wait for at exit are still running."""
    main_thread = threading.main_thread()
    return any(t is not main_thread and not t.daemon and t.is_alive() for t in threading.enumerate())
