"""One async run's set-up and tear-down on its event loop, shared by every event-loop runner.

An async run owns, for its length: a bounded thread pool for blocking calls (a blocking task
goes there whole; an ``async def`` task may still send blocking subtasks there, through the
offload context variable), the garbage-collector tuning of a run, and the connections its hosts
open on the loop. At its end, in this order: the context variable is reset, async connections
are closed on the loop that opened them (unless the loop outlives the run, to reuse them),
blocking ones too where asked, the pool's threads are waited for; the collector is restored even
if closing failed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

from nornir_bench.core._gc import tuned_for_run
from nornir_bench.core.connections import aclose_connections, aclose_every_connection
from nornir_bench.core.execution import Offload, is_async_task
from nornir_bench.core.offload import ThreadOffloader
from nornir_bench.core.subtasks import offloading, stop_offloading

if TYPE_CHECKING:
    from contextlib import AbstractContextManager
    from contextvars import Token

    from nornir.core.inventory import Host

__all__ = ["AsyncRunSession"]


class AsyncRunSession:
    """What one run of ``func`` over ``hosts`` owns on its event loop.

    Use ``async with AsyncRunSession(...) as session`` around the run, or :meth:`open` and
    :meth:`aclose` where the run's start and end are in different places (a processpool worker
    starts a run when the parent sends it and ends it when the next one comes). Both must run
    in the same task (the context variable is reset where it was set).

    Args:
        func: the task function: whether it is ``async def`` decides what :attr:`offload` is.
        hosts: the run's hosts, whose async connections are closed at the end.
        max_threads: the thread pool's size; threads start only as blocking calls need them.
        close_async: close the hosts' async connections at the end (asyncssh sessions live on
            the loop that opened them): false where the loop outlives the run, so that the
            next run reuses them.
        close_blocking: close every connection of the hosts, blocking ones (netmiko) too: for
            hosts that are a worker process's copies, whose connections no later run reuses.
        wrap_offload: wraps the pool before it is used (the processpool worker counts the
            blocking calls in flight, see :mod:`~nornir_bench.runners.processpool.running_host`).

    Attributes:
        offload: what :func:`~nornir_bench.core.execution.arun_host` takes: ``None`` for an
            ``async def`` task, else the thread pool (blocking tasks run there whole).
    """

    def __init__(
        self,
        func: Callable[..., Any],
        hosts: Sequence[Host],
        *,
        max_threads: int,
        close_async: bool = True,
        close_blocking: bool = False,
        wrap_offload: Callable[[Offload], Offload] | None = None,
    ) -> None:
        self.hosts = hosts
        self.close_async = close_async
        self.close_blocking = close_blocking
        self.threads = ThreadOffloader(max_threads)
        pool: Offload = self.threads if wrap_offload is None else wrap_offload(self.threads)
        self._pool = pool
        self.offload: Offload | None = None if is_async_task(func) else pool
        self._token: Token[Offload | None] | None = None
        self._tuning: AbstractContextManager[None] | None = None

    def open(self) -> AsyncRunSession:
        """Start the session: blocking subtasks go to its pool, the collector is tuned."""
        self._token = offloading(self._pool)
        self._tuning = tuned_for_run()
        self._tuning.__enter__()
        return self

    def leave(self) -> None:
        """Blocking subtasks no longer go to the session's pool (in the context that opened
        it: a caller that closes the session from another calls this there first)."""
        if self._token is not None:
            stop_offloading(self._token)
            self._token = None

    async def aclose(self) -> None:
        """End the session: close what the run opened, wait for the pool, restore the rest."""
        try:
            self.leave()
            if self.close_blocking:
                await aclose_every_connection(self.hosts, self.threads)
            elif self.close_async:
                await aclose_connections(self.hosts)  # they live on this loop (see connections)
            await self.threads.aclose()
        finally:
            if self._tuning is not None:
                tuning, self._tuning = self._tuning, None
                tuning.__exit__(None, None, None)

    async def __aenter__(self) -> AsyncRunSession:
        return self.open()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
