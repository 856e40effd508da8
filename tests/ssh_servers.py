"""Real SSH servers on loopback for tests (asyncssh, on an event loop of their own in a
thread): started, and stopped with every connection they took, even when the test fails.

- :func:`ssh_server`: a server of the test's own making (its ``asyncssh.SSHServer``);
- :func:`bastion`: a jump host, forwarding channels to 127.0.0.1 only, counting what it saw
  (logins, channels, connections), and killed at will (:meth:`Bastion.kill`)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import asyncssh

from tests.waiting import HANG_GUARD

__all__ = ["JUMP_PASSWORD", "Bastion", "bastion", "jump_data", "ssh_server"]

_SETTLE_TURNS = 5  # turns of the loop after its connections closed, before it stops


def _close_transports(loop: asyncio.AbstractEventLoop) -> None:
    """Close every transport ``loop`` (a selector loop) still reads or writes: the server's
    own, which it stops."""
    watched = loop._selector.get_map().values()  # type: ignore[attr-defined]
    for key in list(watched):
        for handle in key.data:
            owner = getattr(getattr(handle, "_callback", None), "__self__", None)
            if isinstance(owner, asyncio.BaseTransport):
                owner.close()
                break


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
        # One the far end has not closed yet (on a busy machine) is closed here: a socket left
        # open is reported unclosed in whichever later test collects it.
        _close_transports(loop)
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


JUMP_PASSWORD = "bastion-secret-4d2"


@dataclass
class Bastion:
    """A running bastion (:func:`bastion`) and what it saw."""

    port: int
    key: asyncssh.SSHKey
    logins: list[str] = field(default_factory=list)  # passwords offered
    tunnels: list[tuple[str, int]] = field(default_factory=list)
    ended: int = 0  # connections closed, by either side
    refuse: int = 0  # the first connections closed before login (OpenSSH's MaxStartups)
    connections: int = 0
    held: list[asyncssh.SSHServerConnection] = field(default_factory=list)
    loop: asyncio.AbstractEventLoop | None = None

    def kill(self) -> None:
        """Die as a killed bastion does: every connection cut, the forwarded TCP connections
        with them, and each new one closed before login."""
        self.refuse = 1 << 30
        assert self.loop is not None
        for conn in list(self.held):
            self.loop.call_soon_threadsafe(conn.abort)

    def line(self) -> str:
        return f"[127.0.0.1]:{self.port} {self.key.export_public_key().decode().strip()}\n"


@contextmanager
def bastion() -> Iterator[Bastion]:
    """A bastion on 127.0.0.1 letting in any user with :data:`JUMP_PASSWORD`."""
    jump = Bastion(0, asyncssh.generate_private_key("ssh-ed25519"))

    class Jump(asyncssh.SSHServer):
        def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
            jump.connections += 1
            jump.held.append(conn)
            jump.loop = asyncio.get_running_loop()
            if jump.connections <= jump.refuse:  # before login, as OpenSSH's MaxStartups
                asyncio.get_running_loop().call_soon(conn.abort)

        def begin_auth(self, username: str) -> bool:
            return True

        def password_auth_supported(self) -> bool:
            return True

        def validate_password(self, username: str, password: str) -> bool:
            jump.logins.append(password)
            return password == JUMP_PASSWORD

        def connection_requested(
            self, dest_host: str, dest_port: int, orig_host: str, orig_port: int
        ) -> bool:
            jump.tunnels.append((dest_host, dest_port))
            return dest_host == "127.0.0.1"  # loopback only

        def connection_lost(self, exc: Exception | None) -> None:
            jump.ended += 1

    with ssh_server(jump.key, Jump) as jump.port:
        yield jump


def jump_data(jump: Bastion, sessions: int = 2) -> dict[str, Any]:
    """The inventory's ``jump_host`` through ``jump``, ``sessions`` a connection."""
    return {"host": "127.0.0.1", "port": jump.port, "username": "ops",
            "password": JUMP_PASSWORD, "max_sessions": sessions}
