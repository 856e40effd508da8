"""The worker process of the ``processpool`` runner.

It is forked by the fork server (:mod:`~nornir_bench.runners.processpool.forkserver`), a fresh interpreter
that has loaded the run: no fork of the user's threaded process, and no re-import of its
``__main__`` (multiprocessing's spawn and forkserver both re-run it in every worker; the task
arrives by cloudpickle instead, so functions defined in ``__main__`` still work). It talks to the
parent over a socket, and shows which host runs on its loop in a cell of shared memory (see
:mod:`~nornir_bench.runners.processpool.crashes`).

A worker runs one event loop. For each run the parent sends the task once; then it sends
hosts, in chunks, and the worker starts every host it receives at once (the parent keeps at
most ``num_workers`` in flight per worker). Each host goes through the shared core
(``arun_host``): ``async def`` tasks on the loop, blocking tasks in the worker's thread pool.
Finished hosts go back in batches: the ``MultiResult``, the host's ``data`` after the task, the
subtask hook events the parent replays on its own processors, and whether the host holds
connections here.

A worker lives as long as the pool keeps it, across runs (the runner's ``keep_workers``). The
connections a host opened stay open in the worker, as nornir keeps them in the user's process:
the next run's copy of the host takes them over, and the pool sends the host back to this
worker. They are closed by ``nr.close_connections()`` (a run like another, sent to the worker
that holds them) or when the worker is told to stop. Plugins the user registered at run time
come with every run and are registered here before it loads.

The messages it exchanges with the pool are in :mod:`~nornir_bench.runners.processpool.messages`.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import pickle
import signal
import threading
import traceback
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import cloudpickle
from nornir.core import Nornir
from nornir.core.inventory import Defaults, Groups, Hosts, Inventory
from nornir.core.processor import Processors
from nornir.core.state import GlobalState
from nornir.core.task import MultiResult, Result, Task

from nornir_bench.core._pickling import cloudpickles
from nornir_bench.core.attempts import attempts_of
from nornir_bench.core.connections import aclose_every_connection
from nornir_bench.core.exceptions import RemoteException
from nornir_bench.core.execution import arun_host, run_task
from nornir_bench.core.hooks import NoOpProcessor
from nornir_bench.core.loops import new_event_loop
from nornir_bench.core.plugins import register_plugins
from nornir_bench.core.policies.hosts import HostRun, arun_policed
from nornir_bench.core.session import AsyncRunSession
from nornir_bench.runners.processpool.crashes import Marked, RunningHost, counted
from nornir_bench.runners.processpool.messages import (
    Done,
    FinishedHost,
    Halt,
    LoadFailed,
    LoadRun,
    Message,
    Ready,
    RunHosts,
    Stop,
    Tainted,
    receive,
    send,
)
from nornir_bench.runners.processpool.replay import relink

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    from nornir.core.configuration import Config
    from nornir.core.inventory import Host

    from nornir_bench.core.policies.options import RunPolicy

__all__ = ["RunSpec", "portable", "worker_main"]

# Finished hosts are sent when this many are waiting, or after this long, whichever comes first:
# one message per host would cost more than the work of a quick task.
_BATCH_HOSTS = 256
_BATCH_SECONDS = 0.002

Event = tuple[Any, ...]


@dataclass
class RunSpec:
    """What a worker needs to run a task: sent once per run, pickled with cloudpickle."""

    func: Any
    params: dict[str, Any]
    name: str
    severity_level: int
    dry_run: bool
    config: Config | None
    num_workers: int
    policy: RunPolicy
    run_deadline: float | None  # on the time.monotonic clock, which every process shares
    loop: str = "auto"
    plugins: dict[str, dict[str, Any]] | None = None  # registered in the parent, by kind
    keep_connections: bool = False  # hosts' connections outlive the run, in this worker


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
    # logging is configured (see ``_Pool._finished``).
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
                message = Stop()
            loop.call_soon_threadsafe(inbox.put_nowait, message)
            if isinstance(message, Stop):
                return

    threading.Thread(target=read, name="processpool-reader", daemon=True).start()
    # Hosts holding connections, by name: the copy of the latest run that used them.
    held: dict[str, Host] = {}
    run = None if spec is None else _load(conn, spec, cell, held)
    try:
        while True:
            message = await inbox.get()
            if isinstance(message, Stop):
                break
            if isinstance(message, LoadRun):
                if run is not None:
                    await run.aclose()
                run = _load(conn, message.spec, cell, held)
                if run is None:
                    break
            elif isinstance(message, Halt) and run is not None:
                run.halted.set()
            elif isinstance(message, RunHosts) and run is not None:
                hosts: list[Host] = pickle.loads(message.hosts)
                for index, host in zip(message.indices, hosts, strict=True):
                    run.start(index, host)
    finally:
        if run is not None:
            await run.aclose()
        await _close_held(held)


async def _close_held(held: dict[str, Host]) -> None:
    """Close the connections kept in this worker: async ones on its loop, then blocking ones
    (netmiko says goodbye to each device) in a thread."""
    hosts = list(held.values())
    held.clear()
    await aclose_every_connection(hosts, asyncio.to_thread)


def _load(
    conn: Connection, body: bytes | RunSpec, cell: RunningHost, held: dict[str, Host]
) -> _Run | None:
    """The run (as sent, or already loaded), :class:`Ready` sent back; or :class:`LoadFailed`."""
    try:
        spec = cloudpickle.loads(body) if isinstance(body, bytes) else body
        run = _Run(conn, spec, cell, held)
    except Exception as exc:  # noqa: BLE001 - any import or unpickling error: tell the parent
        send(conn, LoadFailed(f"{type(exc).__name__}: {' '.join(str(exc).split())}"))
        return None
    send(conn, Ready())
    return run


class _Events(NoOpProcessor):
    """A processor recording each host's subtask hooks, for the parent to replay in order."""

    def __init__(self) -> None:
        self.by_host: dict[str, list[Event]] = {}

    def subtask_instance_started(self, task: Task, host: Host) -> None:
        self.by_host.setdefault(host.name, []).append(("started", task.name))

    def subtask_instance_completed(self, task: Task, host: Host, result: MultiResult) -> None:
        self.by_host.setdefault(host.name, []).append(("completed", task.name, result))


