"""``processpool``: worker processes x coroutines, with crash isolation.

Parsing device output (TextFSM, TTP, Genie) is CPU work that the GIL serialises; a device
library that crashes takes its process with it. This runner spreads hosts over ``num_procs``
worker processes, each running up to ``num_workers`` hosts at once on its own event loop
(``async def`` tasks) or thread pool (blocking tasks), through the shared core.

- The task (cloudpickle: functions from ``__main__`` and closures travel), nornir's config and
  the run's hosts go to the fork server once per run, and every worker is forked holding them;
  after that only host indices go out, in chunks, and finished hosts come back in batches, so
  IPC stays small next to the work.
- Workers are forked by a fork server: one fresh interpreter
  (``python -m nornir_bench.runners.processpool._main``) that loads the run once and forks a worker in
  milliseconds, so a crashed worker is replaced at once (see
  :mod:`~nornir_bench.runners.processpool.forkserver`). Never a fork of the user's threaded process, and
  the user's ``__main__`` is not re-run as multiprocessing would (Linux and macOS: sockets and
  descriptors pass between processes).
- Processor hooks fire in the parent for every host, subtask hooks included, so progress bars
  and result printers work; each host's ``MultiResult`` refers to the parent's ``Host`` and the
  task's changes to ``task.host.data`` are merged back into the parent's inventory.
- A worker that dies (segfault, ``os._exit``, the out-of-memory killer) is replaced. The host
  that was running when it died fails with :class:`~nornir_bench.core.exceptions.WorkerCrashed`; the
  other hosts it had in flight run again on another worker, once (the rule, in full:
  :mod:`~nornir_bench.runners.processpool.crashes`). No host is ever missing from the result.
- ``task_timeout``: the host fails with ``TaskTimeout``. A blocking task past its deadline
  cannot be stopped, so its worker is retired (killed and replaced) once its other hosts are
  done; a worker that stops answering altogether is killed at once.
- Ctrl-C stops sending hosts and lets the hosts in flight finish, as the other runners do; a
  second Ctrl-C kills the workers at once. Workers are stopped when ``run()`` returns, on error
  and on Ctrl-C.
"""

from __future__ import annotations

import logging
import math
import os
import pickle
import sys
import time
import warnings
from collections import deque
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import TYPE_CHECKING, Any

import cloudpickle
from nornir.core.task import AggregatedResult, MultiResult, Task

from nornir_bench.core._gc import tuned_for_run
from nornir_bench.core.attempts import record_attempts
from nornir_bench.core.checks import seconds_or_none, whole_number
from nornir_bench.core.exceptions import TaskTimeout, WorkerUnavailable, describe_exit
from nornir_bench.core.execution import child_task, fail_host, log_failure, start_host
from nornir_bench.core.loops import resolve_loop
from nornir_bench.runners._results import interrupted, placeholders
from nornir_bench.runners.processpool.crashes import (
    DEFAULT_CRASH_RERUNS,
    START_FAILURES_BEFORE_GIVING_UP,
    CrashLedger,
    RunningHost,
)
from nornir_bench.runners.processpool.forkserver import ForkServer, WorkerStartError
from nornir_bench.runners.processpool.messages import (
    Done,
    LoadFailed,
    Ready,
    RunHosts,
    Stop,
    Tainted,
    receive,
    send,
)
from nornir_bench.runners.processpool.worker import RunSpec

if TYPE_CHECKING:
    from nornir.core.inventory import Host

__all__ = ["MAX_PROCS_PER_CPU", "ProcessPoolRunner"]

logger = logging.getLogger(__name__)

# How long a worker may stay silent past a host's deadline before it is taken for frozen (a C
# call holding the GIL: not even its own timeout can fire).
_FROZEN_GRACE_SECONDS = 5.0
_STOP_WAIT_SECONDS = 5.0

# Arguments after the interpreter that start the fork server (its sockets are appended).
_FORK_SERVER_COMMAND = ["-m", "nornir_bench.runners.processpool._main"]

MAX_PROCS_PER_CPU = 4
"""``num_procs`` is capped at this many worker processes per CPU: past the CPU count, processes
add no computing power, only memory (about 30 MiB each) and start-up time; a few per CPU still
narrow what one crash takes down."""


