"""A worker's side of a run: the task loaded once, hosts run through the shared core as they
arrive, each finished host handed back, connections kept for the next run.

The worker (a forked process, a Dask worker) owns the event loop and the transport; a
:class:`WorkerHosts` owns the run on that loop: the hosts received wait in a
:class:`~nornir_bench.runners._core.queue.HostQueue`, drained by a coroutine a place at most,
as the asyncio runner's workers drain theirs (no task per host). Every host goes through
``arun_one``: ``async def`` tasks on the loop, blocking tasks in the run's thread pool. The
connections a host opens stay open in the worker when the run keeps them, as nornir keeps
them in the user's process: the next run's copy of the host takes them over
(:class:`HeldConnections`), and the parent sends the host back to this worker.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import socket
import time
from collections.abc import Callable, Coroutine
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any, Protocol

from nornir.core import Nornir
from nornir.core.inventory import Defaults, Groups, Hosts, Inventory
from nornir.core.processor import Processors
from nornir.core.state import GlobalState

from nornir_bench.core.accepted_keys import accepted_keys
from nornir_bench.core.attempts import attempts_of
from nornir_bench.core.connections import (
    HeldConnections,
    aclose_connection,
    aclose_every_connection,
)
from nornir_bench.core.ctrl_c import Halt
from nornir_bench.core.execution import Offload, run_task
from nornir_bench.core.one_host import RunContext, arun_one
from nornir_bench.core.plugins import register_plugins
from nornir_bench.core.secrets import masked_terminal
from nornir_bench.core.session import AsyncRunSession
from nornir_bench.runners._core.limiter import in_flight_here
from nornir_bench.runners._core.queue import HostQueue
from nornir_bench.runners._remote.results import FinishedHost, HookRecorder

if TYPE_CHECKING:
    from nornir.core.inventory import Host
    from nornir.core.task import MultiResult

    from nornir_bench.runners._remote.spec import RunSpec

__all__ = ["Marking", "WorkerHosts", "close_held", "left_a_call"]

Finished = Callable[[FinishedHost, bool], None]
"""Told each finished host, and whether it left a blocking call running past its deadline."""


class Marking(Protocol):
    """Notes which host a coroutine draining the run's hosts runs, at each of its steps."""

    def around(self, coroutine: Coroutine[Any, Any, None]) -> Coroutine[Any, Any, None]:
        """``coroutine``, marked at each step with the host it runs."""

    def runs(self, index: int) -> None:
        """Inside a step: the coroutine runs the run's host ``index`` from now on."""


Escaped = Callable[[int, BaseException], None]
"""Told a host's index and the ``SystemExit`` or ``KeyboardInterrupt`` its task raised: not a
task error, so the host has no result; the sender raises it from ``run()`` once the run has
stopped, as nornir's runners do."""


