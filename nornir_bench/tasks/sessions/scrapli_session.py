"""A CLI session on a network device: scrapli's async driver over asyncssh, kept across runs.

``asend_command`` keeps one :class:`ScrapliSession` per host in
``host.connections["scrapli_async"]``. scrapli does the device's side: the login, prompts,
privilege levels (``enable``, with the ``auth_secondary`` password), paging and terminal width,
per platform. This module does what a connection kept across nornir runs needs besides:
choosing scrapli's driver from the host's platform, opening on an event loop, one command at a
time (a lock), dropping a session after a failure mid-command, closing from any thread, and
saying whether the connection is still up without writing to the device (:meth:`alive`).

The session has the shape of a nornir connection plugin (``open``, ``close``, ``connection``)
so nornir's ``host.close_connections()`` can close it, but it opens on an event loop
(:meth:`ScrapliSession.aopen`) and closes best there: the runners that keep its loop between
runs ``await aclose()`` on every connection that has it when they let the loop go, on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import typing
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from nornir_bench.core.connections import kept_session
from nornir_bench.core.liveness import bytes_waiting, socket_open
from nornir_bench.tasks.sessions._scrapli_drivers import (
    CONNECTION_NAME,
    ScrapliLogin,
    privileged_level,
    stay_where_logged_in,
)

if TYPE_CHECKING:
    import asyncssh
    from nornir.core.inventory import Host
    from scrapli.driver import AsyncGenericDriver, AsyncNetworkDriver

__all__ = ["CONNECTION_NAME", "ScrapliSession", "session_of"]


logger = logging.getLogger(__name__)

# Turns of the event loop that let it read what a device sent while the loop was idle: its
# reader runs a turn after the socket shows readable, and asyncssh handles the packets at once.
_SETTLE_TURNS = 8


def session_of(host: Host) -> ScrapliSession:
    """The host's session for the running event loop, created (not yet open) on first use.

    No ``await`` between the look-up and the insertion: every task on the host gets the same
    session object, whose lock then orders their commands. A session left over from another
    event loop (a run whose runner did not close it) is closed and replaced.
    """
    return kept_session(host, CONNECTION_NAME, ScrapliSession,
                        lambda kept: isinstance(kept, ScrapliSession) and kept.belongs_here())


class ScrapliSession:
    """One device's scrapli async driver, on the event loop that opened it.

    Attributes:
        connection: the scrapli driver (``AsyncIOSXEDriver``, ``AsyncEOSDriver`` ...), as
            nornir-scrapli's connection holds it; ``None`` while not open.
        lock: held by whoever is using the session: a command (and the privilege change
            before it) must not interleave with another.
    """

    def __init__(self) -> None:
        self.connection: AsyncGenericDriver | None = None
        self.lock = asyncio.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._where = "device"
        # The driver's own default level, which ``enable`` reaches (the login may lower the
        # default: see stay_where_logged_in); None: no privilege levels (generic).
        self._privileged: str | None = None

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

    def open(self, *args: object, **kwargs: object) -> None:
        """Not supported (nornir would call it to open a connection plugin): the session opens
        on an event loop, with :meth:`aopen`."""
        raise TypeError("ScrapliSession opens on an event loop: await session.aopen(host)")

    async def aopen(self, host: Host, *, timeout: float = 30.0, enable: bool = False) -> None:
        """Log in to ``host`` with scrapli's driver for its platform, which readies the terminal.

        Args:
            host: its ``hostname`` (else its name), ``port`` (22 if unset), ``username``,
                ``password`` and ``platform`` are taken as nornir gives a connection plugin
                them, so ``connection_options.scrapli_async`` overrides each; its ``extras``
                go to scrapli's driver (``auth_secondary``, the enable password;
                ``transport_options`` ...). The host's key is checked during the key exchange,
                before the password, as ``host_key_checking`` says (tasks/sessions/host_keys.py).
            timeout: seconds for the TCP and SSH login, and for each exchange of the login
                (scrapli's ``timeout_socket``, ``timeout_transport``, ``timeout_ops``).
            enable: log in to the privileged level, as scrapli does (the first command asks
                for it); else stay at the level the login lands on (a round trip more).

        Raises:
            HostKeyMismatch: the host showed a key the known hosts do not hold for it.
            HostKeyUnknown: ``strict``, and the known hosts do not name the host.
            ValueError: no platform, a platform scrapli has no driver for, or a
                ``transport`` in ``extras`` (it is asyncssh here).
            scrapli.exceptions.ScrapliAuthenticationFailed: wrong credentials.
            OSError: the port refused (named) or the host is unreachable.
            NoSSHBanner: the device took the connection and sent nothing within ``timeout``.
            TimeoutError: no SSH login within ``timeout``.
            scrapli.exceptions.ScrapliTimeout: no prompt within ``timeout``.
        """
        if self.connection is not None:
            await self.aclose()
        login = ScrapliLogin(host, timeout)
        self._where = login.where
        try:
            driver = await login.driver()
            self._privileged = privileged_level(driver)
            if enable:
                self._can_enable()
            else:  # else scrapli's login goes on to the privileged level, as it does
                stay_where_logged_in(driver)
            self._loop = asyncio.get_running_loop()
            self.connection = driver
            await driver.open()
        except BaseException as exc:
            self._abort()
            login.opened(None)
            if login.check.refused is not None:
                raise login.check.refused from None
            said = login.failure(exc)
            if said is not None:
                raise said from exc
            raise
        login.opened(driver)

    async def send_command(
        self, command: str, *, enable: bool = False, timeout: float = 30.0
    ) -> str:
        """Run ``command`` and return its output (no echo, no prompt), within ``timeout``.

        The caller holds :attr:`lock`. If the exchange fails the session is dropped, since
        what the device sends next is unknown; the next command reconnects.

        Args:
            command: one line.
            enable: reach the platform's privileged level first (``enable`` on Cisco and
                Arista) and stay there; without it the command runs at the current level.
            timeout: seconds for the exchange (scrapli's ``timeout_ops``).

        Raises:
            scrapli.exceptions.ScrapliCommandFailure: the device answered with an error
                (``% Invalid input``: scrapli's ``failed_when_contains``); the session stays.
            scrapli.exceptions.ScrapliAuthenticationFailed: ``enable`` was refused.
            scrapli.exceptions.ScrapliTimeout: no prompt within ``timeout``.
            scrapli.exceptions.ScrapliConnectionError: the device closed the session.
        """
        driver = self.connection
        if driver is None:
            raise RuntimeError(f"{self._where}: the session is not open: await aopen() first")
        if enable:
            self._can_enable()
            # scrapli's send_command reaches the driver's default level first, and stays there
            driver.default_desired_privilege_level = self._privileged  # type: ignore[attr-defined]
        try:
            response = await driver.send_command(command, timeout_ops=timeout)
        except BaseException:
            self._abort()
            raise
        if response.failed:
            from scrapli.exceptions import ScrapliCommandFailure

            said = next((line for line in response.result.splitlines() if line.strip()), "")
            raise ScrapliCommandFailure(f"{self._where}: {command!r} failed: {said.strip()}")
        return response.result

    async def send_config_lines(
        self, lines: Sequence[str], *, dialect: str | None, timeout: float = 30.0
    ) -> tuple[int, str] | None:
        """Send ``lines`` in configuration mode one at a time, stopping at the first the device
        refuses (by ``dialect``'s rule, tasks/dialects/refusals.py: for FRR any output, for IOS
        a line beginning ``% ``), then go back to the level the session was at.

        The caller holds :attr:`lock`. If an exchange fails (a timeout, the connection lost)
        the session is dropped, as for :meth:`send_command`.

        Returns:
            ``None`` when the device took every line, else the refused line's index and the
            device's words.
        """
        from nornir_bench.tasks.dialects.refusals import refusal

        if self.connection is None:
            raise RuntimeError(f"{self._where}: the session is not open: await aopen() first")
        if self._privileged is None:
            raise ValueError(
                f"{self._where}: configuration mode needs a platform with privilege levels; "
                "scrapli's generic driver has none"
            )
        driver = typing.cast("AsyncNetworkDriver", self.connection)
        try:
            refused = None
            for index, line in enumerate(lines):
                response = await driver.send_config(line, timeout_ops=timeout)
                said = refusal(response.result, dialect)
                if said is not None:
                    refused = index, said
                    break
            await driver.acquire_priv(driver.default_desired_privilege_level)
        except BaseException:
            self._abort()
            raise
        return refused

    def alive(self) -> bool:
        """Whether the session is open and its SSH connection still up, asked of the transport
        and the socket, never by writing to the device.

        A peer that closed while this session's event loop was idle is seen too: the kernel
        holds the end of the stream that the loop has not read yet (``core.liveness``, which
        asks this method before a host's task gets the kept session).
        """
        driver, ssh = self.connection, self._ssh()
        if driver is None or ssh is None or ssh.is_closed() or not driver.isalive():
            return False
        # The channel: a device that ended the CLI (its process killed, an idle timeout) closes
        # it and may keep the connection. sshd tells the CLI's end (its exit status or signal)
        # in a packet of its own, before the end of the stream: either means the CLI is gone.
        stdin, stdout = (getattr(driver.transport, name, None) for name in ("stdin", "stdout"))
        if (stdin is not None and stdin.is_closing()) or (stdout is not None and stdout.at_eof()):
            return False
        channel = getattr(stdout, "channel", None)
        if channel is not None and channel.get_exit_status() is not None:
            return False
        sock = ssh.get_extra_info("socket")
        return sock is None or socket_open(sock)

    async def still_open(self) -> bool:
        """Whether the open session can still be used, once the event loop has read what the
        device sent while the loop was idle (between runs): a channel closed by the device
        with the connection kept is only seen then. A dead session is dropped, so the caller
        logs in again. A few turns of the loop at most, none when nothing waits."""
        for _ in range(_SETTLE_TURNS):
            ssh = self._ssh()
            sock = None if ssh is None else ssh.get_extra_info("socket")
            if not self.alive() or sock is None or not bytes_waiting(sock):
                break
            await asyncio.sleep(0)  # the loop's reader takes what waits
        if self.alive():
            return True
        logger.info("%s: the session was closed by the device; logging in again", self._where)
        await self.aclose()
        return False

    async def aclose(self) -> None:
        """Log out (scrapli's ``on_close``: ``exit``) and close; safe to call when not open.

        A session whose connection is already down is only dropped.
        """
        driver, ssh, up = self.connection, self._ssh(), self.alive()
        self.connection = None
        if driver is None:
            return
        try:
            if up:
                await driver.close()
        except Exception:  # a connection that broke is closed as well
            logger.debug("logging out of %s failed", self._where, exc_info=True)
        finally:
            _close_channel_log(driver)
            if ssh is not None:  # also when the close was cancelled (its deadline passed)
                ssh.abort()
        if ssh is not None:
            await _gone(ssh)

    def close(self) -> None:
        """Best-effort close from synchronous code (``nr.close_connections()``).

        The session lives on the event loop that opened it. From that loop it is aborted at
        once; from another thread, on its loop; if its loop is idle in this thread, that loop
        is run until the connection is gone. If its loop is closed, or another loop runs in
        this thread, the TCP connection is shut down now and the socket is released when the
        session's loop next runs (or with its transport).
        """
        ssh, loop = self._ssh(), self._loop
        if self.connection is not None:
            _close_channel_log(self.connection)
        self.connection = None
        if ssh is None or loop is None:
            return
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if loop is running:
            ssh.abort()
        elif loop.is_running():
            loop.call_soon_threadsafe(ssh.abort)
        elif running is None and not loop.is_closed():
            ssh.abort()
            loop.run_until_complete(_gone(ssh))
        else:
            if not loop.is_closed():
                ssh.abort()
            _shut_down(ssh)

    def _can_enable(self) -> None:
        if self._privileged is None:
            raise ValueError(
                f"{self._where}: enable needs a platform with privilege levels; scrapli's "
                "generic driver has none"
            )

    def _ssh(self) -> asyncssh.SSHClientConnection | None:
        """The asyncssh connection under scrapli's driver, once logged in."""
        transport = getattr(self.connection, "transport", None)
        session: asyncssh.SSHClientConnection | None = getattr(transport, "session", None)
        return session

    def _abort(self) -> None:
        """Drop the connection at once (after an error, the session's state is unknown)."""
        ssh = self._ssh()
        self.connection = None
        if ssh is not None:
            ssh.abort()

    def __repr__(self) -> str:
        state = "open" if self.connection is not None else "closed"
        return f"ScrapliSession({self._where}, {state})"


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


def _close_channel_log(driver: Any) -> None:
    """Close the driver's channel log (``channel_log``), if it keeps one: written whole."""
    log = getattr(getattr(driver, "channel", None), "channel_log", None)
    if log is not None and hasattr(log, "close"):
        with contextlib.suppress(Exception):
            log.close()
