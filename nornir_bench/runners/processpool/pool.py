"""The scheduling loop of one processpool run: hosts out to workers, results back, dead workers
settled (the rule is :mod:`~nornir_bench.runners.processpool.crashes`'s), frozen ones killed.

Which host goes to which worker is :mod:`~nornir_bench.runners.processpool.dispatch`'s to say,
how a host's result is made in the parent :class:`~nornir_bench.runners._remote.results.
ResultSettler`'s, and when a worker counts as frozen
:mod:`~nornir_bench.runners._remote.watchdog`'s; the worker processes themselves are
:mod:`~nornir_bench.runners.processpool.workers`', and may be kept from an earlier run.
"""

from __future__ import annotations

import logging
import math
import pickle
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import TYPE_CHECKING

from nornir_bench.core.exceptions import describe_exit
from nornir_bench.core.stopping import ctrl_c_deferred
from nornir_bench.runners._remote import watchdog
from nornir_bench.runners._remote.results import ResultSettler
from nornir_bench.runners._remote.scheduling import RemoteScheduling
from nornir_bench.runners._remote.spec import pack_hosts
from nornir_bench.runners.processpool.crashes import (
    START_FAILURES_BEFORE_GIVING_UP,
    CrashLedger,
    storm_layout,
)
from nornir_bench.runners.processpool.dispatch import HostDispatch
from nornir_bench.runners.processpool.forkserver import WorkerStartError
from nornir_bench.runners.processpool.messages import (
    Done,
    EndRun,
    Escaped,
    HaltRun,
    LoadFailed,
    LoadRun,
    Ready,
    RunHosts,
    Tainted,
    receive,
    send,
)

if TYPE_CHECKING:
    from nornir.core.inventory import Host
    from nornir.core.task import AggregatedResult, Task

    from nornir_bench.core.policies.options import RunPolicy
    from nornir_bench.runners.processpool.workers import Worker, WorkerSet

