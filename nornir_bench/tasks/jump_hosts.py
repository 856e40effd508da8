"""Devices reached through a jump host (a bastion), as OpenSSH's ProxyJump: ``jump_host``.

A host, group or the defaults say ``data: {jump_host: {host: 10.0.0.1, port: 22, username:
ops, password: ..., max_sessions: 10}}`` (``username`` and ``password`` default to the
device's), or name an inventory host (``jump_host: bastion1``; a job turns the name into its
address and credentials as it loads). Each login to such a device goes through a channel of an
SSH connection to the bastion, shared: one connection carries up to ``max_sessions`` devices'
sessions at once (OpenSSH's ``MaxSessions`` default is 10), and more connections are opened
as more devices are in flight. The bastion's host key is checked as the device's is, before its
password (tasks/host_keys.py), and so is every device's key, through the tunnel.

scrapli's logins get an asyncssh ``tunnel`` (a connection per event loop); netmiko's a
paramiko channel (``sock``), from a connection per process. A bastion connection that dies is
dropped; the next login opens another.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import socket
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nornir_bench.core.checks import whole_number
from nornir_bench.core.known_hosts import KnownHostsError
from nornir_bench.core.policies.logins import refused_before_login
from nornir_bench.tasks.host_keys import (
    HostKeyCheck,
    HostKeyError,
    Trust,
    check_key,
    from_paramiko,
)

if TYPE_CHECKING:
    from nornir.core.inventory import Host

__all__ = [
    "DEFAULT_MAX_SESSIONS",
    "JUMP_HOST",
    "JumpHost",
    "JumpHostError",
    "JumpHostUnreachable",
    "atunnel",
    "channel_through",
    "jump_from",
    "jump_host_of",
]

JUMP_HOST = "jump_host"
DEFAULT_MAX_SESSIONS = 10


class JumpHostError(KnownHostsError):
    """A ``jump_host`` that cannot be used as given (one line: what, and what is allowed)."""


@dataclass(frozen=True)
class JumpHost:
    """A bastion: where it listens, who logs in to it, how many sessions one connection
    carries."""

    hostname: str
    port: int = 22
    username: str = ""
    password: str | None = field(default=None, repr=False)
    max_sessions: int = DEFAULT_MAX_SESSIONS

    @property
    def where(self) -> str:
        return f"{self.hostname}:{self.port}"


def jump_host_of(host: Host) -> JumpHost | None:
    """``host``'s bastion, if its inventory names one.

    Raises:
        JumpHostError: a ``jump_host`` that is not a mapping with ``host`` (a name left
            unresolved: only a job turns inventory host names into addresses).
    """
    value = host.get(JUMP_HOST)
    if value is None or (isinstance(value, dict) and value.get("name") == host.name):
        return None  # none; or the bastion itself, which the defaults' jump_host names
    return jump_from(value, f"host {host.name}", host.username, host.password)


def jump_from(
    value: object, where: str, username: str | None = None, password: str | None = None
) -> JumpHost:
    """A ``jump_host`` value as a :class:`JumpHost` (``username`` and ``password``: the
    device's, unless it gives its own).

    Raises:
        JumpHostError: naming ``where``: not a mapping with ``host``, or a bad number.
    """
    if isinstance(value, str):
        raise JumpHostError(
            f"{where}: jump_host {value!r} names an inventory host, which only a job "
            "resolves; give {host: ADDRESS, port: PORT, username: USER, password: ...}"
        )
    if not isinstance(value, dict) or not isinstance(value.get("host"), str):
        got = f"keys {', '.join(map(str, value))}" if isinstance(value, dict) else (
            type(value).__name__
        )  # never the value: it may hold the bastion's password
        raise JumpHostError(
            f"{where}: jump_host must be an inventory host's name or a mapping with host (and "
            f"port, username, password, max_sessions), got {got}"
        )
    port = whole_number(f"{where}: jump_host port", value.get("port", 22), minimum=1,
                        maximum=65535, error=JumpHostError)
    sessions = whole_number(f"{where}: jump_host max_sessions",
                            value.get("max_sessions", DEFAULT_MAX_SESSIONS), minimum=1,
                            error=JumpHostError)
    given = value.get("password", password)
    return JumpHost(
        value["host"], port, str(value.get("username", username or "")),
        None if given is None else str(given), sessions,
    )


# -- asyncssh (scrapli) -----------------------------------------------------------------------


@dataclass
class _Held:
    """One connection to a bastion and the device sessions it carries now (those opening
    included): the bookkeeping both pools share. The callers hold their pool's lock."""

    connection: Any
    carried: int = 0
    closed: bool = False  # closing: taken by no new session, even before its library says so

    def release(self) -> None:
        """One session fewer; idle, the connection is closed (not left open past the run)."""
        self.carried -= 1
        if self.carried == 0:
            self.closed = True
            self.connection.close()


def _free(held: list[_Held], jump: JumpHost, alive: Callable[[Any], bool]) -> _Held | None:
    """Of ``held`` (pruned of closed connections), one with room for another session."""
    held[:] = [h for h in held if not h.closed and alive(h.connection)]
    return next((h for h in held if h.carried < jump.max_sessions), None)


class _Attempts:
    """A bastion's connection attempts: a login that waited while one failed fails with it at
    once, rather than trying again after it (a dead bastion, 200 hosts: one timeout, not 200
    in a row)."""

    def __init__(self) -> None:
        self.made: dict[JumpHost, int] = {}
        self.failed: dict[JumpHost, tuple[int, BaseException]] = {}

    def seen(self, jump: JumpHost) -> int:
        return self.made.get(jump, 0)

    def check(self, jump: JumpHost, seen: int) -> None:
        """Raise the failure of an attempt made since ``seen`` (:meth:`seen` before waiting)."""
        failed = self.failed.get(jump)
        if failed is not None and failed[0] > seen:
            raise _again(jump, failed[1])

    def attempt(self, jump: JumpHost) -> int:
        self.made[jump] = self.made.get(jump, 0) + 1
        return self.made[jump]

    def failure(self, jump: JumpHost, attempt: int, exc: BaseException) -> None:
        self.failed[jump] = (attempt, exc)


class JumpHostUnreachable(ConnectionError):
    """The jump host could not be logged in to (another login's attempt, shared)."""


def _again(jump: JumpHost, exc: BaseException) -> BaseException:
    """What a login that waited for the failed attempt ``exc`` fails with: one refused before
    login (the bastion's MaxStartups) is tried again, as the login that saw it is."""
    if isinstance(exc, HostKeyError):
        return copy.copy(exc)
    unreachable = JumpHostUnreachable(
        f"jump host {jump.where}: {type(exc).__name__}: {exc or 'no answer'}"
    )
    if refused_before_login(exc):
        unreachable.__cause__ = exc
    return unreachable


class _AsyncBastions:
    """The bastion connections of one event loop, by bastion."""

    def __init__(self) -> None:
        self.held: dict[JumpHost, list[_Held]] = {}
        self.opening: dict[JumpHost, asyncio.Lock] = {}
        self.attempts = _Attempts()

    async def tunnel(self, jump: JumpHost, trust: Trust, timeout: float) -> tuple[Any, _Held]:
        held = self.held.setdefault(jump, [])
        seen = self.attempts.seen(jump)
        async with self.opening.setdefault(jump, asyncio.Lock()):
            free = _free(held, jump, lambda connection: not connection.is_closed())
            if free is None:
                self.attempts.check(jump, seen)
                attempt = self.attempts.attempt(jump)
                try:
                    free = _Held(await _aconnect(jump, trust, timeout))
                except Exception as exc:
                    self.attempts.failure(jump, attempt, exc)
                    raise
                held.append(free)
            free.carried += 1
            return free.connection, free


_ASYNC: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _AsyncBastions] = (
    weakref.WeakKeyDictionary()
)


