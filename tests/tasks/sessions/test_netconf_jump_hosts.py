"""NETCONF through a jump host, on the NETCONF lab's real netconfd servers: the bastion is a
real SSH server on loopback (asyncssh, forwarding to 127.0.0.1 only: tests/ssh_servers.py's),
in front of the lab's OpenSSH. Reads and a confirmed change go through its channels (on
processpool's workers too); the servers' host keys are checked at the end of the jump, before
the password; a bastion down, or refusing its password, fails each host naming it; one that
dies inside a confirm window ends the change at once, and the server reverts the confirmed
commit itself."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from nornir_bench.core.changes import CHANGED, INTERRUPTED
from nornir_bench.lab import RunningNetconfLab
from nornir_bench.lab.inventory_files import write_inventory
from nornir_bench.tasks import (
    anetconf_edit_config,
    anetconf_get_config,
    netconf_edit_config,
    netconf_get_config,
)
from nornir_bench.tasks.sessions.host_keys import HostKeyMismatch, HostKeyUnknown
from nornir_bench.tasks.sessions.jump_hosts import JumpHostUnreachable
from tests.cli.test_run import nornir_bench_here
from tests.devices import closed_port
from tests.netconf_lab import wrong_keys
from tests.ssh_servers import bastion, jump_data
from tests.tasks.changes.test_netconf_change import DESCRIPTION_CHECK, change_job, description
from tests.tasks.checks.test_netconf_read import ETH0, results
from tests.waiting import still_alive, wait_until


def behind(lab: RunningNetconfLab, folder: Path, jump: dict[str, Any], jump_known: str = "",
           known: str | None = None) -> RunningNetconfLab:
    """The lab with an inventory of its own in ``folder`` whose defaults name ``jump`` as
    every server's jump host, ``jump_known`` the bastion's known-hosts line; ``known``: the
    known hosts' text instead of the bastion's and the servers' keys."""
    view = lab.with_inventory(folder)
    write_inventory(lab.devices(), folder, jump, jump_known, config_platform=lab.config_platform)
    if known is not None:
        (folder / "known_hosts").write_text(known, encoding="utf-8")
    return view


def servers_through(lab: RunningNetconfLab) -> set[tuple[str, int]]:
    """The channels a bastion forwards to reach every server of ``lab``."""
    return {("127.0.0.1", server.port) for server in lab.plan.servers}


@pytest.mark.parametrize(("runner", "task"), [("threadpool", netconf_get_config),
                                              ("asyncio", anetconf_get_config)])
def test_get_config_through_a_jump_host_reads_each_server_over_its_channels(
    netconf_lab: RunningNetconfLab, tmp_path: Path, runner: str, task: Any,
) -> None:
    with bastion() as jump:
        lab = behind(netconf_lab, tmp_path, jump_data(jump), jump.line())
        logins = lab.logins()
        with lab.nornir(runner, num_workers=2) as nr:
            said = results(nr.run(task=task, filter=ETH0, force_list=["interface"]))
        wait_until(lambda: jump.ended == jump.connections, "the bastion connections closed")
    for number, server in enumerate(lab.servers(), 1):
        assert said[server] == {"interfaces": {"interface": [{
            "name": "eth0", "description": "uplink", "type": "ianaift:ethernetCsmacd",
            "enabled": "true",
            "ipv4": {"address": {"ip": f"198.18.{number}.1", "prefix-length": "24"}},
        }]}}, said
    # a channel of the bastion to each server, both on one bastion connection (2 sessions
    # a connection), the servers logged in to through them
    assert sorted(jump.tunnels) == sorted(servers_through(lab))
    assert len(jump.logins) == 1
    assert lab.logins() == logins + len(lab.servers())


