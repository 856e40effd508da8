"""Running a checked job: records streamed as hosts finish, a progress bar, connections closed.

:func:`run_job` is what ``nornir-bench run`` does, without the printing (the run as text is
:mod:`nornir_bench.jobs.show`'s); it is public so that a scheduler or a notebook can run job
files too.

A job's steps run one after the other, each a ``nr.run`` on the same ``Nornir`` object, so
the connections a step opens are there for the next (all are closed once, when the job ends).
A host that fails a step is one of nornir's failed hosts (``nr.data.failed_hosts``): later
steps leave it out, and write no record for it, unless they say ``on_failed: true``; it stays
failed even if such a step then succeeds on it (nornir's ``recover_host`` is not called), so
the job's exit status says it failed, as Ansible's would. With ``core.raise_on_error: true``
a step in which a host failed is the last one run: the steps after it do not run.

Ctrl-C stops the run on any runner (see :mod:`nornir_bench.core.stoppable`): no host starts after
it, the hosts in flight finish and are kept, and no later step starts; a second Ctrl-C abandons
the hosts in flight. Each run writes its own records file, and never one that another run is
writing (:mod:`nornir_bench.jobs.output`).
"""

from __future__ import annotations

import contextlib
import functools
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import IO, TYPE_CHECKING

from nornir.core.exceptions import NornirExecutionError

from nornir_bench.bench.summary import summarize
from nornir_bench.core._logging import no_last_resort_logging
from nornir_bench.core.exceptions import RunInterrupted
from nornir_bench.core.policies.plan import batch_number
from nornir_bench.core.secrets import Redactor, masked_terminal
from nornir_bench.core.stoppable import NotStarted, stoppable
from nornir_bench.jobs._job_file import JobError
from nornir_bench.jobs.exits import exit_fails_the_host
from nornir_bench.jobs.host_keys import said_accepted, say_unchecked
from nornir_bench.jobs.outcome import JobRun, StepRun, combined, not_run, unfinished
from nornir_bench.jobs.output import (
    RecordsError,
    default_output,
    open_records,
    records_folder,
    with_default_backups,
)
from nornir_bench.jobs.recover import held_journal, journal_beside, recover_folder, with_journal
from nornir_bench.jobs.rerun import check_dry_run, checking, hosts_to_rerun
from nornir_bench.jobs.sessions import log_sessions, mask_session_logs, sessions_folder
from nornir_bench.jobs.show import failure_lines, interruption, step_lines
from nornir_bench.jobs.step_failures import fail_abandoned, failed_before_any_device
from nornir_bench.processors.progress import ProgressBar
from nornir_bench.processors.records import JsonLinesWriter, RecordsWriteError

if TYPE_CHECKING:
    from nornir.core import Nornir
    from nornir.core.task import AggregatedResult

from nornir_bench.jobs.load import Job, Step

# The records file (jobs.output) and the run as text (jobs.show) are importable from here too,
# where they lived first.
__all__ = [
    "JobRun",
    "StepRun",
    "close_run",
    "default_output",
    "failure_lines",
    "interruption",
    "open_records",
    "records_folder",
    "run_job",
    "step_lines",
]


