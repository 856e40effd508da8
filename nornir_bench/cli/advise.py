"""``nornir-bench advise JOB.yaml``: run a job's steps on a sample of its hosts and say which
runner and how many workers the whole job needs, with what it will cost this machine."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from nornir_bench.cli._common import (
    EXIT_OK,
    by_signal,
    interrupted_status,
    positive_int,
    seconds,
)
from nornir_bench.core.exceptions import NornirBenchError
from nornir_bench.core.wording import hosts_text

if TYPE_CHECKING:
    from nornir_bench.bench.advise import Prediction, Sample
    from nornir_bench.bench.costs import RunnerCosts
    from nornir_bench.jobs.advise import JobAdvice
    from nornir_bench.jobs.load import Job

HELP = "predict how many workers a job needs, from a run on a sample of its hosts"

_DEFAULT_SAMPLE = 100  # jobs.advise.DEFAULT_SAMPLE, not imported: --help loads no job layer


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``advise``."""
    parser.description = (
        "Run a job file's steps on a random sample of its hosts, at two loads, measure each "
        "host's latency, CPU, memory and open files, and each runner's own costs, then "
        "simulate the whole job for each runner and worker count and predict its wall time "
        "(median and 5th-95th percentile), CPU, memory and open files, against this "
        "machine's limits. Only a task known to be read-only runs, unless --allow-changes."
    )
    parser.add_argument("job", metavar="JOB.yaml", type=Path, help="the job file")
    parser.add_argument("--sample", metavar="N", type=positive_int, default=_DEFAULT_SAMPLE,
                        help=f"the most hosts in the sample (default {_DEFAULT_SAMPLE})")
    parser.add_argument("--seed", metavar="N", type=int,
                        help="draw the same sample (and --check slice) every time")
    parser.add_argument("--budget", metavar="SECONDS", type=seconds,
                        help="the sample's run_timeout: hosts not finished by then fail")
    parser.add_argument("--check", action="store_true",
                        help="then run the recommendation on 2,000 of the job's hosts (all, if "
                        "fewer) and print predicted against measured")
    parser.add_argument("--allow-changes", action="store_true",
                        help="run the job's steps on the sample even if a step's task is not "
                        "known to be read-only (it may change the devices)")
    parser.add_argument("--plot", metavar="FILE", type=Path,
                        help="also draw predicted wall against workers, a line per runner, "
                        "to this PNG file (needs matplotlib: the extra plot)")
    parser.add_argument("--runners", metavar="NAME,...", type=_names,
                        help="predict these runners only (default: asyncio, processpool and "
                        "dask for an async def task, threadpool for a blocking one)")
    parser.add_argument("--address", metavar="ADDR",
                        help="the Dask scheduler the dask runner would use: its workers, "
                        "cores and the cost of a run on it are measured there")


def command(args: argparse.Namespace) -> int:
    from nornir_bench.jobs.advise import advise_job
    from nornir_bench.jobs.load import load_job

    if args.plot is not None and not args.plot.parent.is_dir():  # before the sample runs
        raise NornirBenchError(f"--plot: no such folder: {args.plot.parent}")
    job = load_job(args.job)
    try:
        found = advise_job(
            job,
            sample=args.sample,
            seed=args.seed,
            budget=args.budget,
            allow_changes=args.allow_changes,
            address=args.address,
            check=args.check,
            runners=args.runners,
        )
    except KeyboardInterrupt:  # the hosts in flight were waited for, or abandoned
        print(f"interrupted{by_signal(args.terminated)}: no advice", file=sys.stderr)
        return interrupted_status(args.terminated)
    print(header_line(job, found.hosts))
    for line in report_lines(found):
        print(line)
    if args.plot is not None:
        from nornir_bench.bench.advise_plot import PLOT_HINT, write_advice_plot

        try:
            drawn = write_advice_plot(found.advice, args.plot)
        except OSError as exc:
            raise NornirBenchError(f"cannot write the plot {args.plot}: {exc.strerror}") from None
        print(f"plot: {args.plot}" if drawn else PLOT_HINT)
    return EXIT_OK


