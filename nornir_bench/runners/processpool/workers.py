"""The worker processes of a processpool runner: forked, stopped, killed, how they ended, and
which hosts' connections each holds.

Workers come from a fork server (:mod:`~nornir_bench.runners.processpool.forkserver`) holding
the run; a fork server that died is replaced, and given the run again, before the next fork.
The set outlives a run when the runner keeps its workers (its
:class:`~nornir_bench.runners._keeper.Keeper` hands it to one run at a time): the next run is
sent to the same workers, and each host to the worker holding its connections, which the
parent's ``host.connections`` shows as stand-ins
(:mod:`~nornir_bench.runners._remote.connections`).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait

from nornir_bench.runners._remote.connections import HeldInWorkers
from nornir_bench.runners.processpool.forkserver import (
    FORK_SERVER_COMMAND,
    STOP_WAIT_SECONDS,
    ForkServer,
    WorkerStartError,
)
from nornir_bench.runners.processpool.messages import (
    CloseConnections,
    Closed,
    Quit,
    Tainted,
    receive,
    send,
)
from nornir_bench.runners.processpool.running_host import RunningHost

__all__ = ["Worker", "WorkerSet"]

# How long closing a connection held in a worker, between runs, may take: the worker closes
# each within its own bounded time (CLOSE_TIMEOUT), many at once.
_CLOSE_WAIT_SECONDS = 30.0


@dataclass(eq=False)
class Worker:
    """One worker process, as the pool sees it."""

    pid: int
    conn: Connection
    running: RunningHost  # which host runs on its loop, readable after it died
    forks: ForkServer  # the fork server that forked it: its exit status comes from there
    retiring: bool = False
    loaded: bool = False  # has said it holds the run: it started

    @property
    def where(self) -> str:
        return f"processpool worker process {self.pid}"


class WorkerSet:
    """The workers of a runner, the fork server they are forked from, and the connections
    they hold for hosts between runs.

    Args:
        command: the interpreter arguments that start a fork server (its sockets appended);
            default :data:`~nornir_bench.runners.processpool.forkserver.FORK_SERVER_COMMAND`.

    Attributes:
        held: which worker (pid) holds connections of which host, as the parent shows them.
        idle: these workers, taken for a block, when no run uses them (the keeper's
            ``idle``), else ``None``: a run reads what they say, their replies to closing
            connections included. A set of a run's own is never idle.
    """

    def __init__(self, command: list[str] | None = None) -> None:
        self.command = FORK_SERVER_COMMAND if command is None else command
        self.workers: list[Worker] = []
        self.forks: ForkServer | None = None
        self.payload = b""
        self.held: HeldInWorkers[int] = HeldInWorkers(self._close_held)
        self.idle: Callable[[], AbstractContextManager[object | None]] = _never_idle

    def worker(self, pid: int) -> Worker | None:
        """The worker of process ``pid``, if it is one of these."""
        for worker in self.workers:
            if worker.pid == pid:
                return worker
        return None

    def ensure_fork_server(self) -> None:
        """Start the fork server, unless one is running (kept from an earlier run)."""
        if self.forks is not None and self.forks.process.poll() is not None:
            self.close(kill=True)  # it died between runs, and its workers with it
        if self.forks is None:
            self.start_fork_server()

    def prune(self) -> None:
        """Forget the workers that ended since the last run (killed, out of memory): the
        connections they held are gone, and the next run opens new ones. A worker that said
        since that a blocking call given up stays in its thread is stopped too."""
        for worker in list(self.workers):
            try:
                while worker.conn.poll():  # a late message of the last run, or the end of file
                    if isinstance(receive(worker.conn), Tainted):
                        raise EOFError
            except (EOFError, OSError):
                self.stop([worker], kill=True)

    def start_fork_server(self) -> None:
        # The workers import what this process imports, from where it imports it: its own
        # import path, in its order ("" is the current directory), this package included.
        paths = dict.fromkeys(path or os.getcwd() for path in sys.path)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
        self.forks = ForkServer(self.command, env)

    def load(self, payload: bytes) -> None:
        """Give the fork server the run (a packed ``RunSpec``): every fork holds it."""
        assert self.forks is not None
        self.payload = payload
        self.forks.load(payload)

    def fork(self, *, threads: int) -> Worker:
        """A new worker holding the run, whose thread pool runs at most ``threads`` threads.

        Raises:
            WorkerStartError: it could not be started. If the fork server had died, another
                is already started and loaded when this is raised (``load_error`` false).
        """
        assert self.forks is not None
        try:
            pid, conn, running = self.forks.fork(threads=threads)
        except WorkerStartError as exc:
            if not exc.load_error:  # the fork server died (killed, out of memory): replace it
                self.forks.close()
                self.start_fork_server()
                self.load(self.payload)
            raise
        worker = Worker(pid, conn, running, self.forks)
        self.workers.append(worker)
        return worker

    def _close_held(self, by_pid: dict[int, list[tuple[str, str]]]) -> None:
        """Ask each worker to close the connections it keeps that are listed for it (one
        message each); between runs, wait until they are closed."""
        asked = []
        for worker in self.workers:
            pairs = by_pid.get(worker.pid)
            if pairs:
                try:
                    send(worker.conn, CloseConnections(pairs))
                except OSError:  # gone: its connections with it
                    continue
                asked.append(worker)
        with self.idle() as idle:
            if asked and idle is not None:  # a run using the workers takes the replies itself
                _wait_closed(asked)

    def stop(self, workers: list[Worker], *, kill: bool) -> None:
        """Ask (or force) ``workers`` to stop, all at once, and wait until they have; the
        connections they held are closed (or, killed, dropped)."""
        self.held.release(worker.pid for worker in workers)
        for worker in workers:
            if worker in self.workers:
                self.workers.remove(worker)
            if kill:
                self.kill(worker)
                continue
            try:
                send(worker.conn, Quit())
            except OSError:
                pass
        # A worker closes its socket as it exits: wait on that rather than polling each process.
        deadline = time.monotonic() + STOP_WAIT_SECONDS
        open_conns = {w.conn: w for w in workers if not kill}
        while open_conns and time.monotonic() < deadline:
            for ready in wait(list(open_conns), timeout=max(0.0, deadline - time.monotonic())):
                worker = open_conns[ready]  # type: ignore[index]
                try:
                    worker.conn.recv_bytes()  # a late batch from a stopping worker: not needed
                except (EOFError, OSError):
                    del open_conns[worker.conn]
        for worker in open_conns.values():  # did not stop in time
            self.kill(worker)
        for worker in workers:
            worker.conn.close()
            worker.running.close()

    @staticmethod
    def kill(worker: Worker) -> None:
        worker.forks.kill(worker.pid)
        worker.forks.forget(worker.pid)  # its exit report, when it comes, is not needed

    @staticmethod
    def exit_status(worker: Worker) -> int | None:
        """How ``worker`` ended (see ``ForkServer.exit_status``); None if not known in time."""
        return worker.forks.exit_status(worker.pid)

    def close(self, *, kill: bool = False) -> None:
        """Stop every worker (ask them, or kill them for Ctrl-C), then the fork server."""
        self.stop(list(self.workers), kill=kill)
        if self.forks is not None:
            self.forks.close()  # reaps every worker; kills any still running
            self.forks = None


@contextmanager
def _never_idle() -> Iterator[None]:
    yield None


def _wait_closed(workers: list[Worker]) -> None:
    """Until each of ``workers`` said :class:`Closed` (or is gone), within a bounded time."""
    deadline = time.monotonic() + _CLOSE_WAIT_SECONDS
    waiting = {worker.conn: worker for worker in workers}
    while waiting and time.monotonic() < deadline:
        for ready in wait(list(waiting), timeout=max(0.0, deadline - time.monotonic())):
            try:
                message = receive(ready)  # type: ignore[arg-type]
            except (EOFError, OSError):
                del waiting[ready]  # type: ignore[arg-type]
                continue
            if isinstance(message, Closed):
                del waiting[ready]  # type: ignore[arg-type]
