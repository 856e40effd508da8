"""Real SSH servers on loopback for tests (asyncssh, on an event loop of their own in a
thread): started, and stopped with every connection they took, even when the test fails."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import asyncssh

from tests.waiting import HANG_GUARD

__all__ = ["ssh_server"]

_SETTLE_TURNS = 5  # turns of the loop after its connections closed, before it stops


@contextmanager
def ssh_server(
    key: asyncssh.SSHKey, server_class: Callable[[], asyncssh.SSHServer]
) -> Iterator[int]:
    """An SSH server on 127.0.0.1 showing ``key``, each connection served by a new
    ``server_class()``; its port."""
    loop = asyncio.new_event_loop()
    connections: list[asyncssh.SSHServerConnection] = []
    listening: dict[str, Any] = {}

    class Tracked(server_class):  # type: ignore[misc, valid-type]
        def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
            connections.append(conn)
            super().connection_made(conn)

    async def serve() -> int:
        listener = await asyncssh.listen(
            "127.0.0.1", 0, server_host_keys=[key], server_factory=Tracked
        )
        listening["it"] = listener
        return int(listener.sockets[0].getsockname()[1])

    async def stop() -> None:
        listening["it"].close()
        await listening["it"].wait_closed()
        for conn in connections:
            conn.close()
        for conn in connections:
            await conn.wait_closed()
        # What their closing closed in turn (a bastion's forwarded TCP connections) releases
        # its socket on a later turn of the loop: a loop stopped before then leaves it open.
        for _ in range(_SETTLE_TURNS):
            await asyncio.sleep(0)

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield asyncio.run_coroutine_threadsafe(serve(), loop).result(HANG_GUARD)
    finally:
        if "it" in listening:
            asyncio.run_coroutine_threadsafe(stop(), loop).result(HANG_GUARD)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(HANG_GUARD)
        loop.close()
