"""What a processpool worker's death means for the hosts it had in flight: the crash rule.

A worker process that dies (a segfault in a device library, ``os._exit``, a kill, the
out-of-memory killer) takes with it every host it had in flight, up to ``num_workers`` of them.
Usually one host caused it. The rule:

1. **The host running when the worker died fails**, with ``WorkerCrashed(... while running this
   host)``. The worker shows the parent which host that is in memory they share
   (:mod:`~nornir_bench.runners.processpool.running_host`): it writes a host's index there
   before each step of that host's coroutine on its event loop and clears it after; each of its
   threads writes the host whose blocking call it runs; and on a fatal signal (a segfault, an
   abort) Python's ``faulthandler`` writes there which thread it hit. So a crash on the loop
   (an ``async def`` task, or CPU work inside one) and a segfault in any thread name their host
   exactly; so does a worker dying with one host in flight.
2. **The other hosts in flight did not cause it: they run again** on a fresh worker, together,
   kept apart from hosts running for the first time (so that a crash among those, not known
   yet, cannot catch them).
3. **When the running host is not known** (``os._exit`` or a kill while blocking calls ran in
   threads, where the crash may have come from; or the worker was killed from outside while its
   loop waited), every host in flight is a suspect and runs again **alone**: a suspect that
   crashes its worker again is then named by rule 1 and fails, and the others finish. Running
   alone costs time (one suspect at a time per worker), only after such crashes.
4. **A host runs again at most ``crash_reruns`` times** (default 1; 0 never runs a host twice,
   for tasks that must not repeat on a device): past that it fails with ``WorkerCrashed``,
   saying so. A host run again has ``attempts`` and ``failed_attempts`` on its result (see
   :mod:`nornir_bench.core.attempts`).
5. **Workers that cannot start** (they die before holding the run: a broken environment) do
   not count against hosts: their hosts never ran and are sent again. After
   :data:`START_FAILURES_BEFORE_GIVING_UP` such failures in a row with no worker starting in
   between, the pool stops and fails the hosts left with ``WorkerUnavailable``. A run the
   workers cannot load (the task's module does not import there) fails its hosts with that
   reason at once: every worker would fail alike.

6. **After a crash, fewer hosts share a worker's fate.** Once a worker of a run has crashed,
   each worker has at most :data:`STORM_HOSTS_PER_WORKER` hosts in flight, and the pool runs
   as many more workers as keep the run's hosts in flight (``num_procs`` x ``num_workers``) as
   before, up to :data:`MAX_STORM_PROCS` (past that, more hosts each). With 100 hosts in
   flight per worker and 1 % of hosts crashing, nearly every host would be in flight at a
   crash, and the group run again would often hold another crasher, failing its innocent
   hosts (rule 4): 8 in flight a worker makes both rare, and the suspects of rule 3 run alone
   on many workers at once. Workers past ``num_procs`` stop at the end of the run (with the
   connections they kept). A run without crashes is not changed.

Every death fails a host or uses up one of its hosts' re-runs, so a crash storm ends. Workers
are forked by a fork server that holds the run
(:mod:`~nornir_bench.runners.processpool.forkserver`), so replacing one takes milliseconds:
10,000 hosts with 1 % crashing their worker finish in seconds, failing few innocent hosts
(scripts/bench_crashes.py).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field

from nornir_bench.core.attempts import FailedAttempt
from nornir_bench.core.exceptions import WorkerCrashed

__all__ = [
    "DEFAULT_CRASH_RERUNS",
    "MAX_STORM_PROCS",
    "START_FAILURES_BEFORE_GIVING_UP",
    "STORM_HOSTS_PER_WORKER",
    "CrashLedger",
    "HostKind",
    "storm_layout",
]

DEFAULT_CRASH_RERUNS = 1
"""How many times a host in flight on a worker that died runs again (rule 2)."""

START_FAILURES_BEFORE_GIVING_UP = 3
"""Workers dying before they load the run, in a row, before the pool gives up (rule 5)."""

STORM_HOSTS_PER_WORKER = 8
"""Hosts in flight per worker once a worker of the run has crashed (rule 6)."""

MAX_STORM_PROCS = 64
"""Worker processes a run may have once a worker has crashed (rule 6), unless ``num_procs`` is
higher: each costs about 10 MiB of memory of its own (the rest is shared with its fork
server)."""


def storm_layout(num_procs: int, per_worker: int) -> tuple[int, int]:
    """Rule 6: the workers, and hosts in flight per worker, of a run once a worker crashed.

    As many hosts stay in flight as ``num_procs`` workers with ``per_worker`` each had, on
    more workers with fewer each, as far as :data:`MAX_STORM_PROCS` allows.
    """
    in_flight = num_procs * per_worker
    procs = max(
        num_procs, min(MAX_STORM_PROCS, -(-in_flight // min(per_worker, STORM_HOSTS_PER_WORKER)))
    )
    return procs, -(-in_flight // procs)


class HostKind(enum.Enum):
    """Which hosts a worker has in flight: the rule keeps the kinds apart (rules 2 and 3)."""

    NEW = "new"
    """Hosts running for the first time."""
    RERUN = "rerun"
    """Hosts run again, together, after a crash another host caused."""
    ALONE = "alone"
    """A suspect of a crash whose cause is not known, run alone."""


@dataclass
class Verdict:
    """What one worker death means: hosts that fail (with their error), hosts to run again
    (innocent: with others), hosts to run again alone (suspects)."""

    failed: dict[int, WorkerCrashed] = field(default_factory=dict)
    rerun: list[int] = field(default_factory=list)
    alone: list[int] = field(default_factory=list)


class CrashLedger:
    """The crash rule's memory for one run: the crashes each host was in flight at.

    Args:
        reruns: how many times a host in flight on a worker that died runs again.
    """

    def __init__(self, reruns: int = DEFAULT_CRASH_RERUNS) -> None:
        self.reruns = reruns
        self.crashes: dict[int, list[FailedAttempt]] = {}
        self.start_failures_in_a_row = 0
        # Hosts failed for what froze their worker (a task past its deadline holding the GIL):
        # the worker's other hosts did not cause its end.
        self.blamed: set[int] = set()

    def verdict(
        self,
        in_flight: list[int],
        *,
        pid: int | None,
        exitcode: int | None,
        running: int | None,
        name: Callable[[int], str],
        cause_known: bool = True,
    ) -> Verdict:
        """Apply the rule to the hosts ``in_flight`` on a worker that died.

        Args:
            in_flight: the host indices it had in flight.
            pid, exitcode: the worker's.
            running: the index of the host running on its loop when it died, if known.
            name: gives a host's name from its index, for messages.
            cause_known: ``False`` when it died of something else than its hosts (its fork
                server died and took it along): none of them is to blame, all run again.
        """
        verdict = Verdict()
        if not cause_known:
            culprit: int | None = None
        elif running is not None and (running in in_flight or running in self.blamed):
            culprit = running
        elif len(in_flight) == 1:
            culprit = in_flight[0]
        else:
            culprit = None
        for index in in_flight:
            if index == culprit:
                verdict.failed[index] = WorkerCrashed(pid, exitcode)
                continue
            if not cause_known:
                crash = WorkerCrashed(
                    pid, exitcode, running="its hosts in flight, when its fork server died"
                )
                again = "run again on a worker of a new fork server"
            elif culprit is not None:
                crash = WorkerCrashed(pid, exitcode, running=f"host {name(culprit)!r}")
                again = "run again on another worker"
            else:
                crash = WorkerCrashed(
                    pid, exitcode, running="its hosts in flight, this one among them"
                )
                again = "run again alone on another worker"
            seen = self.crashes.setdefault(index, [])
            if len(seen) >= self.reruns:
                times = f"{self.reruns} time{'s' * (self.reruns != 1)}"
                verdict.failed[index] = WorkerCrashed(
                    pid,
                    exitcode,
                    detail=f"; a host in flight runs again at most {times} (crash_reruns)",
                    running=crash.running,
                )
                continue
            seen.append(FailedAttempt("WorkerCrashed", f"{crash}; {again}"))
            suspect = cause_known and culprit is None
            (verdict.alone if suspect else verdict.rerun).append(index)
        return verdict

    def earlier_runs(self, index: int) -> list[FailedAttempt]:
        """The crashes host ``index`` was run again after (empty for most hosts)."""
        return self.crashes.get(index, [])


