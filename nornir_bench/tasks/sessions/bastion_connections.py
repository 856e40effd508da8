"""Connections to bastions, shared by the logins of the devices behind them (``jump_host``:
tasks/sessions/jump_hosts.py).

One connection carries up to ``max_sessions`` devices' sessions at once (OpenSSH's
``MaxSessions`` default is 10), and more connections are opened as more devices are in flight;
an idle one is closed. scrapli's logins get an asyncssh ``tunnel`` (connections per event
loop); netmiko's a paramiko channel (``sock``), from connections per process. A bastion
connection that dies is dropped; the next login opens another.

A bastion is connected to one attempt at a time, and the login that made an attempt that
failed and the logins that waited for it fail with it
(:class:`~nornir_bench.tasks.sessions.jump_hosts.JumpHostUnreachable`, naming the bastion and
what happened: down, or its login refused; a key it showed that is not trusted is a
``HostKeyError`` naming it): a bastion that is down costs one login timeout, not one per host.
One that closed the connection before login (its ``MaxStartups``) is tried again as a device's
refused login is; one that never answered (``NoSSHBanner``) or refused the connection is not.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from nornir_bench.core.exceptions import NoSSHBanner
from nornir_bench.core.policies.logins import authentication_refused, refused_before_login
from nornir_bench.tasks.sessions._ssh_banner import (
    ConnectionWatch,
    login_timeout_error,
    no_banner,
    watched_connection,
)
from nornir_bench.tasks.sessions.host_keys import (
    HostKeyCheck,
    HostKeyError,
    Trust,
    check_key,
    from_paramiko,
)
from nornir_bench.tasks.sessions.jump_hosts import JumpHost, JumpHostUnreachable

__all__ = ["atunnel", "channel_through"]


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


REFUSED_FOR = 60.0
"""Seconds a username and password a bastion refused are not offered to it again."""
_REFUSED: dict[JumpHost, tuple[float, BaseException]] = {}  # when, and what it said


class _Attempts:
    """A bastion's connection attempts, made one at a time: a login that arrived while one was
    under way, and waited for it, fails with it at once if it failed, rather than trying
    again after it (a dead bastion, 200 hosts: one timeout, not 200 in a row). A login that
    arrives after an attempt ended tries again; but not, for :data:`REFUSED_FOR` seconds, the
    username and password the bastion refused (``JumpHost`` holds them), on any thread or
    event loop of the process (:data:`_REFUSED`): offered once a process (each worker process
    of processpool and Dask is one), not once a host (a bastion that locks an account after a
    few failures, as PAM's faillock does, would lock it)."""

    def __init__(self) -> None:
        self.ended: dict[JumpHost, int] = {}
        self.failed: dict[JumpHost, tuple[int, BaseException]] = {}

    def seen(self, jump: JumpHost) -> int:
        """How many attempts have ended: asked before waiting for the bastion's turn."""
        return self.ended.get(jump, 0)

    def check(self, jump: JumpHost, seen: int) -> None:
        """Raise the failure of an attempt that ended after ``seen`` (:meth:`seen`), or of a
        login refused within :data:`REFUSED_FOR` seconds."""
        refused = _REFUSED.get(jump)
        if refused is not None and time.monotonic() - refused[0] < REFUSED_FOR:
            raise _again(jump, refused[1])
        failed = self.failed.get(jump)
        if failed is not None and failed[0] > seen:
            raise _again(jump, failed[1])

    def end(self, jump: JumpHost, error: BaseException | None) -> None:
        """An attempt ended: connected (``error`` ``None``) or failed with ``error``."""
        ended = self.ended[jump] = self.ended.get(jump, 0) + 1
        if error is not None:
            self.failed[jump] = (ended, error)
            if authentication_refused(error):  # kept without the frames holding its transport
                _REFUSED[jump] = (time.monotonic(), error.with_traceback(None))
        else:
            _REFUSED.pop(jump, None)

    def failure(self, jump: JumpHost, error: Exception) -> BaseException:
        """Note an attempt that failed with ``error``; what its own login fails with: as the
        logins that waited for it, naming the bastion (a key it showed that is not trusted
        names it already, and is kept as it is)."""
        self.end(jump, error)
        return error if isinstance(error, HostKeyError) else _again(jump, error)


def _again(jump: JumpHost, exc: BaseException) -> BaseException:
    """What a login that made or waited for the failed attempt ``exc`` fails with: one refused
    before login (the bastion's MaxStartups) is tried again, as the login that saw it is; a
    bastion that never answered, or refused the connection, is not."""
    if isinstance(exc, HostKeyError):
        return copy.copy(exc)
    unreachable = JumpHostUnreachable(f"jump host {jump.where}: {_reason(jump, exc)}", jump.where)
    if refused_before_login(exc):
        unreachable.__cause__ = exc
    return unreachable


def _reason(jump: JumpHost, exc: BaseException) -> str:
    if isinstance(exc, NoSSHBanner):
        return exc.reason
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused: nothing listens on that port (is the bastion up?)"
    said = str(exc).removeprefix(f"{jump.where}: ")
    said = f"{type(exc).__name__}: {said or 'no answer'}"
    if authentication_refused(exc):
        return f"login refused ({said}): check the jump host's username and password"
    return said


# -- asyncssh (scrapli) -----------------------------------------------------------------------


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
                try:
                    free = _Held(await _aconnect(jump, trust, timeout))
                except Exception as exc:
                    failed = self.attempts.failure(jump, exc)
                    if failed is exc:
                        raise
                    raise failed from exc
                self.attempts.end(jump, None)
                held.append(free)
            free.carried += 1
            return free.connection, free


_ASYNC: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _AsyncBastions] = (
    weakref.WeakKeyDictionary()
)


