"""A Dask worker's side of the ``dask`` runner: one event loop per worker process, where every
run's hosts go through the shared core, and where their connections stay between runs.

Dask runs a task in a worker thread; a host's async connection (an asyncssh session) can only
be used on the loop that opened it. So each worker process gets one long-lived event loop, in
a thread of its own (:class:`NornirBenchWorker`, a Dask worker plugin the runner registers): a
chunk of hosts is handed to that loop, run there by a
:class:`~nornir_bench.runners._remote.hosts.WorkerHosts` (one per run and worker, at most
``num_workers`` hosts in flight), and the task waits for the chunk, seceded from Dask's thread
pool so that it takes no slot. The run itself (the task, the options, the plugins registered
in the parent) comes once per run and worker, as a scattered payload; hosts come in chunks;
a chunk's results go back as one pickled :class:`~nornir_bench.runners._remote.results.
FinishedBatch`, portable if something in them does not pickle.

The functions here are what the parent asks of the workers: :func:`run_chunk` (a Dask task),
and, through ``Client.run``, :func:`halt_run`, :func:`end_run`, :func:`close_held` and
:func:`versions`.
"""

from __future__ import annotations

import asyncio
import functools
import pickle
import threading
from collections import deque
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from importlib import metadata
from typing import TYPE_CHECKING, Any

from distributed import WorkerPlugin, get_worker, secede

from nornir_bench.core._pickling import dumps
from nornir_bench.core.connections import HeldConnections, aclose_every_connection
from nornir_bench.core.loops import new_event_loop
from nornir_bench.runners._remote.hosts import WorkerHosts
from nornir_bench.runners._remote.hosts import close_held as close_held_here
from nornir_bench.runners._remote.results import FinishedBatch, FinishedHost, packed
from nornir_bench.runners._remote.spec import unpack_run
from nornir_bench.runners._remote.watchdog import HEARTBEAT_SECONDS

if TYPE_CHECKING:
    from distributed import Worker
    from nornir.core.inventory import Host

__all__ = [
    "PLUGIN_NAME",
    "NornirBenchWorker",
    "close_held",
    "ENDED",
    "EVENTS_TOPIC",
    "STARTED",
    "end_run",
    "halt_run",
    "run_chunk",
    "versions",
]

PLUGIN_NAME = "nornir-bench"

_Tell = Callable[[str, list[int]], None]
"""Tells the parent something of a run's hosts: a kind (:data:`ENDED`, :data:`STARTED`,
:data:`ALIVE`) and host indices (through the worker's ``log_event``)."""

# How long Client.run's calls (halt, end, close connections) may wait for the worker's loop.
_LOOP_CALL_SECONDS = 60.0
_RUNS_REMEMBERED = 64


class NornirBenchWorker(WorkerPlugin):
    """The worker plugin: the worker's event loop for hosts, and what lives on it."""

    idempotent = True  # one per worker, however many clients register it

    def __init__(self, loop: str = "auto") -> None:
        self.loop_implementation = loop
        self.state: _WorkerState | None = None

    def setup(self, worker: Worker) -> None:
        self.state = _WorkerState(self.loop_implementation, worker)

    def teardown(self, worker: Worker) -> None:
        if self.state is not None:
            self.state.close()
            self.state = None


class _Chunk:
    """A chunk of hosts on this worker: done once every host is finished (or dropped).

    ``escaped``: a ``BaseException`` that is not an error (``SystemExit``) raised by a host's
    task: the host has no result, and the parent raises it once its run has stopped, as
    nornir's runners raise it from ``run()``; this worker's loop goes on.
    """

    __slots__ = ("done", "escaped", "finished", "left")

    def __init__(self, count: int) -> None:
        self.left = count
        self.finished: list[FinishedHost] = []
        self.escaped: BaseException | None = None
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def settle(self, count: int = 1) -> None:
        self.left -= count
        if self.left <= 0 and not self.done.done():
            self.done.set_result(None)


EVENTS_TOPIC = "nornir-bench-hosts"
"""The Dask event topic on which workers tell the parent of a run's hosts, as
``[run_id, address, kind, [index, ...]]``: which ended (the parent gives each one's place to
another host at once, not when its chunk is back, unless a limit decides from hosts' ends),
which started here (a chunk Dask moved after its worker died), or only that this worker is
alive (its heartbeat, while it has hosts in flight). One topic for every run: the scheduler
keeps each topic it ever saw; it says there too which worker it removed (``events.py``)."""

