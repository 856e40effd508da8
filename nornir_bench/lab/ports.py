"""Loopback ports for a lab that are free now: ``free_port_range``."""

from __future__ import annotations

import random
import socket
from contextlib import ExitStack
from pathlib import Path

from nornir_bench.lab._errors import LabError

__all__ = ["free_port_range"]


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
