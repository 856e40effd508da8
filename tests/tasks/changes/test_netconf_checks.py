"""Checks read over NETCONF around a change, on the NETCONF lab: ``force_list``, which makes
one element read as a list of one, as several are (xmltodict makes one a mapping), so that a
``path`` counting interfaces counts the same way before and after a change that adds one; a
check by subtree ``filter``; and an xpath check for a server without ``:xpath``, refused before
the change's edit (the checks are read under the lock; the session dropped gives it back).
yuma123's netconfd advertises ``:xpath`` whatever its options (its agt_cap.c adds it
unconditionally), so that refusal is tested where it is made, on a server's own capability
list taken without ``:xpath``, and its answer thrown into the change's plan as the driver
throws it.

Each server starts with one interface shut (eth1); the change shuts eth0 as well."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from nornir_bench.core.changes import CHANGED, NOT_TOUCHED, ROLLED_BACK
from nornir_bench.lab import RunningNetconfLab
from nornir_bench.tasks import NetconfCapabilityMissing, netconf_edit_config, netconf_get_config
from nornir_bench.tasks.changes._change import ChangeOptions, ConfigChangeFailed
from nornir_bench.tasks.changes._netconf_flow import netconf_flow
from nornir_bench.tasks.changes.backups import ChangeProgress
from nornir_bench.tasks.checks.state_checks import checks_from
from nornir_bench.tasks.dialects.netconf_xml import XPATH_CAPABILITY, require_xpath
from nornir_bench.tasks.sessions._netconf_requests import Get, Lock
from nornir_bench.tasks.sessions.netconf_session import CONNECTION_NAME

IETF_INTERFACES = "urn:ietf:params:xml:ns:yang:ietf-interfaces"
ETH0_SHUT = (f"<interfaces xmlns='{IETF_INTERFACES}'><interface><name>eth0</name>"
             "<enabled>false</enabled></interface></interfaces>")
SHUT = "/interfaces/interface[enabled='false']"
COUNTED = {"name": "shut", "xpath": SHUT, "path": "interfaces.interface | length(@)",
           "expect": "no_fewer"}
BY_SUBTREE = {"name": "eth0 enabled",
              "filter": f"<interfaces xmlns='{IETF_INTERFACES}'><interface><name>eth0</name>"
                        "</interface></interfaces>",
              "path": "interfaces.interface.enabled", "expect": {"equals": "false"}}
FILTERED = {"name": "shut, filtered", "xpath": SHUT,
            "path": "interfaces.interface[?enabled=='false'] | length(@)", "expect": "no_fewer"}


@pytest.fixture
def lab(netconf_lab: RunningNetconfLab) -> RunningNetconfLab:
    """The session's NETCONF lab (tests/netconf_lab.py), put back after the test."""
    return netconf_lab


def shut_eth0(lab: RunningNetconfLab, tmp_path: Path, checks: list[dict[str, Any]]) -> Any:
    nr = lab.nornir("threadpool").filter(filter_func=lambda host: host.name == "nc1")
    return nr.run(task=netconf_edit_config, config=ETH0_SHUT, checks=checks,
                  backup_dir=str(tmp_path / "backups"), raise_on_error=False)["nc1"][0]


def test_without_force_list_one_interface_is_a_mapping_and_its_keys_are_counted(
    lab: RunningNetconfLab, tmp_path: Path
) -> None:
    """The problem force_list fixes: one shut interface parses to a mapping, whose length is
    its 4 keys; two parse to a list of 2: no_fewer fails a change that shut one more."""
    before = lab.data("nc1")
    error = shut_eth0(lab, tmp_path, [COUNTED]).exception
    assert error.change["state"] == ROLLED_BACK
    assert (error.checks[0]["before"], error.checks[0]["after"]) == (4, 2)
    assert "after the change, check 'shut' (no_fewer): was 4, now 2: fewer; rolled back" in \
        str(error)
    assert lab.data("nc1") == before


