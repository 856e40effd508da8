"""A jump host that fails, on both drivers: down, its port closed, closing before login (its
MaxStartups), never answering, a device behind it that never answers, and the job stopped
while logins wait at it; each host fails once, naming the bastion, or is tried again as a
refused login is (tests/ssh_servers.py's bastion; tests/tasks/sessions/test_jump_hosts.py
for the bastion that works and the impostors)."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import asyncssh
import pytest
from nornir import InitNornir
from nornir.core.task import AggregatedResult

from nornir_bench.bench.summary import summarize
from nornir_bench.core.attempts import attempts_of
from nornir_bench.core.exceptions import LoginRefused, NoSSHBanner
from nornir_bench.lab.faulty_servers import closing_server, silent_server
from nornir_bench.tasks import asend_command, send_command
from nornir_bench.tasks.sessions.jump_hosts import JumpHostUnreachable
from tests.devices import closed_port, nornir_on
from tests.runners.test_conformance import ASYNC, RUNNERS, SYNC, Runner, each_kind, each_runner
from tests.ssh_servers import JUMP_PASSWORD, bastion, jump_data
from tests.tasks.sessions.test_host_keys import (
    COMBINATIONS,
    PASSWORD,
    ids,
    impostor,
)
from tests.tasks.sessions.test_jump_hosts import run_through
from tests.waiting import HANG_GUARD


def run_behind_down_bastion(
    port: int, folder: Path, runner: Runner, kind: str, hosts: int = 4
) -> AggregatedResult:
    """``show clock`` on ``hosts`` devices behind the bastion at ``port``, the runner's
    options and the login policy's defaults (``login_retries`` on); a login timeout of 1 s."""
    (folder / "hosts.yaml").write_text(json.dumps({
        f"h{n}": {"hostname": "127.0.0.1", "port": 9, "platform": "cisco_ios"}
        for n in range(hosts)  # never reached: the bastion is down
    }))
    (folder / "defaults.yaml").write_text(json.dumps({
        "username": "admin", "password": PASSWORD,
        "data": {"host_key_checking": "off", "jump_host": {"host": "127.0.0.1", "port": port}},
        "connection_options": {"netmiko": {"extras": {"conn_timeout": 1}}},
    }))
    (folder / "groups.yaml").write_text("{}")
    nr = nornir_on(folder, runner.name, **runner.options)
    try:
        if kind == ASYNC:
            return nr.run(task=asend_command, command="show clock", timeout=1)
        return nr.run(task=send_command, command="show clock")
    finally:
        nr.close_connections()
        getattr(nr.runner, "close", lambda: None)()


def assert_failed_once_naming_the_bastion(result: AggregatedResult, said: str) -> None:
    """Every host failed with JumpHostUnreachable saying ``said``, at its first attempt, and
    the summary counts no login throttled."""
    for name, multi in result.items():
        exc = multi[0].exception
        assert isinstance(exc, JumpHostUnreachable), (name, exc)
        assert str(exc) == said, (name, str(exc))
        assert attempts_of(multi)[0] == 1, (name, attempts_of(multi))
    lines = summarize(result).lines()
    assert not [line for line in lines if "throttled" in line], lines
    assert f"failed with JumpHostUnreachable: {len(result)} hosts" in "\n".join(lines), lines


# The blocking driver on threadpool, the async one on asyncio, as the runners give them.
DRIVERS = [
    p for p in each_runner(cases=each_kind)
    if (p.values[0].id, p.values[1]) in {("threadpool", SYNC), ("asyncio", ASYNC)}
]


@pytest.mark.parametrize(("runner", "kind"), DRIVERS)
def test_a_bastion_that_never_answers_fails_every_host_behind_it_once_naming_it(
    runner: Runner, kind: str, tmp_path: Path
) -> None:
    """A bastion that takes the connection and never says a word is down, not throttling:
    one attempt, and every host behind it fails with it, named, without being tried again as
    a refused login or counted as one the routers behind it throttled."""
    with silent_server() as silent:
        result = run_behind_down_bastion(silent.port, tmp_path, runner, kind)
        accepted = silent.accepted
    assert_failed_once_naming_the_bastion(
        result, f"jump host 127.0.0.1:{silent.port}: no SSH banner within 1 s: the port took "
        "the connection and said nothing",
    )
    assert accepted == 1  # the logins that waited failed with it


@pytest.mark.parametrize(("runner", "kind"), DRIVERS)
def test_a_bastion_port_that_is_closed_fails_every_host_behind_it_naming_it(
    runner: Runner, kind: str, tmp_path: Path
) -> None:
    with closed_port() as port:
        result = run_behind_down_bastion(port, tmp_path, runner, kind)
    assert_failed_once_naming_the_bastion(
        result, f"jump host 127.0.0.1:{port}: connection refused: nothing listens on that "
        "port (is the bastion up?)",
    )


