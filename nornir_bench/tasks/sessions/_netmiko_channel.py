"""netmiko's connection for the tasks: opened on a socket of the tasks' own, its reads ending
when the device closes the session.

The login runs over a TCP connection the tasks open and watch (tasks/sessions/_ssh_banner.py), where
netmiko would open a plain one, or over a channel through the host's bastion: a device that
takes the connection and never says a word fails once, as ``NoSSHBanner``, where netmiko's
"No existing session" would read as a server throttling logins.

netmiko reads its paramiko channel only when ``recv_ready()``, that is when data is buffered
(``SSHChannel.read_buffer``). A channel at end of file has nothing buffered either, so the
``recv() == b""`` netmiko would report ("Channel stream closed by remote device") is never
read, and its read loops (``read_until_pattern``, ``read_channel_timing``) wait out their
``read_timeout`` for a prompt from a CLI that is gone. The tasks read through a channel that
raises :class:`~nornir_bench.core.exceptions.SessionClosed` instead, set on their host's
connection only: netmiko is not changed for anyone else.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from netmiko.channel import SSHChannel

from nornir_bench.core.exceptions import SessionClosed
from nornir_bench.tasks.sessions._ssh_banner import no_banner, own_socket_for, watched_connection
from nornir_bench.tasks.sessions.bastion_connections import channel_through
from nornir_bench.tasks.sessions.host_keys import (
    netmiko_host_key_extras,
    netmiko_refusal,
    trust_of,
    without_setting,
)
from nornir_bench.tasks.sessions.jump_hosts import jump_host_of

if TYPE_CHECKING:
    from netmiko import BaseConnection
    from nornir.core.inventory import Host
    from nornir.core.task import Task

__all__ = ["netmiko_connection", "open_netmiko"]


def open_netmiko(task: Task, host: Host, extras: dict[str, Any] | None = None) -> None:
    """Open ``host``'s netmiko connection through nornir-netmiko's plugin, with the host's
    ``extras`` (else ``extras``) and its SSH host key checked before the password
    (tasks/sessions/host_keys.py).

    The login's socket is the tasks' own (see the module), closed if the login fails.

    Raises:
        HostKeyMismatch, HostKeyUnknown: the host's key is not trusted; nothing was sent.
        NoSSHBanner: the server took the connection and said nothing.
        ConnectionRefusedError: nothing listens on the host's port.
    """
    params = host.get_connection_parameters("netmiko")
    given = without_setting(dict(params.extras or {}) if extras is None else extras)
    hostname, port = params.hostname or host.name, params.port or 22
    probe_wait = _seconds(given, "conn_timeout")
    login_wait = min(probe_wait, _seconds(given, "banner_timeout"))
    trust = trust_of(host, "netmiko")
    jump = jump_host_of(host)
    opened: list[tuple[Any, float]] = []  # the sockets this login opened, with their waits
    connect: Callable[[float], Any] | None = None
    if jump is not None or own_socket_for(host, given, _ssh_config(task)):

        def connect(wait: float) -> Any:
            sock = (
                watched_connection(hostname, port, probe_wait) if jump is None
                else channel_through(jump, trust, hostname, port, probe_wait)
            )
            opened.append((sock, wait))
            return sock

    try:
        with netmiko_host_key_extras(
            trust, host.name, hostname, port, probe_wait,
            None if connect is None else functools.partial(connect, probe_wait),
        ) as checked:
            if connect is not None:  # the device's session on a socket of the tasks' own
                checked = {**checked, "sock": connect(login_wait)}
            host.open_connection(
                "netmiko", configuration=task.nornir.config, extras={**given, **checked}
            )
    except Exception as exc:
        sock, wait = opened[-1] if opened else (None, 0.0)
        silent = None if sock is None else no_banner(exc, sock, f"{hostname}:{port}", wait)
        for each, _ in opened:  # netmiko may have failed before paramiko took it
            each.close()
        if silent is not None:
            raise silent from exc
        refused = netmiko_refusal(exc, host.name, hostname, port)
        if refused is exc:
            raise
        raise refused from None


def _seconds(extras: dict[str, Any], name: str) -> float:
    """netmiko's login wait ``name`` as the extras give it, else netmiko's default."""
    given = extras.get(name)
    return float(given) if given else _netmiko_default(name)


@functools.cache
def _netmiko_default(name: str) -> float:
    from netmiko import BaseConnection

    return float(inspect.signature(BaseConnection.__init__).parameters[name].default)


def _ssh_config(task: Task) -> str | None:
    """The SSH config file nornir gives its connection plugins (netmiko reads it)."""
    ssh = getattr(task.nornir.config, "ssh", None)
    return getattr(ssh, "config_file", None)


def netmiko_connection(task: Task) -> BaseConnection:
    """The host's netmiko connection, opened as nornir-netmiko's tasks open it if it is not
    yet (its key checked: :func:`open_netmiko`), reading through a channel that raises
    ``SessionClosed`` at the device's end of file."""
    if "netmiko" not in task.host.connections:
        open_netmiko(task, task.host)
    connection: BaseConnection = task.host.get_connection("netmiko", task.nornir.config)
    channel = connection.channel
    # Exactly netmiko's SSH channel (made anew at each login): telnet, serial or a channel
    # chosen by someone else are left alone.
    if type(channel) is SSHChannel:
        connection.channel = _EndingChannel(
            channel.remote_conn, channel.encoding, f"{connection.host}:{connection.port}"
        )
    return connection


class _EndingChannel(SSHChannel):
    """netmiko's SSH channel, raising ``SessionClosed`` once the device has closed it."""

    def __init__(self, conn: Any, encoding: str, device: str) -> None:  # paramiko's
        super().__init__(conn, encoding)
        self.device = device

    def read_channel(self) -> str:
        # Asked before reading: paramiko buffers what came before the end of file, so all of
        # it is read (and returned) first, and nothing read after it means nothing is left.
        ended = self._ended()
        output = super().read_channel()
        if ended and not output:
            raise SessionClosed(self.device)
        return output

    def write_channel(self, out_data: str) -> None:
        if self._ended():  # else paramiko's own words: OSError("Socket is closed")
            raise SessionClosed(self.device)
        super().write_channel(out_data)

    def _ended(self) -> bool:
        conn = self.remote_conn
        return conn is not None and bool(conn.eof_received or conn.closed)
