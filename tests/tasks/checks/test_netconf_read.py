"""netconf_get / netconf_get_config and their async twins (tasks/checks/netconf_read.py) on the
NETCONF lab's real netconfd servers: filters by subtree and XPath, the data parsed, host keys
checked before the password, a session kept across runs and one the server ended replaced."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest
from nornir.core.task import AggregatedResult

from nornir_bench.lab import RunningNetconfLab
from nornir_bench.tasks import (
    NetconfFilterError,
    anetconf_get,
    anetconf_get_config,
    netconf_get,
    netconf_get_config,
)
from nornir_bench.tasks.sessions.host_keys import HostKeyMismatch, HostKeyUnknown
from nornir_bench.tasks.sessions.netconf_session import CONNECTION_NAME, NetconfSession
from tests.netconf_lab import wrong_keys

IETF_INTERFACES = "urn:ietf:params:xml:ns:yang:ietf-interfaces"
ETH0 = (f'<interfaces xmlns="{IETF_INTERFACES}">'
        "<interface><name>eth0</name></interface></interfaces>")
LO0_DESCRIPTION = "/if:interfaces/if:interface[if:name='lo0']/if:description"


def results(result: AggregatedResult) -> dict[str, Any]:
    """Each host's result, or its exception."""
    return {name: multi[0].exception if multi.failed else multi[0].result
            for name, multi in result.items()}


def test_get_config_with_a_subtree_filter_gives_each_servers_data(
    netconf_lab: RunningNetconfLab,
) -> None:
    nr = netconf_lab.nornir("threadpool", num_workers=2)
    with nr:
        said = results(nr.run(task=netconf_get_config, filter=ETH0, force_list=["interface"]))
    for number, server in enumerate(netconf_lab.servers(), 1):
        assert said[server] == {"interfaces": {"interface": [{
            "name": "eth0", "description": "uplink", "type": "ianaift:ethernetCsmacd",
            "enabled": "true",
            "ipv4": {"address": {"ip": f"198.18.{number}.1", "prefix-length": "24"}},
        }]}}


def test_a_subtree_filter_of_two_top_elements_reads_both(netconf_lab: RunningNetconfLab) -> None:
    """(ncclient's ("subtree", XML) form takes one top element: the filter is sent whole.)"""
    nr = netconf_lab.nornir("threadpool", num_workers=2)
    with nr:
        said = results(nr.run(task=netconf_get_config, filter=ETH0 + (
            '<system xmlns="urn:ietf:params:xml:ns:yang:ietf-system"><hostname/></system>')))
    for server in netconf_lab.servers():
        assert said[server]["system"] == {"hostname": server}
        assert said[server]["interfaces"]["interface"]["name"] == "eth0"


def test_async_get_with_an_xpath_filter_on_the_asyncio_runner(
    netconf_lab: RunningNetconfLab,
) -> None:
    nr = netconf_lab.nornir("asyncio", num_workers=2)
    with nr:
        said = results(nr.run(task=anetconf_get, xpath=LO0_DESCRIPTION,
                              namespaces={"if": IETF_INTERFACES}))
    assert said == {server: {"interfaces": {"interface": {
        "name": "lo0", "description": f"loopback of {server}"}}}
        for server in netconf_lab.servers()}


def test_async_get_config_of_the_candidate_as_xml_text(netconf_lab: RunningNetconfLab) -> None:
    nr = netconf_lab.nornir("asyncio", num_workers=2)
    with nr:
        said = results(nr.run(task=anetconf_get_config, source="candidate",
                              filter='<system xmlns="urn:ietf:params:xml:ns:yang:ietf-system"/>',
                              parse=False))
    for server in netconf_lab.servers():
        assert isinstance(said[server], str)
        assert "<data " in said[server]
        assert f"<hostname>{server}</hostname>" in said[server]


def test_a_session_is_kept_across_runs_and_asked_without_a_word_to_the_device(
    netconf_lab: RunningNetconfLab,
) -> None:
    """The second run uses the first run's sessions: no login more. (Asking ncclient's
    manager for an attribute it lacks sends that name as an RPC: the check before a host's
    task starts must not.)"""
    nr = netconf_lab.nornir("threadpool", num_workers=2)
    with nr:
        first = results(nr.run(task=netconf_get, filter=ETH0))
        logins = netconf_lab.logins()
        second = results(nr.run(task=netconf_get, filter=ETH0))
        assert netconf_lab.logins() == logins
        assert all(isinstance(nr.inventory.hosts[s].connections[CONNECTION_NAME],
                              NetconfSession) for s in netconf_lab.servers())
    assert second == first
    assert not any(isinstance(value, BaseException) for value in second.values())


