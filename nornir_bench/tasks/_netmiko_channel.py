"""netmiko's connection for the tasks, its reads ending when the device closes the session.

netmiko reads its paramiko channel only when ``recv_ready()``, that is when data is buffered
(``SSHChannel.read_buffer``). A channel at end of file has nothing buffered either, so the
``recv() == b""`` netmiko would report ("Channel stream closed by remote device") is never
read, and its read loops (``read_until_pattern``, ``read_channel_timing``) wait out their
``read_timeout`` for a prompt from a CLI that is gone. The tasks read through a channel that
raises :class:`~nornir_bench.core.exceptions.SessionClosed` instead, set on their host's
connection only: netmiko is not changed for anyone else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from netmiko.channel import SSHChannel

from nornir_bench.core.exceptions import SessionClosed

if TYPE_CHECKING:
    from netmiko import BaseConnection
    from nornir.core.task import Task

__all__ = ["netmiko_connection"]


def netmiko_connection(task: Task) -> BaseConnection:
    """The host's netmiko connection, opened as nornir-netmiko's tasks open it if it is not
    yet, reading through a channel that raises ``SessionClosed`` at the device's end of file."""
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