ENDED, STARTED, ALIVE = "ended", "started", "alive"


class _DaskWorkerHosts:
    """One run on this worker: its :class:`WorkerHosts`, which chunk each host is in, and the
    hosts ended since the parent was last told."""

    def __init__(self, payload: bytes, held: HeldConnections[Host], tell: _Tell) -> None:
        spec = unpack_run(payload)
        self.chunk_of: dict[int, _Chunk] = {}
        self.tell = tell
        self.freed: list[int] = []
        self.run = WorkerHosts(spec, held, self._finished, self._escaped)
        self.beat = asyncio.get_running_loop().call_later(HEARTBEAT_SECONDS, self._heartbeat)

    def _heartbeat(self) -> None:
        """While hosts are in flight here, say so: the parent gives up a worker that goes
        silent (its loop frozen), and must not take a long task's silence for that."""
        if self.chunk_of:
            self.tell(ALIVE, [])
        self.beat = asyncio.get_running_loop().call_later(HEARTBEAT_SECONDS, self._heartbeat)

    def _escaped(self, index: int, exc: BaseException) -> None:
        """A host's task raised ``SystemExit`` & co.: the parent raises it."""
        chunk = self.chunk_of.pop(index, None)
        if chunk is not None:
            chunk.escaped = exc
            chunk.settle()
        self._free(index)

    def _finished(self, done: FinishedHost, left_a_call: bool) -> None:
        chunk = self.chunk_of.pop(done.position)
        chunk.finished.append(done)
        chunk.settle()
        self._free(done.position)

    def _free(self, index: int) -> None:
        """Tell the parent that host ``index`` has ended: once per turn of the loop, for every
        host that ended in it (after this one's place is counted free here too)."""
        if not self.freed:
            asyncio.get_running_loop().call_soon(self._tell_freed)
        self.freed.append(index)

    def _tell_freed(self) -> None:
        freed, self.freed = self.freed, []
        self.tell(ENDED, freed)

    def halt(self) -> None:
        """No host waiting for room starts; chunks waiting for them are done without them."""
        for index in self.run.halted():
            chunk = self.chunk_of.pop(index, None)
            if chunk is not None:
                chunk.settle()


