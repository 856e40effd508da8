"""Devices reached through a jump host, on both drivers: a real SSH bastion on loopback
(asyncssh, forwarding to 127.0.0.1 only: tests/ssh_servers.py's) in front of a server that
records every password offered to it; both hosts' keys are checked.

The jump host is the task's: netmiko's on threadpool, scrapli's on asyncio (docs/testing.md,
the runner matrix); how a runner retries and paces logins is tests/runners/test_logins.py's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import asyncssh
import pytest
from nornir import InitNornir

from nornir_bench.tasks import send_command
from nornir_bench.tasks.sessions.host_keys import HostKeyMismatch, HostKeyUnknown
from nornir_bench.tasks.sessions.jump_hosts import JumpHostUnreachable
from tests.ssh_servers import JUMP_PASSWORD, Bastion, bastion, jump_data
from tests.tasks.sessions.test_host_keys import (
    COMBINATIONS,
    PASSWORD,
    Impostor,
    ids,
    impostor,
)


def run_through(
    jump: Bastion, device: Impostor, folder: Path, runner: str, task: Any, hosts: int = 6,
    **data: Any,
) -> dict[str, BaseException | None]:
    (folder / "hosts.yaml").write_text(json.dumps({
        f"h{n}": {"hostname": "127.0.0.1", "port": device.port, "platform": "cisco_ios"}
        for n in range(hosts)
    }))
    (folder / "defaults.yaml").write_text(json.dumps({
        "username": "admin", "password": PASSWORD, "data": data,
    }))
    nr = InitNornir(
        runner={"plugin": runner},
        inventory={"plugin": "SimpleInventory", "options": {
            "host_file": str(folder / "hosts.yaml"),
            "defaults_file": str(folder / "defaults.yaml")}},
        logging={"enabled": False},
    )
    try:
        result = nr.run(task=task, command="show clock")
    finally:
        getattr(nr.runner, "close", lambda: None)()
    return {name: multi[0].exception for name, multi in result.items()}


@pytest.mark.parametrize(("runner", "task"), COMBINATIONS, ids=ids)
def test_devices_are_reached_through_the_bastion_sharing_its_connections(
    runner: str, task: Any, tmp_path: Path
) -> None:
    known = tmp_path / "known_hosts"
    with bastion() as jump, impostor() as device:
        known.write_text(jump.line() + device.line())
        errors = run_through(jump, device, tmp_path, runner, task,
                             known_hosts=str(known), jump_host=jump_data(jump))
    # each device's login went through the bastion (the device refuses it: a wrong password)
    assert jump.tunnels and set(jump.tunnels) == {("127.0.0.1", device.port)}
    assert set(device.passwords) == {PASSWORD}
    assert not any(isinstance(exc, (HostKeyMismatch, HostKeyUnknown)) for exc in errors.values())
    # 6 devices, 2 sessions a connection: at most 3 connections
    assert 1 <= len(jump.logins) <= 3
    assert set(jump.logins) == {JUMP_PASSWORD}


@pytest.mark.parametrize(("runner", "task"), COMBINATIONS, ids=ids)
def test_an_impostor_bastion_gets_no_password(runner: str, task: Any, tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    genuine = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode().strip()
    with bastion() as jump, impostor() as device:
        known.write_text(f"[127.0.0.1]:{jump.port} {genuine}\n" + device.line())
        errors = run_through(jump, device, tmp_path, runner, task,
                             known_hosts=str(known), jump_host=jump_data(jump))
    assert jump.logins == [] and jump.tunnels == [] and device.passwords == []
    for exc in errors.values():
        assert isinstance(exc, HostKeyMismatch), exc
        assert f"jump host 127.0.0.1:{jump.port}" in str(exc)


@pytest.mark.parametrize(("runner", "task"), COMBINATIONS, ids=ids)
def test_a_device_impostor_behind_the_bastion_gets_no_password(
    runner: str, task: Any, tmp_path: Path
) -> None:
    known = tmp_path / "known_hosts"
    with bastion() as jump, impostor() as device:
        known.write_text(jump.line())  # the device's key is not known: strict
        errors = run_through(jump, device, tmp_path, runner, task,
                             known_hosts=str(known), jump_host=jump_data(jump))
    assert device.passwords == []
    assert all(isinstance(exc, HostKeyUnknown) for exc in errors.values()), errors


@pytest.mark.parametrize(("runner", "task"), COMBINATIONS, ids=ids)
def test_a_bastion_that_refuses_the_password_fails_every_host_in_one_line_naming_it(
    runner: str, task: Any, tmp_path: Path
) -> None:
    """The login that made the attempt fails as the ones that waited for it do, naming the
    bastion (it failed with the library's bare "Authentication failed.", which reads as the
    device's refusal); the password is offered once, also to the hosts that arrive after the
    refusal (a second run): not once a host, which would lock an account on a bastion that
    locks one after a few failures."""
    known = tmp_path / "known_hosts"
    with bastion() as jump, impostor() as device:
        known.write_text(jump.line() + device.line())
        errors = [run_through(jump, device, tmp_path, runner, task, known_hosts=str(known),
                              jump_host={**jump_data(jump), "password": "wrong"})
                  for _ in range(2)]
    refused = ("AuthenticationException: Authentication failed." if task is send_command
               else "PermissionDenied: Permission denied for user ops on host 127.0.0.1")
    for exc in [*errors[0].values(), *errors[1].values()]:
        assert isinstance(exc, JumpHostUnreachable), errors
        assert str(exc) == (f"jump host 127.0.0.1:{jump.port}: login refused ({refused}): "
                            "check the jump host's username and password")
    assert jump.logins == ["wrong"] and jump.tunnels == [] and device.passwords == []
