"""The worker process of the ``processpool`` runner.

It is forked by the fork server (:mod:`~nornir_bench.runners.processpool.forkserver`), a fresh
interpreter that has loaded the run: no fork of the user's threaded process, and no re-import of its
``__main__`` (multiprocessing's spawn and forkserver both re-run it in every worker; the task
arrives by cloudpickle instead, so functions defined in ``__main__`` still work). It talks to the
parent over a socket, and shows which host runs on its loop in a cell of shared memory (see
:mod:`~nornir_bench.runners.processpool.running_host`).

A worker runs one event loop. For each run the parent sends the task once; then it sends
hosts, in chunks, and the worker starts every host it receives at once (the parent keeps at
most ``num_workers`` in flight per worker), each taken by one of the coroutines draining the
run's queue. The run itself is a
:class:`~nornir_bench.runners._remote.hosts.WorkerHosts`, as on any worker elsewhere; what is
this worker's own is the socket, the batching of finished hosts (each a
:class:`~nornir_bench.runners._remote.results.FinishedHost`), and the crash bookkeeping: the
host each step of the loop (each draining coroutine :class:`Marked` once) and each thread
runs, in memory the parent reads after a crash.

A worker lives as long as the pool keeps it, across runs (the runner's ``keep_workers``). The
connections a host opened stay open in the worker, as nornir keeps them in the user's process:
the next run's copy of the host takes them over, and the pool sends the host back to this
worker. They are closed when the parent asks (``host.close_connection``,
``nr.close_connections()``), or when the worker is told to stop.

The messages it exchanges with the pool are in :mod:`~nornir_bench.runners.processpool.messages`.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import logging
import pickle
import signal
import threading
from typing import TYPE_CHECKING

from nornir_bench.core._pickling import dumps
from nornir_bench.core.connections import HeldConnections
from nornir_bench.core.loops import new_event_loop
from nornir_bench.runners._remote.hosts import WorkerHosts, close_held
from nornir_bench.runners._remote.results import FinishedHost, packed
from nornir_bench.runners._remote.spec import RunSpec, unpack_run
from nornir_bench.runners._remote.watchdog import HEARTBEAT_SECONDS
from nornir_bench.runners.processpool.messages import (
    Alive,
    CloseConnections,
    Closed,
    Done,
    EndRun,
    Escaped,
    HaltRun,
    LoadFailed,
    LoadRun,
    Message,
    Quit,
    Ready,
    RunHosts,
    Tainted,
    receive,
    send,
)
from nornir_bench.runners.processpool.running_host import Marked, RunningHost, counted

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    from nornir.core.inventory import Host

__all__ = ["worker_main"]

# Finished hosts are sent when this many are waiting, or after this long, whichever comes first:
# one message per host would cost more than the work of a quick task.
_BATCH_HOSTS = 256
_BATCH_SECONDS = 0.002

# A blocking call given up at its deadline that has not returned by itself this long after
# (a task that does not bound its own timeouts by the time left) taints the worker.
_LEFT_CALL_SECONDS = 1.0


def worker_main(conn: Connection, cell_fd: int, spec: RunSpec | None = None) -> None:
    """Entry point of a worker process: serve ``spec`` (if given: the run the fork server
    loaded), then the runs the parent sends, until it says stop or goes away."""
    # Ctrl-C in a terminal reaches the whole process group, and so does the SIGTERM of a
    # service manager stopping a unit: the parent decides what stops, and stops its workers.
    # If the parent is gone, the socket's end of file stops this worker.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    # A worker has no logging set up, so logging's last resort would print each failed host's
    # traceback on the user's terminal. The parent logs failures instead, where the user's
    # logging is configured (see ``ResultSettler``).
    logging.getLogger().addHandler(logging.NullHandler())
    running = RunningHost(cell_fd)
    running.start_watching()
    loop = new_event_loop(spec.loop if spec is not None else "auto")
    try:
        loop.run_until_complete(_serve(conn, running, spec))
    finally:
        loop.close()
        conn.close()
        # The last collection at exit would only walk objects about to be freed anyway.
        gc.freeze()


async def _serve(conn: Connection, cell: RunningHost, spec: RunSpec | None) -> None:
    loop = asyncio.get_running_loop()
    inbox: asyncio.Queue[Message] = asyncio.Queue()

    def read() -> None:  # a thread: Connection has no asyncio interface
        while True:
            try:
                message = receive(conn)
            except (EOFError, OSError):
                message = Quit()
            loop.call_soon_threadsafe(inbox.put_nowait, message)
            if isinstance(message, Quit):
                return

    threading.Thread(target=read, name="processpool-reader", daemon=True).start()
    held: HeldConnections[Host] = HeldConnections()  # the latest copy of each host holding some
    run = None if spec is None else _load(conn, spec, cell, held)
    try:
        while True:
            message = await inbox.get()
            if isinstance(message, Quit):
                break
            if isinstance(message, LoadRun):
                if run is not None:
                    await run.aclose()
                run = _load(conn, message.spec, cell, held)
                if run is None:
                    break
            elif isinstance(message, HaltRun) and run is not None:
                run.halt.set()
            elif isinstance(message, EndRun) and run is not None:
                await run.aclose()  # its threads stop; the connections stay in ``held``
                run = None
            elif isinstance(message, RunHosts) and run is not None:
                run.start_all(message.indices, pickle.loads(message.hosts))
            elif isinstance(message, CloseConnections):
                await close_held(held, message.connections)
                send(conn, Closed())
    finally:
        if run is not None:
            await run.aclose()
        await close_held(held)


def _load(
    conn: Connection, body: bytes | RunSpec, cell: RunningHost, held: HeldConnections[Host]
) -> _PipedHosts | None:
    """The run (as sent, or already loaded), :class:`Ready` sent back; or :class:`LoadFailed`."""
    try:
        spec = unpack_run(body) if isinstance(body, bytes) else body
        run = _PipedHosts(conn, spec, cell, held)
    except Exception as exc:  # noqa: BLE001 - any import or unpickling error: tell the parent
        send(conn, LoadFailed(f"{type(exc).__name__}: {' '.join(str(exc).split())}"))
        return None
    send(conn, Ready())
    return run


class _PipedHosts(WorkerHosts):
    """A run in this worker: finished hosts go back to the parent in batches."""

    def __init__(
        self, conn: Connection, spec: RunSpec, running: RunningHost, held: HeldConnections[Host]
    ) -> None:
        cell = running.cell
        super().__init__(
            spec,
            held,
            self._finished,
            self._escaped,
            # Counted: while a blocking call runs in a thread, a crash may come from that
            # thread, so the host running on the loop is not necessarily the cause (crashes).
            wrap_offload=lambda threads: counted(threads, running),
            # Marked: while the host's code runs on this loop, the parent can see which host it
            # is should this process die (see crashes).
            marked=functools.partial(Marked, cell),
        )
        self.conn = conn
        self.outbox: list[FinishedHost] = []
        self.flush_timer: asyncio.TimerHandle | None = None
        self.tainted = False
        self.beat = asyncio.get_running_loop().call_later(HEARTBEAT_SECONDS, self._heartbeat)

    def _heartbeat(self) -> None:
        """While hosts are in flight, say so: the parent gives up a worker that goes silent
        (its loop frozen), and must not take a long task's silence for that."""
        if self.in_flight:
            try:
                self.conn.send_bytes(dumps(Alive()))
            except OSError:  # the parent is gone: this worker stops anyway
                return
        self.beat = asyncio.get_running_loop().call_later(HEARTBEAT_SECONDS, self._heartbeat)

    def _finished(self, done: FinishedHost, left_a_call: bool) -> None:
        self.outbox.append(done)
        if left_a_call and not self.tainted:
            asyncio.get_running_loop().call_later(_LEFT_CALL_SECONDS, self._left_behind)
        # The last host in flight done: the parent is waiting to send more, so send now.
        if len(self.outbox) >= _BATCH_HOSTS or self.in_flight <= 1:
            self.flush()
        elif self.flush_timer is None:
            self.flush_timer = asyncio.get_running_loop().call_later(_BATCH_SECONDS, self.flush)

    def _escaped(self, index: int, exc: BaseException) -> None:
        """A host's task raised ``SystemExit`` & co.: the hosts finished before it go first,
        then it, for the parent to raise (this worker's loop goes on)."""
        self.flush()
        try:
            pickled = dumps(exc)
        except Exception:  # noqa: BLE001 - its arguments do not pickle: as words
            pickled = dumps(type(exc)(str(exc)))
        self.conn.send_bytes(dumps(Escaped(index, pickled)))

    def _left_behind(self) -> None:
        """A blocking call given up at its deadline still goes on in its thread (the package's
        own tasks return by themselves there): the pool retires this worker once its other
        hosts are done, which ends the call."""
        if self.session.threads.left_running and not self.tainted:
            self.tainted = True
            try:
                self.conn.send_bytes(dumps(Tainted()))
            except OSError:  # the parent is gone: this worker stops anyway
                pass

    def flush(self) -> None:
        if self.flush_timer is not None:
            self.flush_timer.cancel()
            self.flush_timer = None
        if self.outbox:
            batch, self.outbox = self.outbox, []
            self.conn.send_bytes(packed(batch, Done))

    async def aclose(self) -> None:
        self.beat.cancel()
        await self.stop_hosts()
        self.flush()  # before closing connections, which may take a while
        await super().aclose()
