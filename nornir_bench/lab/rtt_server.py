"""The emulated-RTT device: a TCP server that answers every request line after a delay.

A benchmark of nornir runners against real sockets needs thousands of "devices" that each take
a known time to answer, on one machine. :class:`RttServer` is one such device standing in for
all of them: every newline-terminated line a client sends comes back, byte for byte, ``delay``
seconds after it arrived (± ``jitter``), and a connection may carry any number of requests.

It is built to hold 10,000 connections at once: its command raises the process's open-file
limit to the hard limit, it listens with a backlog of 65,535 (the kernel caps it at
``net.core.somaxconn``), and costs no task per connection or request: a protocol object per
connection and one timer handle per connection with replies pending. Replies on one connection
leave in order.

:func:`~nornir_bench.lab.rtt_command.run_rtt_server` is ``nornir-bench rtt-server``.
"""

from __future__ import annotations

import asyncio
import ipaddress
import random
import time
from collections import deque
from dataclasses import dataclass
from types import TracebackType
from typing import cast

from nornir_bench.core.checks import is_number, whole_number
from nornir_bench.lab._errors import LabError
from nornir_bench.tasks.synthetic.simulated import MAX_RTT

__all__ = ["RttServer", "RttServerStats"]

_BACKLOG = 65535
# A client sending this much without a newline is not speaking the protocol: drop it.
_MAX_LINE = 64 * 1024
# Seconds between checks that the connections aclose aborted are gone.
_SETTLE = 0.001


@dataclass
class RttServerStats:
    """Counters of a running :class:`RttServer`, updated as connections come and go."""

    connections: int = 0
    """Connections open now."""
    peak_connections: int = 0
    """The most connections that were open at once."""
    accepted: int = 0
    """Connections accepted in all."""
    requests: int = 0
    """Request lines received in all."""


class RttServer:
    """An asyncio server that echoes each request line back after ``delay`` seconds.

    Use it in a running event loop: ``async with RttServer(port=0) as server: ...`` (or
    ``await server.start()`` ... ``await server.aclose()``); ``server.port`` is then the port
    it listens on, also when asked for port 0.

    Args:
        address: the address to listen on: a loopback one (127.x.x.x, ``localhost``, ``::1``)
            unless ``any_address``.
        any_address: let ``address`` be any address, ``0.0.0.0`` included (every interface:
            anyone on the network can then reach the server).
        port: the port; 0 lets the system pick a free one.
        ports: listen on this many consecutive ports from ``port``, all one server. Emulating
            thousands of devices on one address:port makes every run's connections share
            one destination; the TIME_WAIT entries they leave then slow the kernel's choice
            of a local port for the next run's connections, which spreading them avoids.
        delay: seconds between a request line arriving and its reply leaving (>= 0).
        jitter: each reply's delay is drawn uniformly from ``delay ± jitter``, never below 0.
        backlog: the listen queue length.

    Raises:
        LabError: for a bad option, saying what is allowed.
    """

    def __init__(
        self,
        address: str = "127.0.0.1",
        port: int = 0,
        *,
        ports: int = 1,
        delay: float = 0.05,
        jitter: float = 0.0,
        backlog: int = _BACKLOG,
        any_address: bool = False,
    ) -> None:
        if not isinstance(address, str) or not address:
            raise LabError(
                f"rtt server: address must be a host name or IP address, got {address!r}"
            )
        if not any_address and not _is_loopback(address):
            raise LabError(
                f"rtt server: address {address!r} is not a loopback address: it listens on "
                "127.x.x.x, localhost or ::1 unless told to listen elsewhere (--any-address)"
            )
        whole_number("rtt server: port", port, minimum=0, maximum=65535, error=LabError)
        whole_number("rtt server: ports", ports, minimum=1, error=LabError)
        if ports > 1 and (port == 0 or port + ports - 1 > 65535):
            raise LabError(
                f"rtt server: {ports} ports need a first port from 1 to {65536 - ports}, "
                f"got {port} (port 0 picks a single free port)"
            )
        for name, value in (("delay", delay), ("jitter", jitter)):
            if not is_number(value, 0, MAX_RTT):
                raise LabError(
                    f"rtt server: {name} must be a number of seconds from 0 to {MAX_RTT:g} (an "
                    f"hour: longer than any device takes to answer), got {value!r}"
                )
        whole_number("rtt server: backlog", backlog, minimum=1, error=LabError)
        self.address = address
        self.port = port
        self.ports = ports
        self.delay = float(delay)
        self.jitter = float(jitter)
        self.backlog = backlog
        self.stats = RttServerStats()
        self._servers: list[asyncio.Server] = []
        self._open: set[_EchoAfterDelay] = set()
        self._closing = False

    @property
    def where(self) -> str:
        """``address:port``, or ``address:first-last`` on several ports."""
        last = f"-{self.port + self.ports - 1}" if self.ports > 1 else ""
        return _join(self.address, self.port) + last

    async def start(self) -> None:
        """Listen; afterwards ``port`` is the real (first) port.

        Raises:
            LabError: when the address cannot be listened on (a port in use, no permission).
        """
        if self._servers:
            return
        self._closing = False
        loop = asyncio.get_running_loop()
        for port in range(self.port, self.port + self.ports):
            try:
                server = await loop.create_server(
                    lambda: _EchoAfterDelay(self),
                    self.address,
                    port,
                    backlog=self.backlog,
                    reuse_address=True,
                )
            except OSError as exc:
                await self.aclose()
                raise LabError(
                    f"rtt server: cannot listen on {_join(self.address, port)}: "
                    f"{exc.strerror or exc}"
                ) from exc
            self._servers.append(server)
        self.port = self._servers[0].sockets[0].getsockname()[1]

    async def aclose(self) -> None:
        """Stop listening and drop every open connection (their pending replies are not sent)."""
        servers, self._servers = self._servers, []
        if not servers:
            return
        loop = asyncio.get_running_loop()
        self._closing = True
        # asyncio's Server.close() races with a connection it has accepted but not yet set up
        # (CPython gh-109564): that connection's socket is never closed. So first stop
        # accepting, let the accepted ones set up (they abort themselves, seeing us closing),
        # and only then close. (uvloop's servers accept in C, and proactor loops have no
        # readers: nothing to remove there.)
        for server in servers:
            for sock in server.sockets:
                try:
                    loop.remove_reader(sock.fileno())
                except NotImplementedError:
                    pass
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        for server in servers:
            server.close()
        for connection in list(self._open):
            connection.abort()
        give_up = loop.time() + 1.0
        while self._open and loop.time() < give_up:  # until each has been told it is gone
            await asyncio.sleep(_SETTLE)
        for server in servers:
            await server.wait_closed()

    async def __aenter__(self) -> RttServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"RttServer({self.where}, delay={self.delay:g}, jitter={self.jitter:g})"


