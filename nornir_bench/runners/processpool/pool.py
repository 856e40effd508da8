"""The scheduling loop of one processpool run: hosts out to workers, results back, crashes
settled (the rule is :mod:`~nornir_bench.runners.processpool.crashes`'s), timeouts watched.

The runner (:mod:`~nornir_bench.runners.processpool.runner`) builds a :class:`_Pool` per run;
the worker processes themselves are :mod:`~nornir_bench.runners.processpool.workers`', and may
be kept from an earlier run: those are sent the new run, and each host that opened connections
in one of them goes back to it.
"""

from __future__ import annotations

import logging
import math
import pickle
import time
from collections import deque
from multiprocessing.connection import wait
from typing import TYPE_CHECKING, Any

import cloudpickle
from nornir.core.task import AggregatedResult, MultiResult, Task

from nornir_bench.core.attempts import record_attempts
from nornir_bench.core.exceptions import (
    RunTimeout,
    TaskTimeout,
    WorkerUnavailable,
    describe_exit,
)
from nornir_bench.core.execution import fail_host, log_failure, start_host
from nornir_bench.core.policies.plan import HostPlan
from nornir_bench.core.stopping import ctrl_c_held
from nornir_bench.runners.processpool.crashes import (
    START_FAILURES_BEFORE_GIVING_UP,
    CrashLedger,
)
from nornir_bench.runners.processpool.forkserver import WorkerStartError
from nornir_bench.runners.processpool.messages import (
    Done,
    Halt,
    LoadFailed,
    LoadRun,
    Ready,
    RunHosts,
    Tainted,
    receive,
    send,
)
from nornir_bench.runners.processpool.replay import relink, replay_hooks
from nornir_bench.runners.processpool.workers import Worker, WorkerSet

if TYPE_CHECKING:
    from nornir.core.inventory import Host

    from nornir_bench.runners.processpool.runner import ProcessPoolRunner

__all__: list[str] = []

logger = logging.getLogger(__name__)

# How long a worker may stay silent past a host's deadline before it is taken for frozen (a C
# call holding the GIL: not even its own timeout can fire).
_FROZEN_GRACE_SECONDS = 5.0

# Arguments after the interpreter that start the fork server (its sockets are appended).
_FORK_SERVER_COMMAND = ["-m", "nornir_bench.runners.processpool._main"]


