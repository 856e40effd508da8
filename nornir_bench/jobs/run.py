"""Running a checked job: records streamed as hosts finish, a progress bar, connections closed.

:func:`run_job` is what ``nornir-bench run`` does, without the printing; it is public so that
a scheduler or a notebook can run job files too.

Ctrl-C stops the run on any runner (see :mod:`nornir_bench.core.stopping`): no host starts after
it, the hosts in flight finish and are kept; a second Ctrl-C abandons them. Each run writes
its own records file, and never one that another run is writing.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING

from nornir.core.exceptions import NornirExecutionError

from nornir_bench.bench.summary import (
    RunSummary,
    failure_of,
    hosts_named,
    not_started,
    summarize,
)
from nornir_bench.core._logging import no_last_resort_logging
from nornir_bench.core.exceptions import RunInterrupted
from nornir_bench.core.stopping import NotStarted, stoppable
from nornir_bench.jobs.secrets import Redactor
from nornir_bench.processors.progress import ProgressBar
from nornir_bench.processors.records import JsonLinesWriter

if TYPE_CHECKING:
    from nornir.core import Nornir
    from nornir.core.task import AggregatedResult, Result

    from nornir_bench.jobs.load import Job

__all__ = ["JobRun", "default_output", "failure_lines", "open_records", "run_job"]

# Runs started in the same second get -2, -3 ... after the default name; past this many, the
# folder is taken to be unwritable in a way that retrying cannot fix.
_MAX_SAME_NAME = 1000


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
        abandoned: a second Ctrl-C left hosts in flight unfinished; their threads may still
            be running (a blocking call cannot be stopped), so the caller should exit without
            waiting for them.
    """

    result: AggregatedResult
    summary: RunSummary
    output: Path
    hosts: int
    interrupted: bool
    redact: Redactor
    abandoned: bool = False


def default_output(job: Job) -> Path:
    """``<job name>-<date>T<time>.jsonl`` in the current folder: each run keeps its own file."""
    return Path(f"{job.path.stem}-{datetime.now():%Y%m%dT%H%M%S}.jsonl")


def run_job(job: Job, *, output: Path | None = None, progress: bool | None = None) -> JobRun:
    """Run ``job`` on its hosts.

    Args:
        job: from :func:`nornir_bench.jobs.load.load_job`.
        output: the JSON Lines file; else the job's ``output.path``; else :func:`default_output`.
        progress: draw a progress bar on standard error; ``None``: when it is a terminal.

    Raises:
        JobError: when the inventory cannot be loaded or the filter matches no host.
        OSError: when the output file cannot be written.
    """
    nr, secrets = job.nornir()
    redact = Redactor(secrets)
    # On the handlers InitNornir has just set up: one per logger the job's logging names.
    redact.install(nr.config.logging.loggers)
    run: JobRun | None = None
    try:
        run = _run(job, nr, redact, output, progress)
        return run
    finally:
        # Hosts abandoned by a second Ctrl-C may still log from their threads: keep masking.
        if run is None or not run.abandoned:
            redact.uninstall()


def _run(
    job: Job, nr: Nornir, redact: Redactor, output: Path | None, progress: bool | None
) -> JobRun:
    no_last_resort_logging()
    path, file = open_records(output or job.output, job)
    hosts = list(nr.inventory.hosts)
    bar = ProgressBar(enabled=progress)
    with file, stoppable(nr.runner, job.task, on_first_press=_say_stopping) as stop:
        records = JsonLinesWriter(file, redact=redact)
        result: AggregatedResult | None = None
        interrupted = abandoned = False
        started = time.perf_counter()
        try:
            result = nr.with_processors([records, bar, stop.finished]).run(
                task=stop.task, **job.params
            )
        except NornirExecutionError as exc:  # core.raise_on_error: the run finished all the same
            result = exc.result
        except RunInterrupted as exc:  # nornir-bench's runners: Ctrl-C, the finished hosts kept
            result, interrupted, abandoned = exc.result, True, exc.abandoned
        except NotStarted:  # other runners: Ctrl-C, hosts in flight finished, none started after
            interrupted = True
        except KeyboardInterrupt:  # a second Ctrl-C: hosts in flight abandoned
            interrupted = abandoned = True
        finally:
            wall = time.perf_counter() - started
            bar.close()
        interrupted = interrupted or stop.pressed.is_set()
        if result is None:
            result = stop.finished.aggregated(getattr(stop.task, "__name__", job.task_name), hosts)
        if not abandoned:  # else a thread may still be using a connection
            _close_connections(nr)
    summary = summarize(result, elapsed=records.elapsed, wall=wall)
    return JobRun(result, summary, path, len(hosts), interrupted, redact, abandoned)


