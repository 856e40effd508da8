"""The fork server process: it loads a run once, forks workers holding it, reaps them and
reports how each ended, for the pool's
:class:`~nornir_bench.runners.processpool.forkserver.ForkServer` (why a fork server at all:
:mod:`~nornir_bench.runners.processpool.forkserver`).
"""

from __future__ import annotations

import gc
import os
import selectors
import signal
import socket
import sys
import traceback
from multiprocessing.connection import Connection
from typing import Any

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

__all__ = ["main", "serve_forks"]


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
        reason = " ".join(str(exc).split())
        return None, f"a worker process could not load the run: {type(exc).__name__}: {reason}"
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
