"""Whether an SSH server said anything before a login failed: "never answered" told apart from
"closed before login".

A server that took the TCP connection and sent nothing, not even its banner, and kept the
connection open, fails the login once with :class:`~nornir_bench.core.exceptions.NoSSHBanner`:
it is not throttling logins, and trying it again costs a timeout each. One that closed or reset
the connection before login is throttling (``core.policies.logins``: tried again, paced).
The libraries say the same words for both (paramiko's "No existing session", asyncssh's bare
``TimeoutError``), so the logins are watched where they read the server:

- paramiko (netmiko, the bastion's paramiko connection) reads a socket the tasks open
  themselves and give it (netmiko's ``sock``): a :class:`WatchedSocket` notes the server's
  first byte and its closing; a channel through a bastion notes the same
  (``jump_hosts._Carried``);
- asyncssh (scrapli, the bastion's asyncssh connection) makes its client with the
  ``client_factory`` it is given: :class:`ConnectionWatch` keeps the connection the client was
  made for, whose ``server_version`` says whether the banner came.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from nornir_bench.core.exceptions import NoSSHBanner
from nornir_bench.core.policies.logins import refused_before_login
from nornir_bench.core.wording import seconds_text

if TYPE_CHECKING:
    from nornir.core.inventory import Host

__all__ = [
    "ConnectionWatch",
    "WatchedSocket",
    "connection_refused",
    "login_timeout_error",
    "no_banner",
    "own_socket_for",
    "watched_connection",
]


class WatchedSocket(socket.socket):
    """A TCP socket (so every reader of sockets takes it as one) that notes whether the server
    sent anything and whether it closed the connection; closing it here is not the server's."""

    server_spoke = False
    server_closed = False

    def recv(self, bufsize: int, flags: int = 0) -> bytes:
        try:
            data = super().recv(bufsize, flags)
        except TimeoutError:
            raise
        except OSError:
            if not self._closed:  # type: ignore[attr-defined]  # a reset, not our own close
                self.server_closed = True
            raise
        if data:
            self.server_spoke = True
        elif not self._closed:  # type: ignore[attr-defined]
            self.server_closed = True
        return data


def watched_connection(hostname: str, port: int, timeout: float) -> WatchedSocket:
    """A TCP connection to ``hostname:port`` (``timeout`` to connect), watched.

    Raises:
        ConnectionRefusedError: nothing listens there, said with the address.
        TimeoutError: no TCP connection within ``timeout``, said with the address.
        OSError: another failure to connect (unreachable, a name not resolved).
    """
    where = f"{hostname}:{port}"
    try:
        plain = socket.create_connection((hostname, port), timeout=timeout)
    except ConnectionRefusedError:
        raise connection_refused(where) from None
    except TimeoutError:
        raise TimeoutError(
            f"{where}: no TCP connection within {seconds_text(timeout)} s"
        ) from None
    watched = WatchedSocket(plain.family, plain.type, plain.proto, plain.detach())
    watched.settimeout(timeout)
    return watched


def connection_refused(where: str) -> ConnectionRefusedError:
    """A device's port that refused the connection, said with its address (the libraries'
    words name none, or read as a slow network: netmiko's "TCP connection to device
    failed")."""
    return ConnectionRefusedError(
        f"connection refused by {where}: nothing listens on that port (is the device, or the "
        "lab, up?)"
    )


def own_socket_for(host: Host, extras: Mapping[str, Any], ssh_config: str | None) -> bool:
    """Whether netmiko's login to ``host`` may be given a socket the tasks open (watched): an
    SSH login, with no ``sock`` of the user's, and no SSH config entry (nornir's
    ``ssh.config_file``, or the extras' ``ssh_config_file``) that sends it elsewhere (another
    address or port, a ProxyCommand or ProxyJump), as netmiko would read it."""
    params = host.get_connection_parameters("netmiko")
    device_type = str(extras.get("device_type", params.platform or ""))
    if "sock" in extras or "_telnet" in device_type or "_serial" in device_type:
        return False
    path = extras.get("ssh_config_file", ssh_config)
    if not path or not os.path.exists(os.path.expanduser(str(path))):
        return True
    import paramiko  # type: ignore[import-untyped]

    hostname = params.hostname or host.name
    source = paramiko.SSHConfig.from_path(os.path.expanduser(str(path))).lookup(hostname)
    return (
        source.get("hostname", hostname) == hostname
        and "port" not in source
        and not {"proxycommand", "proxyjump"} & set(source)
    )


def no_banner(
    error: BaseException, sock: Any, server: str, seconds: float
) -> NoSSHBanner | None:
    """``error``, a paramiko login's failure over ``sock``, as :class:`NoSSHBanner` when the
    login only waited: the server sent nothing and did not close (``sock`` notes both), and
    the library's words are those of a wait that ended (a timeout, or what reads as a login
    refused: "No existing session"); else ``None``."""
    spoke = getattr(sock, "server_spoke", True)
    closed = getattr(sock, "server_closed", True)
    if spoke or closed or not (refused_before_login(error) or _timed_out(error)):
        return None
    return NoSSHBanner(server, seconds)


_CHAIN_DEPTH = 8


def _timed_out(error: BaseException) -> bool:
    seen = 0
    current: BaseException | None = error
    while current is not None and seen < _CHAIN_DEPTH:
        if isinstance(current, TimeoutError):
            return True
        seen += 1
        current = current.__cause__ or current.__context__
    return False


class ConnectionWatch:
    """Wraps the ``client_factory`` of an asyncssh login's options (the one given, else
    asyncssh's plain client) to keep the connection its client was made for: whether, and how
    far, a login that timed out got (:func:`login_timeout_error`)."""

    def __init__(self) -> None:
        self.connection: Any = None
        self.watching = False

    def options(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """asyncssh's connect options ``given``, their client factory watched (a factory
        that is not a class is left as it is: its client is not ours to extend)."""
        import asyncssh

        base = given.get("client_factory") or asyncssh.SSHClient
        if not isinstance(base, type):
            return dict(given)
        watch = self

        class _Watched(base):  # type: ignore[misc, valid-type]
            def connection_made(self, conn: Any) -> None:
                watch.connection = conn
                super().connection_made(conn)

        self.watching = True
        return {**given, "client_factory": _Watched}


def login_timeout_error(watch: ConnectionWatch, server: str, seconds: float) -> TimeoutError:
    """What an asyncssh login to ``server`` that ran out of its ``seconds`` got to: no TCP
    connection, a connection with no SSH banner (:class:`NoSSHBanner`), or a banner and no
    login."""
    connection = watch.connection
    if watch.watching and connection is None:
        return TimeoutError(f"{server}: no TCP connection within {seconds_text(seconds)} s")
    if connection is not None and connection.get_extra_info("server_version") is None:
        return NoSSHBanner(server, seconds)
    return TimeoutError(f"{server}: no SSH login within {seconds_text(seconds)} s of connecting")
