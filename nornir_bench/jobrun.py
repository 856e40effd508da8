"""Running a checked job: records streamed as hosts finish, a progress bar, connections closed.

:func:`run_job` is what ``nornir-bench run`` does, without the printing; it is public so that
a scheduler or a notebook can run job files too.
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from nornir.core.exceptions import NornirExecutionError

from nornir_bench.exceptions import RunInterrupted
from nornir_bench.progress import ProgressBar
from nornir_bench.records import JsonLinesWriter
from nornir_bench.secrets import Redactor
from nornir_bench.summary import RunSummary, failure_of, summarize

if TYPE_CHECKING:
    from nornir.core import Nornir
    from nornir.core.task import AggregatedResult

    from nornir_bench.job import Job

__all__ = ["JobRun", "default_output", "failure_lines", "run_job"]


@dataclass(frozen=True)
class JobRun:
    """What a job run did.

    Attributes:
        result: the hosts that finished (all of them unless ``interrupted``).
        summary: counts, per-host times, failures by type.
        output: the JSON Lines file holding one record per finished host.
        hosts: how many hosts the run was to cover.
        interrupted: stopped by Ctrl-C; ``result`` has the hosts that had finished.
        redact: masks the run's secrets in any text shown from it.
    """

    result: AggregatedResult | None
    summary: RunSummary | None
    output: Path
    hosts: int
    interrupted: bool
    redact: Redactor


def default_output(job: Job) -> Path:
    """``<job name>-<date>T<time>.jsonl`` in the current folder: each run keeps its own file."""
    return Path(f"{job.path.stem}-{datetime.now():%Y%m%dT%H%M%S}.jsonl")


def run_job(job: Job, *, output: Path | None = None, progress: bool | None = None) -> JobRun:
    """Run ``job`` on its hosts.

    Args:
        job: from :func:`nornir_bench.job.load_job`.
        output: the JSON Lines file; else the job's ``output.path``; else :func:`default_output`.
        progress: draw a progress bar on standard error; ``None``: when it is a terminal.

    Raises:
        JobError: when the inventory cannot be loaded or the filter matches no host.
        OSError: when the output file cannot be written.
    """
    nr, secrets = job.nornir()
    redact = Redactor(secrets)
    # On the handlers InitNornir has just set up: one per logger the job's logging names.
    with redact.installed(nr.config.logging.loggers):
        return _run(job, nr, redact, output, progress)


def _run(
    job: Job, nr: Nornir, redact: Redactor, output: Path | None, progress: bool | None
) -> JobRun:
    _no_last_resort_logging()
    path = output or job.output or default_output(job)
    if path.parent != Path():
        path.parent.mkdir(parents=True, exist_ok=True)
    hosts = len(nr.inventory.hosts)
    bar = ProgressBar(enabled=progress)
    with path.open("w", encoding="utf-8") as file:
        records = JsonLinesWriter(file, redact=redact)
        result: AggregatedResult | None = None
        interrupted = False
        started = time.perf_counter()
        try:
            result = nr.with_processors([records, bar]).run(task=job.task, **job.params)
        except NornirExecutionError as exc:  # core.raise_on_error: the run finished all the same
            result = exc.result
        except RunInterrupted as exc:
            result, interrupted = exc.result, True
        except KeyboardInterrupt:  # nornir's own runners: what finished is in the file
            interrupted = True
        finally:
            wall = time.perf_counter() - started
            bar.close()
            _close_connections(nr)
    summary = None if result is None else summarize(result, elapsed=records.elapsed, wall=wall)
    return JobRun(result, summary, path, hosts, interrupted, redact)


def failure_lines(run: JobRun, *, limit: int = 50) -> list[str]:
    """One line per failed host, ``host: Exception: first line of its message``; no tracebacks."""
    if run.result is None:
        return []
    lines = []
    failed = [(name, multi) for name, multi in run.result.items() if multi.failed]
    for name, multi in failed[:limit]:
        failure = failure_of(multi)
        exc = failure.exception if failure is not None else None
        if exc is None:
            what = f"failed: {run.redact(str(failure.result if failure is not None else ''))[:200]}"
        else:
            # Masked before it is cut short: a secret cut in two would not be recognised.
            message = run.redact(str(exc)).strip().splitlines()
            what = type(exc).__name__ + (f": {message[0][:200]}" if message else "")
        lines.append(run.redact(f"  {name}: {what}"))
    if len(failed) > limit:
        lines.append(f"  ... and {len(failed) - limit} more: see {run.output}")
    return lines


def _no_last_resort_logging() -> None:
    """Keep library log records (paramiko's thread tracebacks...) off the terminal.

    With no handler configured anywhere, logging prints WARNING and above on standard error, so
    a device that drops a session would print a traceback across the progress bar. The job's
    ``logging.loggers`` puts such loggers in nornir's log instead (e.g. ``[nornir, paramiko]``).
    Only when the root logger has no handler: an application's own logging is left alone.
    """
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(logging.NullHandler())


def _close_connections(nr: Nornir) -> None:
    """Close what the run left open (netmiko sessions), on every host, in parallel."""
    if any(host.connections for host in nr.inventory.hosts.values()):
        # A second Ctrl-C while closing should not hide the run's results.
        with contextlib.suppress(Exception, KeyboardInterrupt):
            nr.close_connections(on_good=True, on_failed=True)
