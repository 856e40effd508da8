"""Running a checked job: records streamed as hosts finish, a progress bar, connections closed.

:func:`run_job` is what ``nornir-bench run`` does, without the printing; it is public so that
a scheduler or a notebook can run job files too.

A job's steps run one after the other, each a ``nr.run`` on the same ``Nornir`` object, so
the connections a step opens are there for the next (all are closed once, when the job ends).
A host that fails a step is one of nornir's failed hosts (``nr.data.failed_hosts``): later
steps leave it out, and write no record for it, unless they say ``on_failed: true``; it stays
failed even if such a step then succeeds on it (nornir's ``recover_host`` is not called), so
the job's exit status says it failed, as Ansible's would. With ``core.raise_on_error: true``
a step in which a host failed is the last one run: the steps after it do not run.

Ctrl-C stops the run on any runner (see :mod:`nornir_bench.core.stopping`): no host starts after
it, the hosts in flight finish and are kept, and no later step starts; a second Ctrl-C abandons
the hosts in flight. Each run writes its own records file, and never one that another run is
writing: by default a new one in the user's state folder (:func:`records_folder`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING

from nornir.core.exceptions import NornirExecutionError

from nornir_bench.bench.summary import RunSummary, summarize
from nornir_bench.core._logging import no_last_resort_logging
from nornir_bench.core.exceptions import RunInterrupted
from nornir_bench.core.failures import failure_of, not_started
from nornir_bench.core.secrets import Redactor
from nornir_bench.core.stopping import NotStarted, stoppable
from nornir_bench.core.wording import hosts_named, hosts_text
from nornir_bench.processors.progress import ProgressBar
from nornir_bench.processors.records import JsonLinesWriter

if TYPE_CHECKING:
    from nornir.core import Nornir
    from nornir.core.task import AggregatedResult, Result

    from nornir_bench.jobs.load import Job, Step

__all__ = [
    "JobRun",
    "StepRun",
    "default_output",
    "failure_lines",
    "interruption",
    "open_records",
    "records_folder",
    "run_job",
    "step_lines",
]

# Runs started in the same second get -2, -3 ... after the default name; past this many, the
# folder is taken to be unwritable in a way that retrying cannot fix.
_MAX_SAME_NAME = 1000
# A step's parameters as its summary line shows them, at most this many characters.
_PARAMS_SHOWN = 60


@dataclass(frozen=True)
class StepRun:
    """What one step of a job run did.

    Attributes:
        step: the step.
        result: the hosts that ran it and finished.
        summary: counts, per-host times, failures by type, of those hosts.
        hosts: how many hosts it was to run on.
        left_out: the hosts of its filter it did not run on: they had failed an earlier step.
        elapsed: seconds each host of ``result`` took.
        interrupted: Ctrl-C stopped it; ``result`` has the hosts that had finished.
        not_run: why it did not run at all (an earlier step was interrupted, or
            ``core.raise_on_error`` ended the job), if it did not.
    """

    step: Step
    result: AggregatedResult
    summary: RunSummary
    hosts: int
    left_out: tuple[str, ...] = ()
    elapsed: Mapping[str, float] = field(default_factory=dict)
    interrupted: bool = False
    not_run: str | None = None


@dataclass(frozen=True)
class JobRun:
    """What a job run did.

    Attributes:
        result: the hosts that finished (all of them unless ``interrupted``); in a job of
            several steps, each host's results of every step it ran, in order, so that a host
            is failed if it failed any step.
        summary: counts, per-host times, failures by type, over the whole job.
        output: the JSON Lines file holding one record per finished host and step.
        hosts: how many hosts the run was to cover.
        interrupted: stopped by Ctrl-C; ``result`` has the hosts that had finished.
        redact: masks the run's secrets in any text shown from it.
        abandoned: a second Ctrl-C left hosts in flight unfinished; their threads may still
            be running (a blocking call cannot be stopped), so the caller should exit without
            waiting for them.
        steps: what each step did, in order (one for a job of one task).
        stepped: the job gave ``steps`` (rather than one ``task``).
    """

    result: AggregatedResult
    summary: RunSummary
    output: Path
    hosts: int
    interrupted: bool
    redact: Redactor
    abandoned: bool = False
    steps: tuple[StepRun, ...] = ()
    stepped: bool = False


def records_folder() -> Path:
    """Where records go by default: ``$XDG_STATE_HOME/nornir-bench/records``.

    As the XDG base directory specification says, ``$XDG_STATE_HOME`` counts only when it is
    an absolute path; else ``~/.local/state``. Records are a run's history, state kept between
    runs: not something to litter the current folder (a checkout) with.
    """
    state = os.environ.get("XDG_STATE_HOME", "")
    base = Path(state) if os.path.isabs(state) else Path.home() / ".local" / "state"
    return base / "nornir-bench" / "records"


def default_output(job: Job) -> Path:
    """``<job name>-<date>T<time>.jsonl`` in :func:`records_folder`: each run keeps its own."""
    return records_folder() / f"{job.path.stem}-{datetime.now():%Y%m%dT%H%M%S}.jsonl"


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
    steps: list[StepRun] = []
    interrupted = abandoned = False
    stopped: str | None = None  # why the steps left do not run
    started = time.perf_counter()
    with file:
        try:
            for step in job.steps:
                run, abandoned, raised = _run_step(step, nr, file, redact, progress)
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
                _close_connections(nr)
    steps += [_not_run(step, stopped or "") for step in job.steps[len(steps):]]
    if not job.stepped:
        (only,) = steps
        summary = summarize(only.result, elapsed=only.elapsed, wall=wall)
        return JobRun(
            only.result, summary, path, len(hosts), interrupted, redact, abandoned, tuple(steps)
        )
    result, elapsed = _combined(job.path.stem, hosts, steps)
    summary = replace(
        summarize(result, elapsed=elapsed, wall=wall),
        # Counted from each host's first result, so the first step's only: each step's own.
        rerun=sum(s.summary.rerun for s in steps),
        retried=sum(s.summary.retried for s in steps),
        abandoned=sum(s.summary.abandoned for s in steps),
    )
    return JobRun(
        result, summary, path, len(hosts), interrupted, redact, abandoned, tuple(steps), True
    )


def _run_step(
    step: Step, nr: Nornir, file: IO[str], redact: Redactor, progress: bool | None
) -> tuple[StepRun, bool, bool]:
    """Run ``step`` on its hosts (of ``nr``'s): what it did, whether a second Ctrl-C abandoned
    hosts in flight, and whether ``core.raise_on_error`` raised."""
    step_nr = step.filter.apply(nr)
    names = list(step_nr.inventory.hosts)
    failed_before = nr.data.failed_hosts
    left_out = () if step.on_failed else tuple(n for n in names if n in failed_before)
    selected = [n for n in names if n not in left_out]
    records = JsonLinesWriter(
        file, redact=redact, fields={"step": step.number, "task": step.task_name}
    )
    result: AggregatedResult | None = None
    interrupted = abandoned = raised = False
    bar = ProgressBar(enabled=progress)
    with stoppable(nr.runner, step.task, on_first_press=_say_stopping) as stop:
        started = time.perf_counter()
        try:
            if selected:  # else nothing to run: no empty progress bar, no runner started
                result = step_nr.with_processors([records, bar, stop.finished]).run(
                    task=stop.task, on_failed=step.on_failed, **step.params
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
    summary = summarize(result, elapsed=records.elapsed, wall=wall)
    run = StepRun(
        step, result, summary, len(selected), left_out, dict(records.elapsed), interrupted
    )
    return run, abandoned, raised


def _not_run(step: Step, why: str) -> StepRun:
    """A step the job did not get to."""
    from nornir.core.task import AggregatedResult

    empty = AggregatedResult(step.task_name)
    return StepRun(step, empty, summarize(empty), 0, not_run=why)


def _combined(
    name: str, hosts: list[str], steps: list[StepRun]
) -> tuple[AggregatedResult, dict[str, float]]:
    """Each host's results of every step it ran, in order, and its seconds over all of them:
    a host is failed if any step failed on it, and its failure is the first."""
    from nornir.core.task import AggregatedResult, MultiResult

    result = AggregatedResult(name)
    elapsed: dict[str, float] = {}
    for host in hosts:
        ran = [s for s in steps if host in s.result]
        if not ran:
            continue
        multi = MultiResult(host)
        for s in ran:
            multi.extend(s.result[host])
            if host in s.elapsed:
                elapsed[host] = elapsed.get(host, 0.0) + s.elapsed[host]
        result[host] = multi
    return result, elapsed


def step_lines(run: JobRun) -> list[str]:
    """One line per step, masked: ``step 2 sim_rtt (rtt: 0.05): hosts: 9, ok: 9, failed: 0,
    0.051 s``, and the hosts it left out (they had failed an earlier step), or why it did not
    run."""
    lines = []
    for step_run in run.steps:
        step, summary = step_run.step, step_run.summary
        # Masked before it is cut short: a secret cut in two would not be recognised.
        params = run.redact(", ".join(f"{k}: {v}" for k, v in step.params.items()))
        if len(params) > _PARAMS_SHOWN:
            params = params[: _PARAMS_SHOWN - 3] + "..."
        line = step.label + (f" ({params})" if params else "") + ": "
        if step_run.not_run is not None:
            lines.append(line + f"not run: {step_run.not_run}")
            continue
        line += f"hosts: {step_run.hosts}, ok: {summary.ok}, failed: {summary.failed}"
        if summary.wall is not None:
            line += f", {summary.wall:.3f} s"
        if step_run.left_out:
            line += f"; left out: {hosts_text(len(step_run.left_out))} that failed an earlier step"
        if step_run.interrupted:
            unfinished = step_run.hosts - len(step_run.result)
            line += f"; interrupted: {unfinished} of {hosts_text(step_run.hosts)} did not finish"
        lines.append(run.redact(line))
    return lines


def interruption(run: JobRun) -> str:
    """What an interrupted run did not finish: ``7 of 400 hosts did not finish``, and in a job
    of several steps, at which step, and which steps did not run."""
    if not run.stepped:
        return f"{run.hosts - len(run.result)} of {hosts_text(run.hosts)} did not finish"
    ran = [s for s in run.steps if s.not_run is None]
    last = ran[-1] if ran else None
    text = "no step started" if last is None else (
        f"at step {last.step.number} of {len(run.steps)}, "
        f"{last.hosts - len(last.result)} of {hosts_text(last.hosts)} did not finish it"
    )
    later = len(run.steps) - len(ran)
    if later:
        text += f"; {later} later step{'s' * (later != 1)} not run"
    return text


def open_records(path: Path | None, job: Job) -> tuple[Path, IO[str]]:
    """The records file of one run, opened for writing, never shared with another run.

    With no ``path``, a new file (:func:`default_output`, then ``-2``, ``-3`` ... when runs
    start in the same second), created exclusively, in :func:`records_folder`, which is made
    (readable by the user alone, as the XDG specification asks) if missing. A ``path`` given
    is truncated only once this run holds it: if another run is writing it, that is an error.

    Raises:
        OSError: when the file cannot be created or is being written by another run.
    """
    if path is None:
        base = default_output(job)
        _make_private_folder(base.parent)
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


def _make_private_folder(folder: Path) -> None:
    """Make ``folder`` and any missing parent, each readable by the user alone (``mkdir -p``
    would give the parents the umask's mode: the state folder is the user's own)."""
    missing = [p for p in (folder, *folder.parents) if not p.is_dir()]
    for parent in reversed(missing):
        with contextlib.suppress(FileExistsError):  # another run made it meanwhile
            parent.mkdir(mode=0o700)


def _say_stopping() -> None:
    print(
        "\nstopping: no new host starts; waiting for the hosts in flight "
        "(Ctrl-C again to abandon them)",
        file=sys.stderr,
        flush=True,
    )


def failure_lines(run: JobRun, *, limit: int = 50) -> list[str]:
    """One line per failed host, ``host: Exception: first line of its message``; no tracebacks.

    Hosts a run policy kept from starting (:func:`~nornir_bench.core.failures.not_started`)
    come last, one line for all those kept out for the same reason: a run aborted after 4
    failures of 10,000 hosts shows those 4, not 50 lines of ``RunAborted``. At most ``limit``
    lines, then a pointer to the records. In a job of several steps, each line says the step
    the host failed at (its first failed step): ``host (step 2 send_command): ...``.
    """
    lines: list[str] = []
    hidden = 0
    kept_out: dict[tuple[str, str, str], tuple[Result, list[str]]] = {}
    for name, multi in run.result.items():
        if not multi.failed:
            continue
        failure = failure_of(multi)
        exc = failure.exception if failure is not None else None
        at = _failed_at(run, name)
        if failure is not None and not_started(exc):
            key = (at, type(exc).__name__, str(exc))
            kept_out.setdefault(key, (failure, []))[1].append(name)
        elif len(lines) < limit:
            lines.append(run.redact(f"  {name}{at}: {_why(run, failure)}"))
        else:
            hidden += 1
    for (at, _, _), (failure, names) in kept_out.items():
        if len(lines) < limit:
            shown = names[0] if len(names) == 1 else hosts_named(names)
            lines.append(run.redact(f"  {shown}{at}: {_why(run, failure)}"))
        else:
            hidden += len(names)
    if hidden:
        lines.append(f"  ... and {hidden} more: see {run.output}")
    return lines


def _failed_at(run: JobRun, host: str) -> str:
    """`` (step 2 send_command)``: the first step ``host`` failed, in a job of steps."""
    if not run.stepped:
        return ""
    for step_run in run.steps:
        multi = step_run.result.get(host)
        if multi is not None and multi.failed:
            return f" ({step_run.step.label})"
    return ""


def _why(run: JobRun, failure: Result | None) -> str:
    """``Exception: first line of its message``, masked, for a failed host's line."""
    exc = failure.exception if failure is not None else None
    if exc is None:
        return f"failed: {run.redact(str(failure.result if failure is not None else ''))[:200]}"
    # Masked before it is cut short: a secret cut in two would not be recognised.
    message = run.redact(str(exc)).strip().splitlines()
    return type(exc).__name__ + (f": {message[0][:200]}" if message else "")


def _close_connections(nr: Nornir) -> None:
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