def test_with_force_list_one_interface_and_two_are_counted_alike(
    lab: RunningNetconfLab, tmp_path: Path
) -> None:
    """``force_list: [interface]``: one shut interface is a list of one, two a list of two;
    a JMESPath filter over them reads one as it reads two."""
    before = lab.data("nc1")
    checks = [{**check, "force_list": ["interface"]} for check in (COUNTED, FILTERED)]
    done = shut_eth0(lab, tmp_path, checks)
    assert not done.failed, str(done.exception)
    assert done.change["state"] == CHANGED
    assert [(check["before"], check["after"], check["held"]) for check in done.checks] == [
        (1, 2, True), (1, 2, True)
    ]
    assert lab.data("nc1") != before


def test_a_check_by_subtree_filter_reads_what_it_selects(
    lab: RunningNetconfLab, tmp_path: Path
) -> None:
    done = shut_eth0(lab, tmp_path, [BY_SUBTREE])
    assert not done.failed, str(done.exception)
    assert done.change["state"] == CHANGED
    (check,) = done.checks
    assert (check["before"], check["after"], check["held"]) == ("true", "false", True)
    assert check["filter"] == BY_SUBTREE["filter"]


def advertised(lab: RunningNetconfLab, server: str) -> list[str]:
    """The capabilities ``server``'s hello advertises, as ncclient read them."""
    nr = lab.nornir("threadpool").filter(filter_func=lambda host: host.name == server)
    with nr:
        nr.run(task=netconf_get_config, filter=ETH0_SHUT.replace("<enabled>false</enabled>", ""))
        return list(nr.inventory.hosts[server].connections[CONNECTION_NAME].manager
                    .server_capabilities)


MISSING = (f"nc1 does not advertise :xpath ({XPATH_CAPABILITY}): give a subtree filter (filter) "
           "instead")


def test_an_xpath_filter_goes_only_to_a_server_that_advertises_xpath(
    lab: RunningNetconfLab,
) -> None:
    capabilities = advertised(lab, "nc1")
    require_xpath(capabilities, "nc1")  # the lab's servers advertise it
    without = [uri for uri in capabilities if not uri.startswith(XPATH_CAPABILITY)]
    assert len(without) == len(capabilities) - 1
    with pytest.raises(NetconfCapabilityMissing) as refused:
        require_xpath(without, "nc1")
    assert str(refused.value) == MISSING


def test_an_xpath_check_for_a_server_without_xpath_fails_the_change_before_its_edit(
    lab: RunningNetconfLab, tmp_path: Path
) -> None:
    """The check's ``<get>`` is answered as the driver answers it for such a server (the
    refusal thrown into the plan, nothing sent): the change ends there, nothing sent after."""
    without = [uri for uri in advertised(lab, "nc1") if not uri.startswith(XPATH_CAPABILITY)]
    how = ChangeOptions(task="netconf_edit_config", host="nc1", platform="netconf",
                        dry_run=False, rollback=True, save=False,
                        backup=lambda text: tmp_path / "nc1.xml",
                        checks=checks_from([COUNTED], netconf=True))
    progress = ChangeProgress(SimpleNamespace(parent_task=None))  # type: ignore[arg-type]
    plan = netconf_flow(ETH0_SHUT, how, progress, confirm_timeout=None)
    assert next(plan) == Lock()
    assert plan.send(None) == Get(("xpath", SHUT))
    with pytest.raises(NetconfCapabilityMissing) as refused:
        require_xpath(without, "nc1")
    with pytest.raises(ConfigChangeFailed) as failed:
        plan.throw(refused.value)
    assert failed.value.state == NOT_TOUCHED
    assert str(failed.value) == (f"before the change, check 'shut' (no_fewer): not read: "
                                 f"NetconfCapabilityMissing: {MISSING}: not touched")
    assert not (tmp_path / "nc1.xml").exists()
