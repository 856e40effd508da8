"""``nornir-bench rtt-server``: an :class:`~nornir_bench.lab.rtt_server.RttServer` served
until SIGINT or SIGTERM, with the open-file limit raised for its connections."""

from __future__ import annotations

import asyncio
import signal
import sys
from typing import TextIO

from nornir_bench.core.loops import new_event_loop
from nornir_bench.lab.rtt_server import RttServer

__all__ = ["DEFAULT_RTT_PORT", "raise_open_file_limit", "run_rtt_server"]

DEFAULT_RTT_PORT = 7000


def raise_open_file_limit() -> int | None:
    """Raise this process's soft limit on open files to its hard limit; returns the new limit.

    Every connection is a file descriptor: 10,000 hosts in flight need more than the usual
    soft limit of 1,024. Where the limit cannot be read or raised, the current one stays.
    """
    try:
        import resource
    except ImportError:  # Windows: no such limit to raise
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    # macOS reports an unlimited hard limit but refuses a soft limit above OPEN_MAX.
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
    if target > soft:
        for attempt in (target, 10_240):
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (attempt, hard))
                return attempt
            except (ValueError, OSError):
                continue
    return soft


def run_rtt_server(
    address: str = "127.0.0.1",
    port: int = DEFAULT_RTT_PORT,
    delay: float = 0.05,
    jitter: float = 0.0,
    *,
    ports: int = 1,
    out: TextIO | None = None,
    any_address: bool = False,
) -> None:
    """Serve an :class:`RttServer` until SIGINT (Ctrl-C) or SIGTERM: ``nornir-bench rtt-server``.

    Prints one line beginning ``rtt server ready:`` with ``address:port`` (``address:first-last``
    with ``ports`` > 1) once listening, and one line of counters when stopped. The options
    are :class:`RttServer`'s. Runs its own event loop (uvloop when installed), so it
    must be called from the main thread with no loop running.

    Raises:
        LabError: for a bad option or an address it cannot listen on.
    """
    server = RttServer(  # checks options
        address, port, ports=ports, delay=delay, jitter=jitter, any_address=any_address
    )
    limit = raise_open_file_limit()
    loop = new_event_loop()
    try:
        loop.run_until_complete(_serve(server, limit, out or sys.stdout))
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


async def _serve(server: RttServer, limit: int | None, out: TextIO) -> None:
    loop = asyncio.get_running_loop()
    stopped = asyncio.Event()
    signals = (signal.SIGINT, signal.SIGTERM)
    for sig in signals:  # before listening: a signal from now on stops the server cleanly
        loop.add_signal_handler(sig, stopped.set)
    try:
        await server.start()
        try:
            files = "" if limit is None else f", open-file limit {limit}"
            print(
                f"rtt server ready: {server.where} "
                f"(delay {server.delay * 1000:g} ms, jitter {server.jitter * 1000:g} ms{files})",
                file=out,
                flush=True,
            )
            await stopped.wait()
        finally:
            await server.aclose()
    finally:
        for sig in signals:
            loop.remove_signal_handler(sig)
    stats = server.stats
    print(
        f"rtt server stopped: {_count(stats.accepted, 'connection')}, "
        f"{_count(stats.requests, 'request')}, "
        f"at most {stats.peak_connections} at once",
        file=out,
        flush=True,
    )


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'s' * (number != 1)}"
