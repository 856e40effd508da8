"""The NETCONF lab (nornir_bench/lab/netconf*.py): made, ready (a NETCONF session answered over
SSH), its inventory, put back, and removed whole at the end of its block, at SIGTERM to
``nornir-bench lab --netconf``, and by its guard when its owner is killed."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import re
import signal
import socket
import subprocess
import threading
from multiprocessing.queues import Queue
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from nornir_bench.lab import LabError, RunningNetconfLab, RunningRouterLab, netconf_lab
from nornir_bench.lab.netconf_plan import plan_netconf_lab
from nornir_bench.lab.netconf_ready import netconf_rpcs
from nornir_bench.lab.routers import RouterLab
from nornir_bench.lab.topology import plan_lab
from tests.devices import LAB, free_port_range, started, stopped
from tests.lab.test_labs import owner_killed
from tests.netconf_lab import skip_without_netconf_lab
from tests.routers import LAB_READY_TIMEOUT, guard_pid, lab_leftovers, new_lab_name, wait_for
from tests.waiting import HANG_GUARD

_CANDIDATE_EDIT = (
    "<edit-config><target><candidate/></target><config>"
    '<interfaces xmlns="urn:ietf:params:xml:ns:yang:ietf-interfaces"><interface>'
    "<name>eth1</name><description>changed by a test</description>"
    "</interface></interfaces></config></edit-config>"
)


def test_each_server_answers_with_its_own_configuration(netconf_lab: RunningNetconfLab) -> None:
    """Each server's running configuration is its own (its host name, its loopback's
    address): servers sharing a folder would share a datastore file."""
    for number, server in enumerate(netconf_lab.servers(), 1):
        data = netconf_lab.data(server)
        assert f"<hostname>{server}</hostname>" in data
        assert f"<ip>192.0.2.{number}</ip>" in data
        assert "ietf-interfaces" in data


def test_its_inventory_reaches_each_server_with_its_host_key(
    netconf_lab: RunningNetconfLab,
) -> None:
    assert netconf_lab.inventory is not None
    yaml = YAML(typ="safe")
    hosts = yaml.load(netconf_lab.inventory / "hosts.yaml")
    groups = yaml.load(netconf_lab.inventory / "groups.yaml")
    defaults = yaml.load(netconf_lab.inventory / "defaults.yaml")
    assert {name: host["port"] for name, host in hosts.items()} == {
        s.name: s.port for s in netconf_lab.plan.servers}
    assert groups == {"netconf": {"platform": "netconf"}}
    assert defaults["username"] == netconf_lab.user
    known = Path(defaults["data"]["known_hosts"]).read_text().splitlines()
    assert known == [f"[127.0.0.1]:{s.port} {netconf_lab.host_key}"
                     for s in netconf_lab.plan.servers]


def test_a_changed_server_is_found_and_put_back(netconf_lab: RunningNetconfLab) -> None:
    """A candidate edited (not committed) counts as a change; restore starts the server again
    from its starting configuration, the other one untouched."""
    untouched = netconf_lab.pids("nc2")
    (reply,) = asyncio.run(netconf_rpcs(netconf_lab.user, netconf_lab.password,
                                        netconf_lab.plan.server("nc1").port, [_CANDIDATE_EDIT]))
    assert "<ok/>" in reply
    assert netconf_lab.changed() == ["nc1"]
    netconf_lab.restore(["nc1"])
    assert netconf_lab.changed() == []
    assert netconf_lab.pids("nc2") == untouched


def test_a_router_labs_attach_does_not_take_a_netconf_lab_for_one(
    netconf_lab: RunningNetconfLab,
) -> None:
    with pytest.raises(LabError, match=f"^no router lab named '{netconf_lab.name}' is running$"):
        RunningRouterLab.attach(netconf_lab.name)


def test_a_router_lab_of_a_netconf_labs_name_in_the_same_process_is_refused_naming_it(
    netconf_lab: RunningNetconfLab,
) -> None:
    """The labs this process runs are one set whatever their kind: the NETCONF lab is not
    taken for one this process left, and is left as it was."""
    state = netconf_lab.state()
    says = (f"a NETCONF lab named {netconf_lab.name!r} is running (process {os.getpid()}): "
            "stop it, or give this one another --name")
    lab = RouterLab(plan_lab(1, port=free_port_range(1), name=netconf_lab.name))
    try:
        with pytest.raises(LabError, match=f"^{re.escape(says)}$"):
            lab.start()
    finally:
        lab.stop()
    assert netconf_lab.state() == state
    assert netconf_lab.changed() == []


@pytest.mark.parametrize(("options", "said"), [
    ({"servers": 0}, "--netconf must be a whole number from 1 to 100, got 0"),
    ({"servers": 2, "port": 65535}, "--port must leave room for 2 ports up to 65535, from 1 "
                                    "to 65534, got 65535"),
    ({"servers": 1, "name": "Net-1"}, "a NETCONF lab's name must be 1-10 lowercase letters"),
])
def test_bad_options_are_one_line(options: dict[str, object], said: str) -> None:
    options = {"port": 2830, "name": "nc", **options}
    with pytest.raises(LabError, match="^" + said.replace("(", r"\(")):
        plan_netconf_lab(**options)  # type: ignore[arg-type]


@pytest.mark.slow  # a lab of its own
def test_a_lab_is_removed_whole_at_the_end_of_its_block(tmp_path: Path) -> None:
    """(A lab of its own: its end is the subject.)"""
    skip_without_netconf_lab()
    name = new_lab_name()
    with netconf_lab(1, name=name, write=tmp_path) as lab:
        assert lab.pids() and lab.changed() == []
        workdir = lab.workdir
        assert lab_leftovers(name)  # what the check below looks for is there while it runs
    assert not workdir.exists()
    assert not wait_for(lambda: lab_leftovers(name))


def own_netconf_lab(name: str, said: Queue[int]) -> None:
    """A process owning NETCONF lab ``name``, until killed."""
    with netconf_lab(1, name=name) as lab:
        said.put(lab.owner)
        threading.Event().wait()


@pytest.mark.slow  # a lab of its own
def test_a_netconf_lab_whose_owner_is_killed_is_removed_by_its_guard() -> None:
    """(A lab of its own: its owner is killed.)"""
    skip_without_netconf_lab()
    name = new_lab_name()
    owner = owner_killed(own_netconf_lab, name)
    assert owner
    assert not wait_for(lambda: lab_leftovers(name))


@pytest.mark.slow  # a lab of its own
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_the_command_is_removed_whole_at_ctrl_c_and_sigterm(
    tmp_path: Path, sig: signal.Signals,
) -> None:
    """``nornir-bench lab --netconf 2``: a line per server, ``lab ready:``, then the signal:
    ``lab stopped``, exit 0, nothing left, the password never printed. (A lab of its own.)"""
    skip_without_netconf_lab()
    name = new_lab_name()
    port = free_port_range(2)
    handle = started([*LAB, "lab", "--netconf", "2", "--name", name, "--port", str(port),
                      "--write", str(tmp_path / "inventory")], "lab ready:", tmp_path,
                     timeout=LAB_READY_TIMEOUT)
    try:
        lab = RunningNetconfLab.attach(name, tmp_path / "inventory")
        assert lab.data("nc2")
        waited = subprocess.run([*LAB, "wait-lab", "--netconf", "2", "--name", name],
                                capture_output=True, text=True, timeout=HANG_GUARD)
        assert (waited.returncode, waited.stdout) == (
            0, "lab ready: 2 NETCONF servers answer NETCONF over SSH\n"), waited.stderr
    finally:
        status = stopped(handle, sig)
    out = "\n".join(handle.stdout)
    assert status == 0, out + handle.stderr()
    assert handle.stdout[0].startswith(f"nc1   127.0.0.1:{port} ")
    assert handle.ready.startswith("lab ready: 2 NETCONF servers (candidate, confirmed commit; ")
    assert handle.stdout[-1].startswith("lab stopped: everything removed in ")
    assert lab.password not in out + handle.stderr()
    assert not wait_for(lambda: lab_leftovers(name))


@pytest.mark.slow  # a lab of its own
def test_what_a_lab_killed_with_its_guard_left_is_removed_by_the_next_of_its_name() -> None:
    """Owner and guard both SIGKILLed (nothing removes the lab then): the next lab of the
    name removes what it left, starts, and leaves nothing itself. (Labs of its own.)"""
    skip_without_netconf_lab()
    name = new_lab_name()
    spawn = multiprocessing.get_context("spawn")
    said: Queue[int] = spawn.Queue()
    owner = spawn.Process(target=own_netconf_lab, args=(name, said))
    owner.start()
    try:
        said.get(timeout=HANG_GUARD)
        os.kill(guard_pid(name), signal.SIGKILL)
    finally:
        owner.kill()
        owner.join(HANG_GUARD)
    left = lab_leftovers(name)
    assert any(thing.startswith("namespace ") for thing in left), left
    with netconf_lab(1, name=name) as lab:
        assert lab.changed() == []
    assert not wait_for(lambda: lab_leftovers(name))


def test_a_port_held_is_refused_naming_its_holder() -> None:
    """(A lab of its own, never made.)"""
    skip_without_netconf_lab()
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        name = new_lab_name()
        with pytest.raises(LabError, match=rf"^port {port} \(NETCONF server nc1\) is held by "
                                           r"process \d+ \(python"):
            with netconf_lab(1, name=name, port=port):
                pass
    assert not wait_for(lambda: lab_leftovers(name))
