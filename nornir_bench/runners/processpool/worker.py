"""The worker process of the ``processpool`` runner.

It is forked by the fork server (:mod:`~nornir_bench.runners.processpool.forkserver`), a fresh interpreter
that has loaded the run: no fork of the user's threaded process, and no re-import of its
``__main__`` (multiprocessing's spawn and forkserver both re-run it in every worker; the task
arrives by cloudpickle instead, so functions defined in ``__main__`` still work). It talks to the
parent over a socket, and shows which host runs on its loop in a cell of shared memory (see
:mod:`~nornir_bench.runners.processpool.crashes`).

A worker runs one event loop. For each run the parent sends the task and the run's hosts once;
then it sends host indices, and the worker starts every host it receives at once (the parent
keeps at most ``num_workers`` in flight per worker). Each host goes through the shared core
(``arun_host``): ``async def`` tasks on the loop, blocking tasks in the worker's thread pool.
Finished hosts go back in batches: the ``MultiResult``, the host's ``data`` after the task, and
the subtask hook events the parent replays on its own processors.

Messages are ``(kind, body)`` tuples, pickled:

- parent -> worker: ``("run", spec_bytes)``, ``("hosts", [index, ...])``, ``("stop", None)``
- worker -> parent: ``("ready", None)`` once it has loaded the run; ``("error", text)`` when
  it cannot (a module the task needs does not import here: every worker would fail alike);
  ``("done", [(index, multi, data, events), ...])``; ``("tainted", None)`` when a blocking task
  overran ``task_timeout``: its thread cannot be stopped, so the parent retires this worker
  once its other hosts are done.
"""

from __future__ import annotations

import asyncio
import functools
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

from nornir_bench.core._gc import tuned_for_run
from nornir_bench.core.connections import aclose_connections, close_connections
from nornir_bench.core.exceptions import RemoteException, TaskTimeout
from nornir_bench.core.execution import arun_host, is_async_task, offloading
from nornir_bench.core.offload import ThreadOffloader
from nornir_bench.runners.processpool.crashes import Marked, RunningHost, counted

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    from nornir.core.configuration import Config
    from nornir.core.inventory import Host

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
    hosts: list[Host]
    num_workers: int
    task_timeout: float | None


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
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(_serve(conn, running, spec))
    finally:
        loop.close()
        conn.close()
        # The last collection at exit would only walk objects about to be freed anyway.
        gc.freeze()


async def _serve(conn: Connection, cell: RunningHost, spec: RunSpec | None) -> None:
    loop = asyncio.get_running_loop()
    inbox: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

    def read() -> None:  # a thread: Connection has no asyncio interface
        while True:
            try:
                message = pickle.loads(conn.recv_bytes())
            except (EOFError, OSError):
                message = ("stop", None)
            loop.call_soon_threadsafe(inbox.put_nowait, message)
            if message[0] == "stop":
                return

    threading.Thread(target=read, name="processpool-reader", daemon=True).start()
    run = None if spec is None else _load(conn, spec, cell)
    try:
        while True:
            kind, body = await inbox.get()
            if kind == "stop":
                break
            if kind == "run":
                if run is not None:
                    await run.aclose()
                run = _load(conn, body, cell)
                if run is None:
                    break
            elif kind == "hosts" and run is not None:
                for index in body:
                    run.start(index)
    finally:
        if run is not None:
            await run.aclose()


def _load(conn: Connection, body: bytes | RunSpec, cell: RunningHost) -> _Run | None:
    """The run (as sent, or already loaded), ``("ready", None)`` sent back; or ``("error", why)``."""
    try:
        run = _Run(conn, cloudpickle.loads(body) if isinstance(body, bytes) else body, cell)
    except Exception as exc:  # noqa: BLE001 - any import or unpickling error: tell the parent
        why = f"{type(exc).__name__}: {' '.join(str(exc).split())}"
        conn.send_bytes(pickle.dumps(("error", why)))
        return None
    conn.send_bytes(pickle.dumps(("ready", None)))
    return run


