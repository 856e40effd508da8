"""Worker processes forked from a fork server that has loaded the run once.

A processpool worker must be a fresh interpreter, never a fork of the user's process (which may
hold threads, locks and sockets). But a fresh interpreter costs about 0.3 s here (start-up and
importing nornir), and the run's payload (the task, its modules) must then be loaded in each:
a crash storm that kills a worker every 0.2 s would spend its time starting workers.

So the pool starts one fresh interpreter, the fork server (:data:`FORK_SERVER_COMMAND`, which
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

import gc
import os
import selectors
import signal
import socket
import subprocess
import sys
import time
import traceback
from collections.abc import Sequence
from multiprocessing.connection import Connection
from typing import Any

from nornir_bench.core.exceptions import describe_exit
from nornir_bench.core.library_warnings import quiet_library_deprecations
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
    "main",
    "serve_forks",
]

STOP_WAIT_SECONDS = 5.0
"""How long a fork server or a worker asked to stop may take before it is killed."""

FORK_SERVER_COMMAND = [
    "-c",
    # Not ``-m``, which puts the current directory first on the import path: the fork server
    # must import what the pool's process imports (its import path, in its order, comes as
    # PYTHONPATH: see WorkerSet), not a checkout that happens to be here. ``-c`` puts the
    # current directory first as "": dropped.
    "import sys; del sys.path[0]; from nornir_bench.runners.processpool.forkserver import main; "
    "main()",
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


def main() -> None:
    """The fork server process (:data:`FORK_SERVER_COMMAND`): serve the pool on the two socket
    descriptors given as arguments, then exit.

    Its workers are this package's processes, as a command is: a library's deprecation of its
    own code stays off the terminal they share with the user (core/library_warnings.py).
    """
    quiet_library_deprecations()
    serve_forks(Connection(int(sys.argv[1])), socket.socket(fileno=int(sys.argv[2])))
    # Its workers are reaped and it holds nothing to finalise: tearing down an interpreter
    # holding a 10,000-host run would only delay the pool's stop, which waits for this exit.
    sys.stderr.flush()
    os._exit(0)


def serve_forks(control: Connection, fds: socket.socket) -> None:
    """The fork server's loop: load the run, fork workers, reap and report them, until told to
    stop or the pool goes away."""
    # Ctrl-C and a service manager's SIGTERM reach the whole process group: the pool decides.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)  # wakes the selector via the pipe
    selector = selectors.DefaultSelector()
    selector.register(control.fileno(), selectors.EVENT_READ)
    selector.register(wake_read, selectors.EVENT_READ)
    spec: Any = None
    error = "the pool asked for a worker before sending the run"
    children: set[int] = set()
    try:
        while True:
            for key, _ in selector.select():
                if key.fd == wake_read:
                    os.read(wake_read, 4096)
                    _reap(children, control)
                    continue
                try:
                    message = receive(control)
                except (EOFError, OSError):  # the pool is gone
                    return
                if isinstance(message, LoadRun):
                    if spec is not None:  # the last run's: freed, frozen objects included
                        spec = None
                        gc.unfreeze()
                        gc.collect()
                    spec, error = _load(message.spec)
                elif isinstance(message, Fork):
                    _, given, _, _ = socket.recv_fds(fds, 1, 2)
                    for fd in given:  # forks keep them; programs a task runs must not
                        os.set_inheritable(fd, False)
                    reply: Message = LoadFailed(error)
                    if spec is not None:
                        pid = _fork(given, spec, (control, fds, selector, wake_read, wake_write))
                        children.add(pid)
                        reply = WorkerForked(pid)
                    for fd in given:
                        os.close(fd)
                    send(control, reply)
                elif isinstance(message, Kill) and message.pid in children:
                    _kill(message.pid)
                elif isinstance(message, Quit):
                    return
    finally:
        for pid in children:
            _kill(pid)
        for pid in children:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass


def _load(body: bytes) -> tuple[Any, str]:
    """The run spec, or ``None`` and why it cannot be loaded here."""
    from nornir_bench.runners._remote.spec import unpack_run

    try:
        spec = unpack_run(body)
    except Exception as exc:  # noqa: BLE001 - any import or unpickling error: tell the pool
        return None, f"a worker process could not load the run: {type(exc).__name__}: " + " ".join(
            str(exc).split()
        )
    # Everything loaded so far is shared with the forks: a collection in a fork must not walk
    # (and so copy) those pages.
    gc.freeze()
    return spec, ""


def _fork(given: list[int], spec: Any, inherited: tuple[Any, ...]) -> int:
    """Fork a worker on descriptors ``given`` (its socket, its cell) holding ``spec``."""
    server = os.getpid()
    # What the task's modules printed while loading must not be printed again by every fork.
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        return pid
    status = 0
    try:
        _die_with(server)
        control, fds, selector, wake_read, wake_write = inherited
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        selector.close()
        control.close()
        fds.close()
        os.close(wake_read)
        os.close(wake_write)
        from nornir_bench.runners.processpool.worker import worker_main

        worker_main(Connection(given[0]), given[1], spec)
    except BaseException:  # noqa: BLE001 - a worker must end here, never return into the server
        traceback.print_exc()
        status = 1
    finally:
        try:  # what the tasks printed; os._exit flushes nothing
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(status)


def _die_with(server: int) -> None:
    """On Linux, have the kernel kill this worker if the fork server dies (the out-of-memory
    killer, a stray kill): the pool could no longer reach it to stop it."""
    if sys.platform != "linux":
        return
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
    if os.getppid() != server:  # it died before the line above: too late to be told
        os._exit(1)


def _reap(children: set[int], control: Connection) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        children.discard(pid)
        try:
            send(control, WorkerExited(pid, os.waitstatus_to_exitcode(status)))
        except OSError:  # the pool is gone; the loop ends on its next read
            return


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
