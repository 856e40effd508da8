"""One ``dask`` run: hosts out in chunks as the run's plan allows, each chunk settled as it comes
back, the hosts of a dead worker or a lost scheduler failed with why.

The run goes to each worker once (a scattered payload); hosts go in chunks, one Dask task each,
at most ``num_workers`` hosts in flight per Dask worker in all; a host whose connections a
worker keeps goes back to that worker (a loose restriction: elsewhere if it is gone). As each
chunk finishes, its hosts are settled in this process (:class:`~nornir_bench.runners._remote.
results.ResultSettler`): processor hooks fire, the progress bar moves, host data merges.
"""

from __future__ import annotations

import logging
import math
import pickle
import queue
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from nornir_bench.core.exceptions import WorkerCrashed, WorkerUnavailable
from nornir_bench.core.policies.plan import HostPlan
from nornir_bench.runners._remote import watchdog
from nornir_bench.runners._remote.results import FinishedBatch, ResultSettler
from nornir_bench.runners._remote.scheduling import RemoteScheduling
from nornir_bench.runners._remote.spec import pack_hosts, pack_run
from nornir_bench.runners.dask.reruns import chunk_key
from nornir_bench.runners.dask.worker import FREED_TOPIC, end_run, halt_run, run_chunk

if TYPE_CHECKING:
    from distributed import Client, Future
    from nornir.core.inventory import Host
    from nornir.core.task import AggregatedResult, Task

    from nornir_bench.core.policies.options import RunPolicy
    from nornir_bench.runners._remote.connections import HeldInWorkers

__all__ = ["DaskChunks", "RunOptions", "default_chunk_size"]

logger = logging.getLogger(__name__)

# Chunks per worker a run aims at when it chooses the chunk size: enough that a worker finishing
# early gets more and results stream back, few enough that the scheduler's cost per task stays
# small next to the hosts' (see docs/benchmarks.md, the scale plan).
_CHUNKS_PER_WORKER = 4


def default_chunk_size(hosts: int, workers: int, num_workers: int) -> int:
    """Hosts per chunk when the runner is given none: a quarter of a worker's share of the
    run, at most what a worker runs at once (``num_workers``), at least 1."""
    share = math.ceil(hosts / (max(1, workers) * _CHUNKS_PER_WORKER))
    return max(1, min(num_workers, share))


@dataclass(frozen=True)
class RunOptions:
    """The runner's options a run needs."""

    num_workers: int
    chunk_size: int | None
    crash_reruns: int
    reruns_given: bool  # crash_reruns given by the user (else: from the task's read_only)
    loop: str
    policy: RunPolicy


class _Chunk:
    __slots__ = ("freed", "future", "positions", "sent", "worker")

    def __init__(self, positions: list[int], future: Future[Any], sent: float, worker: str) -> None:
        self.positions = positions
        self.future = future
        self.sent = sent
        self.worker = worker  # where it was sent
        self.freed: set[int] = set()  # its hosts ended on the worker, their places given back


# The queue of each run in progress, by run id: the workers' word that hosts have ended comes
# on one Dask topic for every run (FREED_TOPIC), through the client's own thread.
_FREED: dict[str, queue.SimpleQueue[Any]] = {}


def _route_freed(event: tuple[float, Any]) -> None:
    run_id, freed = event[1]
    to = _FREED.get(run_id)
    if to is not None:
        to.put(list(freed))  # msgpack may give a tuple: a list is what the run tells apart


