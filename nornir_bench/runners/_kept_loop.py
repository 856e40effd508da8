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
    aclose_connections,
    holds_async_connections,
)
from nornir_bench.core.loops import new_event_loop

if TYPE_CHECKING:
    from nornir.core.inventory import Host

__all__ = ["LoopKeeper"]


class LoopKeeper:
    """Hands a runner's runs their event loop, and keeps it while connections live on it.

    Args:
        owner: the runner; when it is garbage-collected, the kept loop is closed.
        implementation: the loop implementation (``"asyncio"``, ``"uvloop"`` ...).
        close_loop: closes a loop as ``asyncio.run`` does (the runner's own function, which
            knows how to end what a run left on it).
    """

    def __init__(
        self,
        owner: object,
        implementation: str,
        close_loop: Callable[[asyncio.AbstractEventLoop], None],
    ) -> None:
        self._state = _Kept(implementation, close_loop)
        weakref.finalize(owner, self._state.close)  # also called at interpreter exit

    def take(self) -> tuple[asyncio.AbstractEventLoop, bool]:
        """The loop for a run, and whether it is the kept one (else a loop of its own)."""
        return self._state.take()

    def give_back(self, loop: asyncio.AbstractEventLoop, hosts: Iterable[Host]) -> None:
        """The kept loop after a run that ended normally over ``hosts``: kept if some host
        holds an async connection opened on it, else closed."""
        self._state.give_back(loop, hosts)

    def forget(self, loop: asyncio.AbstractEventLoop) -> None:
        """The kept loop was closed by the run that took it (Ctrl-C): nothing is held."""
        self._state.forget(loop)

    @property
    def holding(self) -> list[Host]:
        """The hosts holding async connections on the kept loop."""
        return list(self._state.held.values())

    def close(self) -> None:
        """Close the held connections, on the kept loop, and the loop."""
        self._state.close()


class _Kept:
    """The state :class:`LoopKeeper` keeps: apart from the runner, so that the finalizer does
    not keep the runner alive."""

    def __init__(
        self, implementation: str, close_loop: Callable[[asyncio.AbstractEventLoop], None]
    ) -> None:
        self.implementation = implementation
        self.close_loop = close_loop
        self.loop: asyncio.AbstractEventLoop | None = None
        self.in_use = False
        self.held: dict[str, Host] = {}
        self.lock = threading.Lock()

    def take(self) -> tuple[asyncio.AbstractEventLoop, bool]:
        with self.lock:
            if self.in_use:
                return new_event_loop(self.implementation), False
            self.in_use = True
            if self.loop is None or self.loop.is_closed():
                self.loop = new_event_loop(self.implementation)
            return self.loop, True

    def give_back(self, loop: asyncio.AbstractEventLoop, hosts: Iterable[Host]) -> None:
        held = self.held
        for host in hosts:
            if holds_async_connections(host):
                held[host.name] = host
            elif held:
                held.pop(host.name, None)
        for name, host in list(held.items()):  # closed meanwhile by other means
            if not holds_async_connections(host):
                del held[name]
        with self.lock:
            self.in_use = False
            if held:
                return
            self.loop = None
        self.close_loop(loop)

    def forget(self, loop: asyncio.AbstractEventLoop) -> None:
        with self.lock:
            self.in_use = False
            if self.loop is loop:
                self.loop = None
            self.held.clear()

    def close(self) -> None:
        with self.lock:
            if self.in_use:  # a run is using it: that run closes it as it ends
                return
            loop, self.loop = self.loop, None
            held, self.held = list(self.held.values()), {}
        if loop is None or loop.is_closed():
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            _close_now(loop, held, self.close_loop)
            return
        # Called where another loop runs (the runner garbage-collected during someone else's
        # run, or closed from async code): a thread has no running loop, and the kept one is
        # idle, so it can run there. Bounded: closing each connection is.
        closer = threading.Thread(
            target=_close_now, args=(loop, held, self.close_loop), name="nornir-bench-loop-close"
        )
        closer.start()
        closer.join(CLOSE_TIMEOUT + 5)


def _close_now(
    loop: asyncio.AbstractEventLoop,
    held: list[Host],
    close_loop: Callable[[asyncio.AbstractEventLoop], None],
) -> None:
    """Close ``held``'s async connections on ``loop`` (idle, and no loop runs in this thread),
    then ``loop``."""
    try:
        if held:
            loop.run_until_complete(aclose_connections(held))
    finally:
        close_loop(loop)