@pytest.mark.parametrize("kind", [SYNC, ASYNC])
def test_a_bastion_that_closes_before_login_is_a_login_it_throttled_not_the_routers(
    kind: str, tmp_path: Path
) -> None:
    """A bastion closing each connection at once, as past its MaxStartups: tried again as a
    throttled login, and the summary names the bastion, not the devices behind it."""
    runner = next(r for r in RUNNERS if r.name == ("threadpool" if kind == SYNC else "asyncio"))
    with closing_server() as closing:
        result = run_behind_down_bastion(closing.port, tmp_path, runner, kind, hosts=2)
        accepted = closing.accepted
    for name, multi in result.items():
        exc = multi[0].exception
        assert isinstance(exc, LoginRefused), (name, exc)
        assert exc.server == f"127.0.0.1:{closing.port}"
        assert attempts_of(multi)[0] > 1
    assert accepted > len(result)
    said = [line for line in summarize(result).lines() if line.startswith("logins throttled")]
    assert len(said) == 1 and f"1 SSH server (127.0.0.1:{closing.port})" in said[0], said


@pytest.mark.parametrize(("runner", "task"), COMBINATIONS, ids=ids)
def test_a_device_that_never_answers_behind_the_bastion_fails_once_named(
    runner: str, task: Any, tmp_path: Path
) -> None:
    known = tmp_path / "known_hosts"
    with bastion() as jump, silent_server() as device:
        known.write_text(jump.line())
        params = {"timeout": 1} if task.__name__ == "asend_command" else {}
        (tmp_path / "hosts.yaml").write_text(json.dumps({
            f"h{n}": {"hostname": "127.0.0.1", "port": device.port, "platform": "cisco_ios"}
            for n in range(3)
        }))
        (tmp_path / "defaults.yaml").write_text(json.dumps({
            "username": "admin", "password": PASSWORD,
            "data": {"known_hosts": str(known), "host_key_checking": "off",
                     "jump_host": jump_data(jump)},
            "connection_options": {"netmiko": {"extras": {"conn_timeout": 1}}},
        }))
        (tmp_path / "groups.yaml").write_text("{}")
        nr = nornir_on(tmp_path, runner)
        try:
            result = nr.run(task=task, command="show clock", **params)
        finally:
            nr.close_connections()
        accepted = device.accepted
    for name, multi in result.items():
        exc = multi[0].exception
        assert isinstance(exc, NoSSHBanner), (name, exc)
        assert str(exc) == (f"127.0.0.1:{device.port}: no SSH banner within 1 s: the port took "
                            "the connection and said nothing")
        assert attempts_of(multi)[0] == 1
    assert accepted == len(result)  # once per host, through the bastion


def test_a_channel_closed_twice_after_its_bastion_connection_closed_says_nothing(
    tmp_path: Path,
) -> None:
    """paramiko closes a device's socket as its transport ends, and its owner closes it again:
    by then the bastion's connection, idle, is closed. The second close once raised EOFError,
    which replaced the host's own outcome."""
    from nornir_bench.tasks.sessions.bastion_connections import channel_through
    from nornir_bench.tasks.sessions.host_keys import Trust
    from nornir_bench.tasks.sessions.jump_hosts import jump_from

    with bastion() as jump, impostor() as device:
        known = tmp_path / "known_hosts"
        known.write_text(jump.line())
        trust = Trust("strict", (str(known),), str(known))
        through = jump_from(jump_data(jump), "test")
        channel = channel_through(through, trust, "127.0.0.1", device.port, 10)
        channel.close()  # the last channel: the bastion connection closes with it
        channel.close()
        again = channel_through(through, trust, "127.0.0.1", device.port, 10)  # a new one
        again.close()
    assert len(jump.logins) == 2 and jump.tunnels == [("127.0.0.1", device.port)] * 2


def test_a_login_refused_before_it_opens_gives_its_bastion_place_back(tmp_path: Path) -> None:
    """``enable`` on a platform without privilege levels is refused after the tunnel was
    taken: the bastion's connection, carrying nothing, must close (it stayed open, its place
    held, until the process ended)."""
    from nornir_bench.tasks import asend_command
    from tests.waiting import wait_until

    known = tmp_path / "known_hosts"
    with bastion() as jump, impostor() as device:
        known.write_text(jump.line() + device.line())
        (tmp_path / "hosts.yaml").write_text(json.dumps({
            "h0": {"hostname": "127.0.0.1", "port": device.port, "platform": "generic"}
        }))
        (tmp_path / "defaults.yaml").write_text(json.dumps({
            "username": "admin", "password": PASSWORD,
            "data": {"known_hosts": str(known), "jump_host": jump_data(jump)},
        }))
        nr = InitNornir(
            runner={"plugin": "asyncio"},
            inventory={"plugin": "SimpleInventory", "options": {
                "host_file": str(tmp_path / "hosts.yaml"),
                "defaults_file": str(tmp_path / "defaults.yaml")}},
            logging={"enabled": False},
        )
        result = nr.run(task=asend_command, command="show clock", enable=True)
        assert "enable needs a platform with privilege levels" in str(result["h0"][0].exception)
        assert len(jump.logins) == 1
        wait_until(lambda: jump.ended == 1, "the idle bastion connection closed")



