"""Worker processes forked from a fork server that has loaded the run once.

A processpool worker must be a fresh interpreter, never a fork of the user's process (which may
hold threads, locks and sockets). But a fresh interpreter costs about 0.3 s here (start-up and
importing nornir), and the run's payload (the task, its modules) must then be loaded in each:
a crash storm that kills a worker every 0.2 s would spend its time starting workers.

So the pool starts one fresh interpreter, the fork server (:data:`FORK_SERVER_COMMAND`, running
:mod:`~nornir_bench.runners.processpool.forkserver_process`, which
imports the very package the pool runs, never a ``nornir_bench`` folder that happens to be in
the current directory). It is single-threaded and runs no event loop; it
loads the run's payload once, freezes it for the garbage collector (so forked children share
its pages instead of copying them), and forks a worker whenever the pool asks, in a few
milliseconds, already holding the run. The fork server reaps its children and reports each
exit status, which the pool needs to say how a worker died; it kills a worker when asked, and
all of them when it stops or when the pool goes away (its control socket closes).

Two sockets join the pool and the fork server: ``control`` carries the messages of
:mod:`~nornir_bench.runners.processpool.messages`, ``fds`` the file descriptors of each new
worker (its socket to the pool and its
:class:`~nornir_bench.runners.processpool.running_host.RunningHost` cell).
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from multiprocessing.connection import Connection

from nornir_bench.core.exceptions import describe_exit
from nornir_bench.runners.processpool.messages import (
    Fork,
    Kill,
    LoadFailed,
    LoadRun,
    Message,
    Quit,
    WorkerExited,
    WorkerForked,
    receive,
    send,
)
from nornir_bench.runners.processpool.running_host import RunningHost

__all__ = [
    "FORK_SERVER_COMMAND",
    "STOP_WAIT_SECONDS",
    "ForkServer",
    "Forked",
    "WorkerStartError",
]

STOP_WAIT_SECONDS = 5.0
"""How long a fork server or a worker asked to stop may take before it is killed."""

FORK_SERVER_COMMAND = [
    "-c",
    # Not ``-m``, which puts the current directory first on the import path: the fork server
    # must import what the pool's process imports (its import path, in its order, comes as
    # PYTHONPATH: see WorkerSet), not a checkout that happens to be here. ``-c`` puts the
    # current directory first as "": dropped.
    "import sys; del sys.path[0]; "
    "from nornir_bench.runners.processpool.forkserver_process import main; main()",
]
"""The interpreter's arguments that start a fork server; its two socket descriptors follow."""

LOAD_TIMEOUT = 300.0
"""Seconds the fork server may take to answer a fork: it loads the run first, which imports
the task's modules (some take seconds); past this, something hangs at import."""

Forked = tuple[int, Connection, RunningHost]
"""A new worker: its pid, the pool's end of its socket, its running-host cell."""


class WorkerStartError(Exception):
    """No worker could be forked: the fork server died, or could not load the run.

    Attributes:
        reason: what happened, in words.
        load_error: the run itself cannot be loaded (every fork server would fail alike).
    """

    def __init__(self, reason: str, *, load_error: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.load_error = load_error


class ForkServer:
    """The pool's side of a fork server process.

    Args:
        command: the interpreter's arguments that start the fork server; the two socket
            descriptors are appended.
        env: its environment.
    """

    def __init__(self, command: Sequence[str], env: dict[str, str]) -> None:
        control, control_child = socket.socketpair()
        self.fds, fds_child = socket.socketpair()
        with control_child, fds_child:
            self.process = subprocess.Popen(
                [sys.executable, *command, str(control_child.fileno()), str(fds_child.fileno())],
                pass_fds=[control_child.fileno(), fds_child.fileno()],
                stdin=subprocess.DEVNULL,
                env=env,
            )
        self.control = Connection(control.detach())
        self.statuses: dict[int, int] = {}  # pid -> return code, reported and not yet asked for
        self._forgotten: set[int] = set()  # pids whose exit report is not wanted

    def load(self, spec: bytes) -> None:
        """Send the run to load (cloudpickle bytes of a ``RunSpec``); forks then hold it.

        A fork server that died already is reported by the next :meth:`fork`.
        """
        try:
            send(self.control, LoadRun(spec))
        except OSError:
            pass

    def fork(self, *, threads: int) -> Forked:
        """A new worker holding the loaded run, whose pool runs at most ``threads`` threads.

        Raises:
            WorkerStartError: the fork server is gone, or could not load the run.
        """
        pool_end, worker_end = socket.socketpair()
        running = RunningHost(threads=threads)
        try:
            with worker_end:
                try:
                    socket.send_fds(self.fds, [b"f"], [worker_end.fileno(), running.fileno()])
                    send(self.control, Fork())
                    reply = self._reply(LOAD_TIMEOUT)
                except (OSError, EOFError):
                    raise WorkerStartError(
                        f"the fork server {describe_exit(self._returncode())}"
                    ) from None
                except TimeoutError:
                    self.process.kill()
                    raise WorkerStartError(
                        f"the fork server did not answer within {LOAD_TIMEOUT:g} s (does a "
                        "module the task imports hang?)",
                        load_error=True,
                    ) from None
            if isinstance(reply, LoadFailed):
                raise WorkerStartError(reply.reason, load_error=True)
            assert isinstance(reply, WorkerForked), reply
        except BaseException:
            pool_end.close()
            running.close()
            raise
        return reply.pid, Connection(pool_end.detach()), running

    def exit_status(self, pid: int, timeout: float = STOP_WAIT_SECONDS) -> int | None:
        """The return code of worker ``pid`` once it has ended; ``None`` if not within
        ``timeout`` seconds (or the fork server is gone)."""
        deadline = time.monotonic() + timeout
        try:
            while pid not in self.statuses:
                if not self.control.poll(max(0.0, deadline - time.monotonic())):
                    return None
                self._take(receive(self.control))
        except (OSError, EOFError):
            return None
        return self.statuses.pop(pid)

    def forget(self, pid: int) -> None:
        """Drop worker ``pid``'s exit report, now or when it comes: nobody will ask for it."""
        if self.statuses.pop(pid, None) is None:
            self._forgotten.add(pid)

    def kill(self, pid: int) -> None:
        """Kill worker ``pid`` (SIGKILL) if it is still running."""
        try:
            send(self.control, Kill(pid))
        except OSError:  # the fork server is gone, and took its children with it
            pass

    def close(self) -> None:
        """Stop the fork server; it kills any worker still running and reaps them all."""
        try:
            send(self.control, Quit())
        except OSError:
            pass
        try:
            self.process.wait(STOP_WAIT_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.control.close()
        self.fds.close()

    def _reply(self, timeout: float) -> Message:
        """The next message that is not an exit report (those are kept for ``exit_status``).

        Raises:
            TimeoutError: none within ``timeout`` seconds.
        """
        deadline = time.monotonic() + timeout
        while True:
            if not self.control.poll(max(0.0, deadline - time.monotonic())):
                raise TimeoutError
            message = receive(self.control)
            if not self._take(message):
                return message

    def _take(self, message: Message) -> bool:
        """Keep an exit report for :meth:`exit_status`; False for any other message."""
        if not isinstance(message, WorkerExited):
            return False
        if message.pid in self._forgotten:
            self._forgotten.discard(message.pid)
        else:
            self.statuses[message.pid] = message.returncode
        return True

    def _returncode(self) -> int | None:
        try:
            return self.process.wait(STOP_WAIT_SECONDS)
        except subprocess.TimeoutExpired:
            return None