async def _aconnect(jump: JumpHost, trust: Trust, timeout: float) -> Any:
    import asyncssh

    check = HostKeyCheck(trust, f"jump host {jump.where}", jump.hostname, jump.port)
    watch = ConnectionWatch()
    try:
        return await asyncio.wait_for(
            asyncssh.connect(
                jump.hostname, jump.port, username=jump.username, password=jump.password,
                agent_path=None, client_keys=None, preferred_auth=("keyboard-interactive",
                                                                   "password"),
                **watch.options(check.transport_options()),
            ),
            timeout,
        )
    except TimeoutError:
        if check.refused is not None:
            raise check.refused from None
        raise login_timeout_error(watch, jump.where, timeout) from None
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
                try:
                    free = _Held(_connect(jump, trust, timeout))
                except Exception as exc:
                    failed = self.attempts.failure(jump, exc)
                    if failed is exc:
                        raise
                    raise failed from exc
                self.attempts.end(jump, None)
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
    session ending) frees its place on the bastion's connection. It notes, as a
    ``WatchedSocket`` does (tasks/sessions/_ssh_banner.py), whether the device sent anything and
    whether it closed the channel."""

    server_spoke = False
    server_closed = False

    def __init__(self, channel: Any, released: Callable[[], None]) -> None:
        self._channel, self._released = channel, released
        self._closed = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._channel, name)

    def recv(self, nbytes: int) -> bytes:
        data: bytes = self._channel.recv(nbytes)
        if data:
            self.server_spoke = True
        elif not self._closed:  # the end of the device's stream, not our own close
            self.server_closed = True
        return data

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

    sock = watched_connection(jump.hostname, jump.port, timeout)
    transport = paramiko.Transport(sock)
    try:
        transport.start_client(timeout=timeout)
        check_key(trust, f"jump host {jump.where}", jump.hostname, jump.port,
                  from_paramiko(transport.get_remote_server_key()))
        transport.auth_password(jump.username, jump.password or "")
    except Exception as exc:
        transport.close()
        silent = no_banner(exc, sock, jump.where, timeout)
        if silent is not None:
            raise silent from exc
        raise
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
