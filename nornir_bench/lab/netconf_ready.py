"""A NETCONF lab ready: every server answers a NETCONF session over SSH.

Ready means what a client needs: a login on the server's port, the ``netconf`` subsystem
opened, the server's ``<hello>`` read, ours sent and a ``<close-session>`` answered ``<ok/>``
(netconfd itself, through OpenSSH and the subsystem, not only a port that listens).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Sequence
from typing import Any

from nornir_bench.lab.netconf_plan import NetconfPlan, NetconfServer
from nornir_bench.lab.ready import LabNotReady

__all__ = [
    "HELLO_TIMEOUT", "NetconfNotReady", "netconf_rpcs", "netconf_session_answered",
    "wait_for_named_netconf_lab", "wait_for_netconf_lab",
]

HELLO_TIMEOUT = 10.0
_POLL = 0.2
_END = b"]]>]]>"  # NETCONF 1.0's end of message, which every hello is framed with
_CLIENT_HELLO = (
    b'<?xml version="1.0" encoding="UTF-8"?>'
    b'<hello xmlns="urn:ietf:params:xml:ns:netconf:base:1.0"><capabilities>'
    b"<capability>urn:ietf:params:netconf:base:1.0</capability>"
    b"</capabilities></hello>" + _END
)
class NetconfNotReady(LabNotReady):
    """Some NETCONF server did not answer a session in time."""


def wait_for_netconf_lab(plan: NetconfPlan, password: str, timeout: float = 60.0) -> None:
    """Return once every server of ``plan`` answers a NETCONF session (as the lab's user,
    ``password``).

    Raises:
        NetconfNotReady: naming the servers that did not, and why the last try failed.
    """
    deadline = time.monotonic() + timeout
    waiting = list(plan.servers)
    problem = ""
    while True:
        failures = asyncio.run(_sessions(plan, password, waiting))
        waiting = [s for s in waiting if s.name in failures]
        if not waiting:
            return
        problem = next(iter(failures.values()))
        if time.monotonic() >= deadline:
            names = ", ".join(s.name for s in waiting)
            raise NetconfNotReady(
                f"NETCONF lab not ready after {timeout:g} s: {names}: no NETCONF session "
                f"({problem})"
            )
        time.sleep(_POLL)


def wait_for_named_netconf_lab(name: str, timeout: float = 60.0) -> int:
    """``nornir-bench wait-lab --netconf``: wait for the NETCONF lab named ``name``, started by
    another process (its state file appears as it starts), to be ready; its server count.

    The state is read again at each look: the state a killed lab left (its process gone) is
    not this lab's, and a lab started again under the name has another password.

    Raises:
        NetconfNotReady: no such lab, or not ready, at ``timeout``.
    """
    from nornir_bench.lab._system import owner_alive, read_state
    from nornir_bench.lab.netconf_plan import plan_netconf_lab

    deadline = time.monotonic() + timeout
    while True:
        state = read_state(name)
        if (state is not None and state.kind == "netconf" and state.sshd_pid is not None
                and owner_alive(state)):
            plan = plan_netconf_lab(len(state.ports), port=min(state.ports.values()), name=name)
            wait_for_netconf_lab(plan, state.password, max(deadline - time.monotonic(), _POLL))
            return len(plan.servers)
        if time.monotonic() >= deadline:
            raise NetconfNotReady(f"no NETCONF lab named {name!r} started within {timeout:g} s")
        time.sleep(_POLL)


async def _sessions(plan: NetconfPlan, password: str,
                    servers: list[NetconfServer]) -> dict[str, str]:
    said = await asyncio.gather(
        *(netconf_session_answered(plan.user, password, s.port) for s in servers)
    )
    return {s.name: problem for s, problem in zip(servers, said, strict=True) if problem}


async def netconf_session_answered(user: str, password: str, port: int,
                                   timeout: float = HELLO_TIMEOUT) -> str:
    """``""`` if the NETCONF server behind 127.0.0.1:``port`` answers a session (hello both
    ways, ``<close-session>`` answered ``<ok/>``), else what went wrong, in a few words."""
    import asyncssh

    try:
        (reply,) = await asyncio.wait_for(
            netconf_rpcs(user, password, port, ["<close-session/>"]), timeout)
    except (OSError, asyncssh.Error, asyncio.TimeoutError, asyncio.IncompleteReadError,
            ValueError) as exc:
        return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return "" if "<ok/>" in reply else "<close-session> not answered <ok/>"


async def netconf_rpcs(user: str, password: str, port: int, operations: Sequence[str]) -> list[str]:
    """Each of ``operations`` (``<get-config>...``: operations that may be sent twice) sent in
    turn as an ``<rpc>`` in a NETCONF 1.0 session to 127.0.0.1:``port``; the server's replies
    (``<rpc-reply>`` text). No host key checked: the lab's own loopback servers, for the
    lab's checks and tests.

    netconfd drops an ``<rpc>`` it reads in one piece with the client's ``<hello>``: an
    operation not answered within :data:`_RESEND` seconds is sent again under a new
    message id, and a reply to either is its reply (a late one to the other is skipped).

    Raises:
        ValueError: the server's first message is not a hello with a session id.
        OSError, asyncssh.Error, asyncio.IncompleteReadError: the session failed.
    """
    import asyncssh

    async with asyncssh.connect(
        "127.0.0.1", port, username=user, password=password, known_hosts=None,
        client_keys=None, agent_path=None,
    ) as conn:
        process = await conn.create_process(subsystem="netconf", encoding=None)
        hello = await process.stdout.readuntil(_END)
        if b"<hello" not in hello or b"<session-id>" not in hello:
            raise ValueError("the server's first message is not a hello with a session id")
        process.stdin.write(_CLIENT_HELLO)
        replies = []
        read = _Replies(process.stdout)
        sent = 0
        for operation in operations:
            ids: set[str] = set()
            reply = None
            while reply is None:
                sent += 1
                ids.add(str(sent))
                process.stdin.write(
                    f'<?xml version="1.0" encoding="UTF-8"?><rpc message-id="{sent}" '
                    f'xmlns="urn:ietf:params:xml:ns:netconf:base:1.0">{operation}</rpc>'
                    .encode() + _END
                )
                reply = await read.to(ids)
            replies.append(reply)
        process.close()
        return replies


_RESEND = 0.25
_MESSAGE_ID = re.compile(rb'message-id="([^"]*)"')


class _Replies:
    """A session's replies read one message at a time; a read the wait gave up on goes on,
    and the next wait takes it up (no message is lost half-read)."""

    def __init__(self, stdout: Any) -> None:
        self._stdout = stdout
        self._reading: asyncio.Future[bytes] | None = None

    async def to(self, ids: set[str]) -> str | None:
        """The next reply whose message id is one of ``ids`` (others skipped), or ``None``
        when none came within :data:`_RESEND` seconds."""
        while True:
            if self._reading is None:
                self._reading = asyncio.ensure_future(self._stdout.readuntil(_END))
            done, _ = await asyncio.wait({self._reading}, timeout=_RESEND)
            if not done:
                return None
            message, self._reading = self._reading.result(), None
            found = _MESSAGE_ID.search(message)
            if found is not None and found.group(1).decode() in ids:
                return message[: -len(_END)].decode()