def test_an_unknown_server_key_behind_the_jump_host_is_refused_before_the_password(
    netconf_lab: RunningNetconfLab, tmp_path: Path,
) -> None:
    """The known hosts trust the bastion and name no server (strict): each server's key is
    read at the end of the jump (a channel to it), and no password is sent to it."""
    with bastion() as jump:
        lab = behind(netconf_lab, tmp_path, jump_data(jump), known=jump.line())
        logins = lab.logins()
        with lab.nornir("threadpool", num_workers=2) as nr:
            said = results(nr.run(task=netconf_get_config, filter=ETH0))
    assert all(isinstance(value, HostKeyUnknown) for value in said.values()), said
    assert "the password was not sent" in str(said["nc1"])
    assert set(jump.tunnels) == servers_through(lab)  # the keys were read through it
    assert lab.logins() == logins


def test_a_changed_server_key_behind_the_jump_host_is_refused_before_the_password(
    netconf_lab: RunningNetconfLab, tmp_path: Path,
) -> None:
    with bastion() as jump:
        known = jump.line() + wrong_keys(netconf_lab, tmp_path)
        lab = behind(netconf_lab, tmp_path / "inventory", jump_data(jump), known=known)
        logins = lab.logins()
        with lab.nornir("threadpool", num_workers=2) as nr:
            said = results(nr.run(task=netconf_get_config, filter=ETH0))
    assert all(isinstance(value, HostKeyMismatch) for value in said.values()), said
    assert set(jump.tunnels) == servers_through(lab)
    assert lab.logins() == logins


def test_a_jump_host_that_refuses_connections_fails_each_host_in_one_line_naming_it(
    netconf_lab: RunningNetconfLab, tmp_path: Path,
) -> None:
    with closed_port() as port:
        lab = behind(netconf_lab, tmp_path, {"host": "127.0.0.1", "port": port})
        logins = lab.logins()
        with lab.nornir("threadpool", num_workers=2) as nr:
            said = results(nr.run(task=netconf_get_config, filter=ETH0))
    for value in said.values():
        assert isinstance(value, JumpHostUnreachable), said
        assert str(value) == (f"jump host 127.0.0.1:{port}: connection refused: nothing "
                              "listens on that port (is the bastion up?)")
    assert lab.logins() == logins


def test_a_jump_host_that_refuses_the_password_fails_each_host_in_one_line_naming_it(
    netconf_lab: RunningNetconfLab, tmp_path: Path,
) -> None:
    with bastion() as jump:
        lab = behind(netconf_lab, tmp_path, {**jump_data(jump), "password": "wrong"},
                     jump.line())
        logins = lab.logins()
        with lab.nornir("threadpool", num_workers=2) as nr:
            said = results(nr.run(task=netconf_get_config, filter=ETH0))
    for value in said.values():
        assert isinstance(value, JumpHostUnreachable), said
        assert str(value) == (f"jump host 127.0.0.1:{jump.port}: login refused "
                              "(AuthenticationException: Authentication failed.): check the "
                              "jump host's username and password")
    assert jump.tunnels == []
    assert lab.logins() == logins


NEVER = {"name": "never", "xpath": "/interfaces/interface[name='eth1']",
         "path": "interfaces.interface.description", "expect": {"equals": "never"}}


def journal_of(path: Path) -> dict[str, list[tuple[str, bool]]]:
    """Each host's journal entries: state, and whether marked confirming."""
    states: dict[str, list[tuple[str, bool]]] = {}
    for line in path.read_text().splitlines()[1:]:
        entry = json.loads(line)
        states.setdefault(entry["host"], []).append((entry["state"],
                                                     entry.get("confirming", False)))
    return states


@pytest.mark.parametrize(("runner", "task"), [("threadpool", netconf_edit_config),
                                              ("asyncio", anetconf_edit_config)])