class WorkerHosts:
    """One run inside a worker: the task, the hosts received, the pool for blocking calls.

    Args:
        spec: the run, as it arrived (:func:`~nornir_bench.runners._remote.spec.unpack_run`).
        held: the hosts whose connections the worker keeps, across runs.
        finished: told each host that finished.
        escaped: told each host whose task raised ``SystemExit`` or ``KeyboardInterrupt``.
        wrap_offload: wraps the run's thread pool (a processpool worker counts the blocking
            calls in flight, to know which host a crash came from).
        marked: a new :class:`Marking` for each draining coroutine (a processpool worker
            marks the host that runs at each step, for its crash blame).
        limit: fewer hosts in flight at once than ``num_workers`` (a test's); hosts given
            beyond the places wait their turn, in order (the sender keeps to them, but for a
            chunk Dask moved here after its worker died).

    Raises:
        Exception: the plugins or the task cannot be set up here.
    """

    def __init__(
        self,
        spec: RunSpec,
        held: HeldConnections[Host],
        finished: Finished,
        escaped: Escaped,
        *,
        wrap_offload: Callable[[Offload], Offload] | None = None,
        marked: Callable[[], Marking] | None = None,
        limit: int | None = None,
    ) -> None:
        if spec.plugins:
            register_plugins(spec.plugins)
        self.spec = spec
        self.held = held
        self.finished = finished
        self.escaped = escaped
        self.hooks = HookRecorder()
        inventory = Inventory(hosts=Hosts(), groups=Groups(), defaults=Defaults())
        data = GlobalState(dry_run=spec.global_dry_run)
        nornir = Nornir(inventory=inventory, config=spec.config, data=data)
        self.task = run_task(
            spec.func,
            nornir,
            global_dry_run=spec.global_dry_run,
            processors=Processors([self.hooks]),
            name=spec.name,
            severity_level=spec.severity_level,
            **spec.params,
        )
        self.hosts: list[Host] = []  # every host received, whose connections the run closes
        # The run's own context: its session's thread pool is set there and reset there, and
        # each host starts in a copy of it, whatever task received the host (a Dask worker
        # receives hosts in one task per chunk).
        self._context = contextvars.copy_context()
        self.session = self._context.run(
            AsyncRunSession(
                spec.func,
                self.hosts,
                max_threads=spec.num_workers,
                # Kept for the next run (in this worker), or closed: no other process can use
                # them.
                close_async=not spec.keep_connections,
                close_blocking=not spec.keep_connections,
                wrap_offload=wrap_offload,
            ).open
        )
        self.halt = Halt()  # the parent's Ctrl-C: no more retries
        self.context = RunContext(
            spec.policy, deadline=spec.deadline, offload=self.session.offload, halt=self.halt
        )
        self._files = ExitStack()
        # What the task prints, warns or exits with here is masked as on the parent's terminal.
        self._files.enter_context(masked_terminal(spec.secrets))
        # The SSH host keys its logins record (accept-new), sent back with the next host done.
        self.accepted = self._files.enter_context(accepted_keys())
        # The places of this process's hosts in flight: num_workers, the open files they need
        # fitted (the soft limit raised for the run, or fewer places). A coroutine a place at
        # most drains the hosts received (``queue``); ``places.taken``: hosts started, not ended.
        self.places = self._files.enter_context(
            in_flight_here(spec.num_workers, spec.num_workers, spec.func, what="a worker")
        )
        if limit is not None:
            self.places.limit = min(self.places.limit, limit)
        self.queue: HostQueue[tuple[int, Host]] = HostQueue()  # received, not started yet
        self.draining = 0  # the coroutines draining it
        self.drainers: set[asyncio.Task[None]] = set()
        self.marked = marked
        self.keep_connections = spec.keep_connections
        self.worker = _worker_name()  # this process, as records name it: once a run
        self.offloads = self.context.offload is not None

    def start(self, index: int, host: Host) -> None:
        """Start ``host``, the run's host ``index``: a new copy, which takes over the
        connections this worker holds for it; once the run has room for it, if it has a
        limit. Hosts wait in order in the run's queue; a coroutine drains it while fewer than
        the places do."""
        self.queue.put((index, host))
        if self.draining < self.places.limit:
            self._add_drainer(asyncio.get_running_loop())

    def start_all(self, indices: list[int], hosts: list[Host]) -> None:
        """:meth:`start` each of ``hosts``, the run's hosts ``indices``, in order: a chunk as
        it arrives, the places counted once for it."""
        put = self.queue.put
        for waiting in zip(indices, hosts, strict=True):
            put(waiting)
        more = min(len(indices), self.places.limit - self.draining)
        if more > 0:
            loop = asyncio.get_running_loop()
            for _ in range(more):
                self._add_drainer(loop)

    def _add_drainer(self, loop: asyncio.AbstractEventLoop) -> None:
        """One more coroutine draining the run's hosts, in a copy of the run's context."""
        self.draining += 1
        marking = None if self.marked is None else self.marked()
        drain = self._drain(marking)
        step = drain if marking is None else marking.around(drain)
        self.drainers.add(self._context.run(loop.create_task, step))

    async def _drain(self, marking: Marking | None) -> None:
        """One of the run's places: the hosts waiting, one after the other, until none is."""
        take, run = self.queue.take, self._run
        try:
            if marking is None:
                while (waiting := take()) is not None:
                    await run(*waiting)
            else:
                while (waiting := take()) is not None:
                    marking.runs(waiting[0])  # in this step already: the next host's
                    await run(*waiting)
        finally:
            self.draining -= 1
            self.drainers.discard(asyncio.current_task())

    async def _run(self, index: int, host: Host) -> None:
        held = self.held
        if held:
            holder = held.get(host.name)
            if holder is not None:
                host.connections = holder.connections
                held[host.name] = host
        self.hosts.append(host)
        self.places.take()
        try:
            try:
                multi = await arun_one(self.task, host, self.context)
            except (SystemExit, KeyboardInterrupt) as exc:  # not a task error: the sender's
                self.escaped(index, exc)
                return
            if len(multi):
                multi[0].worker = self.worker  # type: ignore[attr-defined]
            # Each attribute of a nornir Host is a call of its own (__getattribute__): read once,
            # its own slot (connections are never inherited).
            kept = tuple(_get(host, "connections")) if self.keep_connections else ()
            if kept or self.held:
                self.held.note(host.name, host if kept else None)
            left = self.offloads and left_a_call(multi)
            done = self.hooks.finished(index, host, multi, kept, self.accepted.take())
            self.finished(done, left)
        finally:
            self.places.give()

    def halted(self) -> list[int]:
        """The run is halted: no host waiting for room starts; their indices. A host that had
        room when it came (a coroutine started for it, not yet at its first step) starts."""
        self.halt.set()
        waiting = self.queue.drop()
        had_room = max(0, self.draining - self.places.taken)
        for host in waiting[:had_room]:
            self.queue.put(host)
        return [index for index, _ in waiting[had_room:]]

    def keep_deadline(self, seconds_left: float | None) -> None:
        """The run's deadline, as a sender elsewhere sees it now (seconds left): hosts
        started from now on end by it, if it is earlier than the one known."""
        if seconds_left is None:
            return
        deadline = time.monotonic() + seconds_left
        if self.context.deadline is None or deadline < self.context.deadline:
            self.context.deadline = deadline

    @property
    def in_flight(self) -> int:
        """The hosts started here that have not ended, and those waiting to start."""
        return self.places.taken + len(self.queue)

    async def stop_hosts(self) -> None:
        """Cancel the hosts still running (a new run came, or the worker stops)."""
        self.queue.halt()
        drainers = list(self.drainers)
        for task in drainers:
            task.cancel()
        if drainers:
            await asyncio.gather(*drainers, return_exceptions=True)

    async def aclose(self) -> None:
        """End the run: hosts still running are cancelled, the session closed."""
        await self.stop_hosts()
        self._context.run(self.session.leave)  # where the pool was set
        await self.session.aclose()
        self._files.close()  # the soft limit of open files back, the terminal as it was


