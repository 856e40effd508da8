"""A NETCONF session on a device: ncclient's manager over SSH, kept across runs.

The NETCONF tasks keep one :class:`NetconfSession` per host in ``host.connections["ncclient"]``
(closed by ``nr.close_connections()``, as nornir closes its plugins' connections). This module
opens it as the CLI tasks open theirs:

- the host's ``hostname`` (else its name), ``port`` (830 if unset), ``username``,
  ``password`` and ``platform`` as nornir gives a connection plugin them, each overridable
  under ``connection_options.ncclient``; the platform picks ncclient's device handler when it
  is one ncclient knows (``junos``, ``iosxr``, ``nexus`` ...), else ``default``;
- the TCP connection the tasks' own (a refused port or a silent server named), or a channel
  through the host's ``jump_host``;
- the device's SSH host key checked before the password (``host_key_checking``,
  tasks/sessions/host_keys.py): ncclient is given the one key the known hosts trust (for
  ``accept-new``, the key a key-exchange-only probe showed and recorded), and fails a login
  whose server shows another, before authenticating;
- ``timeout`` for the login and for each reply (ncclient's ``timeout``);
- a first request answered before the login returns (:func:`_first_answer`: netconfd drops
  a request it reads with the client's hello).

ncclient's session thread looks for outgoing messages every ``TICK`` seconds (0.1 s): each
request waits up to that long before it is sent. The first session opened sets it to 0.01 s
for the process (a request then takes about 12 ms on the lab, 100 ms before).
"""

from __future__ import annotations

import base64
import contextlib
import socket
import threading
import time
from typing import TYPE_CHECKING, Any

from nornir_bench.core.connections import kept_session
from nornir_bench.core.known_hosts import matched
from nornir_bench.core.liveness import socket_open
from nornir_bench.tasks.sessions._ssh_banner import no_banner, watched_connection
from nornir_bench.tasks.sessions.bastion_connections import channel_through
from nornir_bench.tasks.sessions.host_keys import (
    HostKeyMismatch,
    check_key,
    probe_key,
    trust_of,
    without_setting,
)
from nornir_bench.tasks.sessions.jump_hosts import jump_host_of

if TYPE_CHECKING:
    from asyncssh import SSHKey
    from ncclient.manager import Manager
    from nornir.core.inventory import Host

__all__ = ["CONNECTION_NAME", "DEFAULT_NETCONF_PORT", "NetconfSession", "netconf_session"]

CONNECTION_NAME = "ncclient"
DEFAULT_NETCONF_PORT = 830
_TICK = 0.01
_CLOSE_WAIT = 5.0  # seconds a <close-session> is given when the session closes
_FIRST_WAIT = 0.5
_EMPTY_FILTER = '<filter xmlns="urn:ietf:params:xml:ns:netconf:base:1.0" type="subtree"/>'
# ncclient's device handlers, by the names a nornir inventory gives platforms.
_HANDLERS = {
    "junos": "junos", "juniper_junos": "junos", "iosxr": "iosxr", "cisco_xr": "iosxr",
    "iosxe": "iosxe", "cisco_iosxe": "iosxe", "csr": "csr", "nexus": "nexus",
    "cisco_nxos": "nexus", "huawei": "huawei", "huaweiyang": "huaweiyang", "alu": "alu",
    "h3c": "h3c", "hpcomware": "hpcomware", "sros": "sros", "ericsson": "ericsson",
}


