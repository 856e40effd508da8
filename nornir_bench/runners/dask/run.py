"""One ``dask`` run: hosts out in chunks as the run's plan allows, each chunk settled as it comes
back, the hosts of a dead worker or a lost scheduler failed with why.

The run goes to each worker once (a scattered payload); hosts go in chunks, one Dask task each,
at most ``num_workers`` hosts in flight per Dask worker in all; a host whose connections a
worker keeps goes back to that worker (a chunk runs on the worker it was sent to, elsewhere
only once that worker is gone: :mod:`~nornir_bench.runners.dask.reruns`). As each
chunk finishes, its hosts are settled in this process (:class:`~nornir_bench.runners._remote.
results.ResultSettler`): processor hooks fire, the progress bar moves, host data merges.
"""

from __future__ import annotations

import logging
import pickle
import queue
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from nornir_bench.core.exceptions import WorkerCrashed, WorkerUnavailable
from nornir_bench.runners._remote.book import DispatchBook
from nornir_bench.runners._remote.results import FinishedBatch, ResultSettler
from nornir_bench.runners._remote.scheduling import RemoteScheduling
from nornir_bench.runners._remote.shipments import open_shipment, settle_shipment
from nornir_bench.runners.dask.asking import run_on_workers, send_run
from nornir_bench.runners.dask.chunks import default_chunk_size
from nornir_bench.runners.dask.events import LEFT, RunEvent, listen, stop_listening
from nornir_bench.runners.dask.reruns import chunk_key
from nornir_bench.runners.dask.sites import where_it_may_run
from nornir_bench.runners.dask.worker import ENDED, STARTED, end_run, halt_run, run_chunk

if TYPE_CHECKING:
    from distributed import Client, Future

    from nornir_bench.runners._core.lifecycle import Lifecycle
    from nornir_bench.runners._remote.connections import HeldInWorkers
    from nornir_bench.runners._remote.options import RemoteOptions

__all__ = ["DaskChunks"]

logger = logging.getLogger(__name__)

class _Chunk:
    __slots__ = ("future", "positions", "worker")

    def __init__(self, positions: list[int], future: Future[Any], worker: str) -> None:
        self.positions = positions
        self.future = future
        self.worker = worker  # where it was sent


