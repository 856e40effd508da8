"""How many times a host's task ran, and why the runs before the one that counted did not.

A host may run more than once: its task is tried again after a failure the run's ``retries``
allow (:mod:`nornir_bench.core.policies.hosts`), and the process pool runs again, on a fresh
worker, a host that was in flight on a worker another host crashed. Its ``MultiResult`` is then
the one of the run that counted, as nornir would hold it; the earlier runs are kept on the
host's own ``Result``
(``multi[0]``) as two attributes, which pickle with it and which the JSON Lines records show:

- ``attempts``: how many times the task started on the host (absent: 1);
- ``failed_attempts``: a :class:`FailedAttempt` per run that did not count, oldest first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nornir.core.task import Result

if TYPE_CHECKING:
    from nornir.core.task import MultiResult

__all__ = ["FailedAttempt", "attempts_of", "record_attempts"]


@dataclass(frozen=True)
class FailedAttempt:
    """A run of a host's task that did not count: the type name and message of why, whether
    it was a blocking call given up at its deadline that went on in its thread, and, when
    known, how long it ran and how long the host waited after it (``seconds``, ``wait``)."""

    exception: str
    message: str
    abandoned: bool = False
    seconds: float | None = None
    wait: float | None = None


def record_attempts(multi: MultiResult | Result, failed: Sequence[FailedAttempt]) -> None:
    """Note on the host's own result (``multi[0]``, or that ``Result``) that ``failed`` runs came
    before this one (and before those already noted: a host retried in a worker, then run
    again after a crash). Before its completion hook fires, so processors see them."""
    if failed:
        first = multi if isinstance(multi, Result) else multi[0]
        every = [*failed, *getattr(first, "failed_attempts", ())]
        first.attempts = len(every) + 1  # type: ignore[attr-defined]
        first.failed_attempts = every  # type: ignore[attr-defined]


def attempts_of(multi: MultiResult) -> tuple[int, list[FailedAttempt]]:
    """How many times the host's task started, and the runs that did not count."""
    first = multi[0] if len(multi) else None
    failed: list[FailedAttempt] = list(getattr(first, "failed_attempts", ()))
    return int(getattr(first, "attempts", 1)), failed
