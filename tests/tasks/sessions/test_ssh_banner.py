"""A device that never answers, one that closes before login, and a closed port, on both
drivers: real TCP servers on loopback, counted by the connections they took. A server that
took the connection and said nothing fails each host once, named (``NoSSHBanner``); one that
closes before login is a throttled login, tried again and paced; a closed port is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from nornir.core.task import AggregatedResult

from nornir_bench.bench.summary import summarize
from nornir_bench.core.attempts import attempts_of
from nornir_bench.core.exceptions import LoginRefused, NoSSHBanner
from nornir_bench.lab.faulty_servers import closing_server, silent_server
from nornir_bench.tasks import asend_command, send_command
from tests.devices import closed_port, nornir_on

HOSTS = 3
DRIVERS = [("threadpool", send_command), ("asyncio", asend_command)]


def ids(value: Any) -> str:
    return getattr(value, "__name__", str(value))


def show_clock(
    port: int, folder: Path, runner: str, task: Any, checking: str = "off", **options: Any
) -> AggregatedResult:
    """``show clock`` on ``HOSTS`` hosts at ``port``, with a login timeout of 1 s and the
    login policy's defaults (``login_retries`` on) unless ``options`` say otherwise."""
    (folder / "hosts.yaml").write_text(json.dumps({
        f"h{n}": {"hostname": "127.0.0.1", "port": port, "platform": "cisco_ios"}
        for n in range(HOSTS)
    }))
    (folder / "defaults.yaml").write_text(json.dumps({
        "username": "admin", "password": "pw",
        "data": {"host_key_checking": checking, "known_hosts": str(folder / "known_hosts")},
        "connection_options": {"netmiko": {"extras": {"conn_timeout": 1, "banner_timeout": 1}}},
    }))
    (folder / "groups.yaml").write_text("{}")
    nr = nornir_on(folder, runner, **options)
    params = {"timeout": 1} if task is asend_command else {}
    try:
        return nr.run(task=task, command="show clock", **params)
    finally:
        nr.close_connections()


def throttled_lines(result: AggregatedResult) -> list[str]:
    return [line for line in summarize(result).lines() if line.startswith("logins throttled")]


@pytest.mark.parametrize("checking", ["off", "strict"])
@pytest.mark.parametrize(("runner", "task"), DRIVERS, ids=ids)
def test_a_device_that_never_answers_fails_once_named_not_as_a_refused_login(
    runner: str, task: Any, checking: str, tmp_path: Path
) -> None:
    """Once taken for a server throttling logins (netmiko's "No existing session"): tried 10
    times a host, one banner timeout each, its logins paced. ``strict`` with the device's key
    unknown: netmiko's login starts with a probe of the key, which meets the silence."""
    with silent_server() as silent:
        result = show_clock(silent.port, tmp_path, runner, task, checking)
        accepted = silent.accepted
    for name, multi in result.items():
        exc = multi[0].exception
        assert isinstance(exc, NoSSHBanner), (name, exc)
        assert str(exc) == (f"127.0.0.1:{silent.port}: no SSH banner within 1 s: the port took "
                            "the connection and said nothing")
        assert attempts_of(multi)[0] == 1, (name, attempts_of(multi))
        assert not getattr(multi[0], "login_wait", 0), name  # no login was slowed for it
    assert accepted == HOSTS  # once a host
    assert throttled_lines(result) == []
    assert f"failed with NoSSHBanner: {HOSTS} hosts" in "\n".join(summarize(result).lines())


@pytest.mark.parametrize(("runner", "task"), DRIVERS, ids=ids)
def test_a_device_that_closes_before_login_is_a_throttled_login_tried_again(
    runner: str, task: Any, tmp_path: Path
) -> None:
    with closing_server() as closing:
        result = show_clock(closing.port, tmp_path, runner, task, login_retries=1)
        accepted = closing.accepted
    for name, multi in result.items():
        assert isinstance(multi[0].exception, LoginRefused), (name, multi[0].exception)
        assert attempts_of(multi)[0] > 1, name
    assert accepted > HOSTS
    assert len(throttled_lines(result)) == 1


@pytest.mark.parametrize(("runner", "task"), DRIVERS, ids=ids)
def test_a_closed_device_port_is_refused_once(runner: str, task: Any, tmp_path: Path) -> None:
    with closed_port() as port:
        result = show_clock(port, tmp_path, runner, task)
    for name, multi in result.items():
        exc = multi[0].exception
        assert isinstance(exc, ConnectionRefusedError), (name, exc)
        assert str(port) in str(exc)
        assert attempts_of(multi)[0] == 1
    assert throttled_lines(result) == []


@pytest.mark.parametrize(
    ("extras", "config", "own"),
    [
        ({}, None, True),  # no SSH config: netmiko would open a plain connection
        ({}, "Host other\n  ProxyJump bastion\n", True),  # an entry for another host
        ({}, "Host 10.0.0.1\n  ProxyJump bastion\n", False),
        ({}, "Host 10.0.0.1\n  Port 2222\n", False),
        ({}, "Host 10.0.0.1\n  HostName r1.example.net\n", False),
        ({"sock": object()}, None, False),  # the user's own socket
        ({"device_type": "cisco_ios_telnet"}, None, False),
    ],
)
def test_the_tasks_open_the_connection_only_where_netmiko_would_open_a_plain_one(
    extras: dict[str, Any], config: str | None, own: bool, tmp_path: Path
) -> None:
    from nornir.core.inventory import Host

    from nornir_bench.tasks.sessions._ssh_banner import own_socket_for

    path = None
    if config is not None:
        path = tmp_path / "ssh_config"
        path.write_text(config)
    host = Host("r1", hostname="10.0.0.1", platform="cisco_ios")
    assert own_socket_for(host, extras, None if path is None else str(path)) is own
