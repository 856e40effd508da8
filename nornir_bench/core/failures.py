"""Why a host failed, read from its ``MultiResult``: the same answer in summaries, records and
every line the commands print."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nornir.core.exceptions import NornirSubTaskError

from nornir_bench.core.exceptions import RunAborted, RunTimeout

if TYPE_CHECKING:
    from collections.abc import Iterator

    from nornir.core.task import MultiResult, Result

__all__ = [
    "FAILED_WITHOUT_EXCEPTION",
    "each_result",
    "failure_kind",
    "failure_of",
    "failure_type",
    "not_started",
]

# The failure kind of a host whose task returned ``Result(failed=True)`` without raising.
FAILED_WITHOUT_EXCEPTION = "failed"


def each_result(multi: MultiResult) -> Iterator[Result]:
    """Every ``Result`` of a host, in order: a subtask of several results sits in its
    parent's ``MultiResult`` as a ``MultiResult`` of its own (nornir's ``Task.run``)."""
    for item in multi:
        if isinstance(item, list):
            yield from each_result(item)  # type: ignore[arg-type]
        else:
            yield item


def failure_of(multi: MultiResult) -> Result | None:
    """The result that says best why a host failed; ``None`` when it did not.

    A failed subtask makes its parent raise ``NornirSubTaskError``; the subtask's own exception
    says more, so its result is preferred. Without any exception, the first failed result.
    """
    failed = [r for r in multi if r.failed]
    raised = [r for r in failed if r.exception is not None]
    for result in raised:
        if not isinstance(result.exception, NornirSubTaskError):
            return result
    if raised:
        return raised[0]
    return failed[0] if failed else None


def failure_type(multi: MultiResult) -> str:
    """The type name of what made a host fail (see :func:`failure_of`)."""
    return failure_kind(failure_of(multi))


def failure_kind(failure: Result | None) -> str:
    """The type name of ``failure``'s exception; :data:`FAILED_WITHOUT_EXCEPTION` without one."""
    if failure is None or failure.exception is None:
        return FAILED_WITHOUT_EXCEPTION
    return type(failure.exception).__name__


def not_started(error: BaseException | None) -> bool:
    """Whether ``error`` is a run policy's keeping a host from starting: ``RunAborted`` (so
    ``HostSkipped``), or ``RunTimeout`` before the host started. Such a host never ran."""
    return isinstance(error, RunAborted) or (isinstance(error, RunTimeout) and not error.started)
