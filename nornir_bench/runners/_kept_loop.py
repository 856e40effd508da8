"""The asyncio runner's event loop, kept from one ``nr.run`` to the next while hosts hold
async connections opened on it.

nornir keeps connections across runs until ``nr.close_connections()``; an async connection (an
asyncssh session) can only be used on the loop that opened it, so that loop must outlive the run
for the next run to reuse the session: a three-step workflow then logs in once per device, not
three times. The loop is kept only while some host holds such a connection: it is closed (its
connections first, on it) after a run that leaves none (``nr.close_connections()``, or tasks
that open no async connection), by ``runner.close()``, when the runner is garbage-collected,
and at interpreter exit. Between runs it is idle: no thread, no callback runs; the operating
system buffers whatever the devices send.

The runner's :class:`~nornir_bench.runners._keeper.Keeper` hands the kept loop to one run at a
time; a run started while another is using it (``nr.run`` from two threads at once on one
runner) gets a loop of its own, whose connections are closed when it ends.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING

from nornir_bench.core.connections import (
    CLOSE_TIMEOUT,
    HeldConnections,
    aclose_connections,
    holds_async_connections,
)
from nornir_bench.core.loops import close_loop, new_event_loop

if TYPE_CHECKING:
    from nornir.core.inventory import Host

__all__ = ["KeptLoop"]


class KeptLoop:
    """An event loop for runs, opened at a run's start, and the hosts holding async
    connections on it between runs.

    Args:
        implementation: the loop implementation (``"asyncio"``, ``"uvloop"`` ...).
    """

    def __init__(self, implementation: str) -> None:
        self.implementation = implementation
        self.loop: asyncio.AbstractEventLoop | None = None
        self.held: HeldConnections[Host] = HeldConnections()  # async ones, on the loop

    def open(self) -> asyncio.AbstractEventLoop:
        """The loop for a run: the one kept, or a new one."""
        if self.loop is None or self.loop.is_closed():
            self.loop = new_event_loop(self.implementation)
        return self.loop

    def holds(self, hosts: Iterable[Host]) -> bool:
        """After a run that ended normally over ``hosts``: whether some host holds an async
        connection opened on the loop (then it is worth keeping)."""
        held = self.held
        for host in hosts:
            held.note(host.name, host if holds_async_connections(host) else None)
        held.keep_if(holds_async_connections)  # closed meanwhile by other means
        return bool(held)

    def close(self, *, hosts: Iterable[Host] = (), wait: bool = True) -> None:
        """Close the held connections and ``hosts``' async ones, on the loop, then the loop.
        Not ``wait``: a run abandoned by a second Ctrl-C, which waits for nothing (neither the
        connections' closing nor the threads of blocking calls)."""
        loop, self.loop = self.loop, None
        held = [*self.held.take_all(), *hosts]
        if loop is None or loop.is_closed():
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            self._close_now(loop, held, wait)
            return
        # Called where another loop runs (the runner garbage-collected during someone else's
        # run, or closed from async code): a thread has no running loop, and the kept one is
        # idle, so it can run there. Bounded: closing each connection is.
        closer = threading.Thread(
            target=self._close_now, args=(loop, held, wait), name="nornir-bench-loop-close"
        )
        closer.start()
        closer.join(CLOSE_TIMEOUT + 5)

    def _close_now(self, loop: asyncio.AbstractEventLoop, held: list[Host], wait: bool) -> None:
        """Close ``held``'s async connections on ``loop`` (idle, and no loop runs in this
        thread), then ``loop``."""
        try:
            if held and wait:
                loop.run_until_complete(aclose_connections(held))
        finally:
            close_loop(loop, wait_for_threads=wait)