class ProcessPoolRunner:
    """Runs the task over the hosts in worker processes, each running many hosts at once.

    Args:
        num_workers: hosts in flight at once in each worker process (>= 1); kept as an
            attribute, as other nornir tools read it.
        num_procs: worker processes (>= 1); default the machine's CPU count. More than
            ``MAX_PROCS_PER_CPU`` per CPU is capped, with a warning; a run starts no more than
            its hosts can keep busy.
        task_timeout: seconds each host's task may take (> 0), or ``None`` for no limit.
        chunk_size: hosts sent to a worker in one message; default chosen from ``num_workers``.
        crash_reruns: how many times a host in flight on a worker that another host crashed
            runs again on a fresh worker (>= 0; default 1; 0 for tasks that must never run
            twice on a device). See :mod:`~nornir_bench.runners.processpool.crashes` for the rule.
        loop: each worker's event loop: ``"auto"`` (uvloop when installed, else asyncio),
            ``"asyncio"`` or ``"uvloop"``, as the asyncio runner's.

    Raises:
        ValueError: for a bad option value, saying what is allowed.
    """

    prefers_async_tasks = True
    stops_on_ctrl_c = True  # no host starts after Ctrl-C; RunInterrupted keeps what finished

    def __init__(
        self,
        num_workers: int = 100,
        *,
        num_procs: int | None = None,
        task_timeout: float | None = None,
        chunk_size: int | None = None,
        crash_reruns: int = DEFAULT_CRASH_RERUNS,
        loop: str = "auto",
    ) -> None:
        self.num_workers = whole_number("processpool runner: num_workers", num_workers, minimum=1)
        cpus = os.cpu_count() or 1
        self.num_procs = (
            cpus
            if num_procs is None
            else whole_number("processpool runner: num_procs", num_procs, minimum=1)
        )
        ceiling = MAX_PROCS_PER_CPU * cpus
        if self.num_procs > ceiling:
            warnings.warn(
                f"processpool runner: num_procs {self.num_procs} capped at {ceiling} "
                f"({MAX_PROCS_PER_CPU} per CPU): more worker processes add no computing power, "
                "only memory",
                RuntimeWarning,
                stacklevel=2,
            )
            self.num_procs = ceiling
        self.task_timeout = seconds_or_none("processpool runner: task_timeout", task_timeout)
        self.chunk_size = (
            max(1, min(64, self.num_workers // 4))
            if chunk_size is None
            else whole_number("processpool runner: chunk_size", chunk_size, minimum=1)
        )
        self.crash_reruns = whole_number(
            "processpool runner: crash_reruns", crash_reruns, minimum=0
        )
        self.loop = loop
        self.loop_implementation = resolve_loop(loop, what="processpool runner")

    def run(self, task: Task, hosts: list[Host]) -> AggregatedResult:
        """Run ``task`` on ``hosts`` in the worker processes.

        Raises:
            ValueError: when the task or its arguments cannot be sent to another process.
            RunInterrupted: on Ctrl-C; no host is sent after it, the hosts in flight finish,
                and the exception's ``result`` holds every host that had finished. A second
                Ctrl-C kills the workers at once (``abandoned`` set).
        """
        result = placeholders(task, hosts)
        if not hosts:
            return result
        pool = _Pool(self, task, hosts, result)
        try:
            # The fork server starts (a fresh interpreter) while the run is being pickled.
            pool.start_fork_server()
            pool.payload = self._payload(task, hosts)
            with tuned_for_run():
                try:
                    pool.run()
                except KeyboardInterrupt:
                    pool.stop_sending()
                    try:
                        pool.run()  # until the hosts in flight are done
                    except KeyboardInterrupt:  # again: do not wait for them
                        pool.stop(kill=True)
                        raise interrupted(result, abandoned=True) from None
                    raise interrupted(result) from None
        finally:
            pool.stop()
        return result

    def _payload(self, task: Task, hosts: list[Host]) -> bytes:
        spec = RunSpec(
            func=task.task,
            params=task.params,
            name=task.name,
            severity_level=task.severity_level,
            dry_run=task.global_dry_run,
            config=getattr(task.nornir, "config", None),
            hosts=hosts,
            num_workers=self.num_workers,
            task_timeout=self.task_timeout,
            loop=self.loop_implementation,
        )
        try:
            payload: bytes = cloudpickle.dumps(spec, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            raise ValueError(
                f"processpool runner: the task {task.name!r} or its arguments cannot be sent to "
                f"worker processes: {type(exc).__name__}: {exc}"
            ) from exc
        return payload

    def __repr__(self) -> str:
        return (
            f"ProcessPoolRunner(num_workers={self.num_workers}, num_procs={self.num_procs}, "
            f"task_timeout={self.task_timeout!r}, chunk_size={self.chunk_size}, "
            f"crash_reruns={self.crash_reruns}, loop={self.loop!r})"
        )


@dataclass(eq=False)
class _Worker:
    pid: int
    conn: Connection
    running: RunningHost  # which host runs on its loop, readable after it died
    forks: ForkServer  # the fork server that forked it: its exit status comes from there
    in_flight: dict[int, float] = field(default_factory=dict)  # host index -> sent at
    retiring: bool = False
    loaded: bool = False  # has said it holds the run: it started
    runs: str = "new"  # which hosts it has in flight: "new", "rerun" or "alone" (see _feed)


class _Pool:
    """The worker processes of one run and the loop that feeds them and collects results."""

    def __init__(
        self, runner: ProcessPoolRunner, task: Task, hosts: list[Host], result: AggregatedResult
    ) -> None:
        self.runner = runner
        self.payload = b""
        self.task = task
        self.hosts = hosts
        self.result = result
        self.pending = deque(range(len(hosts)))
        # Hosts to run again after a crash (see _crashes): with others, and one at a time.
        self.reruns: deque[int] = deque()
        self.alone: deque[int] = deque()
        self.remaining = len(hosts)
        self.workers: list[_Worker] = []
        self.forks: ForkServer | None = None
        self.crashes = CrashLedger(runner.crash_reruns)
        self.sending = True  # False once Ctrl-C was pressed: no more hosts go out
        self.started: dict[int, Task] = {}  # host index -> its task, started and not completed

    def start_fork_server(self) -> None:
        # The workers import what the parent can: tasks named by module path resolve there.
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        self.forks = ForkServer(_FORK_SERVER_COMMAND, env)

    def run(self) -> None:
        """Run the hosts to their end; after :meth:`stop_sending`, only those in flight."""
        assert self.forks is not None
        if not self.workers and self.sending:
            self.forks.load(self.payload)
            needed = math.ceil(len(self.hosts) / self.runner.chunk_size)
            for _ in range(min(self.runner.num_procs, needed)):
                self._replace()
        while self.remaining if self.sending else any(w.in_flight for w in self.workers):
            ready = set(wait([w.conn for w in self.workers], timeout=self._watchdog_timeout()))
            for worker in list(self.workers):
                if worker.conn in ready:
                    self._receive(worker)
            self._watchdog()

    def stop_sending(self) -> None:
        """Ctrl-C: send no more hosts; those not sent yet (or waiting to run again) do not run."""
        self.sending = False
        for queue in (self.pending, self.reruns, self.alone):
            queue.clear()

    # -- workers ---------------------------------------------------------------------------

    def _feed(self, worker: _Worker) -> None:
        """Send hosts until the worker has ``num_workers`` in flight or none are left.

        A worker runs one kind of host at a time (see :mod:`~nornir_bench.runners.processpool.crashes`):
        hosts running for the first time; hosts run again after a crash another host caused,
        together (a crash among new hosts, not known yet, must not catch them); or a suspect of
        a crash whose cause is not known, alone (so that if it crashes again, it is named).
        """
        if not worker.in_flight:
            worker.runs = "alone" if self.alone else "rerun" if self.reruns else "new"
        queue = {"alone": self.alone, "rerun": self.reruns, "new": self.pending}[worker.runs]
        room = (1 if worker.runs == "alone" else self.runner.num_workers) - len(worker.in_flight)
        while queue and room > 0 and not worker.retiring:
            count = min(self.runner.chunk_size, room, len(queue))
            chunk = [queue.popleft() for _ in range(count)]
            now = time.monotonic()
            for index in chunk:
                worker.in_flight[index] = now
                if self.task.processors and index not in self.started:  # not a host run again
                    self._started(index)
            try:
                send(worker.conn, RunHosts(chunk))
            except OSError:  # died meanwhile: its socket's EOF reports it, these hosts fail then
                return
            room -= count

    def _receive(self, worker: _Worker) -> None:
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

    def _drain(self, worker: _Worker) -> bool:
        """Take every message waiting from ``worker``; False if its end of the socket closed."""
        try:
            while worker.conn.poll():
                message = receive(worker.conn)
                if isinstance(message, Done):
                    for index, multi, data, events in message.batch:
                        worker.in_flight.pop(index, None)
                        self._finished(index, multi, data, events)
                elif isinstance(message, Ready):
                    worker.loaded = True
                    self.crashes.start_failures_in_a_row = 0
                elif isinstance(message, Tainted):
                    worker.retiring = True
                elif isinstance(message, LoadFailed):
                    self._give_up(f"a worker process could not load the run: {message.reason}")
                    return True
        except (EOFError, OSError):
            return False
        return True

    def _lost(self, worker: _Worker, overdue: dict[int, Exception] | None = None) -> None:
        """``worker`` is gone: settle the hosts it had in flight (the crash rule, see
        :mod:`~nornir_bench.runners.processpool.crashes`), and replace it if work is left."""
        self._drain(worker)  # results it sent before it died still count
        if worker not in self.workers:  # the pool gave up meanwhile
            return
        if overdue is not None:  # only those its last results did not settle
            overdue = {i: e for i, e in overdue.items() if i in worker.in_flight}
        exitcode = None if overdue else self._exitcode(worker)
        # Its fork server died and took it along: no host of its own ended it.
        server_died = exitcode is None and not overdue and worker.forks.process.poll() is not None
        running = worker.running.host() if exitcode is not None else None
        self._stop_worker(worker, kill=True)
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
        self._stop_workers(list(self.workers), kill=True)
        for queue in (self.alone, self.reruns, self.pending):
            while queue:
                self._failed(queue.popleft(), WorkerUnavailable(reason))

    def _replace(self) -> None:
        """Start a worker if hosts are waiting for one."""
        if not self.sending or not (self.pending or self.reruns or self.alone):
            return
        assert self.forks is not None
        try:
            pid, conn, running = self.forks.fork(threads=self.runner.num_workers)
        except WorkerStartError as exc:
            if exc.load_error:  # every worker would fail alike
                self._give_up(exc.reason)
                return
            # The fork server died (killed, out of memory): start another.
            self.forks.close()
            self.start_fork_server()
            self.forks.load(self.payload)
            self._start_failed(exc.reason)
            return
        worker = _Worker(pid, conn, running, self.forks)
        self.workers.append(worker)
        self._feed(worker)

    def _retire(self, worker: _Worker) -> None:
        """Replace a worker with a stuck thread (a blocking task past its deadline)."""
        self._stop_worker(worker, kill=True)
        self._replace()

    def _stop_worker(self, worker: _Worker, *, kill: bool) -> None:
        self._stop_workers([worker], kill=kill)

    def _stop_workers(self, workers: list[_Worker], *, kill: bool) -> None:
        """Ask (or force) ``workers`` to stop, all at once, and wait until they have."""
        for worker in workers:
            if worker in self.workers:
                self.workers.remove(worker)
            if kill:
                self._kill(worker)
                continue
            try:
                send(worker.conn, Stop())
            except OSError:
                pass
        # A worker closes its socket as it exits: wait on that rather than polling each process.
        deadline = time.monotonic() + _STOP_WAIT_SECONDS
        open_conns = {w.conn: w for w in workers if not kill}
        while open_conns and time.monotonic() < deadline:
            for ready in wait(list(open_conns), timeout=max(0.0, deadline - time.monotonic())):
                worker = open_conns[ready]  # type: ignore[index]
                try:
                    worker.conn.recv_bytes()  # a late batch from a stopping worker: not needed
                except (EOFError, OSError):
                    del open_conns[worker.conn]
        for worker in open_conns.values():  # did not stop in time
            self._kill(worker)
        for worker in workers:
            worker.conn.close()
            worker.running.close()

    def _kill(self, worker: _Worker) -> None:
        worker.forks.kill(worker.pid)
        worker.forks.forget(worker.pid)  # its exit report, when it comes, is not needed

    def stop(self, *, kill: bool = False) -> None:
        """Stop every worker (ask them, or kill them for Ctrl-C), then the fork server."""
        self._stop_workers(list(self.workers), kill=kill)
        if self.forks is not None:
            self.forks.close()  # reaps every worker; kills any still running
            self.forks = None

    @staticmethod
    def _exitcode(worker: _Worker) -> int | None:
        return worker.forks.exit_status(worker.pid)

    # -- timeouts ----------------------------------------------------------------------------

    def _watchdog_timeout(self) -> float | None:
        timeout = self.runner.task_timeout
        return None if timeout is None else min(1.0, timeout)

    def _watchdog(self) -> None:
        """Kill a worker so busy it missed a host's deadline by far: it cannot answer at all."""
        timeout = self.runner.task_timeout
        if timeout is None:
            return
        limit = time.monotonic() - timeout - _FROZEN_GRACE_SECONDS
        for worker in list(self.workers):
            if any(sent < limit for sent in worker.in_flight.values()):
                self._drain(worker)  # what it has sent meanwhile settles those hosts
            overdue = [i for i, sent in worker.in_flight.items() if sent < limit]
            if overdue:
                errors: dict[int, Exception] = {
                    i: TaskTimeout(self.task.name, self.hosts[i].name, timeout) for i in overdue
                }
                logger.warning(
                    "processpool: worker process %s stopped answering after a task passed %g s; "
                    "replacing it",
                    worker.pid,
                    timeout,
                )
                self._lost(worker, errors)

    # -- results -----------------------------------------------------------------------------

    def _finished(
        self, index: int, multi: MultiResult, data: dict[str, Any], events: list[tuple[Any, ...]]
    ) -> None:
        host = self.hosts[index]
        _relink(multi, host)
        record_attempts(multi, self.crashes.earlier_runs(index))
        if data != host.data:
            host.data.clear()
            host.data.update(data)
        for item in multi:
            if item.exception is not None and isinstance(item.result, str):
                # Logged here, as the core logs it in-process: workers have no log handlers.
                log_failure(host.name, str(item.name), item.result)
        if self.task.processors:
            _replay_hooks(self.started.pop(index), multi, events)
        self.result[host.name] = multi
        self.remaining -= 1

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
        multi = fail_host(self.task, host, error, started=self.started.pop(index, None))
        record_attempts(multi, self.crashes.earlier_runs(index))
        self.result[host.name] = multi
        self.remaining -= 1


def _remote(task: Task) -> None:
    """Stands for a subtask that ran in a worker, in the hooks replayed in the parent."""


def _relink(multi: MultiResult, host: Host) -> None:
    """Point every result at the parent's ``Host`` (they arrive with a worker's copy)."""
    for item in multi:
        if isinstance(item, MultiResult):
            _relink(item, host)
        else:
            item.host = host


def _replay_hooks(top: Task, multi: MultiResult, events: list[tuple[Any, ...]]) -> None:
    """Fire, in the parent, the hooks the host's run fired in its worker, in the same order.

    ``top`` is the host's task, whose ``task_instance_started`` fired when the host was sent.
    """
    task = top
    host = top.host
    stack = [top]
    for event in events:
        if event[0] == "started":
            sub = child_task(stack[-1], _remote, name=event[1])
            task.processors.subtask_instance_started(sub, host)
            stack.append(sub)
        else:
            sub = stack.pop() if len(stack) > 1 else top
            sub_results: MultiResult = event[2]
            _relink(sub_results, host)
            sub.results = sub_results
            task.processors.subtask_instance_completed(sub, host, sub_results)
    top.results = multi
    task.processors.task_instance_completed(top, host, multi)