def test_a_session_the_server_ended_is_replaced_by_a_new_login(
    netconf_lab: RunningNetconfLab,
) -> None:
    nr = netconf_lab.nornir("threadpool", num_workers=2)
    with nr:
        nr.run(task=netconf_get_config, filter=ETH0)
        netconf_lab.restore(["nc1"])  # its netconfd started again: the session is gone
        logins = netconf_lab.logins()
        said = results(nr.run(task=netconf_get_config, filter=ETH0))
        assert netconf_lab.logins() == logins + 1
    assert not any(isinstance(value, BaseException) for value in said.values()), said


def test_a_filter_that_is_not_xml_fails_before_any_login(netconf_lab: RunningNetconfLab) -> None:
    nr = netconf_lab.nornir("threadpool", num_workers=2)
    logins = netconf_lab.logins()
    with nr:
        said = results(nr.run(task=netconf_get, filter="<interfaces><name>eth0</interfaces>"))
    assert all(isinstance(value, NetconfFilterError) for value in said.values())
    assert str(said["nc1"]) == "filter is not well-formed XML: mismatched tag (line 1)"
    assert netconf_lab.logins() == logins


def _known_hosts(lab: RunningNetconfLab, folder: Path, text: str) -> RunningNetconfLab:
    """The lab with an inventory of its own in ``folder`` whose known hosts are ``text``."""
    view = lab.with_inventory(folder)
    (folder / "known_hosts").write_text(text, encoding="utf-8")
    return view


@pytest.mark.parametrize("runner", ["threadpool", "asyncio"])
def test_an_unknown_host_key_is_refused_before_the_password(
    netconf_lab: RunningNetconfLab, tmp_path: Path, runner: str,
) -> None:
    """strict (the default), the known hosts naming neither server: each host fails naming
    the key it showed, and the servers' SSH log shows no login."""
    lab = _known_hosts(netconf_lab, tmp_path, "")
    logins = lab.logins()
    task = netconf_get_config if runner == "threadpool" else anetconf_get_config
    with lab.nornir(runner, num_workers=2) as nr:
        said = results(nr.run(task=task, filter=ETH0))
    assert all(isinstance(value, HostKeyUnknown) for value in said.values()), said
    assert "the password was not sent" in str(said["nc1"])
    assert lab.logins() == logins


def test_a_changed_host_key_is_refused_before_the_password(
    netconf_lab: RunningNetconfLab, tmp_path: Path,
) -> None:
    lab = _known_hosts(netconf_lab, tmp_path, wrong_keys(netconf_lab, tmp_path))
    logins = lab.logins()
    with lab.nornir("threadpool", num_workers=2) as nr:
        said = results(nr.run(task=netconf_get, filter=ETH0))
    assert all(isinstance(value, HostKeyMismatch) for value in said.values()), said
    assert lab.logins() == logins


def test_accept_new_records_a_new_servers_key_and_reads(
    netconf_lab: RunningNetconfLab, tmp_path: Path,
) -> None:
    lab = _known_hosts(netconf_lab, tmp_path, "")
    with lab.nornir("threadpool", num_workers=2) as nr:
        for host in nr.inventory.hosts.values():
            host.data["host_key_checking"] = "accept-new"
        said = results(nr.run(task=netconf_get_config, filter=ETH0))
    assert not any(isinstance(value, BaseException) for value in said.values()), said
    recorded = (tmp_path / "known_hosts").read_text().splitlines()
    assert sorted(recorded) == sorted(
        f"[127.0.0.1]:{s.port} {netconf_lab.host_key}" for s in netconf_lab.plan.servers)


def test_a_server_that_hangs_fails_its_host_at_the_timeout_and_its_session_is_dropped(
    netconf_lab: RunningNetconfLab,
) -> None:
    """nc1's netconfd stopped (SIGSTOP) after the login: its read fails at ``timeout``,
    nc2's does not wait for it; once nc1 runs again, the next read logs in anew (a late
    reply must not answer the next request)."""
    from ncclient.operations import TimeoutExpiredError

    nr = netconf_lab.nornir("threadpool", num_workers=2)
    with nr:
        nr.run(task=netconf_get_config, filter=ETH0)
        (server,) = netconf_lab.pids("nc1")
        os.kill(server, signal.SIGSTOP)
        try:
            said = results(nr.run(task=netconf_get_config, filter=ETH0, timeout=2))
        finally:
            os.kill(server, signal.SIGCONT)
        assert isinstance(said["nc1"], TimeoutExpiredError), said
        assert not isinstance(said["nc2"], BaseException), said
        assert CONNECTION_NAME in nr.inventory.hosts["nc1"].connections  # emptied, not gone
        logins = netconf_lab.logins()
        again = results(nr.run(task=netconf_get_config, filter=ETH0, on_failed=True))
        assert netconf_lab.logins() == logins + 1
    assert not any(isinstance(value, BaseException) for value in again.values()), again