class _Events:
    """A processor recording each host's subtask hooks, for the parent to replay in order."""

    def __init__(self) -> None:
        self.by_host: dict[str, list[Event]] = {}

    def subtask_instance_started(self, task: Task, host: Host) -> None:
        self.by_host.setdefault(host.name, []).append(("started", task.name))

    def subtask_instance_completed(self, task: Task, host: Host, result: MultiResult) -> None:
        self.by_host.setdefault(host.name, []).append(("completed", task.name, result))

    def task_started(self, task: Task) -> None:
        pass

    def task_completed(self, task: Task, result: Any) -> None:
        pass

    def task_instance_started(self, task: Task, host: Host) -> None:
        pass

    def task_instance_completed(self, task: Task, host: Host, result: MultiResult) -> None:
        pass


class _Run:
    """One run inside a worker: the task, the hosts, the pool for blocking calls, the outbox."""

    def __init__(self, conn: Connection, spec: RunSpec, running: RunningHost) -> None:
        self.conn = conn
        self.spec = spec
        self.cell = running.cell
        self.events = _Events()
        inventory = Inventory(hosts=Hosts(), groups=Groups(), defaults=Defaults())
        nornir = Nornir(
            inventory=inventory,
            config=spec.config,
            data=GlobalState(dry_run=spec.dry_run),
        )
        self.task = Task(
            spec.func,
            nornir,
            global_dry_run=spec.dry_run,
            processors=Processors([self.events]),
            name=spec.name,
            severity_level=spec.severity_level,
            **spec.params,
        )
        self.threads = ThreadOffloader(spec.num_workers)
        # Counted: while a blocking call runs in a thread, a crash may come from that thread,
        # so the host running on the loop is not necessarily the cause (see _crashes).
        offload = counted(self.threads, running)
        self.offload = None if is_async_task(spec.func) else offload
        offloading(offload)  # blocking subtasks of async tasks go to the same pool
        self.outbox: list[tuple[int, MultiResult, dict[str, Any], list[Event]]] = []
        self.flush_timer: asyncio.TimerHandle | None = None
        self.running: set[asyncio.Task[None]] = set()
        self.tuning = tuned_for_run()
        self.tuning.__enter__()

    def start(self, index: int) -> None:
        # Marked: while the host's code runs on this loop, the parent can see which host it is
        # should this process die (see _crashes).
        task = asyncio.get_running_loop().create_task(Marked(self._host(index), index, self.cell))
        self.running.add(task)
        task.add_done_callback(self.running.discard)

    async def _host(self, index: int) -> None:
        host = self.spec.hosts[index]
        multi = await arun_host(
            self.task, host, offload=self.offload, timeout=self.spec.task_timeout
        )
        events = self.events.by_host.pop(host.name, [])
        self.outbox.append((index, multi, host.data, events))
        if self.offload is not None and isinstance(multi[0].exception, TaskTimeout):
            self._send(("tainted", None))
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
            self._send(("done", batch))

    def _send(self, message: tuple[str, Any]) -> None:
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
        # The run's hosts are this worker's copies: every connection they opened ends here.
        await aclose_connections(self.spec.hosts)
        if any(host.connections for host in self.spec.hosts):
            await self.threads(functools.partial(close_connections, self.spec.hosts))
        await self.threads.aclose()
        self.tuning.__exit__(None, None, None)


def portable(message: tuple[str, Any]) -> tuple[str, Any]:
    """``message`` with every result value and exception that cannot be pickled made into text.

    Exceptions become :class:`RemoteException` (type name, message and traceback kept); other
    values become their ``repr``. Values that pickle (with cloudpickle) are left alone.
    """
    kind, body = message
    if kind != "done":
        return message
    for _index, multi, data, events in body:
        _portable_results(multi)
        for event in events:
            if event[0] == "completed":
                _portable_results(event[2])
        for key, value in list(data.items()):
            if not _pickles(value):
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
    if exc is not None and not _pickles(exc):
        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        result.exception = RemoteException(type(exc).__name__, str(exc), text)
    if not _pickles(result.result):
        result.result = repr(result.result)
    for key, value in list(vars(result).items()):
        if key not in ("exception", "result", "host") and not _pickles(value):
            setattr(result, key, repr(value))


def _pickles(value: object) -> bool:
    try:
        cloudpickle.dumps(value)
    except Exception:  # noqa: BLE001 - any failure means it cannot cross the process boundary
        return False
    return True