class _Run:
    """One run inside a worker: the task, the hosts, the pool for blocking calls, the outbox."""

    def __init__(
        self, conn: Connection, spec: RunSpec, running: RunningHost, held: dict[str, Host]
    ) -> None:
        self.conn = conn
        self.spec = spec
        if spec.plugins:
            register_plugins(spec.plugins)
        self.held = held
        self.hosts: list[Host] = []  # every host this run received, whose connections it closes
        self.cell = running.cell
        self.events = _Events()
        inventory = Inventory(hosts=Hosts(), groups=Groups(), defaults=Defaults())
        nornir = Nornir(
            inventory=inventory,
            config=spec.config,
            data=GlobalState(dry_run=spec.dry_run),
        )
        self.task = run_task(
            spec.func,
            nornir,
            dry_run=spec.dry_run,
            processors=Processors([self.events]),
            name=spec.name,
            severity_level=spec.severity_level,
            **spec.params,
        )
        # Counted: while a blocking call runs in a thread, a crash may come from that thread,
        # so the host running on the loop is not necessarily the cause (see crashes).
        self.session = AsyncRunSession(
            spec.func,
            self.hosts,
            max_threads=spec.num_workers,
            # Kept for the next run (in this worker), or closed: no other process can use them.
            close_async=not spec.keep_connections,
            close_blocking=not spec.keep_connections,
            wrap_offload=lambda threads: counted(threads, running),
        ).open()
        self.outbox: list[FinishedHost] = []
        self.flush_timer: asyncio.TimerHandle | None = None
        self.running: set[asyncio.Task[None]] = set()
        self.halted = asyncio.Event()  # Ctrl-C in the parent: no more retries

    def start(self, index: int, host: Host) -> None:
        """Start ``host``, the run's host ``index``: a new copy, which takes over the
        connections this worker holds for it."""
        if self.held:
            kept = self.held.get(host.name)
            if kept is not None:
                host.connections = kept.connections
                self.held[host.name] = host
        self.hosts.append(host)
        # Marked: while the host's code runs on this loop, the parent can see which host it is
        # should this process die (see _crashes).
        task = asyncio.get_running_loop().create_task(
            Marked(self._host(index, host), index, self.cell)
        )
        self.running.add(task)
        task.add_done_callback(self.running.discard)

    async def _host(self, index: int, host: Host) -> None:
        offload = self.session.offload
        policy = self.spec.policy
        if policy.per_host:
            run = HostRun(
                self.task, host, policy, run_deadline=self.spec.run_deadline, halted=self.halted
            )
            multi = await arun_policed(run, offload)
        else:
            multi = await arun_host(self.task, host, offload=offload)
        events = self.events.by_host.pop(host.name, [])
        relink(multi, None)
        for event in events:
            if event[0] == "completed":
                relink(event[2], None)
        holds = self.spec.keep_connections and bool(host.connections)
        if holds:
            self.held[host.name] = host
        elif self.held:
            self.held.pop(host.name, None)
        self.outbox.append((index, multi, host.data, events, holds))
        if offload is not None and _left_a_call(multi):
            # A blocking call given up at its deadline goes on in its thread: the pool retires
            # this worker once its other hosts are done, which ends the call.
            self._send(Tainted())
        # The last host in flight done: the parent is waiting to send more, so send now.
        if len(self.outbox) >= _BATCH_HOSTS or len(self.running) <= 1:
            self.flush()
        elif self.flush_timer is None:
            self.flush_timer = asyncio.get_running_loop().call_later(_BATCH_SECONDS, self.flush)

    def flush(self) -> None:
        if self.flush_timer is not None:
            self.flush_timer.cancel()
            self.flush_timer = None
        if self.outbox:
            batch, self.outbox = self.outbox, []
            self._send(Done(batch))

    def _send(self, message: Message) -> None:
        try:
            data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001 - something in a result cannot be pickled: make it portable
            data = cloudpickle.dumps(portable(message), protocol=pickle.HIGHEST_PROTOCOL)
        self.conn.send_bytes(data)

    async def aclose(self) -> None:
        for task in list(self.running):
            task.cancel()
        if self.running:
            await asyncio.gather(*self.running, return_exceptions=True)
        self.flush()
        await self.session.aclose()


