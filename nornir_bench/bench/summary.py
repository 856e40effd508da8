"""Summaries of a run's ``AggregatedResult``: counts, per-host times, failures by type."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from nornir_bench.core.attempts import attempts_of
from nornir_bench.core.changes import (
    CHANGED,
    COMPLIANT,
    DRIFTED,
    INTERRUPTED,
    NO_CHANGE,
    NOT_ROLLED_BACK,
    NOT_SAVED,
    NOT_TOUCHED,
    ROLLBACK_FAILED,
    ROLLED_BACK,
    WOULD_CHANGE,
    change_of,
    changed_of,
)
from nornir_bench.core.exceptions import (
    HostSkipped,
    LoginRefused,
    RunAborted,
    RunTimeout,
    TaskTimeout,
)
from nornir_bench.core.failures import failure_kind, failure_of, not_started
from nornir_bench.core.wording import hosts_named, hosts_text

if TYPE_CHECKING:
    from nornir.core.task import AggregatedResult, MultiResult

__all__ = ["RunSummary", "change_counts", "summarize"]


@dataclass(frozen=True)
class RunSummary:
    """What happened in one run, in numbers.

    Attributes:
        hosts, ok, failed, changed: host counts (``ok + failed + unfinished == hosts``).
        unfinished: hosts that did not finish every step they were to run (a job of steps
            interrupted): neither ok nor failed.
        wall: seconds the run took, when known.
        throughput: hosts finished per second of ``wall``, when known.
        p50, p95, max: per-host elapsed seconds, when per-host times were given.
            Both leave out the hosts a run policy kept from starting (``not_started``):
            they took no time, and would make a run a limit stopped look fast.
        failures: failure kind (exception type name) -> names of the hosts that failed so.
        rerun: hosts run again after another host crashed their worker (processpool).
        retried: hosts tried again after a failure, under the run's ``retries``.
        aborted: hosts a run limit kept from starting (``RunAborted``, or ``RunTimeout`` before
            they started).
        skipped: hosts their group's failure limit skipped (``HostSkipped``).
        timed_out: hosts stopped at their deadline (``TaskTimeout``, ``RunTimeout``).
        abandoned: blocking calls given up at their deadline, left to end in their threads.
        stopped_by: which limit stopped the run, and why, when one did.
        login_retried: hosts whose login their SSH server refused before authentication,
            tried again (``login_retries``); ``login_refusals``: such refusals in all;
            ``login_slowed``: hosts that waited for their turn to log in;
            ``login_servers``: the servers that refused.
        changes: what configuration changes did (``core.changes``): state -> host names.
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
    retried: int = 0
    aborted: int = 0
    skipped: int = 0
    timed_out: int = 0
    abandoned: int = 0
    stopped_by: str | None = None
    login_retried: int = 0
    login_refusals: int = 0
    login_slowed: int = 0
    login_servers: tuple[str, ...] = ()
    changes: dict[str, list[str]] = field(default_factory=dict)
    unfinished: int = 0

    def lines(self) -> list[str]:
        """The summary as short human-readable lines (no tracebacks); a failed rollback
        first, in capitals: a device left half-changed."""
        out = []
        if self.changes.get(ROLLBACK_FAILED):
            out.append(
                f"ROLLBACK FAILED: {hosts_named(self.changes[ROLLBACK_FAILED])}: their "
                "configuration differs from the backup (the records' change.backup and diff)"
            )
        if self.changes.get(INTERRUPTED):
            out.append(
                f"INTERRUPTED DURING CHANGE: {hosts_named(self.changes[INTERRUPTED])}: each "
                "host's message says what may hold (the records' change.backup)"
            )
        out.append(
            f"hosts: {self.hosts}, ok: {self.ok}, failed: {self.failed}, changed: {self.changed}"
            + (f", not finished: {self.unfinished}" if self.unfinished else "")
        )
        if self.changes:
            counts = {state: len(names) for state, names in self.changes.items()}
            out.append(f"config: {change_counts(counts)}")
        if self.wall is not None and self.throughput is not None:
            out.append(f"run: {self.wall:.3f} s, {self.throughput:,.0f} hosts/s")
        if self.p50 is not None and self.p95 is not None and self.max is not None:
            out.append(
                f"per host: p50 {self.p50 * 1e3:.1f} ms, p95 {self.p95 * 1e3:.1f} ms, "
                f"max {self.max * 1e3:.1f} ms"
            )
        for kind, names in sorted(self.failures.items(), key=lambda kv: -len(kv[1])):
            out.append(f"failed with {kind}: {hosts_named(names)}")
        if self.rerun:
            out.append(
                f"run more than once: {hosts_text(self.rerun)} (after worker crashes; "
                "attempts and failed_attempts in the records)"
            )
        if self.retried:
            out.append(
                f"retried: {hosts_text(self.retried)} "
                "(attempts and failed_attempts in the records)"
            )
        if self.login_refusals or self.login_slowed:
            out.append(self._logins_line())
        if self.timed_out:
            out.append(f"timed out: {hosts_text(self.timed_out)}")
        if self.abandoned:
            out.append(
                f"abandoned calls: {self.abandoned} (blocking calls past their deadline, left "
                "to end in their threads)"
            )
        if self.skipped:
            out.append(f"skipped: {hosts_text(self.skipped)} (their group failed past its limit)")
        if self.aborted:
            out.append(f"not started: {hosts_text(self.aborted)}")
        if self.stopped_by:
            out.append(self.stopped_by)
        return out


    def _logins_line(self) -> str:
        servers = len(self.login_servers)
        return (
            f"logins throttled: {self.login_refusals} refused before authentication by "
            f"{servers} SSH server{'s' if servers != 1 else ''} "
            f"({', '.join(self.login_servers[:3])}{' ...' if servers > 3 else ''}), "
            f"{hosts_text(self.login_retried)} tried again, {hosts_text(self.login_slowed)} "
            "slowed down: SSH servers throttle many logins at once (OpenSSH MaxStartups); "
            f"to avoid it, max_starts_per_second: {5 * max(servers, 1)} (5 per server) or fewer "
            "num_workers"
        )


