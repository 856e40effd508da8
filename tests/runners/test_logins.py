"""Logins an SSH server refuses before authentication, on every runner: tried again on their
own (``login_retries``, on by default), and a host still refused says so in words (a wrong
password is never tried again: tests/runners/test_policies.py). The server is a loopback port
that closes every connection at once, as OpenSSH does past MaxStartups; the FRR lab's real
OpenSSH is in tests/runners/test_routers.py.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from nornir.core.task import AggregatedResult

from nornir_bench.bench.summary import summarize
from nornir_bench.core.attempts import attempts_of
from nornir_bench.core.exceptions import LoginRefused
from nornir_bench.lab import LabDevice, write_inventory
from nornir_bench.tasks import asend_command, send_command
from tests.core.test_logins import closing_port
from tests.devices import nornir_on
from tests.runners.test_conformance import POLICIES, Runner, each_kind, each_runner
from tests.runners.test_policies import pick

pytestmark = pytest.mark.usefixtures("no_leaked_threads", "no_leaked_processes")

HOSTS = 3


def join_transports() -> None:
    for thread in threading.enumerate():  # paramiko ends its transport on its own
        if type(thread).__name__ == "Transport":
            thread.join(10)


def inventory(folder: Path, port: int, password: str = "pw") -> Path:
    write_inventory(
        [LabDevice(f"h{k}", "127.0.0.1", port, "cisco_ios", "user", password)
         for k in range(HOSTS)],
        folder,
    )
    return folder


def show_clock(folder: Path, runner: Runner, kind: str, **options: Any) -> AggregatedResult:
    """``show clock`` on the inventory in ``folder``, its connections closed after."""
    nr = nornir_on(folder, runner.name, **runner.options, **options)
    try:
        return nr.run(task=pick(kind, send_command, asend_command), command="show clock")
    finally:
        nr.close_connections()
        join_transports()


@pytest.mark.parametrize(("runner", "kind"), each_runner(POLICIES, cases=each_kind))
def test_a_login_refused_before_authentication_is_tried_again_then_said_in_words(
    runner: Runner, kind: str, tmp_path: Path
) -> None:
    with closing_port() as (port, accepted):
        result = show_clock(inventory(tmp_path, port), runner, kind, login_retries=2)
    assert set(result.failed_hosts) == {f"h{k}" for k in range(HOSTS)}
    tries = 0
    for multi in result.values():
        error = multi[0].exception
        attempts, failed = attempts_of(multi)
        assert isinstance(error, LoginRefused), error
        said = f"127.0.0.1:{port} closed the connection before login ({attempts} times)"
        assert said in str(error) and "MaxStartups" in str(error)
        assert "Traceback" in multi[0].result  # the library's own error, as it was raised
        # login_retries + 1 refusals that count (the first, unpaced; those going alone, the
        # window at one), and one at most at each wider width the pace went through (4, 2)
        assert 3 <= attempts <= 5
        assert [f.exception for f in failed] == ["LoginRefused"] * (attempts - 1)
        tries += attempts
    assert accepted[0] >= tries  # each try reached the server (a library may try twice)
    said = [line for line in summarize(result).lines() if line.startswith("logins throttled")]
    assert len(said) == 1, summarize(result).lines()
    assert f"{tries} refused before authentication by 1 SSH server (127.0.0.1:{port})" in (
        said[0]
    )
    assert f"{HOSTS} hosts tried again" in said[0]
    assert "max_starts_per_second: 5 (5 per server)" in said[0]


@pytest.mark.parametrize(("runner", "kind"), each_runner(POLICIES, cases=each_kind))
def test_login_retries_0_turns_it_off(runner: Runner, kind: str, tmp_path: Path) -> None:
    with closing_port() as (port, _):
        result = show_clock(inventory(tmp_path, port), runner, kind, login_retries=0)
    assert len(result.failed_hosts) == HOSTS
    for multi in result.values():
        assert not isinstance(multi[0].exception, LoginRefused)  # the library's own error
        assert attempts_of(multi)[0] == 1


@pytest.mark.parametrize(("runner", "kind"), each_runner(POLICIES, cases=each_kind))
def test_a_wrong_password_after_a_refused_login_is_not_tried_again(
    runner: Runner, kind: str, tmp_path: Path
) -> None:
    """A server that drops the first login before authentication (MaxStartups), then refuses
    the password: the host tried again fails with the wrong password. The library's error of
    the second try carried the first's connection loss within it, the run took it for one
    more throttled login, and offered the wrong password 10 times more (an AAA server locks
    the account)."""
    from tests.ssh_servers import bastion

    with bastion() as server:
        server.refuse = 1
        folder = inventory(tmp_path, server.port, password="wrong")
        with (folder / "known_hosts").open("a") as known:
            known.write(server.line())
        result = show_clock(folder, runner, kind)
    assert set(result.failed_hosts) == {f"h{k}" for k in range(HOSTS)}
    tries = 0
    for multi in result.values():
        assert not isinstance(multi[0].exception, LoginRefused), multi[0].exception
        attempts, failed = attempts_of(multi)
        assert [f.exception for f in failed] == ["LoginRefused"] * (attempts - 1)
        assert attempts <= 2
        tries += attempts
    assert tries == HOSTS + 1  # the one refused, tried once more
    assert len(server.logins) == HOSTS  # each host offered its password once


@pytest.mark.parametrize(
    ("runner", "kind"), each_runner(POLICIES, cases=lambda r: each_kind(r)[-1:])
)
def test_hosts_tried_again_log_in_through_the_pace(
    runner: Runner, kind: str, tmp_path: Path
) -> None:
    """Once the server refused a login, a host tries again only with a place in the server's
    window (four wide at first): a refusal there is the pace's to narrow, not one of the
    host's ``login_retries``. So the first host tried again through the pace has one try
    more than ``login_retries + 1``; were the runner not to pace them, each would have
    exactly that many (as the router lab's OpenSSH shows: tests/runners/test_routers.py)."""
    with closing_port() as (port, _):
        result = show_clock(inventory(tmp_path, port), runner, kind, login_retries=1)
    assert set(result.failed_hosts) == {f"h{k}" for k in range(HOSTS)}
    attempts = [attempts_of(multi)[0] for multi in result.values()]
    assert all(isinstance(multi[0].exception, LoginRefused) for multi in result.values())
    assert max(attempts) > 2, attempts
