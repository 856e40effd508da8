"""Loopback servers that fail as SSH servers do, for tests and benchmarks, each counting the
connections it took: :func:`silent_server` takes every connection and never says a word (a
hung sshd, a port forward to nothing, a bastion that is down but for its TCP stack);
:func:`closing_server` closes each at once, before any banner (OpenSSH past its
``MaxStartups``)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

__all__ = ["FaultyServer", "closing_server", "silent_server"]

_STOP_WAIT = 10.0  # seconds for the accepting thread to end once its listener is shut


@dataclass
class FaultyServer:
    """Where a faulty server listens (127.0.0.1), and how many connections it took."""

    port: int
    accepted: int = 0


@contextmanager
def silent_server() -> Iterator[FaultyServer]:
    """A server on 127.0.0.1 that accepts every connection and never sends a byte; every
    connection it took is closed as the block ends."""
    with _serving(keep=True) as server:
        yield server


@contextmanager
def closing_server() -> Iterator[FaultyServer]:
    """A server on 127.0.0.1 that closes every connection as soon as it accepts it."""
    with _serving(keep=False) as server:
        yield server


@contextmanager
def _serving(*, keep: bool) -> Iterator[FaultyServer]:
    listener = socket.create_server(("127.0.0.1", 0), backlog=128)
    server = FaultyServer(listener.getsockname()[1])
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:  # shut: the block is over
                return
            server.accepted += 1
            if keep:
                held.append(conn)
            else:
                conn.close()

    thread = threading.Thread(target=accept, name="nornir-bench-faulty-server", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        thread.join(_STOP_WAIT)
        for conn in held:
            conn.close()
