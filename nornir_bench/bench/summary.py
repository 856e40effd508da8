"""Summaries of a run's ``AggregatedResult``: counts, per-host times, failures by type."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from nornir.core.exceptions import NornirSubTaskError

from nornir_bench.core.attempts import attempts_of

if TYPE_CHECKING:
    from nornir.core.task import AggregatedResult, MultiResult, Result

__all__ = ["RunSummary", "failure_of", "failure_type", "summarize"]

# The failure kind of a host whose task returned ``Result(failed=True)`` without raising.
FAILED_WITHOUT_EXCEPTION = "failed"


@dataclass(frozen=True)
class RunSummary:
    """What happened in one run, in numbers.

    Attributes:
        hosts, ok, failed, changed: host counts (``ok + failed == hosts``).
        wall: seconds the run took, when known.
        throughput: hosts finished per second of ``wall``, when known.
        p50, p95, max: per-host elapsed seconds, when per-host times were given.
        failures: failure kind (exception type name) -> names of the hosts that failed so.
        rerun: hosts whose task started more than once (the process pool runs a host again
            when another host crashed its worker).
    """

    hosts: int
    ok: int
    failed: int
    changed: int
    wall: float | None = None
    throughput: float | None = None
    p50: float | None = None
    p95: float | None = None
    max: float | None = None
    failures: dict[str, list[str]] = field(default_factory=dict)
    rerun: int = 0

    def lines(self) -> list[str]:
        """The summary as short human-readable lines (no tracebacks)."""
        out = [f"hosts: {self.hosts}, ok: {self.ok}, failed: {self.failed}, changed: {self.changed}"]
        if self.wall is not None and self.throughput is not None:
            out.append(f"run: {self.wall:.3f} s, {self.throughput:,.0f} hosts/s")
        if self.p50 is not None and self.p95 is not None and self.max is not None:
            out.append(
                f"per host: p50 {self.p50 * 1e3:.1f} ms, p95 {self.p95 * 1e3:.1f} ms, "
                f"max {self.max * 1e3:.1f} ms"
            )
        for kind, names in sorted(self.failures.items(), key=lambda kv: -len(kv[1])):
            shown = ", ".join(names[:5]) + (f", ... (+{len(names) - 5})" if len(names) > 5 else "")
            out.append(f"failed with {kind}: {_hosts(len(names))} ({shown})")
        if self.rerun:
            out.append(
                f"run more than once: {_hosts(self.rerun)} (after worker crashes; "
                "attempts and failed_attempts in the records)"
            )
        return out


def _hosts(count: int) -> str:
    return f"{count} host{'s' * (count != 1)}"


def summarize(
    result: AggregatedResult,
    *,
    elapsed: Mapping[str, float] | None = None,
    wall: float | None = None,
) -> RunSummary:
    """Summarize a run.

    Args:
        result: the ``AggregatedResult`` exactly as nornir (or any runner) returned it.
        elapsed: per-host seconds, e.g. ``HostTimer.elapsed``; gives p50/p95/max.
        wall: the run's seconds; gives throughput.
    """
    failures: dict[str, list[str]] = {}
    changed = rerun = 0
    for name, multi in result.items():
        if multi.failed:
            failures.setdefault(failure_type(multi), []).append(name)
        if multi.changed:
            changed += 1
        if attempts_of(multi)[0] > 1:
            rerun += 1
    failed = sum(len(names) for names in failures.values())
    times = sorted(elapsed[name] for name in result if name in elapsed) if elapsed else []
    return RunSummary(
        hosts=len(result),
        ok=len(result) - failed,
        failed=failed,
        changed=changed,
        wall=wall,
        throughput=len(result) / wall if wall else None,
        p50=_percentile(times, 50),
        p95=_percentile(times, 95),
        max=times[-1] if times else None,
        failures=failures,
        rerun=rerun,
    )


def failure_type(multi: MultiResult) -> str:
    """The type name of what made a host fail (see :func:`failure_of`)."""
    failure = failure_of(multi)
    if failure is None or failure.exception is None:
        return FAILED_WITHOUT_EXCEPTION
    return type(failure.exception).__name__


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


def _percentile(ordered: list[float], pct: float) -> float | None:
    """Nearest-rank percentile of an ascending list."""
    if not ordered:
        return None
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]
