"""Time a real TCP connection to a host, and optionally one request and its reply.

``tcp_ping`` (blocking) and ``atcp_ping`` (awaitable) measure the same thing the same way:
the time to connect to ``host:port``, and with ``probe`` set, the time from sending
``probe + "\\n"`` to the first reply line. Against the emulated-RTT server
(``nornir-bench rtt-server``) that reply time is the server's delay plus the network's, which
is how a benchmark runs thousands of "devices" of known latency over real sockets.

What does not do I/O (checking the options, the address, the result, the errors) is
:class:`TcpPing`, shared by both; each twin holds only its socket calls.
"""

from __future__ import annotations

import asyncio
import socket
import time
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar, cast

from nornir_bench.core.checks import number, whole_number
from nornir_bench.core.deadlines import bounded
from nornir_bench.core.read_only import read_only
from nornir_bench.core.timeouts import within
from nornir_bench.core.wording import seconds_text
from nornir_bench.tasks._needs import needs

if TYPE_CHECKING:
    from nornir.core.task import Task

__all__ = ["DEFAULT_PING_TIMEOUT", "TcpPing", "atcp_ping", "tcp_ping"]

DEFAULT_PING_TIMEOUT = 5.0
_DEFAULT_PORT = 22  # SSH: what a network device is most likely to answer on

T = TypeVar("T")


