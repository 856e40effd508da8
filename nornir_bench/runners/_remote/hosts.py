"""A worker's side of a run: the task loaded once, hosts run through the shared core as they
arrive, each finished host handed back, connections kept for the next run.

The worker (a forked process, a Dask worker) owns the event loop and the transport; a
:class:`WorkerHosts` owns the run on that loop. Every host goes through ``arun_one``: ``async
def`` tasks on the loop, blocking tasks in the run's thread pool. The connections a host opens
stay open in the worker when the run keeps them, as nornir keeps them in the user's process:
the next run's copy of the host takes them over (:class:`HeldConnections`), and the parent
sends the host back to this worker.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import socket
import time
from collections import deque
from collections.abc import Callable, Coroutine
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

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
from nornir_bench.runners._remote.results import FinishedHost, HookRecorder

if TYPE_CHECKING:
    from nornir.core.inventory import Host
    from nornir.core.task import MultiResult

    from nornir_bench.runners._remote.spec import RunSpec

__all__ = ["WorkerHosts", "close_held", "left_a_call"]

Finished = Callable[[FinishedHost, bool], None]
"""Told each finished host, and whether it left a blocking call running past its deadline."""

WrapHost = Callable[[Coroutine[Any, Any, None], int], Coroutine[Any, Any, None]]
"""Wraps a host's coroutine before it is scheduled (its index given)."""

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
        wrap_host: wraps each host's coroutine (a processpool worker marks the host it runs).
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
        wrap_host: WrapHost | None = None,
        limit: int | None = None,
    ) -> None:
        if spec.plugins:
            register_plugins(spec.plugins)
        self.spec = spec
        self.held = held
        self.finished = finished
        self.escaped = escaped
        self.wrap_host = wrap_host
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
        self.running: set[asyncio.Task[None]] = set()
        self._files = ExitStack()
        # What the task prints, warns or exits with here is masked as on the parent's terminal.
        self._files.enter_context(masked_terminal(spec.secrets))
        # The SSH host keys its logins record (accept-new), sent back with the next host done.
        self.accepted = self._files.enter_context(accepted_keys())
        # The places of this process's hosts in flight: num_workers, the open files they need
        # fitted (the soft limit raised for the run, or fewer places). What they count: hosts
        # launched whose run has not ended (not ``running``, which keeps a task until its done
        # callback, a turn of the loop after its host has ended).
        self.places = self._files.enter_context(
            in_flight_here(spec.num_workers, spec.num_workers, spec.func, what="a worker")
        )
        if limit is not None:
            self.places.limit = min(self.places.limit, limit)
        self.waiting: deque[tuple[int, Host]] = deque()  # over the limit: not started yet
        self.keep_connections = spec.keep_connections
        self.worker = _worker_name()  # this process, as records name it: once a run
        self.offloads = self.context.offload is not None

    def start(self, index: int, host: Host) -> None:
        """Start ``host``, the run's host ``index``: a new copy, which takes over the
        connections this worker holds for it; once the run has room for it, if it has a
        limit."""
        if self.waiting or self.places.room <= 0:
            self.waiting.append((index, host))
            return
        self._launch(index, host)

    def _launch(self, index: int, host: Host) -> None:
        held = self.held
        if held:
            kept = held.get(host.name)
            if kept is not None:
                host.connections = kept.connections
                held[host.name] = host
        self.hosts.append(host)
        self.places.take()
        coroutine = self._run(index, host)
        step = coroutine if self.wrap_host is None else self.wrap_host(coroutine, index)
        task = self._context.run(asyncio.get_running_loop().create_task, step)  # a copy of it
        self.running.add(task)
        task.add_done_callback(self.running.discard)

    async def _run(self, index: int, host: Host) -> None:
        try:
            try:
                multi = await arun_one(self.task, host, self.context)
            except (SystemExit, KeyboardInterrupt) as exc:  # not a task error: the sender's
                self.escaped(index, exc)
                return
            if len(multi):
                multi[0].worker = self.worker  # type: ignore[attr-defined]
            # Each attribute of a nornir Host is a call of its own (__getattribute__): read once.
            kept = tuple(host.connections) if self.keep_connections else ()
            if kept or self.held:
                self.held.note(host.name, host if kept else None)
            left = self.offloads and left_a_call(multi)
            done = self.hooks.finished(index, host, multi, kept, self.accepted.take())
            self.finished(done, left)
        finally:
            self.places.give()
        if self.waiting and not self.halt.is_set():  # this host's room, for the next one
            self._launch(*self.waiting.popleft())

    def halted(self) -> list[int]:
        """The run is halted: no host waiting for room starts; their indices."""
        self.halt.set()
        dropped = [index for index, _ in self.waiting]
        self.waiting.clear()
        return dropped

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
        return len(self.running)

    async def stop_hosts(self) -> None:
        """Cancel the hosts still running (a new run came, or the worker stops)."""
        for task in list(self.running):
            task.cancel()
        if self.running:
            await asyncio.gather(*self.running, return_exceptions=True)

    async def aclose(self) -> None:
        """End the run: hosts still running are cancelled, the session closed."""
        await self.stop_hosts()
        self._context.run(self.session.leave)  # where the pool was set
        await self.session.aclose()
        self._files.close()  # the soft limit of open files back, the terminal as it was


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