async def _aconnect(jump: JumpHost, trust: Trust, timeout: float) -> Any:
    import asyncssh

    check = HostKeyCheck(trust, f"jump host {jump.where}", jump.hostname, jump.port)
    try:
        return await asyncio.wait_for(
            asyncssh.connect(
                jump.hostname, jump.port, username=jump.username, password=jump.password,
                agent_path=None, client_keys=None, preferred_auth=("keyboard-interactive",
                                                                   "password"),
                **check.transport_options(),
            ),
            timeout,
        )
    except BaseException:
        if check.refused is not None:
            raise check.refused from None
        raise


async def atunnel(
    jump: JumpHost, trust: Trust, timeout: float
) -> tuple[Any, Callable[[Any], None]]:
    """A connection to ``jump`` with room for one more device session on this loop, and
    what to call with that session once it is open (or ``None`` if it failed): its place is
    freed as it closes."""
    loop = asyncio.get_running_loop()
    bastions = _ASYNC.get(loop)
    if bastions is None:
        bastions = _ASYNC[loop] = _AsyncBastions()
    connection, held = await bastions.tunnel(jump, trust, timeout)

    def carried(session: Any) -> None:  # on the loop: its one thread needs no lock
        if session is None:
            held.release()
            return

        async def freed() -> None:
            try:
                await session.wait_closed()
            finally:
                held.release()

        task = loop.create_task(freed())
        _WATCHING.add(task)
        task.add_done_callback(_WATCHING.discard)

    return connection, carried