class TcpPing(NamedTuple):  # not a frozen dataclass: built once per host, a tuple is 5x cheaper
    """One measurement, its options checked: where to connect, what to send, how long to wait.

    Attributes:
        host, port: where to connect.
        timeout: seconds for the connection and the reply together (at most the time the
            host's attempt has left).
        probe: the bytes sent once connected (``probe + "\\n"``), or ``None`` to only connect.
    """

    host: str
    port: int
    timeout: float
    probe: bytes | None

    @classmethod
    def for_task(cls, task: Task, port: int | None, timeout: float, probe: str | None) -> TcpPing:
        """The measurement of ``task``'s host: its ``hostname`` (else its name) and ``port``
        (else the host's port, else 22).

        Raises:
            ValueError: for a bad option, saying what is allowed.
        """
        host = task.host
        chosen = port if port is not None else (host.port or _DEFAULT_PORT)
        whole_number("tcp_ping: port", chosen, minimum=1, maximum=65535)
        number("tcp_ping: timeout", timeout, above=0, unit="a number of seconds")
        if probe is not None and (
            not isinstance(probe, str) or not probe or "\n" in probe or "\r" in probe
        ):
            raise ValueError(
                f"tcp_ping: probe must be one non-empty line of text (or None), got {probe!r}"
            )
        line = None if probe is None else (probe + "\n").encode()
        # Bounded by the time the host's attempt has left: a call the runner gives up at the
        # deadline then returns by itself, and leaves no thread behind.
        return cls(host.hostname or host.name, chosen, bounded(task, float(timeout)), line)

    @property
    def address(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    def result(self, connect: float, reply: float | None) -> dict[str, Any]:
        """The task's result: ``{"address": "h:p", "connect": s, "reply": s or None}``."""
        return {"address": self.address, "connect": connect, "reply": reply}

    def no_connection(self) -> TimeoutError:
        return TimeoutError(
            f"{self.address}: no TCP connection within {seconds_text(self.timeout)} s"
        )

    def no_reply(self) -> TimeoutError:
        return TimeoutError(f"{self.address}: no reply line within {seconds_text(self.timeout)} s")

    def closed(self) -> ConnectionResetError:
        return ConnectionResetError(f"{self.address}: the connection closed before a reply line")


@read_only()
@needs(descriptors=1)  # a plain socket
def tcp_ping(
    task: Task,
    port: int | None = None,
    *,
    timeout: float = DEFAULT_PING_TIMEOUT,
    probe: str | None = None,
) -> dict[str, Any]:
    """Connect to the host over TCP (blocking), timing it; with ``probe``, time one reply too.

    Args:
        port: the port; default the host's ``port``, else 22.
        timeout: seconds for connecting and the reply together; at most the time the host's
            attempt has left under the run's task_timeout or run_timeout.
        probe: a line to send once connected; the task then waits for one line back.

    Returns:
        ``{"address": "host:port", "connect": seconds, "reply": seconds or None}``.

    Raises:
        OSError: the connection was refused or failed (``ConnectionRefusedError`` ...).
        TimeoutError: no connection, or no reply line, within ``timeout``.
        ConnectionResetError: the peer closed before a reply line.
    """
    ping = TcpPing.for_task(task, port, timeout, probe)
    start = time.perf_counter()
    deadline = start + ping.timeout
    try:
        sock = socket.create_connection((ping.host, ping.port), timeout=ping.timeout)
    except TimeoutError:  # socket.timeout, and the system's own connect timeout
        raise ping.no_connection() from None
    with sock:
        connected = time.perf_counter()
        if ping.probe is None:
            return ping.result(connected - start, None)
        sock.sendall(ping.probe)
        received = b""
        while b"\n" not in received:
            left = deadline - time.perf_counter()
            if left <= 0:
                raise ping.no_reply()
            sock.settimeout(left)
            try:
                chunk = sock.recv(4096)
            except TimeoutError:
                raise ping.no_reply() from None
            if not chunk:
                raise ping.closed()
            received += chunk
        return ping.result(connected - start, time.perf_counter() - connected)


@read_only()
@needs(descriptors=1)
async def atcp_ping(
    task: Task,
    port: int | None = None,
    *,
    timeout: float = DEFAULT_PING_TIMEOUT,
    probe: str | None = None,
) -> dict[str, Any]:
    """The awaitable twin of :func:`tcp_ping`: same options, same result, same errors.

    The times are taken in the protocol callbacks (connected, first reply line), so a busy
    event loop delays the task but not the measurement more than it must.
    """
    ping = TcpPing.for_task(task, port, timeout, probe)
    loop = asyncio.get_running_loop()
    exchange = _Exchange(loop, ping.probe)
    start = time.perf_counter()
    try:
        replied = await within(exchange.run(loop, ping.host, ping.port), ping.timeout, TimeoutError)
    except TimeoutError:
        raise (ping.no_reply() if exchange.connected_at else ping.no_connection()) from None
    finally:
        exchange.close()
    if ping.probe is None:
        return ping.result(exchange.connected_at - start, None)
    if not replied:
        raise ping.closed()
    return ping.result(exchange.connected_at - start, exchange.replied_at - exchange.connected_at)


class _Exchange(asyncio.Protocol):
    """Connects, sends the probe as soon as connected, and notes the first reply line."""

    def __init__(self, loop: asyncio.AbstractEventLoop, probe: bytes | None) -> None:
        self._probe = probe
        self._received = b""
        self._transport: asyncio.WriteTransport | None = None
        self._replied: asyncio.Future[bool] = loop.create_future()
        self.connected_at = 0.0
        self.replied_at = 0.0

    async def run(self, loop: asyncio.AbstractEventLoop, host: str, port: int) -> bool:
        """Connect, then (with a probe) wait for the reply line; False if the peer closed first.

        One coroutine for both steps, so one deadline covers them.
        """
        await loop.create_connection(lambda: self, host, port)
        return True if self._probe is None else await self._replied

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.connected_at = time.perf_counter()
        self._transport = cast(asyncio.WriteTransport, transport)  # uvloop's: no subclass
        if self._probe is not None:
            self._transport.write(self._probe)

    def data_received(self, data: bytes) -> None:
        if self._replied.done():
            return
        self._received += data
        if b"\n" in self._received:
            self.replied_at = time.perf_counter()
            self._replied.set_result(True)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self._replied.done():
            self._replied.set_result(False)  # a result, not an exception: nobody may await it

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()
            self._transport = None
