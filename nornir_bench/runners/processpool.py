"""``processpool``: worker processes x coroutines, with crash isolation.

Parsing device output (TextFSM, TTP, Genie) is CPU work that the GIL serialises; a device
library that crashes takes its process with it. This runner spreads hosts over ``num_procs``
worker processes, each running up to ``num_workers`` hosts at once on its own event loop
(``async def`` tasks) or thread pool (blocking tasks), through the shared core.

- The task (cloudpickle: functions from ``__main__`` and closures travel), nornir's config and
  the run's hosts go to each worker once per run; after that only host indices go out, in
  chunks, and finished hosts come back in batches, so IPC stays small next to the work.
- Each worker is a fresh interpreter (``python -m nornir_bench.runners._procmain``) on a
  socket pair: never a fork of a threaded parent, whatever Python's default start method, and
  the parent's ``__main__`` is not re-run in every worker as multiprocessing would (Linux and
  macOS; it passes the socket as an inherited file descriptor).
- Processor hooks fire in the parent for every host, subtask hooks included, so progress bars
  and result printers work; each host's ``MultiResult`` refers to the parent's ``Host`` and the
  task's changes to ``task.host.data`` are merged back into the parent's inventory.
- A worker that dies (segfault, ``os._exit``, the out-of-memory killer) fails exactly the hosts
  it had in flight with :class:`~nornir_bench.exceptions.WorkerCrashed`; it is replaced and every
  other host runs. No host is ever missing from the result.
- ``task_timeout``: the host fails with ``TaskTimeout``. A blocking task past its deadline
  cannot be stopped, so its worker is retired (killed and replaced) once its other hosts are
  done; a worker that stops answering altogether is killed at once.
- Workers are stopped when ``run()`` returns, on error and on Ctrl-C.
"""

from __future__ import annotations

import logging
import math
import os
import pickle
import socket
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import TYPE_CHECKING, Any

import cloudpickle
from nornir.core.processor import Processors
from nornir.core.task import AggregatedResult, MultiResult, Task

from nornir_bench._gc import tuned_for_run
from nornir_bench.exceptions import TaskTimeout, WorkerCrashed
from nornir_bench.execution import log_failure, run_host
from nornir_bench.runners._options import seconds_or_none, whole_number
from nornir_bench.runners._procworker import RunSpec
from nornir_bench.runners._results import interrupted, placeholders

if TYPE_CHECKING:
    from nornir.core.inventory import Host

__all__ = ["ProcessPoolRunner"]

logger = logging.getLogger(__name__)

# How long a worker may stay silent past a host's deadline before it is taken for frozen (a C
# call holding the GIL: not even its own timeout can fire).
_FROZEN_GRACE_SECONDS = 5.0
_STOP_WAIT_SECONDS = 5.0

# Arguments after the interpreter that start a worker on the socket named by a last argument.
_WORKER_COMMAND = ["-m", "nornir_bench.runners._procmain"]

# Workers lost in a row with no host finished in between before the pool stops replacing them:
# a worker that cannot start at all (a broken environment) must not be respawned forever.
_LOSSES_BEFORE_GIVING_UP = 3


