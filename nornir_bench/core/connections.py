"""The connections hosts hold between runs, and closing them on the right event loop.

nornir keeps a host's open connections in ``host.connections`` from one ``nr.run`` to the
next, until the user calls ``nr.close_connections()``, and its connection plugins close
synchronously. An async connection (an asyncssh session) lives on the event loop that opened
it, so the runners that own a loop keep it while hosts hold connections opened on it (the
asyncio runner between runs, a processpool worker for its life) and close those connections on
that loop, awaiting ``aclose()``, when the loop ends. Blocking connections (netmiko) need no
loop.

nornir's ``nr.close_connections()`` is an ``nr.run`` of its own task: runners recognise it
(:func:`is_close_connections_task`) to let go of what they kept for the connections.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

from nornir_bench.core.closing import is_close_connections_task

if TYPE_CHECKING:
    from nornir.core.inventory import Host
    from nornir.core.plugins.connections import ConnectionPlugin

__all__ = [
    "CLOSE_TIMEOUT",
    "abandon_connections",
    "kept_session",
    "HeldConnections",
    "aclose_connection",
    "aclose_connections",
    "aclose_every_connection",
    "close_connections",
    "holds_async_connections",
    "is_close_connections_task",
]

logger = logging.getLogger(__name__)

# Seconds one connection may take to close: a peer that stopped answering must not hold the
# end of the run.
CLOSE_TIMEOUT = 5.0


Holder = TypeVar("Holder")
S = TypeVar("S", bound="ConnectionPlugin")  # a session kept as a host's connection


class HeldConnections(dict[str, Holder]):
    """Which hosts hold connections kept between runs, and what holds each: the one record of
    every keeper of connections, by host name.

    A kept event loop and a worker process record the host copy holding the connections
    (``HeldConnections[Host]``: the next run's copy of the host takes them over); the process
    pool records the worker process holding them (``HeldConnections[int]``, its pid: the host
    is sent back there). A dict, so that asking it costs no call of ours on the hot path
    (``if held:``, ``held.get(name)``): most runs hold nothing.
    """

    __slots__ = ()

    def note(self, host: str, holder: Holder | None) -> None:
        """``holder`` now holds connections of ``host``; ``None``: nothing does any more."""
        if holder is not None:
            self[host] = holder
        elif self:
            self.pop(host, None)

    def holder(self, host: str) -> Holder | None:
        """What holds connections of ``host``, if anything does."""
        return self.get(host)

    def release(self, holders: Iterable[Holder]) -> list[str]:
        """Forget every host ``holders`` hold (they are gone, and their connections with
        them); the names of those hosts."""
        gone = set(holders)
        names = [name for name, holder in self.items() if holder in gone]
        for name in names:
            del self[name]
        return names

    def take_all(self) -> list[Holder]:
        """Every holder (one per host), now forgotten: for closing them all."""
        held = list(self.values())
        self.clear()
        return held

    def keep_if(self, still_held: Callable[[Holder], bool]) -> None:
        """Forget the hosts whose holder no longer holds anything (closed by other means)."""
        for name, holder in list(self.items()):
            if not still_held(holder):
                del self[name]


def holds_async_connections(host: Host) -> bool:
    """Whether ``host`` holds an open connection that closes on an event loop (has
    ``aclose()``); one whose ``connection`` is ``None`` (nornir plugins' attribute for the
    underlying session: a login that failed) does not count."""
    return bool(host.connections) and any(
        callable(getattr(connection, "aclose", None))
        and getattr(connection, "connection", True) is not None
        for connection in host.connections.values()
    )


async def aclose_connections(hosts: Iterable[Host]) -> None:
    """Await ``aclose()`` on every async connection of ``hosts`` and remove it from the host.

    A connection that fails to close, or takes over ``CLOSE_TIMEOUT`` seconds, is logged and
    removed all the same: the run is over, and one bad session must not keep the others open.
    """
    closing: list[Awaitable[None]] = []
    for host in hosts:
        if not host.connections:  # most hosts of most runs: no list to build
            continue
        for name, connection in list(host.connections.items()):
            aclose = getattr(connection, "aclose", None)
            if callable(aclose):
                del host.connections[name]
                closing.append(_aclose(host.name, name, cast(Callable[[], Awaitable[Any]], aclose)))
    if closing:
        await asyncio.gather(*closing)


async def aclose_every_connection(
    hosts: Sequence[Host], offload: Callable[[Callable[[], None]], Awaitable[None]]
) -> None:
    """Close every connection of ``hosts``: async ones on this loop, then blocking ones
    (netmiko says goodbye to each device) through ``offload``, off the loop."""
    await aclose_connections(hosts)
    if any(host.connections for host in hosts):
        await offload(functools.partial(close_connections, hosts))


async def aclose_connection(
    host: Host, name: str, offload: Callable[[Callable[[], None]], Awaitable[None]]
) -> None:
    """Close ``host``'s connection ``name`` and remove it from the host, as
    ``host.close_connection(name)`` does: on this loop if it is async, else through
    ``offload``, off the loop."""
    connection = host.connections.pop(name, None)
    if connection is None:
        return
    aclose = getattr(connection, "aclose", None)
    if callable(aclose):
        await _aclose(host.name, name, cast(Callable[[], Awaitable[Any]], aclose))
    else:
        await offload(functools.partial(_close, host.name, name, connection))


def kept_session(
    host: Host, name: str, make: Callable[[], S], usable: Callable[[Any], bool]
) -> S:
    """The session ``host`` keeps as ``name`` if ``usable`` says it is, else one ``make``
    makes (not yet open), kept in its place; a leftover that is not usable is closed first.
    No wait between the look-up and the insertion: every task on the host gets the same
    object, whose own lock orders their requests."""
    session = host.connections.get(name)
    if session is not None and usable(session):
        return cast(S, session)
    if session is not None:
        session.close()
    fresh = make()
    host.connections[name] = fresh
    return fresh


def abandon_connections(host: Host) -> None:
    """``host``'s blocking connections were in use by a call given up at its deadline: their
    state is not known (a hung device, a half-read reply), and the call may still be using
    them. They leave the host at once, so that a retry, the next run or closing opens or
    closes none of them; each is closed in a daemon thread of its own, not waited for (a
    polite close to a hung device waits for it: netmiko's leaves configuration mode first)."""
    if not host.connections:
        return
    left = [
        (name, connection) for name, connection in list(host.connections.items())
        if not callable(getattr(connection, "aclose", None))
    ]
    for name, _ in left:
        del host.connections[name]
    for name, connection in left:
        closer = functools.partial(_close, host.name, name, connection)
        threading.Thread(target=closer, name="nornir-bench-abandoned-close", daemon=True).start()


def close_connections(hosts: Iterable[Host]) -> None:
    """Close every connection of ``hosts`` synchronously, as ``host.close_connections()`` does.

    Unlike nornir's, it goes on past a connection that fails to close.
    """
    for host in hosts:
        if not host.connections:
            continue
        for name, connection in list(host.connections.items()):
            del host.connections[name]
            _close(host.name, name, connection)


def _close(host: str, name: str, connection: Any) -> None:
    try:
        connection.close()
    except Exception:
        logger.warning("%s: closing connection %r failed", host, name, exc_info=True)


async def _aclose(host: str, name: str, aclose: Callable[[], Awaitable[Any]]) -> None:
    try:
        await asyncio.wait_for(aclose(), CLOSE_TIMEOUT)
    except Exception:
        logger.warning("%s: closing connection %r failed", host, name, exc_info=True)