class DaskChunks(RemoteScheduling):
    """A run over the Dask workers of ``client``.

    Args:
        options: the runner's.
        client: connected, its workers holding the nornir-bench plugin.
        task: the run's task template.
        hosts: the run's hosts.
        result: filled in as hosts settle.
        held: which worker keeps connections of which host, across runs.
        workers: the Dask workers there are now, by address.
        where: the scheduler, in words, for messages.

    Attributes:
        halt: set by Ctrl-C (from a signal handler too): no more chunks go out.
    """

    def __init__(
        self,
        options: RunOptions,
        client: Client,
        task: Task,
        hosts: list[Host],
        result: AggregatedResult,
        held: HeldInWorkers[str],
        *,
        workers: list[str],
        where: str,
    ) -> None:
        super().__init__(task, hosts, options.policy, "dask")
        self.options = options
        self.client = client
        self.held = held
        self.where = where
        self.taken: set[int] = set()  # handed out by the plan, not settled yet
        # Not a method of this run: the settler would hold the run, and the run its results, in
        # a cycle that only a full collection frees once the user has dropped them.
        self.settle = ResultSettler(
            task, hosts, result, earlier_runs=lambda index: [],
            settled=partial(_settled, self.plan, self.taken),
        )
        self.run_id = uuid.uuid4().hex[:12]
        # Each chunk goes to a worker chosen here, that has room for it: a worker never has
        # more hosts than it runs at once, so none waits there (and none is dropped on a halt
        # after its start hook fired here).
        self.room = dict.fromkeys(workers, options.num_workers)
        self.held_for: dict[str, deque[int]] = {}  # hosts waiting for the worker holding theirs
        self.any_worker: deque[int] = deque()  # taken from the plan, for any worker
        self.chunk_size = options.chunk_size or default_chunk_size(
            len(hosts), len(workers), options.num_workers
        )
        payload = pack_run(
            task,
            what="dask runner",
            num_workers=options.num_workers,
            policy=options.policy,
            deadline=self.plan.deadline,
            loop=options.loop,
            keep_connections=True,
        )
        self.payload = client.scatter(payload, broadcast=True, hash=False)
        self.chunks: dict[Any, _Chunk] = {}  # by the chunk's Dask key
        self.chunk_of: dict[int, _Chunk] = {}  # the chunk out holding each host
        # Chunks back (futures), and the hosts the workers said have ended (lists of indices).
        self.done: queue.SimpleQueue[Future[Any] | list[Any]] = queue.SimpleQueue()
        # A worker's ended hosts leave room for at least this many before a chunk is sent to
        # it while it is still busy: a place comes free when its host ends, yet each chunk is
        # a Dask task of the scheduler's.
        self.refill = max(1, self.chunk_size // 4)
        self.frees_early = frees_early(options.policy)
        _FREED[self.run_id] = self.done
        client.subscribe_topic(FREED_TOPIC, _route_freed)
        self.sent: dict[int, float] = {}  # host index -> when its chunk went out

    # -- the loop's transport (RemoteScheduling) ----------------------------------------------

    def _out(self) -> bool:
        return bool(self.chunks)

    def _cannot_go_on(self) -> str | None:
        if self.client.status != "running":
            return self._scheduler_lost()
        if not self.room and not self.chunks:
            return f"no dask worker of the scheduler at {self.where} is left"
        return None

    def _receive(self, timeout: float) -> None:
        """Chunks back, and the hosts the workers said have ended, settled."""
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
        for freed in came:
            if isinstance(freed, list):
                self._free(freed)
        self._settle_chunks([future for future in came if not isinstance(future, list)])

    def _halt_workers(self) -> None:
        """Ctrl-C: chunks out start no more hosts, and come back with the hosts that
        finished."""
        self.plan.halt()
        self.held_for.clear()
        self.any_worker.clear()
        self._tell_workers(halt_run)

    def _abandon_all(self) -> list[int]:
        waiting = [*self.any_worker, *(i for queue in self.held_for.values() for i in queue)]
        self.any_worker.clear()
        self.held_for.clear()
        for chunk in list(self.chunks.values()):
            waiting += chunk.positions
        self.chunks.clear()
        self.chunk_of.clear()
        return waiting

    def end(self, *, abandon: bool = False) -> None:
        """The run is over on the workers: their sessions close (``abandon``: its chunks still
        out are cancelled, their hosts in flight stopped)."""
        _FREED.pop(self.run_id, None)
        if abandon and self.chunks:
            self.client.cancel([chunk.future for chunk in self.chunks.values()])
        self._tell_workers(end_run)

    # -- out ---------------------------------------------------------------------------------

    def _send(self) -> None:
        """Chunks of the hosts the plan lets start now, each to the worker with the most room;
        a host whose connections a worker keeps goes to that worker, waiting for its room."""
        holders, room = self.held.holders, self.room
        while room:
            worker = max(room, key=room.__getitem__)
            count = min(self.chunk_size, room[worker])
            if count <= 0 or (count < self.refill and room[worker] < self.options.num_workers):
                return  # no room, or too little yet for a chunk to a busy worker
            waiting = self.held_for.get(worker)
            chunk = [waiting.popleft() for _ in range(min(count, len(waiting)))] if waiting else []
            while len(chunk) < count and (index := self._next()) is not None:
                holder = holders.get(self.hosts[index].name) if holders else None
                if holder is None or holder == worker or holder not in room:
                    chunk.append(index)
                else:
                    self.held_for.setdefault(holder, deque()).append(index)
            if not chunk:
                return
            self._submit(chunk, worker)

    def _next(self) -> int | None:
        """The next host to send: one given back, else the plan's, if it may start now."""
        if self.any_worker:
            return self.any_worker.popleft()
        index = self.plan.take()
        if index is not None:
            self.taken.add(index)
        return index

    def _submit(self, indices: list[int], worker: str) -> None:
        chunk, pickled, unsendable = pack_hosts(self.hosts, indices, what="dask runner")
        for index, error in unsendable.items():
            self.settle.failed(index, error)
        if not chunk:
            return
        now = time.monotonic()
        for index in chunk:
            self.settle.leaving(index)
            self.sent[index] = now
        deadline = self.plan.deadline
        future = self.client.submit(
            run_chunk,
            self.payload,
            self.run_id,
            chunk,
            pickled,
            None if deadline is None else max(0.0, deadline - now),
            key=chunk_key(self.run_id, self.options.crash_reruns),
            pure=False,
            workers=[worker],
            allow_other_workers=True,  # elsewhere if it is gone
        )
        self.room[worker] -= len(chunk)
        self.chunks[future.key] = out = _Chunk(chunk, future, now, worker)
        for index in chunk:
            self.chunk_of[index] = out
        future.add_done_callback(self.done.put)

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
                self.escaped.append(_rebuilt(escaped))
            self._settle_batch(self.chunks.pop(future.key), address, batch, escaped is None)
        for future in futures:
            chunk = self.chunks.pop(future.key, None)
            if chunk is not None:
                self._settle_lost(chunk, future)

    def _settle_batch(self, chunk: _Chunk, address: str, batch: bytes, whole: bool) -> None:
        """Settle the hosts of a chunk that came back; ``whole``: none of its hosts' tasks
        raised what is not an error (``SystemExit``), for which a host has no result."""
        held, settle = self.held, self.settle
        reported = set()
        where = f"dask worker {address}"
        hosts: FinishedBatch = pickle.loads(batch)
        for finished in hosts.hosts():
            reported.add(finished.position)
            self.sent.pop(finished.position, None)
            host = settle.finished(finished)
            if finished.connections or held.holders:  # most runs: nobody holds any
                held.hold(host, address, where, finished.connections)
        self._back(chunk)
        for index in chunk.positions:
            if index not in reported:
                self.sent.pop(index, None)
                if self.sending and whole:  # else halted before it started: not reported
                    self.settle.failed(
                        index, WorkerUnavailable(f"{where} returned no result for this host")
                    )

    def _settle_lost(self, chunk: _Chunk, future: Future[Any]) -> None:
        """A chunk that did not come back: its worker died, it could not run, or the
        scheduler is gone. Each of its hosts fails, saying which."""
        why = self._why_lost(future, len(chunk.positions))
        self._back(chunk)
        for index in chunk.positions:
            self.sent.pop(index, None)
            if self.sending or future.status == "error":
                self.settle.failed(index, why())

    def _why_lost(self, future: Future[Any], hosts: int) -> Callable[[], Exception]:
        """What each host of a chunk that did not come back fails with (a new one each)."""
        if future.status != "error":  # cancelled: the client lost the scheduler
            reason = self._scheduler_lost()
            return lambda: WorkerUnavailable(reason)
        exc = future.exception()
        if type(exc).__name__ != "KilledWorker":
            reason = f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
            return lambda: WorkerUnavailable(f"a dask worker could not run this chunk: {reason}")
        address = str(getattr(getattr(exc, "last_worker", None), "address", "?"))
        self.room.pop(address, None)  # gone: no more chunks for it
        waiting = self.held_for.pop(address, None)
        if waiting:  # hosts waiting for it (it held their connections) go anywhere
            self.any_worker.extend(waiting)
        dead = f"dask worker {address}"
        times = self.options.crash_reruns
        detail = (
            f"; run again {times} time{'s' * (times != 1)} before (crash_reruns)"
            if times
            else "; not run again: crash_reruns is 0"
            if self.options.reruns_given
            else "; not run again: the task is not read_only (it may change a device), and "
            "crash_reruns is not set"
        )
        logger.warning("dask: %s died running a chunk of %d hosts; they failed", dead, hosts)
        return lambda: WorkerCrashed(
            None, None, detail=detail, running="this host's chunk", worker=dead
        )

    def _scheduler_lost(self) -> str:
        """Why the hosts not back fail when the client lost the scheduler: one reason, whether
        their chunk was out or not."""
        return f"the connection to the dask scheduler at {self.where} was lost"

    def _free(self, ended: list[int]) -> None:
        """These hosts have ended on their worker: their places
        there are free; their results come with their chunk. Not under a policy that decides
        from hosts' ends (see :func:`frees_early`): their places come back with their chunk."""
        if not self.frees_early:
            return
        for index in ended:
            chunk = self.chunk_of.get(index)
            if chunk is None or index in chunk.freed:  # its chunk is back already
                continue
            chunk.freed.add(index)
            if chunk.worker in self.room:
                self.room[chunk.worker] += 1

    def _back(self, chunk: _Chunk) -> None:
        """``chunk``'s worker has room for its hosts again (if it is still there), for those
        whose places were not given back as they ended."""
        for index in chunk.positions:
            if self.chunk_of.get(index) is chunk:
                del self.chunk_of[index]
        if chunk.worker in self.room:
            self.room[chunk.worker] += len(chunk.positions) - len(chunk.freed)

    # -- stopping ----------------------------------------------------------------------------

    def _watch(self) -> None:
        """Stop waiting for hosts well past their deadline (their worker cannot answer)."""
        policy, deadline = self.options.policy, self.plan.deadline
        if not self.sent or not watchdog.watched(policy, deadline):
            return
        late = watchdog.overdue_errors(
            self.sent, policy, deadline, time.monotonic(), self.task.name, self.hosts
        )
        if not late:
            return
        for key, chunk in list(self.chunks.items()):
            if any(index in late for index in chunk.positions):
                del self.chunks[key]
                self.client.cancel([chunk.future])
                self._back(chunk)
                for index in chunk.positions:
                    sent = self.sent.pop(index)
                    error = late.get(index) or watchdog.overdue_error(
                        policy, deadline, sent, self.task.name, self.hosts[index].name
                    )
                    self.settle.failed(index, error)

    def _tell_workers(self, call: Callable[..., Awaitable[None]]) -> None:
        """Ask every worker, without waiting (a worker that does not answer must not hold the
        run); not at all once the scheduler is lost (the client would wait for it to come back,
        ``connect_timeout``)."""
        if self.client.status != "running":
            return
        try:
            self.client.run(call, self.run_id, wait=False)
        except Exception:
            logger.debug("dask: telling the workers %s failed", call.__name__, exc_info=True)


def frees_early(policy: RunPolicy) -> bool:
    """Whether a host's place may go to another host as soon as the host ends on its worker,
    before its result and hooks are back here: not when the run's plan decides from hosts'
    ends (canary batches, failure limits, group limits): a host started in that place before
    the plan knew would break the limit, as processor hooks see it."""
    return not (
        policy.batches
        or policy.max_failures is not None
        or policy.max_fail_percentage is not None
        or policy.group_limits
        or policy.group_max_failures
    )


def _settled(plan: HostPlan, taken: set[int], index: int, failed: bool) -> None:
    """Tell the plan that a host it handed out (``taken``) is done (one it left out was not)."""
    if index in taken:
        taken.discard(index)
        plan.finished(index, failed)


def _rebuilt(exc: BaseException) -> BaseException:
    """``exc`` as raised here: a ``SystemExit`` unpickled by Dask's means keeps its ``args``
    but not its ``code``, which the process's exit status is."""
    try:
        fresh = type(exc)(*exc.args)
    except Exception:  # noqa: BLE001 - a class that takes other arguments: as it came
        return exc
    return fresh.with_traceback(exc.__traceback__)