class _EchoAfterDelay(asyncio.Protocol):
    """One connection: complete lines are queued with their due time; one timer sends them."""

    def __init__(self, server: RttServer) -> None:
        self._server = server
        self._stats = server.stats
        self._loop = asyncio.get_running_loop()
        self._transport: asyncio.Transport | None = None
        self._partial = b""
        self._due: deque[tuple[float, bytes]] = deque()
        self._timer: asyncio.TimerHandle | None = None
        self._eof = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        stats = self._stats
        stats.accepted += 1
        stats.connections += 1
        if stats.connections > stats.peak_connections:
            stats.peak_connections = stats.connections
        self._server._open.add(self)
        if self._server._closing:
            self.abort()

    def data_received(self, data: bytes) -> None:
        if self._partial:
            data = self._partial + data
        end = data.rfind(b"\n") + 1
        self._partial = data[end:]
        if len(self._partial) > _MAX_LINE:
            self.abort()
            return
        if not end:
            return
        complete = data[:end]
        server = self._server
        self._stats.requests += complete.count(b"\n")
        now = time.monotonic()
        delay, jitter = server.delay, server.jitter
        if jitter:
            for line in complete.splitlines(keepends=True):
                self._queue(now + max(0.0, delay + random.uniform(-jitter, jitter)), line)
        else:  # lines that arrived together are due together: one entry, one write
            self._queue(now + delay, complete)

    def _queue(self, due: float, reply: bytes) -> None:
        if self._due and due < self._due[-1][0]:
            due = self._due[-1][0]  # never overtake an earlier request on this connection
        self._due.append((due, reply))
        if self._timer is None:
            self._timer = self._loop.call_later(due - time.monotonic(), self._send_due)

    def _send_due(self) -> None:
        # Due times are read from the precise clock, not the loop's: uvloop's clock is cached
        # per iteration in whole milliseconds, so its timers can fire a little early, and a
        # reply must never leave before its delay is over. An early timer is set again.
        self._timer = None
        transport = self._transport
        now = time.monotonic()
        due = self._due
        while due and due[0][0] <= now:
            reply = due.popleft()[1]
            if transport is not None and not transport.is_closing():
                transport.write(reply)
        if due:
            self._timer = self._loop.call_later(due[0][0] - now, self._send_due)
        elif self._eof and transport is not None:
            transport.close()

    def eof_received(self) -> bool:
        # Keep the connection half-open so replies still pending reach a client that has
        # sent its last request and shut down its side; it closes when they have left.
        self._eof = True
        if not self._due and self._transport is not None:
            self._transport.close()
        return True

    def connection_lost(self, exc: Exception | None) -> None:
        self._stats.connections -= 1
        self._server._open.discard(self)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._due.clear()
        self._transport = None

    def abort(self) -> None:
        if self._transport is not None:
            self._transport.abort()


def _is_loopback(address: str) -> bool:
    """Whether ``address`` is a loopback IP address or ``localhost`` (no name is resolved: a
    name's addresses may change between this check and listening)."""
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def _join(address: str, port: int) -> str:
    return f"[{address}]:{port}" if ":" in address else f"{address}:{port}"