class _WorkerState:
    """The worker's event loop, in a thread of its own, and the runs and connections on it."""

    def __init__(self, loop: str, worker: Worker) -> None:
        self.worker = worker
        self.loop = new_event_loop(loop)
        self.held: HeldConnections[Host] = HeldConnections()
        self.runs: dict[str, _DaskWorkerHosts] = {}
        # Runs halted or ended before a chunk of theirs came here: Dask delivers Client.run's
        # calls and the chunks by different paths, so a chunk may come after them. The last
        # few run ids, in order: a worker lives for many runs.
        self.halted: deque[str] = deque(maxlen=_RUNS_REMEMBERED)
        self.ended: deque[str] = deque(maxlen=_RUNS_REMEMBERED)
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="nornir-bench-hosts", daemon=True
        )
        self.thread.start()

    def call(self, coroutine: Any) -> Future[Any]:
        """Run ``coroutine`` on the worker's loop (from any other thread)."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    async def chunk(
        self,
        payload: bytes,
        run_id: str,
        positions: list[int],
        hosts: bytes,
        seconds_left: float | None,
        moved: bool = False,
    ) -> tuple[bytes, BaseException | None]:
        if run_id in self.ended:  # came after its run ended: the parent no longer waits
            return dumps(FinishedBatch.of([])), None
        here = self.runs.get(run_id)
        if here is None:
            tell = functools.partial(_tell, self.worker, run_id)
            here = self.runs[run_id] = _DaskWorkerHosts(payload, self.held, tell)
            if run_id in self.halted:  # halted before this chunk came
                here.halt()
        here.run.keep_deadline(seconds_left)
        if moved:  # not where the parent sent it (that worker died): say where it runs
            here.tell(STARTED, positions)
        chunk = _Chunk(len(positions))
        if here.run.halt.is_set():  # halted before this chunk came: none of it starts
            chunk.settle(len(positions))
        for index, host in zip(positions, pickle.loads(hosts), strict=True):
            if chunk.done.done():
                break
            here.chunk_of[index] = chunk
            here.run.start(index, host)
        await chunk.done
        return packed(chunk.finished), chunk.escaped

    async def end(self, run_id: str) -> None:
        self.ended.append(run_id)
        here = self.runs.pop(run_id, None)
        if here is not None:
            here.beat.cancel()
            await here.run.aclose()

    def close(self) -> None:
        """Close every run, then every connection kept (async ones on the loop, blocking ones
        in a thread), then the loop."""

        async def close_all() -> None:
            for run_id in list(self.runs):
                await self.end(run_id)
            await aclose_every_connection(self.held.take_all(), asyncio.to_thread)

        try:
            self.call(close_all()).result(_LOOP_CALL_SECONDS)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(_LOOP_CALL_SECONDS)
            if not self.loop.is_running():
                self.loop.close()


def _tell(worker: Worker, run_id: str, kind: str, indices: list[int]) -> None:
    worker.log_event(EVENTS_TOPIC, [run_id, worker.address, kind, indices])  # thread-safe


def _state(worker: Worker | None = None) -> _WorkerState:
    plugin = (worker or get_worker()).plugins.get(PLUGIN_NAME)
    if not isinstance(plugin, NornirBenchWorker) or plugin.state is None:
        raise RuntimeError(
            "this dask worker has no nornir-bench plugin: the runner registers it on connect"
        )
    return plugin.state


def run_chunk(
    payload: bytes,
    run_id: str,
    positions: list[int],
    hosts: bytes,
    seconds_left: float | None,
    sent_to: str = "",
) -> tuple[str, bytes, BaseException | None]:
    """The Dask task of a chunk: run ``hosts`` (pickled, ``positions`` in the run) on this
    worker's loop; this worker's address, the chunk's pickled ``FinishedBatch``, and what a
    task raised that is not an error (``SystemExit``), if one did. ``sent_to``: the worker the
    parent sent it to (if it is another, its first one died: the parent is told where the
    chunk's hosts run now)."""
    worker = get_worker()
    state = _state(worker)
    moved = bool(sent_to) and sent_to != worker.address
    done = state.call(state.chunk(payload, run_id, positions, hosts, seconds_left, moved))
    # Waiting takes no slot of Dask's: the worker's own limit decides how many hosts run.
    secede()
    batch, escaped = done.result()
    return worker.address, batch, escaped


# The three below are coroutines (Client.run awaits them on the Dask worker's own loop, and
# runs them without waiting when asked to): they wait for the hosts' loop without blocking it.


async def halt_run(run_id: str, dask_worker: Worker | None = None) -> None:
    """Through ``Client.run``: the parent's Ctrl-C: no host of ``run_id`` starts any more here,
    and hosts waiting to retry stop waiting."""
    state = _state(dask_worker)

    async def halt() -> None:
        state.halted.append(run_id)
        here = state.runs.get(run_id)
        if here is not None:
            here.halt()

    await _on(state, halt())


async def end_run(run_id: str, dask_worker: Worker | None = None) -> None:
    """Through ``Client.run``: ``run_id`` is over: its session here closes (its thread pool;
    the connections its hosts opened stay, for the next run)."""
    state = _state(dask_worker)
    await _on(state, state.end(run_id))


async def close_held(pairs: list[tuple[str, str]], dask_worker: Worker | None = None) -> None:
    """Through ``Client.run``: close these connections this worker keeps (host, plugin)."""
    state = _state(dask_worker)
    await _on(state, close_held_here(state.held, pairs))


async def _on(state: _WorkerState, coroutine: Coroutine[Any, Any, None]) -> None:
    """Run ``coroutine`` on the hosts' loop, awaited from Dask's, at most a bounded time."""
    await asyncio.wait_for(asyncio.wrap_future(state.call(coroutine)), _LOOP_CALL_SECONDS)


def versions() -> dict[str, str]:
    """The versions of nornir-bench and nornir installed here."""
    return {name: metadata.version(name) for name in ("nornir-bench", "nornir")}
