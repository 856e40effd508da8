"""SSH host keys, checked before any password leaves: ``host_key_checking`` for both drivers.

A device's SSH host key is checked against the known hosts before the login sends anything
secret, as OpenSSH and Ansible do by default:

- ``strict`` (the default): a key the known hosts do not hold for the host fails it with
  :class:`HostKeyUnknown`; a key that differs from the one they hold fails it with
  :class:`HostKeyMismatch`;
- ``accept-new``: a host the known hosts do not name yet has its key recorded (an atomic
  append to the recording file, under a lock, never twice); one they name must match;
- ``off``: any key (a lab, a throwaway network); said once a run by the job.

The setting comes, first found, from the host's connection options (``extras``), its
inventory data (host, groups, defaults: ``host_key_checking``), the job file, else ``strict``.
The known hosts are ``~/.ssh/known_hosts`` and the file the inventory names (data
``known_hosts``), which is also where ``accept-new`` records. A run sends their content to its
workers (:func:`snapshot`, :func:`install`): a worker on another machine checks against the
client's known hosts, not against a path that only the client has.

The matching is asyncssh's (hashed names, ``[host]:port``, patterns, ``@revoked``), for
both drivers: scrapli's asyncssh transport asks :class:`HostKeyCheck` about a key its known
hosts do not trust during the key exchange; netmiko (paramiko) logs in with the host's matched
keys alone, after a key-exchange-only probe for a host they do not name yet.
"""

from __future__ import annotations

import contextlib
import os
import socket
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nornir_bench.core.accepted_keys import AcceptedKey, note_accepted
from nornir_bench.core.known_hosts import (
    KNOWN_HOSTS,
    KnownHostsError,
    known_for,
    matched,
    openssh_line,
    record,
    user_known_hosts,
)

if TYPE_CHECKING:
    from asyncssh import SSHKey
    from nornir.core.inventory import Host

__all__ = [
    "HOST_KEY_CHECKING",
    "KNOWN_HOSTS",
    "SETTING",
    "HostKeyCheck",
    "HostKeyError",
    "HostKeyMismatch",
    "HostKeyUnknown",
    "KnownHostsError",
    "Trust",
    "check_key",
    "from_paramiko",
    "netmiko_host_key_extras",
    "netmiko_refusal",
    "not_allowed",
    "policy_of",
    "probe_key",
    "trust_of",
    "without_setting",
]

HOST_KEY_CHECKING = ("strict", "accept-new", "off")
"""The values of ``host_key_checking``, the first the default."""

SETTING = "host_key_checking"


class HostKeyError(ConnectionError):
    """A host's SSH key was not trusted: the login stopped before any password was sent."""

    def __reduce__(self) -> tuple[Any, ...]:
        # Its own type back from a worker process (its __init__ takes the keys, not a text).
        return _restored, (type(self), str(self), dict(self.__dict__))


def _restored(cls: type[HostKeyError], message: str, state: dict[str, Any]) -> HostKeyError:
    exc = cls.__new__(cls)
    ConnectionError.__init__(exc, message)
    exc.__dict__.update(state)
    return exc


class HostKeyMismatch(HostKeyError):
    """The key a host showed is not the one the known hosts hold for it (or one they revoke)."""

    def __init__(self, host: str, where: str, seen: SSHKey, expected: Iterable[SSHKey]) -> None:
        self.host, self.where = host, where
        self.key_type = seen.get_algorithm()
        self.seen = seen.get_fingerprint()
        keys = tuple(expected)
        self.expected = tuple(key.get_fingerprint() for key in keys)
        wanted = ", ".join(f"{key.get_algorithm()} {key.get_fingerprint()}" for key in keys)
        super().__init__(
            f"{host}: the SSH host key of {where} does not match the known hosts: it showed "
            f"{self.key_type} {self.seen}, expected {wanted or 'none (the key is revoked)'}; "
            "the password was not sent (a changed key: remove its old line from the known "
            "hosts)"
        )


class HostKeyUnknown(HostKeyError):
    """``strict``: the known hosts do not name the host."""

    def __init__(self, host: str, where: str, seen: SSHKey, files: Iterable[str]) -> None:
        self.host, self.where = host, where
        self.key_type = seen.get_algorithm()
        self.seen = seen.get_fingerprint()
        super().__init__(
            f"{host}: {where} is not in the known hosts ({', '.join(files) or 'none'}) and "
            f"host_key_checking is strict: it showed {self.key_type} {self.seen}; the password "
            "was not sent (add its key to the known hosts, or set host_key_checking: "
            "accept-new)"
        )


