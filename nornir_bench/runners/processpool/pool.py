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
import pickle
import time
from collections.abc import Callable
from multiprocessing.connection import wait
from typing import TYPE_CHECKING

from nornir_bench.core.ctrl_c import ctrl_c_deferred
from nornir_bench.core.exceptions import describe_exit
from nornir_bench.runners._remote.results import ResultSettler
from nornir_bench.runners._remote.scheduling import RemoteScheduling
from nornir_bench.runners._remote.shipments import open_shipment, settle_shipment
from nornir_bench.runners.processpool.crashes import (
    START_FAILURES_BEFORE_GIVING_UP,
    CrashLedger,
    HostKind,
)
from nornir_bench.runners.processpool.dispatch import HostDispatch
from nornir_bench.runners.processpool.forkserver import WorkerStartError
from nornir_bench.runners.processpool.messages import (
    Alive,
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
from nornir_bench.runners.processpool.sizing import PoolSize, default_chunk_size

if TYPE_CHECKING:
    from nornir_bench.runners._core.lifecycle import Lifecycle
    from nornir_bench.runners._remote.options import RemoteOptions
    from nornir_bench.runners.processpool.workers import Worker, WorkerSet

__all__ = ["Pool"]

logger = logging.getLogger(__name__)


# One concern, the run's transport over its worker processes (events in, hosts out, a worker's
# end); what decides is elsewhere: the loop and the book, the crash rule, the settling.
class Pool(RemoteScheduling[int]):
    """One run over the worker processes (named by pid in the book).

    Args:
        options: the runner's.
        run: the run's lifecycle (planned).
        procs: the workers, kept from an earlier run or new (their fork server started).
        keep_workers: the runner keeps its workers (and the connections hosts open in
            them) for the next run.
        give_back: gives ``procs`` back to the runner's keeper as the run ends, kept or not
            (``keep``; a set of this run's own is stopped whatever it says).

    Raises:
        ValueError: the run cannot be packed (the task or its arguments do not pickle).
    """

    def __init__(
        self,
        options: RemoteOptions,
        run: Lifecycle,
        procs: WorkerSet,
        *,
        keep_workers: bool,
        give_back: Callable[..., None],
    ) -> None:
        super().__init__(run, "processpool")
        self.options = options
        self.procs = procs
        self.keep_workers = keep_workers
        self.give_back = give_back
        self.payload = options.pack(
            run.task, self.plan.deadline, what="processpool runner", keep_connections=keep_workers
        )
        self.chunk_size = options.chunk_size or default_chunk_size(options.num_workers)
        self.book = self.dispatch = HostDispatch(
            self.scheduler, procs.held.holders, options.num_workers
        )
        self.crashes = CrashLedger(options.crash_reruns)
        self.settle = ResultSettler(
            run.task,
            run.hosts,
            run.result,
            earlier_runs=self.crashes.earlier_runs,
            settled=self.dispatch.settled,
        )
        self.loaded = False
        self.size = PoolSize(options.num_procs, options.num_workers, self.chunk_size)

    @property
    def workers(self) -> list[Worker]:
        return self.procs.workers

    # -- the lifecycle's transport --------------------------------------------------------------

    def abandon(self) -> None:
        """The second Ctrl-C: the workers are killed at once, hosts in flight and all."""
        self.procs.close(kill=True)

    def close(self, *, ended: bool) -> None:
        """Stop the workers, unless the runner keeps them after a run that ended (a task's
        ``SystemExit`` too); let go of them for the next run."""
        self.give_back(keep=ended and self.keep_workers)

    # -- the loop's transport (RemoteScheduling) ----------------------------------------------

    def _begin(self) -> None:
        if not self.loaded and self.sending:
            self._load()

    def _send(self) -> None:
        self._replace()
        super()._send()

    def _most_for(self, worker: int) -> int:
        held = self.procs.worker(worker)
        if held is None or held.retiring:
            return 0
        self.dispatch.kind_for(worker)
        return min(self.chunk_size, self.book.room(worker))

    def _ship(self, worker: int, indices: list[int]) -> None:
        shipment = open_shipment(
            self.hosts, indices, worker, self.book, self.settle, what="processpool runner"
        )
        if shipment is None:
            return
        held = self.procs.worker(worker)
        assert held is not None
        try:
            send(held.conn, RunHosts(shipment.positions, shipment.pickled))
        except OSError:  # died meanwhile: its socket's EOF reports it, these hosts fail then
            pass

    def _receive(self, timeout: float) -> None:
        ready = set(wait([w.conn for w in self.workers], timeout=timeout))
        for worker in list(self.workers):
            if worker.conn in ready:
                self._from(worker)

    def _halt_workers(self) -> None:
        for worker in self.workers:  # hosts waiting to retry end with their last failure
            try:
                send(worker.conn, HaltRun())
            except OSError:  # gone: its end of file settles its hosts
                pass

    def _abandon_all(self) -> list[int]:
        out = [index for worker in list(self.workers) for index in self.book.remove(worker.pid)]
        self.procs.stop(list(self.workers), kill=True)
        return out

    def _unresponsive(self, worker: int, errors: dict[int, Exception], why: str) -> None:
        held = self.procs.worker(worker)
        if held is None:
            return
        logger.warning("processpool: worker process %s %s; replacing it", worker, why)
        self._lost(held, errors)

    def _name(self, worker: int) -> str:
        return f"processpool worker process {worker}"

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
                continue
            self._join(worker)  # hosts go after the run, on the same socket: it loads it first
        self.size.fit(len(self.hosts))

    def _join(self, worker: Worker) -> None:
        """``worker`` takes part in the run: it has places, and it is watched from now."""
        self.book.add(worker.pid)
        self.heard[worker.pid] = time.monotonic()

    # -- workers -----------------------------------------------------------------------------

    def _kill(self, worker: Worker) -> list[int]:
        """Kill ``worker``; the hosts it had out (hosts waiting for it go to any other)."""
        self.procs.stop([worker], kill=True)
        self.heard.pop(worker.pid, None)
        return self.book.remove(worker.pid)

    def _from(self, worker: Worker) -> None:
        """What ``worker`` sent, settled; its end, or its retirement."""
        self.heard[worker.pid] = time.monotonic()
        if not self._drain(worker):
            # outside the except clause: the hosts' failures should not chain an EOFError
            self._lost(worker)
            return
        if worker in self.workers and worker.retiring and not self.book.on.get(worker.pid):
            self._retire(worker)

    def _drain(self, worker: Worker) -> bool:
        """Take every message waiting from ``worker``; False if its end of the socket closed."""
        try:
            while worker.conn.poll():
                with ctrl_c_deferred():  # a batch is stored whole: its hosts' hooks have fired
                    message = receive(worker.conn)
                    if isinstance(message, Done):
                        self._finished(worker, message)
                if isinstance(message, (Done, Alive)):
                    continue
                if isinstance(message, Ready):
                    worker.loaded = True
                    self.crashes.start_failures_in_a_row = 0
                elif isinstance(message, Escaped):
                    self.book.back(message.position)
                    self.run.escape(pickle.loads(message.exception))
                elif isinstance(message, Tainted):
                    worker.retiring = True
                    self.book.release(worker.pid)
                elif isinstance(message, LoadFailed):
                    self._give_up(f"a worker process could not load the run: {message.reason}")
                    return True
        except (EOFError, OSError):
            return False
        return True

    def _finished(self, worker: Worker, done: Done) -> None:
        settle_shipment(
            done.batch, self.settle, self.book.back, self.procs.held, worker.pid, worker.where
        )

    def _lost(self, worker: Worker, overdue: dict[int, Exception] | None = None) -> None:
        """``worker`` is gone: settle the hosts it had in flight (the crash rule, see
        :mod:`~nornir_bench.runners.processpool.crashes`), and replace it if work is left."""
        self._drain(worker)  # results it sent before it died still count
        if worker not in self.workers:  # the pool gave up meanwhile
            return
        if overdue is not None:  # only those its last results did not settle
            overdue = {i: e for i, e in overdue.items() if i in self.book.on.get(worker.pid, {})}
        exitcode = None if overdue else self.procs.exit_status(worker)
        # Its fork server died and took it along: no host of its own ended it.
        server_died = exitcode is None and not overdue and worker.forks.process.poll() is not None
        running = worker.running.host() if exitcode is not None else None
        kind = self.dispatch.kinds.get(worker.pid, HostKind.NEW)
        in_flight = self._kill(worker)
        if not worker.loaded:  # died before it could run anything: its hosts never ran
            self.dispatch.give_back_as(kind, in_flight)
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
        while self.sending and self.dispatch.waiting() and len(self.workers) < self.size.most:
            try:
                worker = self.procs.fork(threads=self.options.num_workers)
            except WorkerStartError as exc:
                if exc.load_error:  # every worker would fail alike
                    self._give_up(exc.reason)
                else:
                    self._start_failed(exc.reason)
                return
            self._join(worker)

    def _spread(self) -> None:
        """A worker crashed: from now on fewer hosts share a worker's fate, on more workers
        (rule 6 of the crash rule)."""
        self.dispatch.spread(self.size.spread())

    def _shrink(self) -> None:
        """After a run that spread (a crash): the workers past ``num_procs`` stop, those
        keeping the fewest connections first."""
        extra = self.size.extra(self.workers, self.book.on, self.procs.held.holders)
        if extra:
            self.procs.stop(extra, kill=False)

    def _retire(self, worker: Worker) -> None:
        """Replace a worker with a stuck thread (a blocking task past its deadline)."""
        self._kill(worker)
        self._replace()