@pytest.mark.parametrize(("runner", "task"), COMBINATIONS, ids=ids)
def test_a_bastion_login_refused_before_authentication_is_tried_again_for_every_host(
    runner: str, task: Any, tmp_path: Path
) -> None:
    """A bastion under many logins drops some before they authenticate (OpenSSH's
    MaxStartups): safe to try again, as a device's refused login is. The hosts that waited for
    that login failed with it, JumpHostUnreachable, for good."""
    known = tmp_path / "known_hosts"
    with bastion() as jump, impostor() as device:
        jump.refuse = 1
        known.write_text(jump.line() + device.line())
        errors = run_through(jump, device, tmp_path, runner, task, known_hosts=str(known),
                             jump_host=jump_data(jump))
    assert not [e for e in errors.values() if "JumpHostUnreachable" in repr(e)], errors
    assert len(device.passwords) == len(errors)  # every host reached its device
    assert jump.connections > jump.refuse


def test_a_login_that_waited_for_a_refused_bastion_login_is_tried_again_too() -> None:
    """The logins that waited for a bastion login the bastion refused before authentication
    fail with it at once (JumpHostUnreachable), and are tried again as it is: they failed
    for good, though nothing was wrong but the moment."""
    from nornir_bench.core.policies.logins import refused_before_login
    from nornir_bench.tasks.sessions.bastion_connections import _again
    from nornir_bench.tasks.sessions.jump_hosts import JumpHost, JumpHostUnreachable
    from tests.core.test_logins import closing_port

    async def login(port: int) -> None:
        await asyncssh.connect("127.0.0.1", port, known_hosts=None, username="ops",
                               password=JUMP_PASSWORD)

    with closing_port() as (port, _):
        try:
            asyncio.run(login(port))
        except (asyncssh.Error, OSError) as exc:
            refused: BaseException = exc
    assert refused_before_login(refused)
    jump = JumpHost("127.0.0.1", port, "ops", JUMP_PASSWORD, 10)
    waited = _again(jump, refused)
    assert isinstance(waited, JumpHostUnreachable) and refused_before_login(waited)
    assert not refused_before_login(_again(jump, TimeoutError()))  # a dead bastion: once


@pytest.mark.parametrize(("runner", "task"), [("asyncio", "asend_command"),
                                              ("threadpool", "send_command")])
def test_sigterm_twice_with_logins_held_at_the_bastion_ends_the_job_and_its_tunnels(
    runner: str, task: str, tmp_path: Path
) -> None:
    """Every host in flight through the bastion to devices that never answer: SIGTERM twice
    abandons them; the job ends (143) with a record for each, and leaves no bastion
    connection open."""
    import signal
    import subprocess
    import sys

    from tests.waiting import wait_until

    with bastion() as jump, silent_server() as device:
        (tmp_path / "known_hosts").write_text(jump.line())
        (tmp_path / "hosts.yaml").write_text(json.dumps({
            f"h{n}": {"hostname": "127.0.0.1", "port": device.port, "platform": "cisco_ios"}
            for n in range(4)
        }))
        (tmp_path / "defaults.yaml").write_text(json.dumps({
            "username": "admin", "password": PASSWORD,
            "data": {"known_hosts": str(tmp_path / "known_hosts"), "host_key_checking": "off",
                     "jump_host": jump_data(jump)},
        }))
        (tmp_path / "job.yaml").write_text(json.dumps({
            "inventory": {"plugin": "SimpleInventory", "options": {
                "host_file": "hosts.yaml", "defaults_file": "defaults.yaml"}},
            "runner": {"plugin": runner},
            "task": {"name": task, "params": {"command": "show clock"}},
        }))
        job = subprocess.Popen(
            [sys.executable, "-m", "nornir_bench", "run", "job.yaml", "--quiet", "--output",
             "records.jsonl"],
            cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )
        said: list[str] = []
        reader = threading.Thread(target=lambda: said.extend(job.stderr or ()), daemon=True)
        reader.start()
        try:
            wait_until(lambda: device.accepted == 4, "every host in flight through the bastion")
            job.send_signal(signal.SIGTERM)
            wait_until(lambda: any("stopping" in line for line in said), "the first SIGTERM")
            job.send_signal(signal.SIGTERM)
            job.wait(HANG_GUARD)
        finally:
            if job.poll() is None:
                job.kill()
                job.wait()
            reader.join(HANG_GUARD)
            assert job.stderr is not None
            job.stderr.close()
        err = "".join(said)
        wait_until(lambda: jump.ended == jump.connections, "the bastion connections closed")
    assert job.returncode == 143, err
    hosts = [json.loads(line)["host"] for line in
             (tmp_path / "records.jsonl").read_text().splitlines()]
    assert sorted(hosts) == ["h0", "h1", "h2", "h3"]
    assert jump.connections == 2  # 4 sessions, 2 a connection