_WATCHING: set[asyncio.Task[None]] = set()


# -- paramiko (netmiko) -----------------------------------------------------------------------


class _Bastions:
    """The bastion connections of this process (paramiko transports), by bastion. A lock per
    bastion, held to pick or open a connection, not while a channel opens: a slow bastion
    holds up neither the others nor its own open connections' logins."""

    def __init__(self) -> None:
        self.locks: dict[JumpHost, threading.Lock] = {}
        self.locks_lock = threading.Lock()
        self.held: dict[JumpHost, list[_Held]] = {}
        self.attempts = _Attempts()

    def channel(
        self, jump: JumpHost, trust: Trust, hostname: str, port: int, timeout: float
    ) -> Any:
        with self.locks_lock:
            lock = self.locks.setdefault(jump, threading.Lock())
        seen = self.attempts.seen(jump)
        with lock:
            held = self.held.setdefault(jump, [])
            free = _free(held, jump, lambda transport: transport.is_active())
            if free is None:
                self.attempts.check(jump, seen)
                attempt = self.attempts.attempt(jump)
                try:
                    free = _Held(_connect(jump, trust, timeout))
                except Exception as exc:
                    self.attempts.failure(jump, attempt, exc)
                    raise
                held.append(free)
            free.carried += 1

        def release() -> None:
            with lock:
                free.release()

        try:
            opened = free.connection.open_channel(
                "direct-tcpip", (hostname, port), ("127.0.0.1", 0), timeout=timeout
            )
        except BaseException:
            release()
            raise
        return _Carried(opened, release)


class _Carried:
    """A channel through the bastion as the device's socket: closing it (the device's
    session ending) frees its place on the bastion's connection."""

    def __init__(self, channel: Any, released: Callable[[], None]) -> None:
        self._channel, self._released = channel, released
        self._closed = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._channel, name)

    def close(self) -> None:
        if self._closed:  # paramiko's transport closes its socket, and its owner again
            return
        self._closed = True
        released = self._released
        try:
            # The bastion's connection may be gone already (closed once it carried no other
            # open channel): closing this one then has nothing left to say, and must not
            # turn the host's own outcome into paramiko's EOFError.
            with contextlib.suppress(Exception):
                self._channel.close()
        finally:
            released()


_BLOCKING = _Bastions()


def _connect(jump: JumpHost, trust: Trust, timeout: float) -> Any:
    import paramiko  # type: ignore[import-untyped]

    sock = socket.create_connection((jump.hostname, jump.port), timeout=timeout)
    transport = paramiko.Transport(sock)
    try:
        transport.start_client(timeout=timeout)
        check_key(trust, f"jump host {jump.where}", jump.hostname, jump.port,
                  from_paramiko(transport.get_remote_server_key()))
        transport.auth_password(jump.username, jump.password or "")
    except BaseException:
        transport.close()
        raise
    transport.set_keepalive(30)
    return transport


def channel_through(
    jump: JumpHost, trust: Trust, hostname: str, port: int, timeout: float
) -> Any:
    """A channel to ``hostname:port`` through ``jump`` (a paramiko ``Channel``, netmiko's
    ``sock``): on a connection of this process with room for it, else a new one."""
    return _BLOCKING.channel(jump, trust, hostname, port, timeout)