class ProcessPoolRunner:
    """Runs the task over the hosts in worker processes, each running many hosts at once.

    Args:
        num_workers: hosts in flight at once in each worker process (>= 1); kept as an
            attribute, as other nornir tools read it.
        num_procs: worker processes (>= 1); default the machine's CPU count.
        task_timeout: seconds each host's task may take (> 0), or ``None`` for no limit.
        chunk_size: hosts sent to a worker in one message; default chosen from ``num_workers``.

    Raises:
        ValueError: for a bad option value, saying what is allowed.
    """

    prefers_async_tasks = True

    def __init__(
        self,
        num_workers: int = 100,
        *,
        num_procs: int | None = None,
        task_timeout: float | None = None,
        chunk_size: int | None = None,
    ) -> None:
        self.num_workers = whole_number("processpool", "num_workers", num_workers)
        self.num_procs = (
            os.cpu_count() or 1
            if num_procs is None
            else whole_number("processpool", "num_procs", num_procs)
        )
        self.task_timeout = seconds_or_none("processpool", "task_timeout", task_timeout)
        self.chunk_size = (
            max(1, min(64, self.num_workers // 4))
            if chunk_size is None
            else whole_number("processpool", "chunk_size", chunk_size)
        )

    def run(self, task: Task, hosts: list[Host]) -> AggregatedResult:
        """Run ``task`` on ``hosts`` in the worker processes.

        Raises:
            ValueError: when the task or its arguments cannot be sent to another process.
            RunInterrupted: on Ctrl-C; workers are stopped, the exception's ``result`` holds
                every host that had finished.
        """
        result = placeholders(task, hosts)
        if not hosts:
            return result
        pool = _Pool(self, task, hosts, result)
        try:
            # Workers start (a fresh interpreter each) while the run is being pickled.
            pool.start_workers()
            pool.payload = self._payload(task, hosts)
            with tuned_for_run():
                pool.run()
        except KeyboardInterrupt:
            pool.stop(kill=True)
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
        )
        try:
            payload = pickle.dumps(("run", cloudpickle.dumps(spec)), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            raise ValueError(
                f"processpool runner: the task {task.name!r} or its arguments cannot be sent to "
                f"worker processes: {type(exc).__name__}: {exc}"
            ) from exc
        return payload

    def __repr__(self) -> str:
        return (
            f"ProcessPoolRunner(num_workers={self.num_workers}, num_procs={self.num_procs}, "
            f"task_timeout={self.task_timeout!r}, chunk_size={self.chunk_size})"
        )


@dataclass(eq=False)
class _Worker:
    process: subprocess.Popen[bytes]
    conn: Connection
    in_flight: dict[int, float] = field(default_factory=dict)  # host index -> sent at
    retiring: bool = False
    ready: bool = False  # has been sent this run's payload


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
        self.remaining = len(hosts)
        self.workers: list[_Worker] = []
        self.losses_in_a_row = 0
        self.started: dict[int, Task] = {}  # host index -> its task, started and not completed

    def start_workers(self) -> None:
        needed = math.ceil(len(self.hosts) / self.runner.chunk_size)
        for _ in range(min(self.runner.num_procs, needed)):
            self._start_worker()

    def run(self) -> None:
        for worker in list(self.workers):
            self._feed(worker)
        while self.remaining:
            ready = set(wait([w.conn for w in self.workers], timeout=self._watchdog_timeout()))
            for worker in list(self.workers):
                if worker.conn in ready:
                    self._receive(worker)
            self._watchdog()

    # -- workers ---------------------------------------------------------------------------

    def _start_worker(self) -> _Worker:
        parent_end, child_end = socket.socketpair()
        # The worker imports what the parent can: tasks referenced by module path resolve there.
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        with child_end:
            process = subprocess.Popen(
                [sys.executable, *_WORKER_COMMAND, str(child_end.fileno())],
                pass_fds=[child_end.fileno()],
                stdin=subprocess.DEVNULL,
                env=env,
            )
        worker = _Worker(process, Connection(parent_end.detach()))
        self.workers.append(worker)
        return worker

    def _feed(self, worker: _Worker) -> None:
        """Send hosts until the worker has ``num_workers`` in flight or none are left."""
        if not worker.ready:
            try:
                worker.conn.send_bytes(self.payload)
            except OSError:  # died before it started: its socket's EOF reports it next
                return
            worker.ready = True
        room = self.runner.num_workers - len(worker.in_flight)
        while self.pending and room > 0 and not worker.retiring:
            count = min(self.runner.chunk_size, room, len(self.pending))
            chunk = [self.pending.popleft() for _ in range(count)]
            now = time.monotonic()
            for index in chunk:
                worker.in_flight[index] = now
                if self.task.processors:
                    self._started(index)
            try:
                worker.conn.send_bytes(pickle.dumps(("hosts", chunk)))
            except OSError:  # died meanwhile: its socket's EOF reports it, these hosts fail then
                return
            room -= count

    def _receive(self, worker: _Worker) -> None:
        if not self._drain(worker):
            # outside the except clause: the hosts' tracebacks should not chain an EOFError
            self._lost(worker, WorkerCrashed(worker.process.pid, self._exitcode(worker)))
            return
        if worker.retiring and not worker.in_flight:
            self._retire(worker)
        else:
            self._feed(worker)

    def _drain(self, worker: _Worker) -> bool:
        """Take every message waiting from ``worker``; False if its end of the socket closed."""
        try:
            while worker.conn.poll():
                kind, body = pickle.loads(worker.conn.recv_bytes())
                if kind == "done":
                    for index, multi, data, events in body:
                        worker.in_flight.pop(index, None)
                        self._finished(index, multi, data, events)
                elif kind == "tainted":
                    worker.retiring = True
        except (EOFError, OSError):
            return False
        return True

    def _lost(self, worker: _Worker, error: Exception, overdue: dict[int, Exception] | None = None) -> None:
        """``worker`` is gone: fail the hosts it had in flight, and replace it if work is left."""
        self._drain(worker)  # results it sent before it died still count
        self._stop_worker(worker, kill=True)
        logger.warning("processpool: %s; %d hosts failed", error, len(worker.in_flight))
        for index in sorted(worker.in_flight):
            self._failed(index, (overdue or {}).get(index, error))
        worker.in_flight.clear()
        self.losses_in_a_row += 1
        if self.losses_in_a_row >= max(_LOSSES_BEFORE_GIVING_UP, self.runner.num_procs):
            if self.workers:
                return  # the others carry on with what is pending
            logger.error("processpool: workers keep dying with no host done; giving up: %s", error)
            while self.pending:
                self._failed(self.pending.popleft(), error)
            return
        self._replace()

    def _replace(self) -> None:
        if self.pending:
            self._feed(self._start_worker())

    def _retire(self, worker: _Worker) -> None:
        """Replace a worker with a stuck thread (a blocking task past its deadline)."""
        self._stop_worker(worker, kill=True)
        self._replace()

    def _stop_worker(self, worker: _Worker, *, kill: bool) -> None:
        self._stop_workers([worker], kill=kill)

    def _stop_workers(self, workers: list[_Worker], *, kill: bool) -> None:
        """Ask (or force) ``workers`` to stop, all at once, and reap them."""
        for worker in workers:
            if worker in self.workers:
                self.workers.remove(worker)
            if kill:
                worker.process.kill()
                continue
            try:
                worker.conn.send_bytes(pickle.dumps(("stop", None)))
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
        for worker in workers:  # exited by now (or killed): reaping takes no time
            try:
                worker.process.wait(_STOP_WAIT_SECONDS)
            except subprocess.TimeoutExpired:
                worker.process.kill()
                worker.process.wait()
            worker.conn.close()

    def stop(self, *, kill: bool = False) -> None:
        """Stop every worker (ask them, or kill them for Ctrl-C)."""
        self._stop_workers(list(self.workers), kill=kill)

    @staticmethod
    def _exitcode(worker: _Worker) -> int | None:
        try:
            return worker.process.wait(_STOP_WAIT_SECONDS)
        except subprocess.TimeoutExpired:
            return None

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
            overdue = [i for i, sent in worker.in_flight.items() if sent < limit]
            if overdue:
                pid = worker.process.pid
                errors: dict[int, Exception] = {
                    i: TaskTimeout(self.task.name, self.hosts[i].name, timeout) for i in overdue
                }
                detail = f" (replaced: it stopped answering after a task passed {timeout:g} s)"
                self._lost(worker, WorkerCrashed(pid, None, detail), errors)

    # -- results -----------------------------------------------------------------------------

    def _finished(
        self, index: int, multi: MultiResult, data: dict[str, Any], events: list[tuple[Any, ...]]
    ) -> None:
        host = self.hosts[index]
        _relink(multi, host)
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
        self.losses_in_a_row = 0

    def _started(self, index: int) -> None:
        """Fire ``task_instance_started`` as the host leaves for its worker.

        Here rather than with the replayed hooks, so that processors see the host start when
        it does: a ``HostTimer`` measures its whole time in the worker, a progress bar its
        hosts in flight.
        """
        top = self.task.copy()
        top.host = host = self.hosts[index]
        self.started[index] = top
        self.task.processors.task_instance_started(top, host)

    def _failed(self, index: int, error: Exception) -> None:
        """A host the pool could not run: a failed result made by the core, hooks and all."""
        started = self.started.pop(index, None)
        failure = Task(
            _raise,
            self.task.nornir,
            global_dry_run=self.task.global_dry_run,
            # A host already started gets only its completion hook, below.
            processors=self.task.processors if started is None else Processors(),
            name=self.task.name,
            severity_level=self.task.severity_level,
            error=error,  # type: ignore[arg-type]  # nornir annotates task kwargs as str
        )
        host = self.hosts[index]
        multi = self.result[host.name] = run_host(failure, host)
        if started is not None:
            started.results = multi
            self.task.processors.task_instance_completed(started, host, multi)
        self.remaining -= 1


def _raise(task: Task, error: Exception) -> None:
    raise error


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
            sub = Task(
                _remote,
                task.nornir,
                global_dry_run=task.global_dry_run,
                processors=task.processors,
                name=event[1],
                parent_task=stack[-1],
            )
            sub.host = host
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
