"""An interactive CLI session on a network device over asyncssh, reused across tasks.

``asend_command`` keeps one :class:`AsyncSSHSession` per host in
``host.connections["asyncssh"]``: the first command opens it (SSH login, a shell with a PTY,
the first prompt, paging off), later commands on the host reuse it, and a lock keeps two
concurrent tasks on one host from interleaving their commands.

The session has the shape of a nornir connection plugin (``open``, ``close``, ``connection``)
so nornir's ``host.close_connections()`` can close it, but it opens on an event loop
(:meth:`AsyncSSHSession.aopen`) and closes best there: the runners that keep its loop between
runs ``await aclose()`` on every connection that has it when they let the loop go, on it.
"""

from __future__ import annotations

import asyncio
import logging
import re
import socket
from typing import TYPE_CHECKING, Any, TypeVar

from nornir_bench.core.timeouts import within
from nornir_bench.tasks._terminal import (
    ANY_PROMPT,
    PromptWatch,
    clean_output,
    paging_command,
    prompt_pattern,
)

if TYPE_CHECKING:
    import asyncssh
    from nornir.core.configuration import Config
    from nornir.core.inventory import Host

__all__ = ["CONNECTION_NAME", "AsyncSSHSession", "session_of"]

CONNECTION_NAME = "asyncssh"
"""The key of the session in ``host.connections`` and of its options in the inventory."""

# A PTY this wide keeps devices from wrapping long lines into the output.
_TERMINAL = {"term_type": "vt100", "term_size": (511, 24)}

logger = logging.getLogger(__name__)

T = TypeVar("T")


def session_of(host: Host) -> AsyncSSHSession:
    """The host's session for the running event loop, created (not yet open) on first use.

    No ``await`` between the look-up and the insertion: every task on the host gets the same
    session object, whose lock then orders their commands. A session left over from another
    event loop (a run whose runner did not close it) is closed and replaced.
    """
    session = host.connections.get(CONNECTION_NAME)
    if isinstance(session, AsyncSSHSession) and session.belongs_here():
        return session
    if session is not None:
        session.close()
    fresh = AsyncSSHSession()
    host.connections[CONNECTION_NAME] = fresh
    return fresh


