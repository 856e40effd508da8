"""Whether a connection kept from an earlier run is still alive, judged without writing to the
device; a dead one is dropped before the host's task can get it, so the task opens a new one.

Connections live across runs (and a job's steps), so a device that restarted, or closed an
idle session (its ``exec-timeout``), leaves a dead session in ``host.connections``: the next
run would fail on it. Before a host's task starts (the core's ``start_host``, on every runner
and in workers), each connection the host keeps is asked, at the transport only: netmiko's
``is_alive()`` writes to the channel, which can desync a slow device, and reports a session in
CLOSE_WAIT alive. The answers, in order:

1. the connection's own ``alive()`` method, if it has one (the hook for connection plugins:
   return whether the session can still be used, without touching the device);
2. its session (nornir plugins keep it as ``connection``): a paramiko channel's transport
   (netmiko's ``remote_conn``) is active and open; an asyncssh connection is not closed; and
   for either, or a plain socket, the socket has not seen the peer close it (a non-blocking
   ``recv(1, MSG_PEEK)`` would return ``b""``: asked of the kernel, nothing read);
3. anything else counts as alive: a dead session found while the task runs is then the retry
   policy's business (a reconnect), as before.

It costs nothing for a host that keeps no connection, and a few microseconds a connection
(docs/benchmarks.md).
"""

from __future__ import annotations

import array
import fcntl
import logging
import select
import socket
import termios
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nornir.core.inventory import Host

__all__ = ["bytes_waiting", "connection_alive", "drop_dead_connections", "socket_open"]

logger = logging.getLogger("nornir_bench.connections")

def connection_alive(connection: Any) -> bool:
    """Whether a kept connection (a nornir connection plugin object) can still be used."""
    alive = getattr(connection, "alive", None)
    if callable(alive):
        return bool(alive())
    session = getattr(connection, "connection", None)
    return True if session is None else session_alive(session)


def session_alive(session: Any) -> bool:
    """Whether a session object (netmiko's, asyncssh's, a socket) still has its peer."""
    if isinstance(session, socket.socket) or callable(getattr(session, "recv_into", None)):
        return socket_open(session)
    channel = getattr(session, "remote_conn", None)  # netmiko: a paramiko channel
    if channel is not None and hasattr(channel, "get_transport"):
        transport = channel.get_transport()
        if channel.closed or transport is None or not transport.is_active():
            return False
        sock = getattr(transport, "sock", None)
        return socket_open(sock) if isinstance(sock, socket.socket) else True
    is_closed = getattr(session, "is_closed", None)  # asyncssh's SSHClientConnection
    if callable(is_closed):
        if is_closed():
            return False
        sock = session.get_extra_info("socket")
        return True if sock is None else socket_open(sock)
    if callable(getattr(session, "fileno", None)):  # an event loop's transport socket
        return socket_open(session)
    return True


def socket_open(sock: Any) -> bool:
    """Whether the peer of ``sock`` (a socket, or anything with its ``fileno()``) has not
    closed it, asked of the kernel without reading: nothing to read, or bytes waiting (not an
    end of file or a reset). The socket's own mode and timeout are left alone: another thread
    (paramiko's) or an event loop may be using it."""
    fd = sock.fileno()
    if fd < 0:
        return False
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLPRI)
    try:
        events = poller.poll(0)
    except OSError:
        return False
    if not events:
        return True  # nothing to read: still connected
    flags = events[0][1]
    if flags & (select.POLLHUP | select.POLLERR | select.POLLNVAL):
        return False
    waiting = array.array("i", [0])
    try:
        fcntl.ioctl(fd, termios.FIONREAD, waiting, True)
    except OSError:
        return False
    return waiting[0] > 0  # readable with nothing to read: the end of file


def bytes_waiting(sock: Any) -> bool:
    """Whether the kernel holds bytes from the peer of ``sock`` that nobody has read yet."""
    fd = sock.fileno()
    if fd < 0:
        return False
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    try:
        return bool(poller.poll(0))
    except OSError:
        return False


def drop_dead_connections(host: Host) -> None:
    """Close and forget each of ``host``'s kept connections that is dead: the task opens a
    new one when it asks for it."""
    for name, connection in list(host.connections.items()):
        if connection_alive(connection):
            continue
        del host.connections[name]
        logger.info("%s: the kept %r connection was closed by the device; opening a new one",
                    host.name, name)
        try:
            connection.close()
        except Exception:  # it is dead already: what is left to free, freed
            logger.debug("%s: closing the dead %r connection", host.name, name, exc_info=True)
