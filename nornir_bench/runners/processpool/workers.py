"""The worker processes of a processpool runner: forked, stopped, killed, how they ended, and
which hosts' connections each holds.

Workers come from a fork server (:mod:`~nornir_bench.runners.processpool.forkserver`) holding
the run; a fork server that died is replaced, and given the run again, before the next fork.
The set outlives a run when the runner keeps its workers: the next run is sent to the same
workers, and each host to the worker holding its connections.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait

from nornir_bench.runners.processpool.crashes import RunningHost
from nornir_bench.runners.processpool.forkserver import ForkServer, WorkerStartError
from nornir_bench.runners.processpool.messages import Stop, receive, send

__all__ = ["Worker", "WorkerSet"]

_STOP_WAIT_SECONDS = 5.0


@dataclass(eq=False)
class Worker:
    """One worker process, as the pool sees it."""

    pid: int
    conn: Connection
    running: RunningHost  # which host runs on its loop, readable after it died
    forks: ForkServer  # the fork server that forked it: its exit status comes from there
    in_flight: dict[int, float] = field(default_factory=dict)  # host index -> sent at
    retiring: bool = False
    loaded: bool = False  # has said it holds the run: it started
    runs: str = "new"  # which hosts it has in flight: "new", "rerun" or "alone" (see the pool)


class WorkerSet:
    """The workers of a runner, and the fork server they are forked from.

    Args:
        command: the interpreter arguments that start a fork server (its sockets appended).

    Attributes:
        holders: host name -> pid of the worker holding connections the host opened there.
    """

    def __init__(self, command: list[str]) -> None:
        self.command = command
        self.workers: list[Worker] = []
        self.forks: ForkServer | None = None
        self.payload = b""
        self.holders: dict[str, int] = {}

    def ensure_fork_server(self) -> None:
        """Start the fork server, unless one is running (kept from an earlier run)."""
        if self.forks is not None and self.forks.process.poll() is not None:
            self.close(kill=True)  # it died between runs, and its workers with it
        if self.forks is None:
            self.start_fork_server()

    def prune(self) -> None:
        """Forget the workers that ended since the last run (killed, out of memory): the
        connections they held are gone, and the next run opens new ones."""
        for worker in list(self.workers):
            try:
                while worker.conn.poll():  # a late message of the last run, or the end of file
                    receive(worker.conn)
            except (EOFError, OSError):
                self.stop([worker], kill=True)

    def hold(self, host: str, worker: Worker | None) -> None:
        """Note that ``worker`` holds connections of ``host`` (``None``: no worker does)."""
        if worker is not None:
            self.holders[host] = worker.pid
        elif self.holders:
            self.holders.pop(host, None)

    def start_fork_server(self) -> None:
        # The workers import what the parent can: tasks named by module path resolve there.
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        self.forks = ForkServer(self.command, env)

    def load(self, payload: bytes) -> None:
        """Give the fork server the run (a pickled ``RunSpec``): every fork holds it."""
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

    def stop(self, workers: list[Worker], *, kill: bool) -> None:
        """Ask (or force) ``workers`` to stop, all at once, and wait until they have; the
        connections they held are closed (or, killed, dropped)."""
        gone = {worker.pid for worker in workers}
        if self.holders and gone:
            self.holders = {h: pid for h, pid in self.holders.items() if pid not in gone}
        for worker in workers:
            if worker in self.workers:
                self.workers.remove(worker)
            if kill:
                self.kill(worker)
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
