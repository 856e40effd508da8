"""The pace of logins per SSH server, and which errors are a login refused before
authentication: real errors of paramiko/netmiko and asyncssh against a loopback port that
closes each connection at once, as OpenSSH's MaxStartups does."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import asyncssh
import netmiko
import paramiko
import pytest
from nornir.core.inventory import Host

from nornir_bench.core.exceptions import LoginRefused
from nornir_bench.core.policies.logins import LoginPace, refused_before_login, server_of
from nornir_bench.core.policies.options import RunPolicy


@contextmanager
def closing_port() -> Iterator[tuple[int, list[int]]]:
    """A loopback port that accepts each connection and closes it at once, before any SSH
    banner; and the count of connections it took (one item)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    accepted = [0]

    def serve() -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            accepted[0] += 1
            client.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1], accepted
    finally:
        listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        thread.join(5)


@contextmanager
def closing_after_banner() -> Iterator[int]:
    """A loopback port that sends an SSH banner, reads the client's, and closes: a server that
    dropped the connection in the key exchange, before any login."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)

    def serve() -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            with client:
                client.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")
                client.recv(256)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        thread.join(5)


def host(port: int = 2201, connections: bool = False) -> Host:
    made = Host("h1", hostname="127.0.0.1", port=port)
    if connections:
        made.connections["netmiko"] = object()  # type: ignore[assignment]
    return made


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_server_is_paced_only_once_it_refused_a_login() -> None:
    clock = Clock()
    pace = LoginPace(3, clock=clock, rand=lambda: 0.0)
    assert not pace.active and pace.take(host()) is None
    pace.refused_login(host())
    assert pace.active and pace.window(server_of(host())) == (4.0, 0)
    assert [pace.take(host()) for _ in range(4)] == [0.0] * 4  # four places taken
    assert pace.take(host()) == pytest.approx(0.025)  # the fifth asks again later
    pace.left(host())
    assert pace.take(host()) == 0.0
    assert pace.take(host(port=2202)) is None  # another server: not paced
    assert pace.take(host(connections=True)) is None  # a kept session: no login


def test_refusals_of_one_burst_halve_the_window_once_and_logins_grow_it() -> None:
    clock = Clock()
    pace = LoginPace(3, clock=clock)
    server = server_of(host())
    for _ in range(5):
        pace.refused_login(host())
    assert pace.window(server) == (4.0, 0)  # the first refusal paces it; its burst not more
    clock.now += 1.0
    pace.refused_login(host())
    pace.refused_login(host())
    assert pace.window(server) == (2.0, 0)
    for _ in range(3):
        clock.now += 1.0
        pace.refused_login(host())
    assert pace.window(server) == (1.0, 0)  # never below one login at a time
    pace.logged_in(host())
    pace.logged_in(host())
    assert pace.window(server) == (2.5, 0)  # one more per window's worth of logins
    for _ in range(3000):
        pace.logged_in(host())
    assert pace.window(server) is None  # wide enough: no longer paced
    assert pace.refused == 10


def test_login_retries_default_on_and_can_be_turned_off() -> None:
    assert RunPolicy().login_retries == 8
    assert RunPolicy.build("t", {"login_retries": 0}).login_retries == 0
    with pytest.raises(ValueError, match="login_retries must be a whole number from 0 to 100"):
        RunPolicy.build("t", {"login_retries": -1})


def netmiko_error(port: int) -> BaseException:
    with pytest.raises(Exception) as caught:
        netmiko.ConnectHandler(
            device_type="cisco_ios", host="127.0.0.1", port=port, username="u", password="p",
            conn_timeout=5, banner_timeout=5,
        )
    return caught.value


def asyncssh_error(port: int) -> BaseException:
    async def connect() -> None:
        await asyncssh.connect("127.0.0.1", port, username="u", password="p", known_hosts=None)

    with pytest.raises(Exception) as caught:
        asyncio.run(connect())
    return caught.value


def test_a_connection_closed_before_the_banner_is_a_refused_login() -> None:
    with closing_port() as (port, _):
        assert refused_before_login(netmiko_error(port))  # paramiko's banner error within
        assert refused_before_login(asyncssh_error(port))  # asyncssh's ConnectionLost


def test_a_connection_closed_in_the_key_exchange_is_a_refused_login() -> None:
    """netmiko let paramiko's bare EOFError through, and a loaded OpenSSH's drops read "No
    existing session": neither was told apart, and those hosts failed on threadpool."""
    with closing_after_banner() as port:
        assert refused_before_login(netmiko_error(port))
        assert refused_before_login(asyncssh_error(port))
    assert refused_before_login(netmiko.NetmikoTimeoutException(
        "Paramiko: 'No existing session' error: try increasing 'conn_timeout' to 15 seconds"
    ))


@pytest.mark.parametrize(
    "error",
    [
        asyncssh.ConnectionLost("lost mid-session"),  # not raised while connecting
        asyncssh.PermissionDenied("wrong password"),
        paramiko.AuthenticationException("Authentication failed."),
        netmiko.NetmikoAuthenticationException("Authentication to device failed."),
        ConnectionRefusedError(111, "Connection refused"),  # nothing listens: no server
        ValueError("Error reading SSH protocol banner"),  # the words alone are not enough
        EOFError(),  # not raised while connecting
    ],
    ids=lambda e: type(e).__name__,
)
def test_other_failures_are_not_refused_logins(error: BaseException) -> None:
    assert not refused_before_login(error)


def test_a_refused_login_says_what_happened_and_what_to_set() -> None:
    error = LoginRefused("127.0.0.1:2201", 9)
    text = str(error)
    assert "127.0.0.1:2201 closed the connection before login (9 times)" in text
    assert "OpenSSH MaxStartups" in text and "max_starts_per_second" in text
    assert isinstance(error, ConnectionError)
    import pickle

    again: Any = pickle.loads(pickle.dumps(error))
    assert str(again) == text and again.times == 9