# Over 200 lines, on purpose: opening, logging in, privileged mode, commands and closing are
# one session's states, sharing its channel, buffer and lock; the terminal rules (prompts,
# paging, echo) are already apart, in _terminal.
class AsyncSSHSession:
    """One CLI session: an asyncssh connection and an interactive shell with a PTY.

    Attributes:
        connection: the ``asyncssh.SSHClientConnection``, ``None`` while not open.
        lock: held by whoever is using the session; a command is a write and a read until
            the prompt, and two of them must not interleave.
        prompt: the device's current prompt (``r1>``, ``r1#``), once open.
    """

    def __init__(self) -> None:
        self.connection: asyncssh.SSHClientConnection | None = None
        self.lock = asyncio.Lock()
        self.prompt: str | None = None
        self._process: asyncssh.SSHClientProcess[str] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._prompt: re.Pattern[str] = ANY_PROMPT
        self._secret: str | None = None
        self._where = "device"

    @property
    def is_open(self) -> bool:
        """Open, and usable from the running event loop (a session lives on one loop)."""
        return self.connection is not None and self.belongs_here()

    def belongs_here(self) -> bool:
        """Whether the running event loop may use this session: never opened, or opened on it."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            return False
        return self._loop is None or self._loop is running

    def open(
        self,
        hostname: str | None,
        username: str | None,
        password: str | None,
        port: int | None,
        platform: str | None,
        extras: dict[str, Any] | None = None,
        configuration: Config | None = None,
    ) -> None:
        """Not supported: the session opens on an event loop, with :meth:`aopen`."""
        raise TypeError("AsyncSSHSession opens on an event loop: await session.aopen(...)")

    async def aopen(
        self,
        hostname: str | None,
        username: str | None,
        password: str | None,
        port: int | None,
        platform: str | None,
        extras: dict[str, Any] | None = None,
        configuration: Config | None = None,
        *,
        timeout: float = 30.0,
    ) -> None:
        """Log in, start a shell, wait for the prompt and turn paging off, within ``timeout``.

        Args:
            hostname, username, password, port, platform: as nornir's connection options
                give them; ``port`` ``None`` means 22.
            extras: keyword arguments for ``asyncssh.connect`` (``known_hosts``,
                ``client_keys``, ``connect_timeout`` ...), and ``secret``, the enable
                password, which is not passed on. ``known_hosts`` defaults to ``None``
                (host keys not checked, as a lab needs).
            configuration: unused; nornir's connection plugins receive it.
            timeout: seconds for the whole login.

        Raises:
            asyncssh.PermissionDenied: wrong credentials.
            OSError: the port refused or the host is unreachable.
            TimeoutError: no prompt within ``timeout``.
        """
        if self.connection is not None:
            await self.aclose()
        options: dict[str, Any] = {"known_hosts": None, "connect_timeout": timeout}
        options.update(extras or {})
        self._secret = options.pop("secret", None)
        address = hostname or ""
        self._where = f"{address}:{port or 22}"
        self._loop = asyncio.get_running_loop()
        try:
            message = f"{self._where}: no CLI prompt within {timeout:g} s of connecting"
            await within(
                self._login(address, port or 22, username, password, platform, options),
                timeout,
                lambda: TimeoutError(message),
            )
        except BaseException:
            self._abort()
            raise

    async def _login(
        self,
        address: str,
        port: int,
        username: str | None,
        password: str | None,
        platform: str | None,
        options: dict[str, Any],
    ) -> None:
        import asyncssh  # 0.13 s to import: only for runs that use it

        self.connection = await asyncssh.connect(
            address, port, username=username, password=password, **options
        )
        self._process = await self.connection.create_process(
            **_TERMINAL, encoding="utf-8", errors="replace"
        )
        await self._read_until_prompt()
        assert self.prompt is not None
        self._prompt = prompt_pattern(self.prompt)
        quiet = paging_command(platform)
        if quiet is not None:
            await self._exchange(quiet)

    async def send_command(
        self, command: str, *, enable: bool = False, timeout: float = 30.0
    ) -> str:
        """Run ``command`` and return its output (no echo, no prompt), within ``timeout``.

        The caller holds :attr:`lock`. If anything goes wrong mid-command the session is
        closed, since what the device will send next is unknown; the next command reconnects.

        Raises:
            PermissionError: ``enable`` did not reach privileged mode.
            TimeoutError: the prompt did not come back within ``timeout``.
        """
        try:
            message = f"{self._where}: no prompt within {timeout:g} s of sending {command!r}"
            return await within(
                self._command(command, enable), timeout, lambda: TimeoutError(message)
            )
        except BaseException:
            self._abort()
            raise

    async def _command(self, command: str, enable: bool) -> str:
        if enable and not (self.prompt or "").endswith("#"):
            await self._enable()
        return await self._exchange(command)

    async def _enable(self) -> None:
        assert self._process is not None
        self._process.stdin.write("enable\n")
        watch = PromptWatch(_prompt_or_password(self._prompt))
        await self._read(watch)
        if (watch.prompt or "").lower().endswith(":"):  # Password:
            self._process.stdin.write((self._secret or "") + "\n")
            watch = PromptWatch(self._prompt)
            await self._read(watch)
        self.prompt = watch.prompt
        if not (self.prompt or "").endswith("#"):
            raise PermissionError(
                f"{self._where}: 'enable' did not reach privileged mode (prompt {self.prompt!r}); "
                "set the enable password as connection_options.asyncssh.extras.secret"
            )

    async def _exchange(self, command: str) -> str:
        assert self._process is not None
        self._process.stdin.write(command + "\n")
        return clean_output(await self._read_until_prompt(), command)

    async def _read_until_prompt(self) -> str:
        watch = PromptWatch(self._prompt)
        await self._read(watch)
        self.prompt = watch.prompt
        return watch.text

    async def _read(self, watch: PromptWatch) -> None:
        """Read until ``watch`` sees its prompt, answering any pager with a space."""
        assert self._process is not None
        stdout, stdin = self._process.stdout, self._process.stdin
        while True:
            chunk = await stdout.read(65536)
            if not chunk:
                raise ConnectionResetError(f"{self._where}: the device closed the session")
            if watch.feed(chunk):
                return
            if watch.take_pager():
                stdin.write(" ")

    async def aclose(self) -> None:
        """Close the session and wait until it is closed; safe to call when not open."""
        connection, process = self.connection, self._process
        self._forget()
        if connection is None:
            return
        if process is not None:
            process.close()
        connection.close()
        try:
            await _gone(connection)
        except Exception:  # a connection that broke is closed as well
            logger.debug("closing the session to %s failed", self._where, exc_info=True)

    def close(self) -> None:
        """Best-effort close from synchronous code (``nr.close_connections()``).

        The session lives on the event loop that opened it. From that loop it is aborted at
        once; from another thread, on its loop; if its loop is idle in this thread, that loop
        is run until the session is gone. If its loop is closed, or another loop runs in this
        thread, the TCP connection is shut down now and the socket is released when the
        session's loop next runs (or with its transport).
        """
        connection, loop = self.connection, self._loop
        self._forget()
        if connection is None or loop is None:
            return
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if loop is running:
            connection.abort()
        elif loop.is_running():
            loop.call_soon_threadsafe(connection.abort)
        elif running is None and not loop.is_closed():
            connection.abort()
            loop.run_until_complete(_gone(connection))
        else:
            if not loop.is_closed():
                connection.abort()
            _shut_down(connection)

    def _abort(self) -> None:
        """Drop the connection at once (after an error, the session's state is unknown)."""
        connection = self.connection
        self._forget()
        if connection is not None:
            connection.abort()

    def _forget(self) -> None:
        self.connection = None
        self._process = None
        self.prompt = None
        self._prompt = ANY_PROMPT

    def __repr__(self) -> str:
        state = f"open, prompt {self.prompt!r}" if self.connection is not None else "closed"
        return f"AsyncSSHSession({self._where}, {state})"


async def _gone(connection: asyncssh.SSHClientConnection) -> None:
    """Wait until ``connection`` is closed, and one loop turn more for its socket to close."""
    await connection.wait_closed()
    await asyncio.sleep(0)


def _shut_down(connection: asyncssh.SSHClientConnection) -> None:
    sock = connection.get_extra_info("socket")
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def _prompt_or_password(prompt: re.Pattern[str]) -> re.Pattern[str]:
    return re.compile(f"(?:{prompt.pattern})|(?:[Pp]assword:\\s*\\Z)")
