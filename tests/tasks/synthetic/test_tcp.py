"""tcp_ping / atcp_ping over real sockets, up to 2,000 hosts at once on the RTT server."""

from __future__ import annotations

import time
from typing import Any

import pytest
from nornir import InitNornir
from nornir.core import Nornir

from nornir_bench.lab import raise_open_file_limit
from nornir_bench.tasks import atcp_ping, tcp_ping
from tests.devices import ServerThread, closed_port, full_port, rtt_server_thread, silent_port

pytestmark = pytest.mark.usefixtures("no_leaked_threads")

HOSTS = 2000
RUNNERS = ["threadpool", "asyncio"]


def nornir_at(port: int, hosts: int = 1, runner: str = "threadpool", **options: Any) -> Nornir:
    """``hosts`` synthetic hosts, all at 127.0.0.1:``port``."""
    return InitNornir(
        inventory={
            "plugin": "synthetic",
            "options": {"hosts": hosts, "hostname": "127.0.0.1", "port": port},
        },
        runner={"plugin": runner, "options": options},
        logging={"enabled": False},
    )


def ping_task(runner: str) -> Any:
    return atcp_ping if runner == "asyncio" else tcp_ping


@pytest.mark.parametrize("runner", RUNNERS)
def test_probe_reply_takes_the_servers_delay(rtt_server: ServerThread, runner: str) -> None:
    nr = nornir_at(rtt_server.port, 3, runner)
    start = time.perf_counter()
    result = nr.run(task=ping_task(runner), probe="ping")
    run = time.perf_counter() - start
    assert not result.failed, result.failed_hosts
    for multi in result.values():
        ping = multi.result
        assert ping["address"] == f"127.0.0.1:{rtt_server.port}"
        # In seconds, each a part of the run's own time (however slow the machine), and the
        # reply at least the server's delay.
        assert 0 < ping["connect"] and 0.05 <= ping["reply"]
        assert ping["connect"] + ping["reply"] <= run
    assert rtt_server.stats.requests == 3


@pytest.mark.parametrize("runner", RUNNERS)
def test_connect_only_without_probe(rtt_server: ServerThread, runner: str) -> None:
    result = nornir_at(9, 1, runner).run(task=ping_task(runner), port=rtt_server.port)
    ping = result["dev0"].result
    assert ping["address"] == f"127.0.0.1:{rtt_server.port}" and ping["reply"] is None
    assert rtt_server.stats.requests == 0


@pytest.mark.parametrize("runner", RUNNERS)
def test_closed_port_is_refused(runner: str) -> None:
    with closed_port() as port:
        result = nornir_at(port, 1, runner).run(task=ping_task(runner), probe="ping")
    assert isinstance(result["dev0"].exception, ConnectionRefusedError)


@pytest.mark.parametrize("runner", RUNNERS)
def test_silent_server_times_out_waiting_for_the_reply(runner: str) -> None:
    with silent_port() as port:
        start = time.monotonic()
        result = nornir_at(port, 1, runner).run(task=ping_task(runner), probe="ping", timeout=0.3)
        elapsed = time.monotonic() - start
    exc = result["dev0"].exception
    # The wait ended by the timeout given (the message carries the one in force), not before.
    assert isinstance(exc, TimeoutError)
    assert str(exc) == f"127.0.0.1:{port}: no reply line within 0.3 s"
    assert elapsed >= 0.3


@pytest.mark.parametrize("runner", RUNNERS)
def test_unanswered_connection_times_out(runner: str) -> None:
    with full_port() as port:
        result = nornir_at(port, 1, runner).run(task=ping_task(runner), timeout=0.3)
    exc = result["dev0"].exception
    assert isinstance(exc, TimeoutError)
    assert str(exc) == f"127.0.0.1:{port}: no TCP connection within 0.3 s"


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"port": 0}, "port must be a whole number from 1 to 65535, got 0"),
        ({"timeout": 0}, "timeout must be a number of seconds > 0, got 0"),
        ({"probe": "a\nb"}, "probe must be one non-empty line of text"),
        ({"probe": ""}, "probe must be one non-empty line of text"),
    ],
)
def test_bad_options_fail_the_host(runner: str, kwargs: dict[str, Any], message: str) -> None:
    result = nornir_at(7, 1, runner).run(task=ping_task(runner), **kwargs)
    exc = result["dev0"].exception
    assert isinstance(exc, ValueError) and message in str(exc)


def test_two_thousand_hosts_at_once_on_real_sockets() -> None:
    limit = raise_open_file_limit()
    if limit is not None and limit < 2 * HOSTS + 200:  # both ends live in this process
        pytest.skip(f"open-file limit {limit} is below {2 * HOSTS + 200}")
    # A delay much longer than connecting 2,000 sockets takes: every host is connected, waiting
    # for its reply, at the same time; the server's counter shows it.
    delay = 1.0
    with rtt_server_thread(delay=delay) as server:
        nr = nornir_at(server.port, HOSTS, "asyncio", num_workers=HOSTS)
        result = nr.run(task=atcp_ping, probe="ping", timeout=30)
        stats = server.stats
    assert not result.failed, list(result.failed_hosts.items())[:3]
    assert len(result) == HOSTS
    assert all(multi.result["reply"] >= delay for multi in result.values())
    assert stats.requests == stats.accepted == HOSTS
    assert stats.peak_connections == HOSTS