_get = object.__getattribute__

_named: tuple[int, str] = (0, "")


def _worker_name() -> str:
    """This worker process, as the records name it (``host:pid``): read again in a process
    forked since (no fork hook: importing the package changes nothing process-wide)."""
    global _named
    pid = os.getpid()
    if _named[0] != pid:
        _named = (pid, f"{socket.gethostname()}:{pid}")
    return _named[1]


def left_a_call(multi: MultiResult) -> bool:
    """Whether the host gave up a blocking call at its deadline, in any attempt (the call goes
    on in its thread, which cannot be stopped)."""
    _, failed = attempts_of(multi)
    return bool(getattr(multi[0].exception, "abandoned", False)) or any(
        attempt.abandoned for attempt in failed
    )


async def close_held(
    held: HeldConnections[Host], which: list[tuple[str, str]] | None = None
) -> None:
    """Close connections the worker keeps: ``which`` (host name, plugin name) pairs, or every
    one; async ones on this loop, blocking ones (netmiko says goodbye to each device) in a
    thread."""
    if which is None:
        await aclose_every_connection(held.take_all(), asyncio.to_thread)
        return
    hosts = {name: host for name, _ in which if (host := held.holder(name)) is not None}
    await asyncio.gather(
        *(aclose_connection(hosts[name], plugin, asyncio.to_thread) for name, plugin in which
          if name in hosts)
    )
    for name, host in hosts.items():
        held.note(name, host if host.connections else None)
