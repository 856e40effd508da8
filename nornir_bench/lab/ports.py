"""Loopback ports for a lab: ``free_port_range`` (free now), ``port_free``, and who listens on
one (``port_holder``, ``listening_ports``: from ``/proc``, in this network namespace)."""

from __future__ import annotations

import os
import random
import socket
from contextlib import ExitStack
from pathlib import Path

from nornir_bench.lab._errors import LabError

__all__ = ["free_port_range", "listening_ports", "port_free", "port_holder"]

_LISTEN = "0A"  # a socket's state in /proc/net/tcp


def free_port_range(count: int, attempts: int = 200) -> int:
    """The first of ``count`` consecutive loopback ports that were all free a moment ago.

    Drawn below the ephemeral range: right after a benchmark, tens of thousands of ephemeral
    ports sit in TIME_WAIT for a minute, and those cannot be bound (not even with
    SO_REUSEADDR, which the connections that left them did not set).

    Raises:
        LabError: no such range found in ``attempts`` draws.
    """
    low = min(_ephemeral_start(), 65536) - count
    for _ in range(attempts):
        first = random.randint(20000, low) if low > 20000 else random.randint(1024, 65536 - count)
        with ExitStack() as stack:
            try:
                for port in range(first, first + count):
                    sock = stack.enter_context(socket.socket())
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as servers bind
                    sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        return first
    raise LabError(f"no {count} consecutive free loopback ports found")


def _ephemeral_start() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def port_free(port: int) -> bool:
    """Whether a server can listen on ``port`` of 127.0.0.1 now (bound as servers bind)."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def port_holder(port: int) -> int | None:
    """The process listening on TCP ``port`` (any local address), if one this process can see."""
    inodes = {inode for inode, held in _listeners().items() if held == port}
    if not inodes:
        return None
    for entry in os.listdir("/proc"):
        if entry.isdigit() and inodes & _socket_inodes(int(entry)):
            return int(entry)
    return None


def listening_ports(pid: int) -> set[int]:
    """The TCP ports process ``pid`` listens on (in its own network namespace)."""
    listeners = _listeners(f"/proc/{pid}/net")
    return {listeners[inode] for inode in _socket_inodes(pid) if inode in listeners}


def _listeners(tables: str = "/proc/net") -> dict[str, int]:
    """Each listening TCP socket's inode, and its port (``tables``: a namespace's, as seen by
    one of its processes, ``/proc/PID/net``)."""
    found = {}
    for table in (f"{tables}/tcp", f"{tables}/tcp6"):
        try:
            rows = Path(table).read_text(encoding="ascii").splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) > 9 and fields[3] == _LISTEN:
                found[fields[9]] = int(fields[1].rsplit(":", 1)[1], 16)
    return found


def _socket_inodes(pid: int) -> set[str]:
    """The inodes of process ``pid``'s open sockets."""
    found: set[str] = set()
    try:
        descriptors = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return found
    for descriptor in descriptors:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{descriptor}")
        except OSError:
            continue
        if target.startswith("socket:["):
            found.add(target[len("socket:[") : -1])
    return found
