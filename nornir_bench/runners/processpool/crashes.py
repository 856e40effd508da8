"""What a processpool worker's death means for the hosts it had in flight: the crash rule.

A worker process that dies (a segfault in a device library, ``os._exit``, a kill, the
out-of-memory killer) takes with it every host it had in flight, up to ``num_workers`` of them.
Usually one host caused it. The rule:

1. **The host running when the worker died fails**, with ``WorkerCrashed(... while running this
   host)``. The worker shows the parent which host that is in memory they share
   (:class:`RunningHost`): it writes a host's index there before each step of that host's
   coroutine on its event loop and clears it after; each of its threads writes the host whose
   blocking call it runs; and on a fatal signal (a segfault, an abort) Python's
   ``faulthandler`` writes there which thread it hit. So a crash on the loop (an ``async def``
   task, or CPU work inside one) and a segfault in any thread name their host exactly; so does
   a worker dying with one host in flight.
2. **The other hosts in flight did not cause it: they run again** on a fresh worker, together,
   kept apart from hosts running for the first time (so that a crash among those, not known
   yet, cannot catch them).
3. **When the running host is not known** (``os._exit`` or a kill while blocking calls ran in
   threads, where the crash may have come from; or the worker was killed from outside while its
   loop waited),
   every host in flight is a suspect and runs again **alone**: a suspect that crashes its
   worker again is then named by rule 1 and fails, and the others finish. Running alone costs
   time (one suspect at a time per worker), only after such crashes.
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
import faulthandler
import functools
import itertools
import mmap
import os
import re
import tempfile
import threading
from collections.abc import Awaitable, Callable, Coroutine, Generator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from nornir_bench.core.attempts import FailedAttempt
from nornir_bench.core.exceptions import WorkerCrashed
from nornir_bench.core.execution import Offload

__all__ = [
    "DEFAULT_CRASH_RERUNS",
    "MAX_STORM_PROCS",
    "START_FAILURES_BEFORE_GIVING_UP",
    "STORM_HOSTS_PER_WORKER",
    "CrashLedger",
    "HostKind",
    "Marked",
    "RunningHost",
    "counted",
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

_T = TypeVar("_T")


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


_NONE = -1
# The shared memory, as 64-bit cells: a header, then one (thread id, host) slot per thread of
# the worker's pool, then (from a page boundary) faulthandler's dump of a fatal signal: every
# thread's stack, the one the signal hit marked "Current thread".
_HOST, _IN_THREADS, _LOOP_THREAD, _SLOTS = 0, 1, 2, 3  # header cells
_HEADER = 4
_CELL = 8
_PAGE = mmap.PAGESIZE
_SIGNED = (1 << 63) - 1  # thread ids are unsigned; the cells are signed
_CURRENT_THREAD = re.compile(rb"Current thread (0x[0-9a-fA-F]+)")


class RunningHost:
    """Memory shared with one worker: which host runs where, and what a fatal signal hit.

    The parent creates it (``threads``: how many threads the worker's pool may run) and passes
    its file descriptor to the worker (``fileno``), which opens the same memory with
    ``RunningHost(fd)``. It outlives the worker, so the parent reads it after the worker died.
    """

    def __init__(self, fd: int | None = None, *, threads: int = 0) -> None:
        if fd is None:
            fd = _anonymous_file()
            used = _CELL * (_HEADER + 2 * threads)
            os.ftruncate(fd, -(-used // _PAGE) * _PAGE + _PAGE)  # cells, then the dump page
            self._map = mmap.mmap(fd, used)
            self.cell = memoryview(self._map).cast("q")
            self.cell[_HOST] = _NONE  # fresh memory reads 0, which is a host index
            self.cell[_SLOTS] = threads
        else:
            header = mmap.mmap(fd, _CELL * _HEADER)
            threads = memoryview(header).cast("q")[_SLOTS]
            header.close()
            self._map = mmap.mmap(fd, _CELL * (_HEADER + 2 * threads))
            self.cell = memoryview(self._map).cast("q")
        self._fd = fd
        self._dump_at = -(-len(self._map) // _PAGE) * _PAGE
        self._slot_of_thread = threading.local()
        self._next_slot = itertools.count()

    def fileno(self) -> int:
        return self._fd

    # -- the worker's side ----------------------------------------------------------------

    def start_watching(self) -> None:
        """In the worker: name the loop's thread, and have a fatal signal dump its thread."""
        self.cell[_LOOP_THREAD] = threading.get_ident() & _SIGNED
        dump = os.dup(self._fd)  # its own offset: the dump's place; kept open for faulthandler
        os.lseek(dump, self._dump_at, os.SEEK_SET)
        faulthandler.enable(file=dump, all_threads=True)

    def thread_runs(self, host: int) -> int | None:
        """In a worker thread: note it runs ``host``; the slot to clear after, if any."""
        slot = getattr(self._slot_of_thread, "slot", None)
        if slot is None:
            slot = self._slot_of_thread.slot = next(self._next_slot)
        if slot >= self.cell[_SLOTS]:
            return None  # more threads than slots: a crash in this one stays unknown
        base = _HEADER + 2 * slot
        self.cell[base] = threading.get_ident() & _SIGNED
        self.cell[base + 1] = host
        return base + 1

    # -- the parent's side ----------------------------------------------------------------

    def host(self) -> int | None:
        """The index of the host whose code the worker was running when it died, or ``None``.

        A fatal signal's dump names the thread it hit: the host that thread ran. Otherwise
        (``os._exit``, a kill) the host running on the loop, but only if no blocking call was
        running in a thread, where the end may have come from.
        """
        dumped = os.fstat(self._fd).st_size - self._dump_at  # the file grows as it is written
        hit = _CURRENT_THREAD.search(os.pread(self._fd, max(0, dumped), self._dump_at))
        if hit is not None:
            thread = int(hit.group(1), 16) & _SIGNED
            if thread == self.cell[_LOOP_THREAD]:
                return self._known(self.cell[_HOST])
            for slot in range(self.cell[_SLOTS]):
                if self.cell[_HEADER + 2 * slot] == thread:
                    return self._known(self.cell[_HEADER + 2 * slot + 1])
            return None
        if self.cell[_IN_THREADS] > 0:
            return None
        return self._known(self.cell[_HOST])

    @staticmethod
    def _known(value: int) -> int | None:
        return None if value == _NONE else int(value)

    def close(self) -> None:
        self.cell.release()
        self._map.close()
        os.close(self._fd)


def _anonymous_file() -> int:
    """A file in memory, with no name: ``memfd_create`` on Linux, an unlinked file elsewhere."""
    memfd_create = getattr(os, "memfd_create", None)
    if memfd_create is not None:
        # Close-on-exec (the default): a program a task starts must not hold it.
        fd: int = memfd_create("nornir-bench-running-host")
        return fd
    fd, path = tempfile.mkstemp(prefix="nornir-bench-")
    os.unlink(path)
    return fd


class Marked(Coroutine[Any, Any, _T]):
    """A host's coroutine that writes the host's index into ``cell`` while each step runs.

    Cheap (two stores per step) and invisible to the task: ``send``, ``throw`` and ``close``
    go to the wrapped coroutine, so cancellation and timeouts work as before.
    """

    __slots__ = ("_coro", "_index", "_cell")

    def __init__(self, coro: Coroutine[Any, Any, _T], index: int, cell: memoryview) -> None:
        self._coro = coro
        self._index = index
        self._cell = cell

    def send(self, value: Any) -> Any:
        self._cell[_HOST] = self._index
        try:
            return self._coro.send(value)
        finally:
            self._cell[_HOST] = _NONE

    def throw(self, exc: Any, *args: Any) -> Any:
        self._cell[_HOST] = self._index
        try:
            return self._coro.throw(exc, *args)
        finally:
            self._cell[_HOST] = _NONE

    def close(self) -> None:
        self._coro.close()

    def __await__(self) -> Generator[Any, None, _T]:
        return self._coro.__await__()


def counted(offload: Offload, running: RunningHost) -> Offload:
    """``offload``, noting in ``running`` which host each thread runs (see rule 1).

    Called on the loop, inside a host's step: the host on the loop is the one offloading.
    """
    cell = running.cell
    lock = threading.Lock()

    def run(call: Callable[[], Any], host: int) -> Any:
        slot = running.thread_runs(host)
        with lock:
            cell[_IN_THREADS] += 1
        try:
            return call()
        finally:
            if slot is not None:
                cell[slot] = _NONE
            with lock:
                cell[_IN_THREADS] -= 1

    def offload_counted(call: Callable[[], Any]) -> Awaitable[Any]:
        return offload(functools.partial(run, call, int(cell[_HOST])))

    return offload_counted


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