class DaskChunks(RemoteScheduling[str]):
    """A run over the Dask workers of ``client`` (named by address in the book).

    Args:
        options: the runner's.
        client: connected, its workers holding the nornir-bench plugin.
        run: the run's lifecycle (planned).
        held: which worker keeps connections of which host, across runs.
        workers: the Dask workers there are now, by address: the sites each serves.
        sites: each host's site, by index; ``None`` when no worker serves a site.
        where: the scheduler, in words, for messages.
    """

    def __init__(
        self,
        options: RemoteOptions,
        client: Client,
        run: Lifecycle,
        held: HeldInWorkers[str],
        *,
        workers: Mapping[str, frozenset[str]],
        sites: Sequence[str | None] | None = None,
        where: str,
    ) -> None:
        super().__init__(run, "dask")
        self.options = options
        self.client = client
        self.held = held
        self.where = where
        # Each chunk goes to a worker chosen here, that has room for it: a worker never has
        # more hosts than it runs at once, so none waits there (and none is dropped on a halt
        # after its start hook fired here).
        self.book = DispatchBook(self.scheduler, held.holders, options.num_workers, sites)
        now = time.monotonic()
        for worker, serves in workers.items():
            self.book.add(worker, serves=serves)
            self.heard[worker] = now
        # Not a method of this run: the settler would hold the run, and the run its results, in
        # a cycle that only a full collection frees once the user has dropped them.
        self.settle = ResultSettler(
            run.task, run.hosts, run.result, earlier_runs=_no_earlier_runs,
            settled=self.book.settled,
        )
        self.run_id = uuid.uuid4().hex[:12]
        self.dead: set[str] = set()  # removed by the scheduler: not asked anything more
        self.chunk_size = options.chunk_size or default_chunk_size(
            len(run.hosts), len(workers), options.num_workers
        )
        payload = options.pack(
            run.task, self.plan.deadline, what="dask runner", keep_connections=True
        )
        self.payloads = send_run(client, payload, workers, sited=sites is not None)
        self.chunks: dict[Any, _Chunk] = {}  # by the chunk's Dask key
        # Chunks back (futures), and what the workers said of the run's hosts, or the
        # scheduler of its workers (RunEvent).
        self.done: queue.SimpleQueue[Future[Any] | RunEvent] = queue.SimpleQueue()
        # A worker's ended hosts leave room for at least this many before a chunk is sent to
        # it while it is still busy: a place comes free when its host ends, yet each chunk is
        # a Dask task of the scheduler's.
        self.refill = max(1, self.chunk_size // 4)
        # A host's place goes to another host as soon as the host ends on its worker, before
        # its result and hooks are back, unless a limit decides from hosts' ends.
        self.frees_early = not self.plan.waits_for_ends
        listen(client, self.run_id, self.done)

    # -- the lifecycle's transport --------------------------------------------------------------

    def abandon(self) -> None:
        """The second Ctrl-C: the chunks still out are cancelled (their hosts in flight
        stopped, on the workers' loops)."""
        if self.chunks and self.client.status == "running":
            self.client.cancel([chunk.future for chunk in self.chunks.values()])

    def close(self, *, ended: bool) -> None:
        """The run is over on the workers: their sessions close (the connections stay)."""
        stop_listening(self.run_id)
        self._tell_workers(end_run)

    # -- the loop's transport (RemoteScheduling) ----------------------------------------------

    def _cannot_go_on(self) -> str | None:
        if self.client.status != "running":
            return self._scheduler_lost()
        if not self.book.places and not self.book.out:
            return f"no dask worker of the scheduler at {self.where} is left"
        return None

    def _most_for(self, worker: str) -> int:
        room = self.book.room(worker)
        count = min(self.chunk_size, room)
        if count < self.refill and room < self.options.num_workers:
            return 0  # too little room yet for a chunk to a busy worker
        return count

    def _ship(self, worker: str, indices: list[int]) -> None:
        shipment = open_shipment(
            self.hosts, indices, worker, self.book, self.settle, what="dask runner"
        )
        if shipment is None:
            return
        chunk, deadline = shipment.positions, self.plan.deadline
        future = self.client.submit(
            run_chunk,
            self.payloads[worker],
            self.run_id,
            chunk,
            shipment.pickled,
            None if deadline is None else max(0.0, deadline - shipment.sent_at),
            worker,
            key=chunk_key(self.run_id, self.options.crash_reruns),
            pure=False,
            **where_it_may_run(worker),
        )
        self.chunks[future.key] = _Chunk(chunk, future, worker)
        future.add_done_callback(self.done.put)

    def _receive(self, timeout: float) -> None:
        """Chunks back, and what the workers said of the hosts, settled."""
        try:
            first = self.done.get(timeout=timeout)
        except queue.Empty:
            return
        came = [first]
        while True:
            try:
                came.append(self.done.get_nowait())
            except queue.Empty:
                break
        futures = []
        for item in came:
            if isinstance(item, RunEvent):
                self._said(item)
            else:
                futures.append(item)
        self._settle_chunks(futures)

    def _said(self, event: RunEvent) -> None:
        """A worker's word: it is alive; these hosts started there (a chunk Dask moved after
        its worker died); these ended there, their places free now (unless a limit decides
        from hosts' ends: their places come back with their results); or the scheduler's
        word that a worker left."""
        if event.kind == LEFT:
            self._left(event.address)
            return
        book = self.book
        self.heard[event.address] = time.monotonic()
        if event.kind == STARTED:
            for index in event.indices:
                book.move(index, event.address)
        elif event.kind == ENDED and self.frees_early:
            for index in event.indices:
                book.ended(index)

    def _left(self, worker: str) -> None:
        """The scheduler removed ``worker`` (it died, or retired): it gets no more chunks and
        is asked nothing more (a question to a worker gone waits for Dask's connect timeout),
        and its silence is no longer watched. Its chunks out are Dask's: run again on another
        worker, where their hosts say they started, or failed (``KilledWorker``)."""
        if worker not in self.book.places or worker in self.dead:
            return
        self.book.release(worker)
        self.dead.add(worker)
        self.heard.pop(worker, None)
        logger.warning("dask: %s left the cluster with %d hosts of the run not back",
                       self._name(worker), len(self.book.on.get(worker, ())))

    def _halt_workers(self) -> None:
        """Ctrl-C: chunks out start no more hosts, and come back with the hosts that
        finished."""
        self._tell_workers(halt_run)

    def _abandon_all(self) -> list[int]:
        self.abandon()
        self.chunks.clear()
        return [index for worker in list(self.book.on) for index in self.book.remove(worker)]

    def _unresponsive(self, worker: str, errors: dict[int, Exception], why: str) -> None:
        """A worker that cannot answer: its chunks are cancelled and their hosts fail; it is
        sent no more hosts this run."""
        logger.warning("dask: %s %s; its hosts failed", self._name(worker), why)
        gone = [key for key, chunk in self.chunks.items() if chunk.worker == worker]
        futures = [self.chunks.pop(key).future for key in gone]
        if futures and self.client.status == "running":
            self.client.cancel(futures)
        for index in self.book.remove(worker):
            self.settle.failed(index, errors.get(index) or WorkerUnavailable(
                f"{self._name(worker)} {why} while running this host's chunk"))
        self.heard.pop(worker, None)

    def _name(self, worker: str) -> str:
        return f"dask worker {worker}"

    # -- back --------------------------------------------------------------------------------

    def _settle_chunks(self, futures: list[Future[Any]]) -> None:
        finished = [f for f in futures if f.status == "finished" and f.key in self.chunks]
        values: list[Any] = []
        if finished:
            try:
                values = self.client.gather(finished)
            except Exception:  # noqa: BLE001 - lost on the way (the scheduler went): fail below
                finished, values = [], []
        for future, (address, batch, escaped) in zip(finished, values, strict=True):
            if escaped is not None:
                self.run.escape(_rebuilt(escaped))
            self._settle_batch(self.chunks.pop(future.key), address, batch, escaped is None)
        for future in futures:
            chunk = self.chunks.pop(future.key, None)
            if chunk is not None:
                self._settle_lost(chunk, future)

    def _settle_batch(self, chunk: _Chunk, address: str, batch: bytes, whole: bool) -> None:
        """Settle the hosts of a chunk that came back; ``whole``: none of its hosts' tasks
        raised what is not an error (``SystemExit``), for which a host has no result."""
        back = self.book.back
        if address in self.heard:
            self.heard[address] = time.monotonic()
        where = f"dask worker {address}"
        finished: FinishedBatch = pickle.loads(batch)
        settle_shipment(finished, self.settle, back, self.held, address, where)
        reported = set(finished.positions)
        for index in chunk.positions:
            if index not in reported:
                back(index)
                if self.sending and whole:  # else halted before it started: not reported
                    self.settle.failed(
                        index, WorkerUnavailable(f"{where} returned no result for this host")
                    )

    def _settle_lost(self, chunk: _Chunk, future: Future[Any]) -> None:
        """A chunk that did not come back: its worker died, it could not run, or the
        scheduler is gone. Each of its hosts fails, saying which."""
        why = self._why_lost(future, chunk)
        for index in chunk.positions:
            self.book.back(index)
            if self.sending or future.status == "error":
                self.settle.failed(index, why())

    def _why_lost(self, future: Future[Any], chunk: _Chunk) -> Callable[[], Exception]:
        """What each host of a chunk that did not come back fails with (a new one each)."""
        if future.status != "error" and self.client.status != "running":
            reason = self._scheduler_lost()  # cancelled: the client lost the scheduler
            return lambda: WorkerUnavailable(reason)
        exc = future.exception() if future.status == "error" else None
        if exc is not None and type(exc).__name__ not in ("KilledWorker", "NoWorkerLeft"):
            reason = f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
            return lambda: WorkerUnavailable(f"a dask worker could not run this chunk: {reason}")
        if type(exc).__name__ == "KilledWorker":
            address = str(getattr(getattr(exc, "last_worker", None), "address", "?"))
            detail = _reruns_said(self.options)
        else:  # NoWorkerLeft (reruns.py), or cancelled by the scheduler: the run's holders gone
            address = chunk.worker
            detail = "; not run again: " + (
                "every worker holding the run is gone" if self.book.sites is None and exc is None
                else "no other worker of its site is left"
            )
        self.book.release(address)  # gone: no more chunks for it; hosts waiting go anywhere
        self.dead.add(address)
        self.heard.pop(address, None)
        dead = f"dask worker {address}"
        logger.warning("dask: %s died running a chunk of %d hosts%s; they failed", dead,
                       len(chunk.positions), detail)
        return lambda: WorkerCrashed(
            None, None, detail=detail, running="this host's chunk", worker=dead
        )

    def _scheduler_lost(self) -> str:
        """Why the hosts not back fail when the client lost the scheduler: one reason, whether
        their chunk was out or not."""
        return f"the connection to the dask scheduler at {self.where} was lost"

    def _tell_workers(self, call: Callable[..., Awaitable[None]]) -> None:
        """Ask the run's workers, without waiting for the call, and within a bounded time for
        their word that it came (a worker that does not answer must not hold the run); not
        the workers given up, and none once the scheduler is lost (the client would wait for
        it to come back, ``connect_timeout``)."""
        workers = sorted((set(self.book.places) | set(self.book.on)) - self.dead)
        if self.client.status != "running" or not workers:
            return
        try:
            run_on_workers(self.client, call, self.run_id, workers=workers, wait=False)
        except Exception:
            logger.debug("dask: telling the workers %s failed", call.__name__, exc_info=True)


def _reruns_said(options: RemoteOptions) -> str:
    """What a crashed chunk's hosts say of running again."""
    times = options.crash_reruns
    if times:
        return f"; run again {times} time{'s' * (times != 1)} before (crash_reruns)"
    if options.reruns_given:
        return "; not run again: crash_reruns is 0"
    return ("; not run again: the task is not read_only (it may change a device), and "
            "crash_reruns is not set")


def _no_earlier_runs(index: int) -> list[Any]:
    return []


def _rebuilt(exc: BaseException) -> BaseException:
    """``exc`` as raised here: a ``SystemExit`` unpickled by Dask's means keeps its ``args``
    but not its ``code``, which the process's exit status is."""
    try:
        fresh = type(exc)(*exc.args)
    except Exception:  # noqa: BLE001 - a class that takes other arguments: as it came
        return exc
    return fresh.with_traceback(exc.__traceback__)