_CHANGE_ORDER = (
    DRIFTED, COMPLIANT, WOULD_CHANGE, CHANGED, NO_CHANGE, NOT_SAVED, ROLLED_BACK,
    NOT_ROLLED_BACK, ROLLBACK_FAILED, INTERRUPTED, NOT_TOUCHED,
)
# How a count of hosts reads with each state: "3 hosts no change" would not.
_CHANGE_WORDS = {NO_CHANGE: "with nothing to change", ROLLBACK_FAILED: "whose rollback failed"}


def change_counts(counts: Mapping[str, int]) -> str:
    """``3 hosts would change, 1 host with nothing to change``: what changes did, host counts
    by state (``core.changes``), in a fixed order, states it does not know last."""
    order = [*_CHANGE_ORDER, *sorted(set(counts) - set(_CHANGE_ORDER))]
    return ", ".join(
        f"{hosts_text(counts[state])} {_CHANGE_WORDS.get(state, state)}"
        for state in order if counts.get(state)
    )


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
    changed = 0
    changes: dict[str, list[str]] = {}
    policies = _PolicyCounts()
    kept_out: set[str] = set()
    for name, multi in result.items():
        failure = failure_of(multi) if multi.failed else None
        error = None if failure is None else failure.exception
        if multi.failed:
            failures.setdefault(failure_kind(failure), []).append(name)
            if not_started(error):
                kept_out.add(name)
        if changed_of(multi):
            changed += 1
        policies.add(multi, error)
        change = change_of(multi)
        if change is not None:
            changes.setdefault(str(change[0]["state"]), []).append(name)
    failed = sum(len(names) for names in failures.values())
    ran = [name for name in result if name not in kept_out] if kept_out else result
    times = sorted(elapsed[name] for name in ran if name in elapsed) if elapsed else []
    return RunSummary(
        hosts=len(result),
        ok=len(result) - failed,
        failed=failed,
        changed=changed,
        wall=wall,
        throughput=len(ran) / wall if wall else None,
        p50=percentile(times, 50),
        p95=percentile(times, 95),
        max=times[-1] if times else None,
        failures=failures,
        rerun=policies.rerun,
        retried=policies.retried,
        aborted=policies.aborted,
        skipped=policies.skipped,
        timed_out=policies.timed_out,
        abandoned=policies.abandoned,
        stopped_by=policies.stopped_by,
        login_retried=policies.login_retried,
        login_refusals=policies.login_refusals,
        login_slowed=policies.login_slowed,
        login_servers=tuple(sorted(policies.login_servers)),
        changes=changes,
    )


# Runs again that are not ``retries``: after a worker crash, after a refused login.
_NOT_RETRIES = ("WorkerCrashed", "LoginRefused")


class _PolicyCounts:
    """What the run's policies did to its hosts, counted host by host."""

    def __init__(self) -> None:
        self.rerun = self.retried = self.aborted = self.skipped = 0
        self.timed_out = self.abandoned = 0
        self.login_retried = self.login_refusals = self.login_slowed = 0
        self.login_servers: set[str] = set()
        self.stopped_by: str | None = None

    def add(self, multi: MultiResult, error: BaseException | None) -> None:
        """Count one host; ``error``: what made it fail (``failure_of``'s), if it did."""
        attempts, failed = attempts_of(multi)
        self.login_slowed += bool(len(multi) and getattr(multi[0], "login_wait", 0))
        refused = [f for f in failed if f.exception == "LoginRefused"]
        if refused:
            self.login_retried += 1
            self.login_refusals += len(refused)
            self.login_servers.add(refused[0].message.split(" ", 1)[0])
        if isinstance(error, LoginRefused):
            self.login_refusals += 1
            self.login_servers.add(error.server)
        if attempts > 1:
            crashed = any(f.exception == "WorkerCrashed" for f in failed)
            self.rerun += crashed
            self.retried += any(f.exception not in _NOT_RETRIES for f in failed)
        self.abandoned += sum(f.abandoned for f in failed)
        if error is None:
            return
        self.abandoned += bool(getattr(error, "abandoned", False))
        if isinstance(error, HostSkipped):
            self.skipped += 1
        elif isinstance(error, RunAborted):
            self.aborted += 1
            self.stopped_by = self.stopped_by or f"run aborted by {error.limit}: {error.reason}"
        elif isinstance(error, RunTimeout) and not error.started:
            self.aborted += 1
            self.stopped_by = self.stopped_by or (
                f"run stopped by run_timeout: {error.seconds:g} s passed"
            )
        elif isinstance(error, (TaskTimeout, RunTimeout)):
            self.timed_out += 1


def percentile(ordered: Sequence[float], pct: float) -> float | None:
    """The nearest-rank percentile ``pct`` (0-100) of an ascending list: a value it holds."""
    if not ordered:
        return None
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]
