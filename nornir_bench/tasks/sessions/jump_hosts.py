"""Devices reached through a jump host (a bastion), as OpenSSH's ProxyJump: ``jump_host``.

A host, group or the defaults say ``data: {jump_host: {host: 10.0.0.1, port: 22, username:
ops, password: ..., max_sessions: 10}}`` (``username`` and ``password`` default to the
device's), or name an inventory host (``jump_host: bastion1``; a job turns the name into its
address and credentials as it loads). Each login to such a device goes through a channel of an
SSH connection to the bastion, shared: one connection carries up to ``max_sessions`` devices'
sessions at once (OpenSSH's ``MaxSessions`` default is 10), and more connections are opened
as more devices are in flight. The bastion's host key is checked as the device's is, before its
password (tasks/sessions/host_keys.py), and so is every device's key, through the tunnel.

This module reads the inventory's ``jump_host``;
:mod:`nornir_bench.tasks.sessions.bastion_connections` holds the connections to bastions that
the logins share.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from nornir_bench.core.checks import whole_number
from nornir_bench.core.known_hosts import KnownHostsError

if TYPE_CHECKING:
    from nornir.core.inventory import Host

__all__ = [
    "DEFAULT_MAX_SESSIONS",
    "JUMP_HOST",
    "JumpHost",
    "JumpHostError",
    "JumpHostUnreachable",
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


class JumpHostUnreachable(ConnectionError):
    """The jump host could not be reached, or logged in to: every login through it that made
    or waited for the attempt fails with it, naming the bastion and what happened.

    Attributes:
        server: ``address:port`` of the bastion.
    """

    def __init__(self, message: str, server: str = "") -> None:
        super().__init__(message)
        self.server = server

    def __reduce__(self) -> tuple[type[JumpHostUnreachable], tuple[str, str]]:
        return (type(self), (str(self), self.server))