def run_job(
    job: Job,
    *,
    output: Path | None = None,
    progress: bool | None = None,
    on_stopping: Callable[[], None] | None = None,
    check: bool = False,
    rerun_failed: Path | None = None,
    session_logs: bool | None = None,
    say: Callable[[str], None] | None = None,
) -> JobRun:
    """Run ``job`` on its hosts.

    Args:
        job: from :func:`nornir_bench.jobs.load.load_job`.
        output: the JSON Lines file; else the job's ``output.path``; else :func:`default_output`.
        progress: draw a progress bar on standard error; ``None``: when it is a terminal.
        on_stopping: called at the first Ctrl-C, on any runner (see
            :func:`~nornir_bench.core.stoppable.stoppable`), to say that the hosts in flight
            are being waited for.
        check: a dry run (``--check``): every step's task must honour nornir's ``dry_run`` or
            be read-only; those that honour it are given ``dry_run=True``.
        rerun_failed: a records file of an earlier run of the job: run only the hosts that
            failed or never started in it (:mod:`nornir_bench.jobs.rerun`).
        session_logs: a session log per device (:mod:`nornir_bench.jobs.sessions`); ``None``:
            as the job says.
        say: told a line for each change a dead run left pending in the records folder and
            that is reverted before this run starts (:mod:`nornir_bench.jobs.recover`);
            standard error by default.

    Raises:
        JobError: when the inventory cannot be loaded or the filter matches no host.
        RecordsError: when the records file cannot be created or written (which, and why).
    """
    if check:
        check_dry_run(job)
    nr, secrets = job.nornir()
    say_unchecked(nr, say or _said)  # host_key_checking: off, once a run
    if check:
        nr.data.dry_run = True
    if rerun_failed is not None:
        again = set(hosts_to_rerun(rerun_failed, job, nr.inventory.hosts))
        if not again:
            raise JobError(f"--rerun-failed {rerun_failed}: no host to run again: every host "
                           "of the job ended ok in it")
        nr = nr.filter(filter_func=lambda host: host.name in again)
    redact = Redactor(secrets)
    # On the handlers InitNornir has just set up: one per logger the job's logging names.
    redact.install(nr.config.logging.loggers)
    run: JobRun | None = None
    try:
        # What tasks print, warn or exit with on the terminal is masked too (and on workers).
        logged = job.session_logs if session_logs is None else session_logs
        with masked_terminal(secrets), said_accepted(say or _said):
            run = _run(job, nr, redact, output, progress, on_stopping, logged, say)
        return run
    finally:
        # Hosts abandoned by a second Ctrl-C may still log from their threads: keep masking.
        if run is None or not run.abandoned:
            redact.uninstall()


def _run(
    job: Job,
    nr: Nornir,
    redact: Redactor,
    output: Path | None,
    progress: bool | None,
    on_stopping: Callable[[], None] | None,
    session_logs: bool,
    say: Callable[[str], None] | None,
) -> JobRun:
    no_last_resort_logging()
    path, file = open_records(output or job.output, job)
    logs: Mapping[str, str] = {}
    try:
        job = with_default_backups(job, path)
        job, journal = with_journal(job, path)
        recover_folder(journal_beside(path).parent, say or _said)  # what a dead run left pending
        logs = log_sessions(nr, sessions_folder(path)) if session_logs else {}
        with held_journal(journal, job, path):
            run = _run_steps(job, nr, redact, path, file, progress, on_stopping, logs)
    except BaseException as exc:
        # Refused before its first record (a replace without a driver): no file of its own.
        file.close_on_error()
        if isinstance(exc, RecordsWriteError):
            raise RecordsError(path, exc) from None
        raise
    finally:
        mask_session_logs(logs, redact)  # the sessions were closed with the run
    return run


def _run_steps(
    job: Job,
    nr: Nornir,
    redact: Redactor,
    path: Path,
    file: IO[str],
    progress: bool | None,
    on_stopping: Callable[[], None] | None,
    logs: Mapping[str, str],
) -> JobRun:
    hosts = list(nr.inventory.hosts)
    steps: list[StepRun] = []
    interrupted = abandoned = False
    stopped: str | None = None  # why the steps left do not run
    started = time.perf_counter()
    with _closed_writing(file):
        try:
            for step in job.steps:
                run, abandoned, raised = _run_step(
                    job, step, nr, file, redact, progress, on_stopping, started, logs
                )
                steps.append(run)
                if run.interrupted:
                    interrupted, stopped = True, f"the job was interrupted at step {step.number}"
                    break
                if raised:
                    stopped = (
                        f"core.raise_on_error: a host failed at step {step.number}, which ended "
                        "the job"
                    )
                    break
        except KeyboardInterrupt:  # pressed between two steps: the next one does not start
            interrupted, stopped = True, f"the job was interrupted after step {len(steps)}"
        finally:
            wall = time.perf_counter() - started
            if not abandoned:  # else a thread may still be using a connection
                close_run(nr)
    steps += [not_run(step, stopped or "") for step in job.steps[len(steps):]]
    if not job.stepped:
        (only,) = steps
        summary = summarize(only.result, elapsed=only.elapsed, wall=wall)
        return JobRun(
            only.result, summary, path, len(hosts), interrupted, redact, abandoned, tuple(steps)
        )
    result, elapsed = combined(job.path.stem, hosts, steps)
    whole = summarize(result, elapsed=elapsed, wall=wall)
    cut = len(unfinished(nr, result, steps)) if interrupted else 0
    summary = replace(
        whole,
        ok=whole.ok - cut,
        unfinished=cut,
        # Counted from each host's first result, so the first step's only: each step's own.
        rerun=sum(s.summary.rerun for s in steps),
        retried=sum(s.summary.retried for s in steps),
        abandoned=sum(s.summary.abandoned for s in steps),
    )
    return JobRun(
        result, summary, path, len(hosts), interrupted, redact, abandoned, tuple(steps), True
    )


