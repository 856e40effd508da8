"""The asyncio runner's event loop, kept from one ``nr.run`` to the next while hosts hold
async connections opened on it.

nornir keeps connections across runs until ``nr.close_connections()``; an async connection (an
asyncssh session) can only be used on the loop that opened it, so that loop must outlive the run
for the next run to reuse the session: a three-step workflow then logs in once per device, not
three times. The loop is kept only while some host holds such a connection: it is closed (its
connections first, on it) after a run that leaves none (``nr.close_connections()``, or tasks
that open no async connection), by :meth:`LoopKeeper.close` (``runner.close()``), when the
runner is garbage-collected, and at interpreter exit. Between runs it is idle: no thread, no
callback runs; the operating system buffers whatever the devices send.

One run at a time uses the kept loop. A run started while another is using it (``nr.run`` from
two threads at once on one runner) gets a loop of its own, whose connections are closed when
it ends, as before loops were kept.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from nornir_bench.core.connections import (
    CLOSE_TIMEOUT,
    HeldConnections,
    aclose_connections,
    holds_async_connections,
)
from nornir_bench.core.loops import new_event_loop

if TYPE_CHECKING:
    from nornir.core.inventory import Host

__all__ = ["LoopKeeper"]


class LoopKeeper:
    """Hands a runner's runs their event loop, and keeps it while connections live on it.

    The runner holds the keeper; the keeper does not hold the runner, so the finalizer below
    (which holds the keeper) lets the runner be collected, and then closes the loop.

    Args:
        owner: the runner; when it is garbage-collected, the kept loop is closed.
        implementation: the loop implementation (``"asyncio"``, ``"uvloop"`` ...).
        close_loop: closes a loop as ``asyncio.run`` does (the runner's own function, which
            knows how to end what a run left on it); ``wait_for_threads=False`` for a run
            abandoned by a second Ctrl-C.
    """

    def __init__(
        self,
        owner: object,
        implementation: str,
        close_loop: Callable[..., None],
    ) -> None:
        self.implementation = implementation
        self.close_loop = close_loop
        self.loop: asyncio.AbstractEventLoop | None = None
        self.in_use = False
        self.held: HeldConnections[Host] = HeldConnections()  # async ones, on the kept loop
        self.lock = threading.Lock()
        weakref.finalize(owner, self.close)  # also called at interpreter exit

    def take(self) -> tuple[asyncio.AbstractEventLoop, bool]:
        """The loop for a run, and whether it is the kept one (else a loop of its own)."""
        with self.lock:
            if self.in_use:
                return new_event_loop(self.implementation), False
            self.in_use = True
            if self.loop is None or self.loop.is_closed():
                self.loop = new_event_loop(self.implementation)
            return self.loop, True

    def give_back(self, loop: asyncio.AbstractEventLoop, hosts: Iterable[Host]) -> None:
        """The kept loop after a run that ended normally over ``hosts``: kept if some host
        holds an async connection opened on it, else closed."""
        held = self.held
        for host in hosts:
            held.note(host.name, host if holds_async_connections(host) else None)
        held.keep_if(holds_async_connections)  # closed meanwhile by other means
        with self.lock:
            self.in_use = False
            if held:
                return
            self.loop = None
        self.close_loop(loop)

    def discard(
        self, loop: asyncio.AbstractEventLoop, hosts: Iterable[Host], *, wait: bool
    ) -> None:
        """The kept loop after a run that did not end well (Ctrl-C, an error): its connections
        and the run's ``hosts``' are closed on it (unless not ``wait``: a run abandoned by a
        second Ctrl-C does not wait for anything), then the loop."""
        with self.lock:
            held = [*self.held.take_all(), *hosts]
            self.in_use = False
            if self.loop is loop:
                self.loop = None
        try:
            if wait:
                loop.run_until_complete(aclose_connections(held))
        finally:
            self.close_loop(loop, wait_for_threads=wait)

    def close(self) -> None:
        """Close the held connections, on the kept loop, and the loop (unless a run is using
        it: that run closes it as it ends)."""
        with self.lock:
            if self.in_use:
                return
            loop, self.loop = self.loop, None
            held = self.held.take_all()
        if loop is None or loop.is_closed():
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            self._close_now(loop, held)
            return
        # Called where another loop runs (the runner garbage-collected during someone else's
        # run, or closed from async code): a thread has no running loop, and the kept one is
        # idle, so it can run there. Bounded: closing each connection is.
        closer = threading.Thread(
            target=self._close_now, args=(loop, held), name="nornir-bench-loop-close"
        )
        closer.start()
        closer.join(CLOSE_TIMEOUT + 5)

    def _close_now(self, loop: asyncio.AbstractEventLoop, held: list[Host]) -> None:
        """Close ``held``'s async connections on ``loop`` (idle, and no loop runs in this
        thread), then ``loop``."""
        try:
            if held:
                loop.run_until_complete(aclose_connections(held))
        finally:
            self.close_loop(loop)