def open_records(path: Path | None, job: Job) -> tuple[Path, IO[str]]:
    """The records file of one run, opened for writing, never shared with another run.

    With no ``path``, a new file (:func:`default_output`, then ``-2``, ``-3`` ... when runs
    start in the same second), created exclusively. A ``path`` given is truncated only once
    this run holds it: if another run is writing it, that is an error.

    Raises:
        OSError: when the file cannot be created or is being written by another run.
    """
    if path is None:
        base = default_output(job)
        for number in range(1, _MAX_SAME_NAME + 1):
            path = base if number == 1 else base.with_name(f"{base.stem}-{number}{base.suffix}")
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                break
            except FileExistsError:
                continue
        else:
            raise FileExistsError(errno.EEXIST, f"{_MAX_SAME_NAME} records files named", str(base))
    else:
        if path.parent != Path():
            path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):  # not a pipe, a terminal, /dev/stdout
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released when it is closed
            except BlockingIOError:
                raise OSError(
                    errno.EBUSY,
                    "another run is writing it: give this run another --output (or output.path)",
                    str(path),
                ) from None
            os.ftruncate(fd, 0)
        return path, open(fd, "w", encoding="utf-8")  # noqa: SIM115 - the caller closes it
    except BaseException:
        os.close(fd)
        raise


def _say_stopping() -> None:
    print(
        "\nstopping: no new host starts; waiting for the hosts in flight "
        "(Ctrl-C again to abandon them)",
        file=sys.stderr,
        flush=True,
    )


def failure_lines(run: JobRun, *, limit: int = 50) -> list[str]:
    """One line per failed host, ``host: Exception: first line of its message``; no tracebacks.

    Hosts a run policy kept from starting (:func:`~nornir_bench.bench.summary.not_started`)
    come last, one line for all those kept out for the same reason: a run aborted after 4
    failures of 10,000 hosts shows those 4, not 50 lines of ``RunAborted``. At most ``limit``
    lines, then a pointer to the records.
    """
    lines: list[str] = []
    hidden = 0
    kept_out: dict[tuple[str, str], tuple[Result, list[str]]] = {}
    for name, multi in run.result.items():
        if not multi.failed:
            continue
        failure = failure_of(multi)
        exc = failure.exception if failure is not None else None
        if failure is not None and not_started(exc):
            kept_out.setdefault((type(exc).__name__, str(exc)), (failure, []))[1].append(name)
        elif len(lines) < limit:
            lines.append(run.redact(f"  {name}: {_why(run, failure)}"))
        else:
            hidden += 1
    for failure, names in kept_out.values():
        if len(lines) < limit:
            shown = names[0] if len(names) == 1 else hosts_named(names)
            lines.append(run.redact(f"  {shown}: {_why(run, failure)}"))
        else:
            hidden += len(names)
    if hidden:
        lines.append(f"  ... and {hidden} more: see {run.output}")
    return lines


def _why(run: JobRun, failure: Result | None) -> str:
    """``Exception: first line of its message``, masked, for a failed host's line."""
    exc = failure.exception if failure is not None else None
    if exc is None:
        return f"failed: {run.redact(str(failure.result if failure is not None else ''))[:200]}"
    # Masked before it is cut short: a secret cut in two would not be recognised.
    message = run.redact(str(exc)).strip().splitlines()
    return type(exc).__name__ + (f": {message[0][:200]}" if message else "")


def _close_connections(nr: Nornir) -> None:
    """Close what the run left open (netmiko sessions), on every host, in parallel."""
    if any(host.connections for host in nr.inventory.hosts.values()):
        # A second Ctrl-C while closing should not hide the run's results.
        with contextlib.suppress(Exception, KeyboardInterrupt):
            nr.close_connections(on_good=True, on_failed=True)
