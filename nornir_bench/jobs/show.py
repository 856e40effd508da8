"""A job run as text: a line per step, a line per failed host, what an interruption left
unfinished, and, for ``nornir-bench run --show``, what each host's task returned.

Nothing here prints: the command does. Every line is masked with the run's secrets, and a
failure is said one way everywhere, ``Exception: first line of its message``, never a
traceback (those are in the records).

With ``--show``, per host (and step, in a job of several), a header, ``rtr1 (step 1
send_command): ok`` or ``rtr1: failed: NetmikoTimeoutException: ...``, then the result
indented: text as its lines, other values as JSON (or their ``repr``), each subtask's after its
name, as nornir_utils' ``print_result`` shows them. Each host's text is cut at
:data:`MAX_LINES` lines and :data:`MAX_CHARS` characters, saying how much was cut: 10,000 hosts
answering pages of output would otherwise bury the summary.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from nornir_bench.core.wording import hosts_named, hosts_text, shortened

if TYPE_CHECKING:
    from nornir.core.task import MultiResult, Result

    from nornir_bench.core.secrets import Redactor
    from nornir_bench.jobs.outcome import JobRun

__all__ = [
    "MAX_CHARS",
    "MAX_LINES",
    "failure_lines",
    "interruption",
    "result_lines",
    "step_lines",
    "why_failed",
]

# Imports nothing at first (``run --help`` names these bounds): nornir only once shown.
MAX_LINES = 200
MAX_CHARS = 20_000
_INDENT = "    "
# A step's parameters as its summary line shows them, at most this many characters.
_PARAMS_SHOWN = 60


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
            line += (f"; interrupted: {step_run.unfinished} of {hosts_text(step_run.hosts)} "
                     "did not finish")
        lines.append(run.redact(line))
    return lines


def interruption(run: JobRun) -> str:
    """What an interrupted run did not finish: ``7 of 400 hosts did not finish``, and in a job
    of several steps, at which step, and which steps did not run."""
    if not run.stepped:
        unfinished = run.hosts - len(run.result) + sum(len(s.abandoned) for s in run.steps)
        return f"{unfinished} of {hosts_text(run.hosts)} did not finish"
    ran = [s for s in run.steps if s.not_run is None]
    last = ran[-1] if ran else None
    text = "no step started" if last is None else (
        f"at step {last.step.number} of {len(run.steps)}, "
        f"{last.unfinished} of {hosts_text(last.hosts)} did not finish it"
    )
    later = len(run.steps) - len(ran)
    if later:
        text += f"; {later} later step{'s' * (later != 1)} not run"
    return text


def failure_lines(run: JobRun, *, limit: int = 50) -> list[str]:
    """One line per failed host, ``host: Exception: first line of its message``; no tracebacks.

    Hosts a run policy kept from starting (:func:`~nornir_bench.core.failures.not_started`)
    come last, one line for all those kept out for the same reason: a run aborted after 4
    failures of 10,000 hosts shows those 4, not 50 lines of ``RunAborted``. At most ``limit``
    lines, then a pointer to the records. In a job of several steps, each line says the step
    the host failed at (its first failed step): ``host (step 2 send_command): ...``.
    """
    from nornir_bench.core.failures import failure_of, not_started  # nornir: not for ``--help``

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
            lines.append(run.redact(f"  {name}{at}: {why_failed(run.redact, failure)}"))
        else:
            hidden += 1
    for (at, _, _), (failure, names) in kept_out.items():
        if len(lines) < limit:
            shown = names[0] if len(names) == 1 else hosts_named(names)
            lines.append(run.redact(f"  {shown}{at}: {why_failed(run.redact, failure)}"))
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


def result_lines(
    run: JobRun, *, max_lines: int = MAX_LINES, max_chars: int = MAX_CHARS
) -> Iterator[str]:
    """The lines ``--show`` prints: every finished host's result, masked, each host's (and
    step's) text cut at ``max_lines`` lines and ``max_chars`` characters."""
    for host in run.result:
        if not run.stepped:
            yield from _host_lines(run, host, "", run.result[host], max_lines, max_chars)
            continue
        for step_run in run.steps:
            at = f" ({step_run.step.label})"
            if host in step_run.result:
                multi = step_run.result[host]
                yield from _host_lines(run, host, at, multi, max_lines, max_chars)
            elif host in step_run.left_out:
                yield f"{host}{at}: not run: it failed an earlier step"


def _host_lines(
    run: JobRun, host: str, at: str, multi: MultiResult, max_lines: int, max_chars: int
) -> Iterator[str]:
    """One host's header and its result, cut short past the bounds."""
    yield run.redact(f"{host}{at}: {_status(run.redact, multi)}")
    body: list[str] = []
    for index, result in enumerate(multi):
        indent = _INDENT
        if index:  # a subtask: its name, and its outcome if it failed
            outcome = "ok" if not result.failed else _outcome(run.redact, result)
            body.append(f"{_INDENT}-- {result.name}: {outcome}")
            indent += _INDENT
        body += [indent + line for line in _text(run.redact, result)]
    shown = 0
    for number, line in enumerate(body):
        if number >= max_lines or shown + len(line) > max_chars:
            rest = body[number:]
            cut = sum(map(len, rest))
            part = max(0, max_chars - shown) if number < max_lines else 0
            if part:  # the characters ran out within this line: its start is shown
                yield line[:part]
                cut -= part
            what = ["the rest of this line"] if part else []
            if len(rest) > bool(part):
                more = len(rest) - bool(part)
                what.append(f"{more} more line{'s' * (more != 1)}")
            yield (
                f"{_INDENT}... cut: {' and '.join(what)}, {cut:,} characters (at most "
                f"{max_lines} lines, {max_chars:,} characters a host); the task's full result "
                f"is in {run.output}"
            )
            return
        shown += len(line)
        yield line


def _status(redact: Redactor, multi: MultiResult) -> str:
    """``ok``, or ``failed: Exception: first line of its message``."""
    from nornir_bench.core.failures import failure_of  # nornir: not for ``--help``'s import

    if not multi.failed:
        return "ok"
    failure = failure_of(multi)
    return "failed" if failure is None else _outcome(redact, failure)


def _outcome(redact: Redactor, result: Result) -> str:
    """A header's ``failed``, and why when the task raised: the body shows what it returned."""
    return "failed" if result.exception is None else f"failed: {why_failed(redact, result)}"


def why_failed(redact: Redactor, failure: Result | None) -> str:
    """Why a host failed, in one masked line: ``Exception: first line of its message``; for a
    result failed without raising, ``failed: `` and the start of what it returned."""
    exc = failure.exception if failure is not None else None
    if exc is None:
        value = failure.result if failure is not None else ""
        return f"failed: {shortened(redact(str(value)))}"
    # Masked before it is cut short: a secret cut in two would not be recognised.
    message = redact(str(exc)).strip().splitlines()
    return type(exc).__name__ + (f": {shortened(message[0])}" if message else "")


def _text(redact: Redactor, result: Result) -> list[str]:
    """A result's value as masked lines: none for an exception (the header says it; nornir
    holds the traceback there) or ``None``."""
    value: Any = result.result
    if result.exception is not None or value is None:
        return []
    if isinstance(value, str):
        text = value
    else:
        try:  # masked before encoding: JSON escapes a secret holding '"' or '\\'
            text = json.dumps(
                redact.value(value), indent=2, ensure_ascii=False, default=redact.json_default
            )
        except (TypeError, ValueError):  # keys JSON cannot hold, circular data
            text = repr(value)
    return redact(text).splitlines()