def _names(text: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    if not names:
        raise argparse.ArgumentTypeError(f"must name one runner or more, got {text!r}")
    return names


def header_line(job: Job, hosts: int) -> str:
    """The job, every step's task (in order), its hosts."""
    if job.stepped:
        tasks = ", ".join(step.task_name for step in job.steps)
        what = f"{len(job.steps)} step{'s' * (len(job.steps) != 1)} ({tasks})"
    else:
        what = f"task {job.task_name}"
    return f"job {job.path}: {what} on {hosts_text(hosts)}"


def _here_line(found: JobAdvice) -> str:
    """The devices share this machine's CPUs: the bias that gives the prediction."""
    sampled, here, cpus = len(found.sampled), len(found.here), found.limits.cpus
    line = (
        f"{here} of the {sampled} sampled hosts are devices on this machine: they share its CPUs "
        "with the run, and a full run leaves them less CPU than the sample did, so the "
        "prediction is optimistic"
    )
    every = os.cpu_count() or cpus
    if cpus < every:
        line += f" (unless they run on CPUs this run may not use: it may use {cpus} of {every})"
    return line


def report_lines(found: JobAdvice) -> list[str]:
    """The sample, the machine, the table of predictions, the recommendation and warnings."""
    limits, advice = found.limits, found.advice
    memory = "unknown" if limits.memory_available is None else _mib(limits.memory_available)
    lines = [
        f"sample: {hosts_text(len(found.sampled))} on {found.sample_runner} in "
        f"{_s(sum(step.sample.seconds for step in found.steps))} s",
    ]
    for step in found.steps:
        lines += _sample_lines(step.sample, f"step {step.number} ({step.task_name}) "
                               if len(found.steps) > 1 else "")
    lines += [
        f"machine: {limits.cpus} CPUs, ulimit -n {limits.open_files_soft:,} (hard "
        f"{limits.open_files_hard:,}), {memory} available",
        f"runners' own costs (measured in {_s(found.calibration)} s): "
        + "; ".join(_costs(runner, costs) for runner, costs in found.costs.items()),
        "",
        f"predicted for {hosts_text(found.hosts)} ({len(found.steps)} steps, the start-up "
        "once):" if len(found.steps) > 1 else f"predicted for {hosts_text(found.hosts)}:",
        f"{'runner':<12} {'workers':>8} {'in flight':>9} {'wall s':>8} {'(p5-p95)':>17} "
        f"{'CPU %':>6} {'peak memory':>12} {'open files':>10}",
    ]
    for p in advice.predictions:
        lines.append(_row(p, mark="*" if p == advice.best else " "))
    best = advice.best
    lines += [
        "",
        f"recommended: runner {best.runner}, num_workers {best.workers}: {_wall(best)} "
        f"predicted (the fewest workers within 10 % of the best)",
    ]
    lines += [f"warning: {line}" for line in advice.warnings]
    if found.here:
        lines.append(f"warning: {_here_line(found)}")
    if found.as_written is not None and found.as_written != best:
        lines.append(
            f"the job as written ({found.as_written.runner}, num_workers "
            f"{found.as_written.workers}): {_wall(found.as_written)} predicted"
        )
        lines += [f"warning: as written: {line}" for line in found.as_written_warnings]
    failed = sum(step.sample.failed for step in found.steps)
    if failed:
        lines.append(
            f"warning: {failed} of the sample's host runs failed: their time counts as a "
            "latency like the others'"
        )
    if found.check is not None:
        lines.append(_check_line(found.check.prediction, found.check.measured))
    return lines


def _sample_lines(s: Sample, step: str) -> list[str]:
    loads = " and ".join(
        f"{level.in_flight:,} in flight (p50 {_ms(level.p50)}"
        + (f", {level.refused} logins refused" if level.refused else "") + ")"
        for level in s.levels
    )
    return [
        f"{step}loads: two alone (a warm-up, and the run's fixed cost), then "
        f"{loads or 'the rest at once'}; {s.failed} failed",
        f"{step}per host: latency p50 {_ms(s.p50)}, p95 {_ms(s.p95)}, max {_ms(s.max)}; CPU "
        f"{s.cpu_per_host * 1e6:,.0f} µs; memory {s.memory_per_host / 1024:,.1f} KiB; open "
        f"files {s.descriptors_per_host:.2f}",
    ]


def _costs(runner: str, costs: RunnerCosts) -> str:
    where = f", {costs.processes} processes, {costs.cores} cores" if costs.processes > 1 else ""
    return (
        f"{runner} start-up {_s(costs.startup)} s, {costs.per_host * 1e6:,.0f} µs a host"
        f"{where}"
    )


def _row(p: Prediction, *, mark: str) -> str:
    wall = f"({_s(p.wall_low)}-{_s(p.wall_high)})"
    return (
        f"{p.runner:<12} {p.workers:>8,} {p.in_flight:>9,} {_s(p.wall):>8} {wall:>17} "
        f"{p.cpu_percent:>6.0f} {_mib(p.memory):>12} {p.open_files:>10,}{mark}"
    )


def _check_line(predicted: Prediction, measured: Sample) -> str:
    failed = f", {measured.failed} failed" if measured.failed else ""
    inside = predicted.wall_low <= measured.wall <= predicted.wall_high
    off = (measured.wall - predicted.wall) / measured.wall * 100 if measured.wall else 0.0
    return (
        f"check: {predicted.runner}, num_workers {predicted.workers} on "
        f"{hosts_text(predicted.hosts)}: predicted {_wall(predicted)}, measured "
        f"{_s(measured.wall)} s{failed}: {'inside' if inside else 'outside'} the range, "
        f"the prediction {abs(off):.0f} % {'short' if off >= 0 else 'over'}"
    )


def _wall(p: Prediction) -> str:
    return f"{_s(p.wall)} s ({_s(p.wall_low)}-{_s(p.wall_high)} s)"


def _s(seconds: float) -> str:
    return f"{seconds:.3f}" if seconds < 10 else f"{seconds:,.1f}"


def _ms(value: float) -> str:
    return f"{value * 1000:,.1f} ms"


def _mib(size: float) -> str:
    return f"{size / 2**20:,.0f} MiB"