def test_a_confirmed_change_with_a_check_through_the_jump_host_is_confirmed(
    netconf_lab: RunningNetconfLab, tmp_path: Path, runner: str, task: Any,
) -> None:
    journal = tmp_path / "run.journal"
    with bastion() as jump:
        lab = behind(netconf_lab, tmp_path / "inventory", jump_data(jump), jump.line())
        with lab.nornir(runner, num_workers=2) as nr:
            result = nr.run(task=task, config=description("via the bastion"),
                            checks=[DESCRIPTION_CHECK], confirm={"within": 20},
                            journal_file=str(journal), backup_dir=str(tmp_path / "backups"))
    assert not result.failed, {h: str(m[0].exception) for h, m in result.items()}
    for name in lab.servers():
        assert result[name][0].change["state"] == CHANGED
        assert "<description>via the bastion</description>" in lab.config(name)
    assert journal_of(journal) == {name: [("pending", False), ("pending", True),
                                          ("confirmed", False)] for name in lab.servers()}
    assert set(jump.tunnels) == servers_through(lab)


def test_a_confirmed_change_through_the_jump_host_on_processpool_workers(
    netconf_lab: RunningNetconfLab, tmp_path: Path,
) -> None:
    """The jump host travels to the worker process with its host: the change goes through
    the bastion from there, confirmed."""
    with bastion() as jump:
        lab = behind(netconf_lab, tmp_path / "inventory", jump_data(jump), jump.line())
        path = change_job(lab, tmp_path, f"config: \"{description('from a worker')}\", "
                                         f"checks: [{json.dumps(DESCRIPTION_CHECK)}], "
                                         "confirm: {within: 20}")
        with path.open("a") as job:
            job.write("runner: {plugin: processpool, options: {num_workers: 2}}\n")
        done = nornir_bench_here("run", str(path), "-q", "-o", "out.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    (record,) = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert record["change"]["state"] == CHANGED, record
    assert "<description>from a worker</description>" in lab.config("nc1")
    assert journal_of(tmp_path / "out.journal") == {
        "nc1": [("pending", False), ("pending", True), ("confirmed", False)]}
    assert jump.tunnels and set(jump.tunnels) == {("127.0.0.1", lab.plan.server("nc1").port)}


def test_a_jump_host_that_dies_in_the_confirm_window_ends_the_change_and_the_server_reverts(
    netconf_lab: RunningNetconfLab, tmp_path: Path,
) -> None:
    """The bastion killed while the change waits in a long confirm window for a check that
    never holds: the session is lost with it, so the server reverts the confirmed commit by
    itself; the host fails at once saying so, rather than reading a dead session until its
    window ends (600 s, past the hang guard)."""
    before = netconf_lab.data("nc1")
    journal = tmp_path / "run.journal"
    ended: list[Any] = []
    with bastion() as jump:
        lab = behind(netconf_lab, tmp_path / "inventory", jump_data(jump), jump.line())
        nr = lab.nornir("threadpool").filter(name="nc1")
        thread = threading.Thread(target=lambda: ended.append(nr.run(
            task=netconf_edit_config, config=description("cut off"), checks=[NEVER],
            confirm={"within": 600}, journal_file=str(journal),
            backup_dir=str(tmp_path / "backups"))), daemon=True)  # failing, it would wait 600 s
        thread.start()
        try:
            wait_until(lambda: journal.exists() and "<description>cut off</description>" in
                       lab.config("nc1"), "the confirmed commit on nc1", every=0.1)
            jump.kill()
            assert not still_alive([thread])
        finally:
            nr.close_connections()
    error = ended[0]["nc1"][0].exception
    assert error.change["state"] == INTERRUPTED, error
    assert str(error).startswith("the session ended during the change ("), str(error)
    assert "): the server reverts its confirmed commit itself when the session ends, or 660 s " \
           "after the commit; backup at " in str(error)
    wait_until(lambda: lab.data("nc1") == before, "nc1 reverted by itself", every=0.5)
    assert journal_of(journal) == {"nc1": [("pending", False)]}
    done = nornir_bench_here("recover", str(journal), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "recover: nc1: nothing to send: the device reverts its confirmed commit itself" \
        in done.stdout
