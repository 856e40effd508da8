"""The asyncssh session as a nornir connection: closing it from synchronous code."""

from __future__ import annotations

import asyncio

from nornir.core.inventory import Host

from nornir_bench.tasks.ssh_session import CONNECTION_NAME, AsyncSSHSession, session_of
from tests.devices import LabProcess


def lab_host(lab: LabProcess) -> Host:
    host: Host = lab.nornir("asyncio").inventory.hosts[lab.devices[0].name]
    return host


async def opened(host: Host) -> AsyncSSHSession:
    session = session_of(host)
    params = host.get_connection_parameters(CONNECTION_NAME)
    async with session.lock:
        await session.aopen(
            params.hostname,
            params.username,
            params.password,
            params.port,
            params.platform,
            timeout=20,
        )
    return session


def test_close_connections_from_the_sessions_own_loop(fakenos_lab: LabProcess) -> None:
    host = lab_host(fakenos_lab)

    async def main() -> bool:
        session = await opened(host)
        connection = session.connection
        assert connection is not None and session.is_open
        host.close_connections()  # nornir's synchronous close, called on the session's loop
        await asyncio.wait_for(connection.wait_closed(), 10)
        return session.is_open

    assert asyncio.run(main()) is False
    assert host.connections == {}


def test_close_connections_after_the_loop_stopped(fakenos_lab: LabProcess) -> None:
    host = lab_host(fakenos_lab)
    loop = asyncio.new_event_loop()
    try:
        session = loop.run_until_complete(opened(host))
        assert session.connection is not None
        host.close_connections()  # the loop is idle: close() runs it until the session is gone
        assert session.connection is None and host.connections == {}
    finally:
        loop.close()


def test_a_session_from_another_loop_is_replaced(fakenos_lab: LabProcess) -> None:
    host = lab_host(fakenos_lab)
    first_loop = asyncio.new_event_loop()
    try:
        stale = first_loop.run_until_complete(opened(host))

        async def next_run() -> AsyncSSHSession:
            return session_of(host)

        fresh = asyncio.run(next_run())
        assert fresh is not stale and host.connections[CONNECTION_NAME] is fresh
        assert stale.connection is None
    finally:
        # The stale session's socket is released when its loop runs again, as an owner does
        # before closing a loop (asyncio.run does the same).
        first_loop.run_until_complete(asyncio.sleep(0.01))
        first_loop.close()