@dataclass(frozen=True)
class Trust:
    """How one host's key is checked: ``policy`` (one of :data:`HOST_KEY_CHECKING`), the
    known-hosts ``files`` read in turn, and ``record_to``, where ``accept-new`` writes."""

    policy: str
    files: tuple[str, ...]
    record_to: str


def policy_of(value: object, where: str) -> str:
    """``value`` as a ``host_key_checking`` (``KnownHostsError`` naming ``where`` if not one)."""
    if isinstance(value, bool):  # YAML's ``no``/``false`` as in ssh_config
        return "strict" if value else "off"
    if value not in HOST_KEY_CHECKING:
        raise KnownHostsError(f"{where}: {not_allowed(value)}")
    return str(value)


def not_allowed(value: object) -> str:
    """What is wrong with a ``host_key_checking`` of ``value``, and what is allowed."""
    return f"host_key_checking must be one of {', '.join(HOST_KEY_CHECKING)}, not {value!r}"


def trust_of(host: Host, connection: str) -> Trust:
    """How ``host``'s key is checked by ``connection`` (``netmiko``, ``scrapli_async``)."""
    extras = host.get_connection_parameters(connection).extras or {}
    value = extras.get(SETTING, host.get(SETTING, "strict"))
    policy = policy_of(value, f"host {host.name}")
    named = host.get(KNOWN_HOSTS)
    if named is not None and not isinstance(named, (str, os.PathLike)):
        raise KnownHostsError(
            f"host {host.name}: known_hosts must be a file's path, not {type(named).__name__}"
        )
    mine = user_known_hosts()
    files = (mine,) if named is None else (mine, os.fspath(named))
    return Trust(policy, files, files[-1])


def without_setting(extras: Mapping[str, Any]) -> dict[str, Any]:
    """A connection's ``extras`` for its driver: ``host_key_checking`` is this module's."""
    return {key: value for key, value in extras.items() if key != SETTING}


# -- the check --------------------------------------------------------------------------------


def check_key(trust: Trust, name: str, hostname: str, port: int, key: SSHKey) -> None:
    """Whether ``key``, shown by ``hostname:port`` (inventory host ``name``), may be sent a
    password under ``trust``: returns if so (``accept-new``: a new host's key recorded first).

    Raises:
        HostKeyMismatch: the known hosts hold other keys for it, or revoke this one.
        HostKeyUnknown: ``strict``, and the known hosts do not name it.
    """
    if trust.policy == "off":
        return
    where = _where(hostname, port)
    trusted, revoked = matched(trust.files, hostname, port)
    if key in revoked:
        raise HostKeyMismatch(name, where, key, ())
    if key in trusted:
        return
    if trusted:
        raise HostKeyMismatch(name, where, key, _same_type_first(trusted, key))
    if trust.policy == "strict":
        raise HostKeyUnknown(name, where, key, trust.files)
    already = record(trust.record_to, hostname, port, key)
    if already and key not in already:  # another process recorded another key first
        raise HostKeyMismatch(name, where, key, already)
    if not already:
        note_accepted(AcceptedKey(name, where, key.get_algorithm(), key.get_fingerprint(),
                                  trust.record_to))


def _same_type_first(keys: list[SSHKey], seen: SSHKey) -> list[SSHKey]:
    return sorted(keys, key=lambda key: key.get_algorithm() != seen.get_algorithm())


def _where(hostname: str, port: int) -> str:
    return f"{hostname}:{port}"


# -- scrapli (asyncssh) -----------------------------------------------------------------------