# Over 200 lines, on purpose: feeding, receiving, settling crashes and timeouts all move the
# same host queues, in-flight sets and counters, and each step decides what the next does; split
# into classes, each would reach into the others' state. The processes themselves, the hook
# replay and the crash rule are their own modules.
class _Pool:
    """The worker processes of one run and the loop that feeds them and collects results."""

    def __init__(
        self,
        runner: ProcessPoolRunner,
        task: Task,
        hosts: list[Host],
        result: AggregatedResult,
        procs: WorkerSet,
    ) -> None:
        self.runner = runner
        self.payload = b""
        self.task = task
        self.hosts = hosts
        self.result = result
        # New hosts come from the run's plan (its policies decide which starts when); hosts
        # taken from it that a worker gave back unrun (it died before starting) go first.
        self.plan = HostPlan(hosts, runner.policy)
        self.pending: deque[int] = deque()
        self.out: set[int] = set()  # taken from the plan, not settled yet
        # Hosts to run again after a crash (see _crashes): with others, and one at a time.
        self.reruns: deque[int] = deque()
        self.alone: deque[int] = deque()
        # Hosts taken from the plan for the worker holding their connections: by its pid.
        self.held_for: dict[int, deque[int]] = {}
        self.remaining = len(hosts)
        self.procs = procs  # kept from an earlier run, or new
        self.loaded = False
        self.crashes = CrashLedger(runner.crash_reruns)
        self.sending = True  # False once Ctrl-C was pressed: no more hosts go out
        self.started: dict[int, Task] = {}  # host index -> its task, started and not completed

    @property
    def workers(self) -> list[Worker]:
        return self.procs.workers

    def start_fork_server(self) -> None:
        self.procs.ensure_fork_server()

    def run(self) -> None:
        """Run the hosts to their end; after :meth:`stop_sending`, only those in flight."""
        if not self.loaded and self.sending:
            self._load()
        while self.remaining if self.sending else any(w.in_flight for w in self.workers):
            self._settle_not_run()
            if not self.remaining:
                break
            ready = set(wait([w.conn for w in self.workers], timeout=self._wait_timeout()))
            for worker in list(self.workers):
                if worker.conn in ready:
                    self._receive(worker)
            self._watchdog()
            if self.sending:  # a host the plan held back (a rate limit) may start now
                for worker in list(self.workers):
                    if not worker.retiring and worker.loaded:
                        self._feed(worker)

    def _load(self) -> None:
        """Give the run to the fork server and to the workers kept from an earlier run, and
        start as many workers as the run can keep busy."""
        self.loaded = True
        procs = self.procs
        procs.prune()
        procs.load(self.payload)
        for worker in list(self.workers):
            worker.loaded, worker.runs = False, "new"
            try:
                send(worker.conn, LoadRun(self.payload))
            except OSError:  # gone since: its connections with it
                procs.stop([worker], kill=True)
        needed = math.ceil(len(self.hosts) / self.runner.chunk_size)
        for worker in list(self.workers):
            self._feed(worker)  # after the run, on the same socket: it loads it first
        for _ in range(min(self.runner.num_procs, needed) - len(self.workers)):
            self._replace()

    def _settle_not_run(self) -> None:
        """Fail the hosts the run's policies will not start (a limit, the deadline)."""
        for host, error in self.plan.not_run():
            self._failed(self.plan.index[host.name], error)

    def stop_sending(self) -> None:
        """Ctrl-C: send no more hosts; those not sent yet (or waiting to run again) do not run."""
        self.sending = False
        self.plan.halt()
        for worker in self.workers:  # hosts waiting to retry end with their last failure
            try:
                send(worker.conn, Halt())
            except OSError:  # gone: its end of file settles its hosts
                pass
        for queue in (self.pending, self.reruns, self.alone, *self.held_for.values()):
            queue.clear()

    # -- workers ---------------------------------------------------------------------------

    def _feed(self, worker: Worker) -> None:
        """Send hosts until the worker has ``num_workers`` in flight or none are left.

        A worker runs one kind of host at a time (see :mod:`~nornir_bench.runners.processpool.crashes`):
        hosts running for the first time; hosts run again after a crash another host caused,
        together (a crash among new hosts, not known yet, must not catch them); or a suspect of
        a crash whose cause is not known, alone (so that if it crashes again, it is named).
        """
        if not worker.in_flight:
            worker.runs = "alone" if self.alone else "rerun" if self.reruns else "new"
        take = {"alone": self.alone, "rerun": self.reruns}.get(worker.runs)
        room = (1 if worker.runs == "alone" else self.runner.num_workers) - len(worker.in_flight)
        while room > 0 and not worker.retiring:
            count = min(self.runner.chunk_size, room)
            chunk = _taken(take, count) if take is not None else self._new_hosts(worker, count)
            if not chunk:
                return
            chunk, hosts = self._pickled(chunk)
            now = time.monotonic()
            for index in chunk:
                worker.in_flight[index] = now
                if self.task.processors and index not in self.started:  # not a host run again
                    self._started(index)
            try:
                send(worker.conn, RunHosts(chunk, hosts))
            except OSError:  # died meanwhile: its socket's EOF reports it, these hosts fail then
                return
            room -= len(chunk)

    def _pickled(self, chunk: list[int]) -> tuple[list[int], bytes]:
        """The hosts of ``chunk`` that can be sent, and them pickled for the worker that runs
        them (cloudpickle if their data needs it). A host whose inventory data cannot be sent
        at all (an open socket in ``data``) fails, alone."""
        hosts = [self.hosts[index] for index in chunk]
        try:
            return chunk, pickle.dumps(hosts, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001 - a function or a class of __main__ in the data
            pass
        sendable = []
        for index in chunk:
            try:
                cloudpickle.dumps(self.hosts[index])
            except Exception as exc:  # noqa: BLE001 - any of it: the host cannot run there
                self._failed(index, ValueError(
                    f"processpool runner: host {self.hosts[index].name}'s inventory cannot be "
                    f"sent to worker processes: {type(exc).__name__}: {exc}"
                ))
            else:
                sendable.append(index)
        hosts = [self.hosts[index] for index in sendable]
        return sendable, bytes(cloudpickle.dumps(hosts, protocol=pickle.HIGHEST_PROTOCOL))

    def _new_hosts(self, worker: Worker, count: int) -> list[int]:
        """Up to ``count`` hosts for ``worker`` to run for the first time: those whose
        connections it holds, given back ones, then the plan's.

        A host the plan hands out whose connections another worker holds waits for that
        worker, which is fed at once if it has room.
        """
        chunk = _taken(self.held_for[worker.pid], count) if self.held_for.get(worker.pid) else []
        chunk += _taken(self.pending, count - len(chunk))
        holders = self.procs.holders
        others: set[Worker] = set()
        while len(chunk) < count and (index := self.plan.take()) is not None:
            self.out.add(index)
            holder = self._holder(holders.get(self.hosts[index].name)) if holders else None
            if holder is None or holder is worker:
                chunk.append(index)
            else:
                self.held_for.setdefault(holder.pid, deque()).append(index)
                others.add(holder)
        for other in others:
            if len(other.in_flight) < self.runner.num_workers:
                self._feed(other)
        return chunk

    def _holder(self, pid: int | None) -> Worker | None:
        """The worker ``pid``, if it is still there to run hosts."""
        if pid is None:
            return None
        for worker in self.workers:
            if worker.pid == pid:
                return None if worker.retiring else worker
        return None

    def _kill(self, worker: Worker) -> None:
        """Kill ``worker``; hosts waiting for it (it held their connections) go to any other."""
        self.procs.stop([worker], kill=True)
        self._release_held_for(worker)

    def _release_held_for(self, worker: Worker) -> None:
        """``worker`` is going: hosts waiting for it go to any other."""
        waiting = self.held_for.pop(worker.pid, None)
        if waiting:
            self.pending.extend(waiting)

    def _receive(self, worker: Worker) -> None:
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
                with ctrl_c_held():  # a batch is stored whole: its hosts' hooks have fired
                    message = receive(worker.conn)
                    if isinstance(message, Done):
                        for index, multi, data, events, holds in message.batch:
                            worker.in_flight.pop(index, None)
                            if holds or self.procs.holders:  # most runs: nobody holds any
                                self.procs.hold(self.hosts[index].name, worker if holds else None)
                            self._finished(index, multi, data, events)
                if isinstance(message, Ready):
                    worker.loaded = True
                    self.crashes.start_failures_in_a_row = 0
                elif isinstance(message, Tainted):
                    worker.retiring = True
                    self._release_held_for(worker)
                elif isinstance(message, LoadFailed):
                    self._give_up(f"a worker process could not load the run: {message.reason}")
                    return True
        except (EOFError, OSError):
            return False
        return True

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
            queue = {"alone": self.alone, "rerun": self.reruns, "new": self.pending}[worker.runs]
            queue.extendleft(reversed(in_flight))
            self._start_failed(
                f"worker processes {describe_exit(exitcode)} before they could start"
            )
            return
        for index, error in (overdue or {}).items():  # a frozen worker: these are why
            self._failed(index, error)
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
            self._failed(index, error)
        if self.sending:  # after Ctrl-C, hosts that did not finish do not run again
            self.reruns.extend(verdict.rerun)
            self.alone.extend(verdict.alone)
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
        if failures < max(START_FAILURES_BEFORE_GIVING_UP, self.runner.num_procs):
            self._replace()
        elif not self.workers:  # else the others carry on with what is pending
            self._give_up(f"{reason} ({failures} in a row)")

    def _give_up(self, reason: str) -> None:
        """Workers cannot run this run at all: every host not finished fails with ``reason``."""
        logger.error("processpool: giving up: %s", reason)
        for worker in list(self.workers):
            self.pending.extendleft(reversed(sorted(worker.in_flight)))
            worker.in_flight.clear()
            self._release_held_for(worker)
        self.procs.stop(list(self.workers), kill=True)
        for queue in (self.alone, self.reruns, self.pending):
            while queue:
                self._failed(queue.popleft(), WorkerUnavailable(reason))
        self.plan.give_up(lambda: WorkerUnavailable(reason), f"processpool gave up: {reason}")
        self._settle_not_run()

    def _replace(self) -> None:
        """Start a worker if hosts are waiting for one."""
        if not self.sending or not (
            self.pending or self.reruns or self.alone or self.plan.wait_time() is not None
        ):
            return
        try:
            worker = self.procs.fork(threads=self.runner.num_workers)
        except WorkerStartError as exc:
            if exc.load_error:  # every worker would fail alike
                self._give_up(exc.reason)
            else:
                self._start_failed(exc.reason)
            return
        self._feed(worker)

    def _retire(self, worker: Worker) -> None:
        """Replace a worker with a stuck thread (a blocking task past its deadline)."""
        self._kill(worker)
        self._replace()

    def stop(self, *, kill: bool = False) -> None:
        """Stop every worker (ask them, or kill them for Ctrl-C), then the fork server."""
        self.procs.close(kill=kill)

    # -- timeouts ----------------------------------------------------------------------------

    def _wait_timeout(self) -> float | None:
        """How long to wait for workers: until the watchdog's next look, or the plan's next
        start (a rate limit, the run's deadline)."""
        watched = self._host_limit() is not None or self.plan.deadline is not None
        waits = [1.0] if watched else []
        plan_wait = self.plan.wait_time() if self.sending else None
        if plan_wait is not None and plan_wait != math.inf:
            waits.append(plan_wait)
        return min(waits) if waits else None

    def _host_limit(self) -> float | None:
        """The longest a host may take in its worker, every attempt and retry wait included."""
        return self.runner.policy.longest_host_time

    def _watchdog(self) -> None:
        """Kill a worker so busy it missed a host's deadline by far: it cannot answer at all."""
        longest = self._host_limit()
        deadline = self.plan.deadline
        if longest is None and deadline is None:
            return
        now = time.monotonic()

        def overdue_at(sent: float) -> float:
            ends = sent + longest if longest is not None else math.inf
            return min(ends, deadline if deadline is not None else math.inf)

        for worker in list(self.workers):
            late = [
                i
                for i, sent in worker.in_flight.items()
                if overdue_at(sent) + _FROZEN_GRACE_SECONDS < now
            ]
            if late:
                self._drain(worker)  # what it has sent meanwhile settles those hosts
            overdue = [i for i in late if i in worker.in_flight]
            if overdue:
                errors: dict[int, Exception] = {
                    i: self._overdue_error(i, worker.in_flight[i]) for i in overdue
                }
                logger.warning(
                    "processpool: worker process %s stopped answering after a host's deadline; "
                    "replacing it",
                    worker.pid,
                )
                self._lost(worker, errors)

    def _overdue_error(self, index: int, sent: float) -> Exception:
        policy = self.runner.policy
        deadline = self.plan.deadline
        longest = policy.longest_host_time
        if deadline is not None and (longest is None or deadline <= sent + longest):
            return RunTimeout(policy.run_timeout or 0.0, started=True)
        return TaskTimeout(self.task.name, self.hosts[index].name, policy.task_timeout or 0.0)

    # -- results -----------------------------------------------------------------------------

    def _finished(
        self, index: int, multi: MultiResult, data: dict[str, Any], events: list[tuple[Any, ...]]
    ) -> None:
        host = self.hosts[index]
        relink(multi, host)
        record_attempts(multi, self.crashes.earlier_runs(index))
        if data != host.data:
            host.data.clear()
            host.data.update(data)
        for item in multi:
            if item.exception is not None and isinstance(item.result, str):
                # Logged here, as the core logs it in-process: workers have no log handlers.
                log_failure(host.name, str(item.name), item.result)
        if self.task.processors:
            replay_hooks(self.started.pop(index), multi, events)
        self.result[host.name] = multi
        self.remaining -= 1
        self._settled(index, multi.failed)

    def _started(self, index: int) -> None:
        """Fire ``task_instance_started`` as the host leaves for its worker.

        Here rather than with the replayed hooks, so that processors see the host start when
        it does: a ``HostTimer`` measures its whole time in the worker, a progress bar its
        hosts in flight.
        """
        self.started[index] = start_host(self.task, self.hosts[index])

    def _failed(self, index: int, error: Exception) -> None:
        """A host the pool could not run (to its end): a failed result made by the core, with
        its hooks; ``error`` is this host's own."""
        host = self.hosts[index]
        earlier = self.crashes.earlier_runs(index)
        multi = fail_host(
            self.task, host, error, started=self.started.pop(index, None), attempts=earlier
        )
        self.result[host.name] = multi
        self.remaining -= 1
        self._settled(index, True)

    def _settled(self, index: int, failed: bool) -> None:
        """Tell the plan that a host it handed out is done (a host it left out was not)."""
        if index in self.out:
            self.out.discard(index)
            self.plan.finished(index, failed)


def _taken(queue: deque[int], count: int) -> list[int]:
    """Up to ``count`` hosts from the front of ``queue``."""
    return [queue.popleft() for _ in range(min(count, len(queue)))]