def portable(message: Message) -> Message:
    """``message`` with every result value and exception that cannot be pickled made into text.

    Exceptions become :class:`RemoteException` (type name, message and traceback kept); other
    values become their ``repr``. Values that pickle (with cloudpickle) are left alone.
    """
    if not isinstance(message, Done):
        return message
    for _index, multi, data, events, _holds in message.batch:
        _portable_results(multi)
        for event in events:
            if event[0] == "completed":
                _portable_results(event[2])
        for key, value in list(data.items()):
            if not cloudpickles(value):
                data[key] = repr(value)
    return message


def _portable_results(multi: MultiResult) -> None:
    for item in multi:
        if isinstance(item, MultiResult):
            _portable_results(item)
            continue
        _portable_result(item)


def _portable_result(result: Result) -> None:
    exc = result.exception
    if exc is not None and not cloudpickles(exc):
        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        result.exception = RemoteException(type(exc).__name__, str(exc), text)
    if not cloudpickles(result.result):
        result.result = repr(result.result)
    for key, value in list(vars(result).items()):
        if key not in ("exception", "result", "host") and not cloudpickles(value):
            setattr(result, key, repr(value))


def _left_a_call(multi: MultiResult) -> bool:
    """Whether the host gave up a blocking call at its deadline, in any attempt."""
    _, failed = attempts_of(multi)
    return bool(getattr(multi[0].exception, "abandoned", False)) or any(
        attempt.abandoned for attempt in failed
    )