class HostKeyCheck:
    """What scrapli's asyncssh transport is given for one login: ``known_hosts`` (asyncssh
    checks the keys they trust, and offers only their types first) and ``client_factory``,
    whose client asks :func:`check_key` about any other key; :attr:`refused` is why it
    said no."""

    def __init__(self, trust: Trust, name: str, hostname: str, port: int) -> None:
        self.trust, self.name, self.hostname, self.port = trust, name, hostname, port
        self.refused: HostKeyError | None = None

    def transport_options(self) -> dict[str, Any]:
        """asyncssh's ``connect`` arguments for this check."""
        if self.trust.policy == "off":
            return {"known_hosts": None}
        import asyncssh

        check = self

        class _Checking(asyncssh.SSHClient):
            def validate_host_public_key(
                self, host: str, addr: str, port: int, key: SSHKey
            ) -> bool:
                try:
                    check_key(check.trust, check.name, check.hostname, check.port, key)
                except HostKeyError as exc:
                    check.refused = exc
                    return False
                return True

        known = known_for(self.trust.files, self.hostname, self.port)
        return {"known_hosts": known, "client_factory": _Checking}


# -- netmiko (paramiko) -----------------------------------------------------------------------


@contextlib.contextmanager
def netmiko_host_key_extras(
    trust: Trust,
    name: str,
    hostname: str,
    port: int,
    timeout: float,
    connect: Callable[[], Any] | None = None,
) -> Iterator[dict[str, Any]]:
    """Context: netmiko's host-key arguments for one login of ``name`` at ``hostname:port``.

    netmiko (paramiko) is given only the keys the known hosts trust for the host, with
    ``ssh_strict``: any other key ends the login before the password (``BadHostKeyException``,
    raised as :class:`HostKeyMismatch` by :func:`netmiko_refusal`). A host they do not name is
    probed first (a key exchange, nothing sent): ``strict`` fails it, ``accept-new`` records
    the key it showed, and the login then expects that key only. ``connect`` gives the
    probe's socket (a channel through a jump host); else it connects to ``hostname:port``.
    """
    if trust.policy == "off":
        yield {"ssh_strict": False, "system_host_keys": False, "alt_host_keys": False}
        return
    trusted, _ = matched(trust.files, hostname, port)
    if not trusted:
        key = probe_key(hostname, port, timeout, connect)
        check_key(trust, name, hostname, port, key)  # strict: HostKeyUnknown
        trusted = [key]
    lines = "".join(openssh_line(hostname, port, key) for key in trusted)
    with _keys_file(lines) as path:
        yield {
            "ssh_strict": True,
            "system_host_keys": False,
            "alt_host_keys": True,
            "alt_key_file": path,
        }


@contextlib.contextmanager
def _keys_file(text: str) -> Iterator[str]:
    """A path paramiko reads ``text`` from while the block runs. On Linux a file in memory
    (``memfd_create``): a login that never returns, or a process killed in it, leaves no file
    behind. Elsewhere a temporary file, removed when the block ends."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("nornir-bench-known-hosts")
        try:
            os.write(fd, text.encode("utf-8"))
            yield f"/proc/{os.getpid()}/fd/{fd}"
        finally:
            os.close(fd)
        return
    fd, path = tempfile.mkstemp(prefix="nornir-bench-known-", suffix=".txt")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
        yield path
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)


def netmiko_refusal(exc: BaseException, name: str, hostname: str, port: int) -> BaseException:
    """``exc``, raised by a netmiko login under :func:`netmiko_host_key_extras`, as a
    :class:`HostKeyMismatch` when it is paramiko's ``BadHostKeyException``; else as it is."""
    import paramiko  # type: ignore[import-untyped]

    found: BaseException | None = exc
    while found is not None and not isinstance(found, paramiko.BadHostKeyException):
        found = found.__cause__ or found.__context__
    if found is None:
        return exc
    seen, expected = from_paramiko(found.key), from_paramiko(found.expected_key)
    return HostKeyMismatch(name, _where(hostname, port), seen, [expected])


def from_paramiko(key: Any) -> SSHKey:
    from asyncssh import import_public_key

    return import_public_key(f"{key.get_name()} {key.get_base64()}")


def probe_key(
    hostname: str, port: int, timeout: float, connect: Callable[[], Any] | None = None
) -> SSHKey:
    """The host key ``hostname:port`` shows in a key exchange (nothing else is sent), as
    ``ssh-keyscan`` reads it; over ``connect()``'s socket if given."""
    import paramiko

    sock = socket.create_connection((hostname, port), timeout=timeout) if connect is None else (
        connect()
    )
    with contextlib.closing(sock):
        transport = paramiko.Transport(sock)
        try:
            transport.start_client(timeout=timeout)
            return from_paramiko(transport.get_remote_server_key())
        finally:
            transport.close()