def _run_step(
    job: Job,
    step: Step,
    nr: Nornir,
    file: IO[str],
    redact: Redactor,
    progress: bool | None,
    on_stopping: Callable[[], None] | None,
    origin: float,
    logs: Mapping[str, str],
) -> tuple[StepRun, bool, bool]:
    """Run ``step`` on its hosts (of ``nr``'s; the job started at ``origin``, on
    ``perf_counter``'s clock): what it did, whether a second Ctrl-C abandoned hosts in flight,
    and whether ``core.raise_on_error`` raised."""
    step_nr = step.filter.apply(nr)
    names = list(step_nr.inventory.hosts)
    failed_before = nr.data.failed_hosts
    left_out = () if step.on_failed else tuple(n for n in names if n in failed_before)
    selected = [n for n in names if n not in left_out]
    records = JsonLinesWriter(
        file,
        redact=redact,
        fields={
            "job": str(job.path.resolve()),
            "overrides": job.overrides.as_record(),
            "step": step.number,
            "task": step.task_name,
        },
        origin=origin,
        session_logs=logs,
    )
    params = checking(step.task, step.params) if nr.data.dry_run else step.params
    early = failed_before_any_device(step, nr, selected, params, records)
    if early:
        selected = [n for n in selected if n not in early]
    batches = getattr(getattr(nr.runner, "policy", None), "batches", ())
    if batches:  # which canary batch each host runs in, as the runner's plan hands them out
        records.batch_of = functools.partial(batch_number, batches, len(selected))
    result: AggregatedResult | None = None
    interrupted = abandoned = raised = False
    bar = ProgressBar(enabled=progress)
    since = time.time()  # the backups a change abandoned in flight wrote are newer
    task = exit_fails_the_host(step.task)
    with stoppable(nr.runner, task, on_first_press=on_stopping) as stop:
        started = time.perf_counter()
        try:
            if selected:  # else nothing to run: no empty progress bar, no runner started
                result = step_nr.with_processors([records, bar, stop.finished]).run(
                    task=stop.task, on_failed=step.on_failed, **params
                )
        except NornirExecutionError as exc:  # core.raise_on_error: the step finished all the same
            result, raised = exc.result, True
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
            name = getattr(stop.task, "__name__", step.task_name)
            result = stop.finished.aggregated(name, selected)
    for name, multi in early.items():
        result[name] = multi
    left: tuple[str, ...] = ()
    if interrupted:  # hosts cancelled in flight (async runners), or abandoned (a second press)
        left = tuple(stop.finished.in_flight(selected))
        fail_abandoned(step, nr, params, since, left, records, result)
    summary = summarize(result, elapsed=records.elapsed, wall=wall)
    run = StepRun(
        step,
        result,
        summary,
        len(selected) + len(early),
        left_out,
        dict(records.elapsed),
        interrupted,
        left,
    )
    return run, abandoned, raised


def _said(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def close_run(nr: Nornir) -> None:
    """Close what the run left open, on every host, in parallel: sessions in this process
    (netmiko's, and asyncssh's on the asyncio runner's kept loop), then what the runner keeps
    (processpool's workers, and the sessions they hold)."""
    # A second Ctrl-C while closing should not hide the run's results.
    with contextlib.suppress(Exception, KeyboardInterrupt):
        if any(host.connections for host in nr.inventory.hosts.values()):
            nr.close_connections(on_good=True, on_failed=True)
        close = getattr(nr.runner, "close", None)
        if callable(close):
            close()


@contextlib.contextmanager
def _closed_writing(file: IO[str]) -> Iterator[None]:
    """Close the records file after the block (one that raised: :func:`_run` closes it); what
    it could not write is a :class:`RecordsWriteError` (the file-size limit, a full disk), as
    a write's is."""
    yield
    try:
        file.close()
    except OSError as exc:
        raise RecordsWriteError(*exc.args) from exc