class NetconfSession:
    """One device's ncclient manager (``manager``, ``None`` while not open); ``lock`` is held
    by whoever uses it (ncclient's requests may interleave, a task's steps must not)."""

    def __init__(self) -> None:
        self.manager: Manager | None = None
        self.lock = threading.Lock()

    @property
    def connection(self) -> Manager | None:
        """The manager, as nornir calls a plugin's connection."""
        return self.manager

    @property
    def is_open(self) -> bool:
        return self.manager is not None and bool(self.manager.connected)

    def alive(self) -> bool:
        """Whether the session can still be used (core/liveness.py asks before a host's task
        starts), judged at the SSH transport without writing to the device (never by
        attribute: ncclient's manager sends any attribute it lacks as an RPC)."""
        manager = self.manager
        if manager is None:
            return True  # nothing to drop: the task logs in
        session = manager._session  # ncclient offers the transport on its session only
        transport = session.transport
        if not session.connected or transport is None or not transport.is_active():
            return False
        sock = transport.sock
        return socket_open(sock) if isinstance(sock, socket.socket) else True

    def open(self, *args: object, **kwargs: object) -> None:
        """Not supported (nornir would call it to open a connection plugin): the tasks log
        in with :meth:`login`, their timeout bounded by the host's deadline."""
        raise TypeError("NetconfSession logs in with session.login(host, timeout)")

    def login(self, host: Host, timeout: float) -> Manager:
        """Log in to ``host`` (see the module); the manager.

        Raises:
            HostKeyMismatch, HostKeyUnknown: the host's key is not trusted; nothing was sent.
            ConnectionRefusedError: nothing listens on the host's port.
            NoSSHBanner: the server took the connection and said nothing.
            ncclient.transport.AuthenticationError: wrong credentials.
            ncclient.transport.SSHError: the SSH or NETCONF session could not start.
        """
        from ncclient import manager as ncclient_manager
        from ncclient.transport import SSHUnknownHostError
        from ncclient.transport import session as transport

        self.close()
        transport.TICK = min(transport.TICK, _TICK)
        params = host.get_connection_parameters(CONNECTION_NAME)
        hostname, port = params.hostname or host.name, params.port or DEFAULT_NETCONF_PORT
        trust = trust_of(host, CONNECTION_NAME)
        jump = jump_host_of(host)

        def connect() -> Any:
            if jump is None:
                return watched_connection(hostname, port, timeout)
            return channel_through(jump, trust, hostname, port, timeout)

        key = None
        if trust.policy != "off":
            trusted, _ = matched(trust.files, hostname, port)
            if not trusted:  # strict: HostKeyUnknown; accept-new: recorded
                key = probe_key(hostname, port, timeout, connect)
                check_key(trust, host.name, hostname, port, key)
                trusted = [key]
            key = trusted[0]
        extras = without_setting(params.extras or {})
        sock = connect()
        try:
            self.manager = ncclient_manager.connect(
                host=hostname, port=port, username=params.username, password=params.password,
                sock=sock, timeout=timeout, allow_agent=False, look_for_keys=False,
                hostkey_verify=key is not None, hostkey_b64=None if key is None else _b64(key),
                device_params={"name": _HANDLERS.get(str(params.platform), "default")},
                **extras,
            )
        except SSHUnknownHostError:
            sock.close()
            assert key is not None
            seen = probe_key(hostname, port, timeout, connect)
            raise HostKeyMismatch(host.name, f"{hostname}:{port}", seen, [key]) from None
        except Exception as exc:
            sock.close()
            silent = no_banner(exc, sock, f"{hostname}:{port}", timeout)
            if silent is not None:
                raise silent from exc
            raise
        try:
            _first_answer(self.manager, timeout)
        except BaseException:
            self.close()
            raise
        return self.manager

    def close(self) -> None:
        """End the session (a ``<close-session>`` given a few seconds), if open."""
        manager, self.manager = self.manager, None
        if manager is None:
            return
        with contextlib.suppress(Exception):
            manager.timeout = min(manager.timeout or _CLOSE_WAIT, _CLOSE_WAIT)
            if manager.connected:
                manager.close_session()
        with contextlib.suppress(Exception):
            manager._session.close()  # the transport, whatever the device said

    def drop(self) -> None:
        """End the session at once, no RPC sent (a server that may not answer): the server
        sees it end as if the client died."""
        manager, self.manager = self.manager, None
        if manager is not None:
            with contextlib.suppress(Exception):
                manager._session.close()


def _first_answer(manager: Manager, timeout: float) -> None:
    """Return once the server answered a request of this session.

    netconfd never answers a request it reads in one piece with the client's ``<hello>``
    (seen with 50 logins at once on the lab): a read that follows the login would wait out its
    timeout. An empty ``<get-config>`` (an empty filter selects nothing) is sent until one is
    answered, the wait doubling from :data:`_FIRST_WAIT` up to ``timeout``; an ``<rpc-error>``
    is an answer too. ncclient matches replies to requests by message id, so a late reply to
    an earlier one answers nothing else.

    Raises:
        ncclient.operations.TimeoutExpiredError: nothing answered within ``timeout``.
    """
    from ncclient.operations import RPCError, TimeoutExpiredError

    ends = time.monotonic() + timeout
    wait = _FIRST_WAIT
    while True:
        manager.timeout = max(_FIRST_WAIT, min(wait, ends - time.monotonic()))
        try:
            manager.get_config(source="running", filter=_EMPTY_FILTER)
        except RPCError:
            return
        except TimeoutExpiredError:
            if time.monotonic() >= ends:
                raise
            wait *= 2
        else:
            return


def _b64(key: SSHKey) -> str:
    """``key`` as ncclient's ``hostkey_b64`` (OpenSSH's base64 of the public key)."""
    return base64.b64encode(key.public_data).decode("ascii")


def netconf_session(host: Host) -> NetconfSession:
    """The host's session, created (not yet open) on first use: log in under its lock."""
    return kept_session(host, CONNECTION_NAME, NetconfSession,
                        lambda kept: isinstance(kept, NetconfSession))
