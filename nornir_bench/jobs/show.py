"""Each host's result as text, for ``nornir-bench run --show``: what the devices said.

Per host (and step, in a job of several), a header, ``rtr1 (step 1 send_command): ok`` or
``rtr1: failed: NetmikoTimeoutException: ...``, then the result indented: text as its lines,
other values as JSON (or their ``repr``), each subtask's after its name, as nornir_utils'
``print_result`` shows them but with exceptions in one line, never a traceback (those are in
the records). Everything is masked with the run's secrets. Each host's text is cut at
:data:`MAX_LINES` lines and :data:`MAX_CHARS` characters, saying how much was cut: 10,000 hosts
answering pages of output would otherwise bury the summary.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nornir.core.task import MultiResult, Result

    from nornir_bench.core.secrets import Redactor
    from nornir_bench.jobs.run import JobRun

__all__ = ["MAX_CHARS", "MAX_LINES", "result_lines"]

# Imports nothing at first (``run --help`` names these bounds): nornir only once shown.
MAX_LINES = 200
MAX_CHARS = 20_000
_INDENT = "    "


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
            if number < max_lines:  # the characters ran out within this line: show its start
                yield line[: max(0, max_chars - shown)]
            yield (
                f"{_INDENT}... cut: {len(rest)} more lines, {sum(map(len, rest)):,} characters "
                f"(at most {max_lines} lines, {max_chars:,} characters a host); the task's "
                f"full result is in {run.output}"
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
    exc = result.exception
    if exc is None:
        return "failed"
    # Masked before it is cut to its first line: a secret cut in two would not be recognised.
    message = redact(str(exc)).strip().splitlines()
    return f"failed: {type(exc).__name__}" + (f": {message[0]}" if message else "")


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