__all__ = ["Pool", "PoolOptions"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PoolOptions:
    """The runner's options a run's pool needs."""

    num_workers: int
    num_procs: int
    chunk_size: int
    crash_reruns: int
    policy: RunPolicy


# One concern, the run's loop over its worker processes (events in, hosts out, a worker's end);
# what decides is elsewhere: dispatch, the crash rule, the watchdog, the settling of results.
class Pool(RemoteScheduling):
    """One run over the worker processes.

    Args:
        options: the runner's.
        task: the run's task template.
        hosts: the run's hosts.
        result: the run's ``AggregatedResult``, filled in as hosts settle.
        procs: the workers, kept from an earlier run or new (their fork server started).
        pack: packs the run for the workers, given its deadline (``_remote.spec.pack_run``).

    Raises:
        ValueError: the run cannot be packed (the task or its arguments do not pickle).

    Attributes:
        halt: set by Ctrl-C (also from a signal handler): the loop then sends no more hosts.
    """

    def __init__(
        self,
        options: PoolOptions,
        task: Task,
        hosts: list[Host],
        result: AggregatedResult,
        procs: WorkerSet,
        pack: Callable[[float | None], bytes],
    ) -> None:
        super().__init__(task, hosts, options.policy, "processpool")
        self.options = options
        self.procs = procs
        self.payload = pack(self.plan.deadline)
        self.dispatch = HostDispatch(self.plan, procs.held.holders, options.num_workers)
        self.crashes = CrashLedger(options.crash_reruns)
        self.settle = ResultSettler(
            task,
            hosts,
            result,
            earlier_runs=self.crashes.earlier_runs,
            settled=self.dispatch.settled,
        )
        self.loaded = False
        self.size = options.num_procs  # the workers it keeps busy: more after a crash

    @property
    def workers(self) -> list[Worker]:
        return self.procs.workers

    # -- the loop's transport (RemoteScheduling) ----------------------------------------------

    def _begin(self) -> None:
        if not self.loaded and self.sending:
            self._load()

    def _out(self) -> bool:
        return any(w.in_flight for w in self.workers)

    def _send(self) -> None:
        for worker in list(self.workers):  # a host the plan held back (a rate limit) may start
            if not worker.retiring and worker.loaded:
                self._feed(worker)

    def _receive(self, timeout: float) -> None:
        ready = set(wait([w.conn for w in self.workers], timeout=timeout))
        for worker in list(self.workers):
            if worker.conn in ready:
                self._from(worker)

    def _waits(self) -> list[float]:
        watched = watchdog.watched(self.options.policy, self.plan.deadline)
        return [watchdog.WATCH_SECONDS] if watched else []

    def _halt_workers(self) -> None:
        self.dispatch.halt()
        for worker in self.workers:  # hosts waiting to retry end with their last failure
            try:
                send(worker.conn, HaltRun())
            except OSError:  # gone: its end of file settles its hosts
                pass

    def _abandon_all(self) -> list[int]:
        for worker in list(self.workers):
            self.dispatch.give_back(worker.kind, sorted(worker.in_flight))
            worker.in_flight.clear()
            self.dispatch.release(worker)
        self.procs.stop(list(self.workers), kill=True)
        return self.dispatch.drain()

    def _end(self) -> None:
        """Tell each worker the run is over: a kept worker would otherwise hold the run's
        threads (up to ``num_workers`` for a blocking task) until the next run; then the
        workers a crash added stop."""
        for worker in self.workers:
            try:
                send(worker.conn, EndRun())
            except OSError:  # gone: nothing to end
                pass
        self._shrink()

    def stop(self, *, kill: bool = False) -> None:
        """Stop every worker (ask them, or kill them after a second Ctrl-C), then the fork
        server."""
        self.procs.close(kill=kill)

    def _load(self) -> None:
        """Give the run to the fork server and to the workers kept from an earlier run, and
        start as many workers as the run can keep busy."""
        self.loaded = True
        procs = self.procs
        procs.prune()
        procs.load(self.payload)
        for worker in list(self.workers):
            worker.loaded = False
            try:
                send(worker.conn, LoadRun(self.payload))
            except OSError:  # gone since: its connections with it
                procs.stop([worker], kill=True)
        for worker in list(self.workers):
            self._feed(worker)  # after the run, on the same socket: it loads it first
        # No more workers than the run can keep busy.
        self.size = min(self.size, math.ceil(len(self.hosts) / self.options.chunk_size))
        self._replace()

    # -- workers -----------------------------------------------------------------------------

    def _feed(self, worker: Worker) -> None:
        """Send hosts until the worker has ``num_workers`` in flight or none are left."""
        dispatch = self.dispatch
        if not worker.in_flight:
            worker.kind = dispatch.kind_next()
        room = dispatch.room(worker)
        others: set[Worker] = set()
        while room > 0 and not worker.retiring:
            count = min(self.options.chunk_size, room)
            taken, more = dispatch.take(worker, count, self._available)
            others |= more
            if not taken:
                break
            chunk, pickled, unsendable = pack_hosts(
                self.hosts, taken, what="processpool runner"
            )
            for index, error in unsendable.items():
                self.settle.failed(index, error)
            now = time.monotonic()
            for index in chunk:
                worker.in_flight[index] = now
                self.settle.leaving(index)
            try:
                send(worker.conn, RunHosts(chunk, pickled))
            except OSError:  # died meanwhile: its socket's EOF reports it, these hosts fail then
                break
            room -= len(chunk)
        for other in others - {worker}:
            self._feed(other)

    def _available(self, pid: int) -> Worker | None:
        """The worker ``pid``, if it is still there to run hosts."""
        for worker in self.workers:
            if worker.pid == pid:
                return None if worker.retiring else worker
        return None

    def _kill(self, worker: Worker) -> None:
        """Kill ``worker``; hosts waiting for it (it held their connections) go to any other."""
        self.procs.stop([worker], kill=True)
        self.dispatch.release(worker)

    def _from(self, worker: Worker) -> None:
        """What ``worker`` sent, settled; more hosts for it, or its end."""
        if not self._drain(worker):
            # outside the except clause: the hosts' failures should not chain an EOFError
            self._lost(worker)
            return
        if worker not in self.workers:  # it could not load the run: the pool gave up
            return
        if worker.retiring and not worker.in_flight:
            self._retire(worker)
        else:
            self._feed(worker)

    def _drain(self, worker: Worker) -> bool:
        """Take every message waiting from ``worker``; False if its end of the socket closed."""
        try:
            while worker.conn.poll():
                with ctrl_c_deferred():  # a batch is stored whole: its hosts' hooks have fired
                    message = receive(worker.conn)
                    if isinstance(message, Done):
                        self._finished(worker, message)
                if isinstance(message, Ready):
                    worker.loaded = True
                    self.crashes.start_failures_in_a_row = 0
                elif isinstance(message, Escaped):
                    worker.in_flight.pop(message.position, None)
                    self.escaped.append(pickle.loads(message.exception))
                elif isinstance(message, Tainted):
                    worker.retiring = True
                    self.dispatch.release(worker)
                elif isinstance(message, LoadFailed):
                    self._give_up(f"a worker process could not load the run: {message.reason}")
                    return True
        except (EOFError, OSError):
            return False
        return True

    def _finished(self, worker: Worker, done: Done) -> None:
        held, settle, in_flight = self.procs.held, self.settle, worker.in_flight
        for finished in done.batch.hosts():
            in_flight.pop(finished.position, None)
            host = settle.finished(finished)
            if finished.connections or held.holders:  # most runs: nobody holds any
                held.hold(host, worker.pid, worker.where, finished.connections)

    def _lost(self, worker: Worker, overdue: dict[int, Exception] | None = None) -> None:
        """``worker`` is gone: settle the hosts it had in flight (the crash rule, see
        :mod:`~nornir_bench.runners.processpool.crashes`), and replace it if work is left."""
        self._drain(worker)  # results it sent before it died still count
        if worker not in self.workers:  # the pool gave up meanwhile
            return
        if overdue is not None:  # only those its last results did not settle
            overdue = {i: e for i, e in overdue.items() if i in worker.in_flight}
        exitcode = None if overdue else self.procs.exit_status(worker)
        # Its fork server died and took it along: no host of its own ended it.
        server_died = exitcode is None and not overdue and worker.forks.process.poll() is not None
        running = worker.running.host() if exitcode is not None else None
        self._kill(worker)
        in_flight = sorted(worker.in_flight)
        worker.in_flight.clear()
        if not worker.loaded:  # died before it could run anything: its hosts never ran
            self.dispatch.give_back(worker.kind, in_flight)
            self._start_failed(
                f"worker processes {describe_exit(exitcode)} before they could start"
            )
            return
        for index, error in (overdue or {}).items():  # a frozen worker: these are why
            self.settle.failed(index, error)
            in_flight.remove(index)
            self.crashes.blamed.add(index)
            running = index
        verdict = self.crashes.verdict(
            in_flight,
            pid=worker.pid,
            exitcode=exitcode,
            running=running,
            name=lambda i: self.hosts[i].name,
            cause_known=not server_died,
        )
        for index, error in verdict.failed.items():
            self.settle.failed(index, error)
        if not overdue and not server_died:
            self._spread()
        if self.sending:  # after Ctrl-C, hosts that did not finish do not run again
            self.dispatch.run_again(verdict.rerun, verdict.alone)
        logger.warning(
            "processpool: worker process %s %s; %d hosts failed, %d run again",
            worker.pid,
            describe_exit(exitcode),
            len(verdict.failed) + len(overdue or {}),
            len(verdict.rerun) + len(verdict.alone),
        )
        self._replace()

    def _start_failed(self, reason: str) -> None:
        """A worker could not start: try another, until too many in a row have failed."""
        self.crashes.start_failures_in_a_row += 1
        failures = self.crashes.start_failures_in_a_row
        if failures < max(START_FAILURES_BEFORE_GIVING_UP, self.options.num_procs):
            self._replace()
        elif not self.workers:  # else the others carry on with what is pending
            self._give_up(f"{reason} ({failures} in a row)")

    def _replace(self) -> None:
        """Start workers while hosts are waiting for one, up to the pool's size."""
        while self.sending and self.dispatch.waiting() and len(self.workers) < self.size:
            try:
                worker = self.procs.fork(threads=self.options.num_workers)
            except WorkerStartError as exc:
                if exc.load_error:  # every worker would fail alike
                    self._give_up(exc.reason)
                else:
                    self._start_failed(exc.reason)
                return
            self._feed(worker)

    def _spread(self) -> None:
        """A worker crashed: from now on fewer hosts share a worker's fate, on more workers
        (rule 6 of the crash rule)."""
        self.size, self.dispatch.per_worker = storm_layout(
            self.options.num_procs, self.options.num_workers
        )

    def _shrink(self) -> None:
        """After a run that spread (a crash): the workers past ``num_procs`` stop, those
        keeping the fewest connections first."""
        extra = len(self.workers) - self.options.num_procs
        if extra > 0:
            keeping = Counter(self.procs.held.holders.values())
            idle = sorted(self.workers, key=lambda w: (bool(w.in_flight), keeping[w.pid]))
            self.procs.stop(idle[:extra], kill=False)

    def _retire(self, worker: Worker) -> None:
        """Replace a worker with a stuck thread (a blocking task past its deadline)."""
        self._kill(worker)
        self._replace()

    # -- watching ----------------------------------------------------------------------------

    def _watch(self) -> None:
        """Kill a worker so busy it missed a host's deadline by far: it cannot answer at all."""
        policy, deadline = self.options.policy, self.plan.deadline
        if not watchdog.watched(policy, deadline):
            return
        now = time.monotonic()
        for worker in list(self.workers):
            if not watchdog.overdue(worker.in_flight, policy, deadline, now):
                continue
            self._drain(worker)  # what it has sent meanwhile settles those hosts
            errors = watchdog.overdue_errors(
                worker.in_flight, policy, deadline, now, self.task.name, self.hosts
            )
            if errors:
                logger.warning(
                    "processpool: worker process %s stopped answering after a host's deadline; "
                    "replacing it",
                    worker.pid,
                )
                self._lost(worker, errors)
