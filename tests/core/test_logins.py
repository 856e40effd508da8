"""The pace of logins per SSH server, and which errors are a login refused before
authentication: real errors of paramiko/netmiko and asyncssh against a loopback port that
closes each connection at once, as OpenSSH's MaxStartups does."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import asyncssh
import netmiko
import paramiko
import pytest
from nornir.core.inventory import Host

from nornir_bench.core.exceptions import LoginRefused, NoSSHBanner
from nornir_bench.core.policies.logins import (
    LoginPace,
    Place,
    refused_before_login,
    refused_by,
    server_of,
)
from nornir_bench.core.policies.options import RunPolicy
from nornir_bench.lab.faulty_servers import silent_server


@contextmanager
def serving(handle: Callable[[socket.socket], None]) -> Iterator[int]:
    """A loopback port whose connections, one after the other, ``handle`` gets and closes."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)

    def serve() -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            with client:
                handle(client)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        thread.join(5)


@contextmanager
def closing_port() -> Iterator[tuple[int, list[int]]]:
    """A loopback port that accepts each connection and closes it at once, before any SSH
    banner; and the count of connections it took (one item)."""
    accepted = [0]

    def count(client: socket.socket) -> None:
        accepted[0] += 1

    with serving(count) as port:
        yield port, accepted


@contextmanager
def closing_after_banner() -> Iterator[int]:
    """A loopback port that sends an SSH banner, reads the client's, and closes: a server that
    dropped the connection in the key exchange, before any login."""

    def banner(client: socket.socket) -> None:
        client.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")
        client.recv(256)

    with serving(banner) as port:
        yield port


def host(port: int = 2201, connections: bool = False) -> Host:
    made = Host("h1", hostname="127.0.0.1", port=port)
    if connections:
        made.connections["netmiko"] = object()  # type: ignore[assignment]
    return made


def test_a_server_is_paced_only_once_it_refused_a_login() -> None:
    pace = LoginPace(3, rand=lambda: 0.0)
    assert not pace.active and pace.take(host()) is None
    assert pace.refused_login(host()) == (0.0, True)  # not paced: it counts
    assert pace.active and pace.window(server_of(host())) == (4.0, 0)
    assert [pace.take(host()) for _ in range(4)] == [Place(0, 4.0)] * 4  # four places taken
    assert pace.take(host()) == pytest.approx(0.025)  # the fifth asks again later
    pace.left(host())
    assert pace.take(host()) == Place(0, 4.0)
    assert pace.take(host(port=2202)) is None  # another server: not paced
    assert pace.take(host(connections=True)) is None  # a kept session: no login


def test_refusals_of_logins_started_at_one_width_halve_the_window_once() -> None:
    pace = LoginPace(3)
    server = server_of(host())
    pace.refused_login(host())
    first = [pace.take(host()) for _ in range(4)]
    for place in first:
        pace.left(host())
        pace.refused_login(host(), place)  # type: ignore[arg-type]
    assert pace.window(server) == (2.0, 0)  # cut once for the four, started at one width
    second = [pace.take(host()) for _ in range(2)]
    assert second == [Place(1, 2.0)] * 2
    pace.refused_login(host(), second[0])  # type: ignore[arg-type]
    assert pace.window(server)[0] == 1.0  # type: ignore[index]
    pace.refused_login(host(), Place(2, 1.0))
    assert pace.window(server)[0] == 1.0  # type: ignore[index]  # never below one at a time


def test_only_refusals_the_pace_cannot_have_caused_count_against_login_retries() -> None:
    pace = LoginPace(3)
    assert pace.refused_login(host())[1]  # not paced
    assert not pace.refused_login(host(), Place(0, 4.0))[1]  # four at once: the pace narrows
    assert not pace.refused_login(host(), Place(1, 2.0))[1]
    assert pace.refused_login(host(), Place(2, 1.9))[1]  # alone: the server refuses anyway
    assert pace.refused == 4


def test_logins_that_get_in_grow_the_window_until_the_server_is_no_longer_paced() -> None:
    pace = LoginPace(3)
    server = server_of(host())
    pace.refused_login(host())
    for generation in range(2):
        pace.refused_login(host(), Place(generation, 4.0))
    assert pace.window(server) == (1.0, 0)
    pace.logged_in(host())
    pace.logged_in(host())
    assert pace.window(server) == (2.5, 0)  # one more per window's worth of logins
    for _ in range(3000):
        pace.logged_in(host())
    assert pace.window(server) is None  # wide enough: no longer paced


def test_login_retries_default_on_and_can_be_turned_off() -> None:
    assert RunPolicy().login_retries == 8
    assert RunPolicy.build("t", {"login_retries": 0}).login_retries == 0
    with pytest.raises(ValueError, match="login_retries must be a whole number from 0 to 100"):
        RunPolicy.build("t", {"login_retries": -1})


def netmiko_error(port: int, wait: float = 5) -> BaseException:
    with pytest.raises(Exception) as caught:
        netmiko.ConnectHandler(
            device_type="cisco_ios", host="127.0.0.1", port=port, username="u", password="p",
            conn_timeout=wait, banner_timeout=wait,
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


def test_a_server_that_never_answered_is_not_a_refused_login_whatever_netmiko_said() -> None:
    """netmiko says "No existing session" for a banner that never came too; the tasks tell
    it apart (tasks/sessions/_ssh_banner.py) and raise NoSSHBanner from it, which ends the look into
    its causes."""
    with silent_server() as silent:
        said = netmiko_error(silent.port, wait=1)
    assert refused_before_login(said)  # the library's words alone: taken for a refusal
    try:
        raise NoSSHBanner(f"127.0.0.1:{silent.port}", 1) from said
    except NoSSHBanner as exc:
        assert not refused_before_login(exc)


def test_a_refusal_names_the_server_its_error_names_else_the_hosts() -> None:
    bastion = ConnectionError("jump host 127.0.0.1:2702: closed before login")
    bastion.server = "127.0.0.1:2702"  # type: ignore[attr-defined]  # JumpHostUnreachable's
    assert refused_by(bastion, host(2201)) == "127.0.0.1:2702"
    assert refused_by(EOFError(), host(2201)) == "127.0.0.1:2201"


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
