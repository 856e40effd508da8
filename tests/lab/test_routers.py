"""``nornir-bench lab --routers``: the plan (pure), and real FRR routers behind OpenSSH (root).

The tests that only use a lab share the session's (``frr_lab``: r1 - r2 - r3; ``bastion_lab``);
those of the command (its output, its signals), and those that kill or refuse a lab, start
their own, of one router where one is enough.
"""

from __future__ import annotations

import ipaddress
import os
import re
import signal
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from netmiko import BaseConnection, ConnectHandler
from ruamel.yaml import YAML

from nornir_bench.lab import LabDevice, LabError, RunningRouterLab
from nornir_bench.lab._system import FRR_DAEMONS, read_state, teardown
from nornir_bench.lab.inventory_files import INVENTORY_FILES
from nornir_bench.lab.router_command import router_hosts
from nornir_bench.lab.routers import RouterLab
from nornir_bench.lab.topology import MAX_ROUTERS, TOPOLOGIES, plan_lab
from tests.devices import LAB, ROOT, free_port_range, started, stopped
from tests.router_faults import file_opened, send_signal_to
from tests.routers import (
    LAB_READY_TIMEOUT,
    STATE_FOLDER,
    guard_pid,
    kill_lab,
    lab_leftovers,
    lab_pids,
    new_lab_name,
    router_lab_process,
    skip_without_router_lab,
    start_router_lab,
    wait_for,
)

BENCHMARKING = ipaddress.IPv4Network("198.18.0.0/15")  # RFC 2544: never routed outside a lab
ROUTE = "203.0.113.0/24"  # TEST-NET-3


# -- the plan: pure, no root -------------------------------------------------------------------


BAD_PLANS: list[tuple[object, dict[str, object], str]] = [
    (0, {}, "--routers must be a whole number from 1 to 100, got 0"),
    (MAX_ROUTERS + 1, {}, "--routers must be a whole number from 1 to 100, got 101"),
    (True, {}, "--routers must be a whole number from 1 to 100, got True"),
    (2.5, {}, "--routers must be a whole number from 1 to 100, got 2.5"),
    ("3", {}, "--routers must be a whole number from 1 to 100, got '3'"),
    (3, {"topology": "wheel"},
     "--topology must be one of chain, ring, star, mesh, got 'wheel'"),
    (3, {"port": 0}, "--port must leave room for 3 ports up to 65535, from 1 to 65533, got 0"),
    (3, {"port": 65534}, "--port must leave room for 3 ports up to 65535, from 1 to 65533, "
     "got 65534"),
    (3, {"port": True}, "--port must leave room for 3 ports up to 65535, from 1 to 65533, "
     "got True"),
    *[
        (3, {"name": bad}, "a router lab's name must be 1-10 lowercase letters and digits, "
         f"starting with a letter, got {bad!r}")
        for bad in ["", "Lab", "1lab", "lab-1", "abcdefghijk", "lab\n", None]
    ],
]


@pytest.mark.parametrize(
    ("routers", "options", "says"),
    BAD_PLANS,
    ids=[f"routers={r!r}" + "".join(f",{k}={v!r}" for k, v in o.items()) for r, o, _ in BAD_PLANS],
)
def test_a_plan_refuses_bad_input_in_one_line_saying_what_is_allowed(
    routers: object, options: dict[str, object], says: str
) -> None:
    given = {"topology": "chain", "port": 2201, "name": "lab", **options}
    with pytest.raises(LabError) as raised:
        plan_lab(routers, **given)  # type: ignore[arg-type]
    assert str(raised.value) == says
    assert "\n" not in str(raised.value)


def test_a_plan_takes_the_bounds_themselves() -> None:
    assert len(plan_lab(1, port=65535, name="a").routers) == 1
    assert plan_lab(MAX_ROUTERS, port=65536 - MAX_ROUTERS, name="a123456789").routers[-1].port == (
        65535
    )


def linked(routers: int, topology: str) -> set[frozenset[str]]:
    plan = plan_lab(routers, topology=topology, port=2201, name="lab")
    names = [router.name for router in plan.routers]
    return {frozenset((names[link.a], names[link.b])) for link in plan.links}


def pairs(*names: str) -> set[frozenset[str]]:
    return {frozenset(pair.split("-")) for pair in names}


@pytest.mark.parametrize(
    ("routers", "topology", "links"),
    [
        (1, "chain", set()),
        (1, "ring", set()),
        (1, "star", set()),
        (1, "mesh", set()),
        (2, "ring", pairs("r1-r2")),  # not the same pair twice
        (4, "chain", pairs("r1-r2", "r2-r3", "r3-r4")),
        (4, "ring", pairs("r1-r2", "r2-r3", "r3-r4", "r4-r1")),
        (4, "star", pairs("r1-r2", "r1-r3", "r1-r4")),
        (4, "mesh", pairs("r1-r2", "r1-r3", "r1-r4", "r2-r3", "r2-r4", "r3-r4")),
    ],
)
def test_each_topology_links_the_routers_it_names(
    routers: int, topology: str, links: set[frozenset[str]]
) -> None:
    assert linked(routers, topology) == links


@pytest.mark.parametrize("topology", TOPOLOGIES)
@pytest.mark.parametrize("routers", [2, 3, 7, MAX_ROUTERS])
def test_link_counts(routers: int, topology: str) -> None:
    expected = {
        "chain": routers - 1,
        "ring": routers if routers > 2 else 1,
        "star": routers - 1,
        "mesh": routers * (routers - 1) // 2,
    }[topology]
    plan = plan_lab(routers, topology=topology, port=2201, name="lab")
    assert len(plan.links) == expected
    assert len(linked(routers, topology)) == expected  # no pair linked twice, none to itself


@pytest.mark.parametrize("topology", TOPOLOGIES)
def test_every_address_is_a_benchmarking_one_and_each_link_a_subnet_of_its_own(
    topology: str,
) -> None:
    """The largest plan of each shape: 4,950 links for a mesh of 100."""
    plan = plan_lab(MAX_ROUTERS, topology=topology, port=2201, name="lab")
    subnets = set()
    addresses = [r.router_id for r in plan.routers]
    for link in plan.links:
        a, b = ipaddress.IPv4Address(link.a_address), ipaddress.IPv4Address(link.b_address)
        subnet = ipaddress.IPv4Network(f"{a}/{link.prefix}", strict=False)
        assert b in subnet and a != b
        assert a not in (subnet.network_address, subnet.broadcast_address)
        assert b not in (subnet.network_address, subnet.broadcast_address)
        subnets.add(subnet)
        addresses += [link.a_address, link.b_address]
    assert len(subnets) == len(plan.links)
    assert len(set(addresses)) == len(addresses)  # router ids included
    assert all(ipaddress.IPv4Address(a) in BENCHMARKING for a in addresses)
    assert not {  # no router id inside a link's subnet
        ipaddress.IPv4Network(f"{r.router_id}/30", strict=False) for r in plan.routers
    } & subnets


def test_routers_are_named_numbered_and_given_consecutive_ports() -> None:
    plan = plan_lab(3, port=4100, name="x1")
    assert [(r.name, r.namespace, r.asn, r.port) for r in plan.routers] == [
        ("r1", "nb-x1-r1", 65001, 4100),
        ("r2", "nb-x1-r2", 65002, 4101),
        ("r3", "nb-x1-r3", 65003, 4102),
    ]
    assert plan.user == "nbl-x1"
    assert len({r.router_id for r in plan.routers}) == 3


@pytest.mark.parametrize("topology", TOPOLOGIES)
def test_each_router_peers_with_its_neighbours_and_no_other(topology: str) -> None:
    plan = plan_lab(4, topology=topology, port=2201, name="lab")
    for index, router in enumerate(plan.routers):
        config = plan.frr_config(index)
        assert f"hostname {router.name}\n" in config
        assert f"router bgp {router.asn}\n" in config
        assert f" bgp router-id {router.router_id}\n" in config
        peers = dict(re.findall(r"^ neighbor (\S+) remote-as (\d+)$", config, re.M))
        expected = {}
        for link in plan.links:
            if index in (link.a, link.b):
                own, other = (link.a_address, link.b) if link.a == index else (link.b_address,
                                                                                link.a)
                address = link.b_address if link.a == index else link.a_address
                # the peer's address is the other end of a link this router has an end of
                assert ipaddress.IPv4Address(address) in ipaddress.IPv4Network(
                    f"{own}/{link.prefix}", strict=False
                )
                expected[address] = str(plan.routers[other].asn)
        assert peers == expected
        assert plan.vtysh_config(index) == f"hostname {router.name}\n"


def test_router_hosts_spreads_the_hosts_over_the_routers_in_turn() -> None:
    devices = [LabDevice(f"r{k}", "127.0.0.1", 5000 + k, "cisco_ios", "u", "p") for k in (1, 2, 3)]
    hosts = router_hosts(devices, 7)
    assert [(h.name, h.port) for h in hosts] == [
        ("h1", 5001), ("h2", 5002), ("h3", 5003), ("h4", 5001), ("h5", 5002), ("h6", 5003),
        ("h7", 5001),
    ]
    assert {(h.username, h.password, h.platform) for h in hosts} == {("u", "p", "cisco_ios")}
    assert [h.name for h in router_hosts(devices, 10)][::9] == ["h01", "h10"]  # sorted by name


# -- bad input: no lab started ---------------------------------------------------------------


def nornir_bench(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*LAB, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--routers", "0"], "nornir-bench: error: --routers must be a whole number from 1 to 100, "
         "got 0"),
        (["--routers", "3", "--topology", "wheel"], "nornir-bench lab: error: argument --topology: "
         "invalid choice: 'wheel' (choose from 'chain', 'ring', 'star', 'mesh')"),
        (["--routers", "2", "--count", "3"], "nornir-bench: error: --routers makes a lab of FRR "
         "routers: leave out INVENTORY, --count and --platform"),
        (["--routers", "1", "--name", "Lab-1"], "nornir-bench: error: a router lab's name must be "
         "1-10 lowercase letters and digits, starting with a letter, got 'Lab-1'"),
        (["--routers", "1", "--max-startups", "10\nPermitRootLogin yes"], "nornir-bench: error: "
         "--max-startups must be N or START:RATE:FULL (whole numbers, START at least 1 and at "
         "most FULL, RATE a percentage), as OpenSSH's MaxStartups, got '10\\nPermitRootLogin "
         "yes'"),
        (["--routers", "1", "--max-startups", "30:50:10"], "nornir-bench: error: --max-startups "
         "must be N or START:RATE:FULL (whole numbers, START at least 1 and at most FULL, RATE a "
         "percentage), as OpenSSH's MaxStartups, got '30:50:10'"),
    ],
    ids=["no-routers", "unknown-topology", "routers-and-count", "bad-name",
         "max-startups-injected", "max-startups-start-past-full"],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], says: str) -> None:
    """argparse's own refusals name the command (``nornir-bench lab: error:``), as every
    command's do; the lab's own say ``nornir-bench: error:``."""
    done = nornir_bench("lab", *args)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [says]
    assert done.stdout == ""


def test_wait_lab_for_no_such_lab_exits_1_in_one_line() -> None:
    skip_without_router_lab()
    done = nornir_bench("wait-lab", "--routers", "1", "--name", "nosuchlab", "--timeout", "0.5")
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines() == [
        "nornir-bench: no router lab named 'nosuchlab' started within 0.5 s"
    ]


# -- the module's lab: r1 - r2 - r3 ----------------------------------------------------------


@contextmanager
def netmiko_session(lab: RunningRouterLab, router: str) -> Iterator[BaseConnection]:
    """A netmiko session (cisco_ios) to ``router``, as the inventory reaches it."""
    (device,) = [d for d in lab.devices() if d.name == router]
    with ConnectHandler(
        device_type="cisco_ios", host=device.address, port=device.port,
        username=device.username, password=device.password, conn_timeout=10,
    ) as connection:
        yield connection


@pytest.fixture
def r1(frr_lab: RunningRouterLab) -> Iterator[BaseConnection]:
    with netmiko_session(frr_lab, "r1") as connection:
        yield connection


def test_lab_ready_comes_once_every_bgp_session_is_established(
    frr_lab: RunningRouterLab,
) -> None:
    """What each router's FRR said right after the lab was ready: every link's session up,
    none missing (r2 peers with r1 and r3, the ends of the chain with r2)."""
    expected = {
        router.name: {address: "Established" for _, address in frr_lab.plan.neighbours(index)}
        for index, router in enumerate(frr_lab.plan.routers)
    }
    assert [len(peers) for peers in expected.values()] == [1, 2, 1]
    assert frr_lab.bgp_at_ready == expected


def test_a_login_lands_in_that_routers_cli(frr_lab: RunningRouterLab) -> None:
    with netmiko_session(frr_lab, "r2") as connection:
        assert connection.find_prompt() == "r2#"
        summary = str(connection.send_command("show ip bgp summary"))
    assert "local AS number 65002" in summary
    peers = {f"{peer.name}({address})" for peer, address in frr_lab.plan.neighbours(1)}
    assert len(peers) == 2 and peers <= set(summary.split())  # its neighbours: r1 and r3


def bgp_entry(lab: RunningRouterLab, router: str) -> str:
    return lab.vtysh(router, f"show ip bgp {ROUTE}")


def test_a_static_route_on_r1_reaches_r3_through_r2(
    frr_lab: RunningRouterLab, r1: BaseConnection
) -> None:
    path_through_r2 = re.compile(r"^\s+65002 65001$", re.M)  # r3 learns it from r2, r2 from r1
    assert "% Network not in table" in bgp_entry(frr_lab, "r3")
    try:
        said = r1.send_config_set([f"ip route {ROUTE} Null0"])
        assert "%" not in said, said
        entry = wait_for(lambda: not path_through_r2.search(bgp_entry(frr_lab, "r3")))
        assert not entry, bgp_entry(frr_lab, "r3")
    finally:
        r1.send_config_set([f"no ip route {ROUTE} Null0"])
    # withdrawn again: the module's lab is as it was
    gone = wait_for(lambda: "% Network not in table" not in bgp_entry(frr_lab, "r3"))
    assert not gone, bgp_entry(frr_lab, "r3")
    assert "ip route" not in frr_lab.vtysh("r1", "show running-config")


def test_an_unknown_command_is_refused(frr_lab: RunningRouterLab, r1: BaseConnection) -> None:
    said = r1.send_config_set(["ip routx 1.1.1.1"])
    assert "% Unknown command: ip routx 1.1.1.1" in said
    assert r1.send_command("ip routx 1.1.1.1") == "% Unknown command: ip routx 1.1.1.1"
    assert "routx" not in frr_lab.vtysh("r1", "show running-config")


def test_the_inventory_reaches_each_router_as_the_labs_user(frr_lab: RunningRouterLab) -> None:
    """``--hosts 3``: h1, h2, h3, one on each router's port, platform cisco_ios."""
    yaml = YAML(typ="safe")
    hosts = yaml.load(frr_lab.inventory / "hosts.yaml")
    assert hosts == {
        f"h{k}": {"hostname": "127.0.0.1", "port": r.port, "groups": ["cisco_ios"]}
        for k, r in enumerate(frr_lab.plan.routers, 1)
    }
    assert yaml.load(frr_lab.inventory / "groups.yaml") == {"cisco_ios": {"platform": "cisco_ios"}}
    defaults = yaml.load(frr_lab.inventory / "defaults.yaml")
    known = frr_lab.inventory / "known_hosts"
    assert defaults == {
        "username": f"nbl-{frr_lab.name}",
        "password": frr_lab.password,
        "data": {"known_hosts": str(known), "config_platform": "frr"},  # its dialect
    }
    # the lab's SSH server's own key, for every router's port: the default check passes
    public = Path(frr_lab.state()["workdir"], "ssh_host_ed25519_key.pub").read_text().split()
    assert known.read_text().splitlines() == [
        f"[127.0.0.1]:{r.port} {public[0]} {public[1]}" for r in frr_lab.plan.routers
    ]


def test_wait_lab_finds_the_running_lab(frr_lab: RunningRouterLab) -> None:
    done = nornir_bench("wait-lab", "--routers", "3", "--name", frr_lab.name, "--timeout", "30")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "lab ready: 3 FRR routers accept logins, BGP established\n"
    assert frr_lab.password not in done.stdout + done.stderr


def test_the_password_is_written_to_the_inventory_only(frr_lab: RunningRouterLab) -> None:
    """(The command never prints it: router_lab_process checks each lab it runs.)"""
    password = frr_lab.password
    assert len(password) >= 16
    state = frr_lab.state()
    assert state["password"] == password  # for wait-lab: in a file only root can read
    assert stat.S_IMODE((STATE_FOLDER / f"{frr_lab.name}.json").stat().st_mode) == 0o600
    assert stat.S_IMODE(STATE_FOLDER.stat().st_mode) & 0o077 == 0
    files = [p for p in Path(state["workdir"]).rglob("*") if p.is_file()]
    files += [p for r in frr_lab.plan.routers for p in Path(f"/etc/frr/{r.namespace}").iterdir()]
    assert any(p.name == "sshd_config" for p in files) and any(p.name == "frr.conf" for p in files)
    for path in files:
        assert password.encode() not in path.read_bytes(), path
    for entry in os.listdir("/proc"):  # nor a command line (chpasswd reads it from stdin)
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            assert password.encode() not in cmdline, entry


def test_a_second_lab_of_a_running_ones_name_is_refused_naming_it(
    frr_lab: RunningRouterLab,
) -> None:
    """From the command line and from Python; the running lab is left as it was."""
    state = frr_lab.state()
    bgpd = lab_pids(frr_lab.name, "bgpd")
    says = (f"a router lab named {frr_lab.name!r} is running (process "
            f"{frr_lab.owner}): stop it, or give this one another --name")
    done = nornir_bench("lab", "--routers", "1", "--name", frr_lab.name, "--port",
                        str(free_port_range(1)))
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [f"nornir-bench: error: {says}"]
    with pytest.raises(LabError, match=f"^{re.escape(says)}$"):
        RouterLab(plan_lab(2, port=free_port_range(2), name=frr_lab.name)).start()
    assert frr_lab.state() == state
    assert lab_pids(frr_lab.name, "bgpd") == bgpd and alive(state["sshd_pid"])
    with netmiko_session(frr_lab, "r3") as connection:
        assert connection.find_prompt() == "r3#"


def test_a_lab_on_ports_another_lab_holds_is_refused_at_once_naming_that_lab(
    frr_lab: RunningRouterLab,
) -> None:
    """From the command line and from Python, before anything is made; the running lab is left
    as it was."""
    port = frr_lab.plan.routers[1].port  # r2's, and r3's next: the new lab's r1 and r2
    name = new_lab_name()
    says = (f"port {port} (router r1) is held by router lab {frr_lab.name!r} (process "
            f"{frr_lab.owner}): stop it, or give this lab free ports (--port)")
    done = nornir_bench("lab", "--routers", "2", "--name", name, "--port", str(port),
                        timeout=2 * LAB_READY_TIMEOUT)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [f"nornir-bench: error: {says}"]
    assert done.stdout == ""
    with pytest.raises(LabError, match=f"^{re.escape(says)}$"):
        RouterLab(plan_lab(1, port=port, name=name)).start()
    assert lab_leftovers(name) == []
    with netmiko_session(frr_lab, "r2") as connection:
        assert connection.find_prompt() == "r2#"


def test_a_lab_on_a_port_another_process_listens_on_is_refused_naming_it() -> None:
    skip_without_router_lab()
    name = new_lab_name()
    with socket.socket() as server:
        server.bind(("127.0.0.1", free_port_range(1)))
        server.listen()
        port = server.getsockname()[1]
        done = nornir_bench("lab", "--routers", "1", "--name", name, "--port", str(port))
    program = Path("/proc/self/comm").read_text().strip()
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"nornir-bench: error: port {port} (router r1) is held by process {os.getpid()} "
        f"({program}): stop it, or give this lab free ports (--port)"
    ]
    assert lab_leftovers(name) == []


# -- labs of their own -----------------------------------------------------------------------


def test_the_command_says_its_routers_writes_the_inventory_and_ctrl_c_removes_it(
    tmp_path: Path,
) -> None:
    """``nornir-bench lab --routers`` itself (the command's own lines and SIGINT: a lab of its
    own): a line per router, the inventory's files, ``lab ready:``; at Ctrl-C exit 0, ``lab
    stopped``, nothing left, the password never printed (router_lab_process checks)."""
    skip_without_router_lab()
    with router_lab_process(tmp_path, 2, hosts=3) as lab:
        said = lab.handle.stdout
        first, second = lab.plan.routers
        assert said[0].split()[:2] == ["r1", f"127.0.0.1:{first.port}"]
        assert said[1].split()[:2] == ["r2", f"127.0.0.1:{second.port}"]
        assert said[2] == "inventory written: " + ", ".join(
            str(lab.inventory / name) for name in (*INVENTORY_FILES, "known_hosts"))
        assert said[3].startswith("lab ready: 2 FRR routers (chain) accept logins, BGP established")
        assert lab.hosts() == {"h1": "r1", "h2": "r2", "h3": "r1"}


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie is dead: only its parent has not reaped it)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return text.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.parametrize("bastion", [False, True], ids=["direct", "bastion"])
def test_a_lab_killed_with_sigkill_is_removed_by_its_guard(tmp_path: Path, bastion: bool) -> None:
    """With a bastion, killed while a login holds a bastion connection: its sshd, in the
    management namespace, goes with the rest. (The command's lab, of its own: it is killed.)"""
    skip_without_router_lab()
    lab = start_router_lab(tmp_path, 1, bastion=bastion)
    held = None
    try:
        workdir = Path(lab.state()["workdir"])
        if bastion:
            port = lab.plan.bastion_port
            assert f"bastion 127.0.0.1:{port}: the only way in" in lab.output()
            held = socket.create_connection(("127.0.0.1", lab.plan.bastion_port or 0), 10)
            assert held.recv(64).startswith(b"SSH-2.0-OpenSSH")  # its sshd -i is serving
        made = lab_leftovers(lab.name)
        assert any(t.startswith("namespace ") for t in made) and lab_pids(lab.name, "bgpd")
        assert (f"namespace nb-{lab.name}-m" in made) == bastion
    finally:
        kill_lab(lab)
        if held is not None:
            held.close()
    left = wait_for(lambda: lab_leftovers(lab.name))
    assert not left
    assert not workdir.exists()


@pytest.mark.parametrize("same_name", [True, False], ids=["same-name", "another-name"])
def test_the_next_start_of_a_lab_removes_what_a_killed_lab_and_its_guard_left(
    tmp_path: Path, same_name: bool,
) -> None:
    """The next start is the Python API's (``RouterLab`` as a context manager), on the same
    port: the killed lab's SSH server must be gone before the new one listens, whether the
    new lab has its name or another (nobody else would ever remove it)."""
    skip_without_router_lab()
    first = start_router_lab(tmp_path, 1)
    name, port = first.name, first.plan.routers[0].port
    successor = name if same_name else new_lab_name()
    try:
        state = first.state()
        old = [pid for daemon in FRR_DAEMONS for pid in lab_pids(name, daemon)]
        assert len(old) == len(FRR_DAEMONS)
        old.append(state["sshd_pid"])
        guard = guard_pid(name)
        os.kill(guard, signal.SIGKILL)
        assert not wait_for(lambda: alive(guard))
        kill_lab(first)
        # Nobody removes it now: the lab and its guard are both gone.
        assert all(alive(pid) for pid in old)
        assert f"namespace nb-{name}-r1" in lab_leftovers(name)
        with RouterLab(plan_lab(1, port=port, name=successor)) as lab:
            assert not [pid for pid in old if alive(pid)]
            assert not Path(state["workdir"]).exists()
            if not same_name:
                assert lab_leftovers(name) == []
            lab.wait_ready(30)
            (device,) = lab.devices()
            assert (device.name, device.port, device.username, device.platform) == (
                "r1", port, f"nbl-{successor}", "cisco_ios"
            )
            assert device.password != first.password
            with ConnectHandler(
                device_type="cisco_ios", host=device.address, port=device.port,
                username=device.username, password=device.password,
            ) as connection:
                assert connection.find_prompt() == "r1#"
            assert len(lab_pids(successor, "bgpd")) == 1
        assert lab_leftovers(name) == lab_leftovers(successor) == []
    finally:
        for left in {name, successor}:  # the test failed half-way: what it made goes all the same
            stale = read_state(left)
            if stale is not None and not alive(stale.owner):
                teardown(stale)


def test_wait_lab_waits_for_the_live_lab_not_for_the_state_a_killed_one_left(
    tmp_path: Path,
) -> None:
    """A lab killed with its guard leaves its state file. wait-lab reads it (the test sees the
    file opened) before the next lab of the name starts, with another password: it must wait
    for that lab and log in to it, not keep the dead one's password."""
    skip_without_router_lab()
    first = start_router_lab(tmp_path / "first", 1)
    name, port = first.name, first.plan.routers[0].port
    waiter: subprocess.Popen[str] | None = None
    second = None
    try:
        state = first.state()
        guard = guard_pid(name)
        os.kill(guard, signal.SIGKILL)
        assert not wait_for(lambda: alive(guard))
        kill_lab(first)
        os.kill(state["sshd_pid"], signal.SIGKILL)  # the dead lab's password leads nowhere
        with file_opened(STATE_FOLDER / f"{name}.json") as opened:
            waiter = subprocess.Popen(
                [*LAB, "wait-lab", "--routers", "1", "--name", name, "--timeout",
                 str(LAB_READY_TIMEOUT)],
                cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            )
            opened()
        second = start_router_lab(tmp_path / "second", 1, name=name, port=port)
        assert second.password != first.password
        out, err = waiter.communicate(timeout=2 * LAB_READY_TIMEOUT)
        assert waiter.returncode == 0, err
        assert out == "lab ready: 1 FRR routers accept logins, BGP established\n"
        assert err == ""
    finally:
        if waiter is not None and waiter.poll() is None:
            waiter.kill()
            waiter.communicate()
        if second is not None:
            stopped(second.handle)
        stale = read_state(name)  # the test failed half-way: what it made goes all the same
        if stale is not None and not alive(stale.owner):
            teardown(stale)
    assert not wait_for(lambda: lab_leftovers(name)), lab_leftovers(name)


def test_the_guard_of_a_killed_lab_leaves_the_next_lab_of_its_name_alone(
    tmp_path: Path,
) -> None:
    """The guard is held (SIGSTOP) while its lab is killed and the next lab of the name starts
    (removing what the first left) and gets ready; let go, the guard must find nothing of its
    own lab to remove, and leave the new one as it is."""
    skip_without_router_lab()
    first = start_router_lab(tmp_path / "first", 1)
    name, port = first.name, first.plan.routers[0].port
    guard = guard_pid(name)
    second = None
    try:
        os.kill(guard, signal.SIGSTOP)
        kill_lab(first)
        second = start_router_lab(tmp_path / "second", 1, name=name, port=port)
        state = second.state()
        os.kill(guard, signal.SIGCONT)
        assert not wait_for(lambda: alive(guard))
        assert second.state() == state
        assert alive(state["sshd_pid"]) and len(lab_pids(name, "bgpd")) == 1
        with netmiko_session(second, "r1") as connection:
            assert connection.find_prompt() == "r1#"
    finally:
        send_signal_to([guard], signal.SIGCONT)
        if second is not None:
            assert stopped(second.handle) == 0, second.output()
        stale = read_state(name)
        if stale is not None and not alive(stale.owner):
            teardown(stale)
    assert not wait_for(lambda: lab_leftovers(name)), lab_leftovers(name)


@pytest.mark.parametrize("moment", ["state file written", "first router line"])
def test_sigterm_during_start_up_removes_everything_and_exits(tmp_path: Path, moment: str) -> None:
    """At the first moment the lab is making namespaces, user and daemons; at the second it
    waits for logins and BGP."""
    skip_without_router_lab()
    name = new_lab_name()
    args = [*LAB, "lab", "--routers", "2", "--name", name, "--port", str(free_port_range(2))]
    if moment == "first router line":
        handle = started(args, "r1 ", tmp_path, timeout=60)
    else:
        handle = started([sys.executable, "-c", WATCH_STATE, name, *args], "state file", tmp_path,
                         timeout=60)
    status = stopped(handle, signal.SIGTERM, timeout=30)
    assert status == 0, handle.stderr()
    assert handle.stdout[-1].startswith("lab stopped: everything removed in "), handle.stdout
    assert not any(line.startswith("lab ready:") for line in handle.stdout)
    if moment == "state file written":
        assert not any(line.startswith("r1 ") for line in handle.stdout), handle.stdout
    assert "Traceback" not in handle.stderr()
    assert not wait_for(lambda: lab_leftovers(name)), lab_leftovers(name)


# Runs the lab as its child and says "state file" once the lab has written its state (it is
# making the lab from then on); a signal it gets is passed on to the lab, whose status it exits
# with. A subprocess of its own: the test's process has no other way to be told that moment.
WATCH_STATE = """
import os, signal, subprocess, sys, time
state = f"/run/nornir-bench/labs/{sys.argv[1]}.json"
lab = subprocess.Popen(sys.argv[2:])
for sig in (signal.SIGINT, signal.SIGTERM):
    signal.signal(sig, lambda signum, frame: lab.send_signal(signum))
for _ in range(60_000):
    if os.path.exists(state) or lab.poll() is not None:
        break
    time.sleep(0.001)
print("state file", flush=True)
sys.exit(lab.wait())
"""


def test_a_lab_with_a_bastion_is_reached_through_it_only(bastion_lab: RunningRouterLab) -> None:
    """``--bastion``: the routers' SSH server listens inside the lab's management namespace;
    the inventory names the bastion (OpenSSH on 127.0.0.1) as every host's jump host, with its
    key and the routers' known; jobs reach every router through it on both drivers, and
    nothing reaches the routers' ports from here. (The session's lab: its end removes it,
    checked as every lab's; the command's bastion line and its kill: the SIGKILL test.)"""
    from nornir_bench.tasks import asend_command, send_command

    lab = bastion_lab
    bastion = lab.plan.bastion_port
    assert bastion is not None and lab.state()["bastion_port"] == bastion
    assert lab.inventory is not None
    defaults = YAML(typ="safe").load(lab.inventory / "defaults.yaml")
    assert defaults["data"]["jump_host"] == {
        "host": "127.0.0.1", "port": bastion, "username": lab.user, "password": lab.password,
    }
    known = (lab.inventory / "known_hosts").read_text().splitlines()
    assert [line.split()[0] for line in known] == [
        f"[127.0.0.1]:{port}" for port in (bastion, *(r.port for r in lab.plan.routers))
    ]
    for router in lab.plan.routers:
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", router.port), 5).close()
    for runner, task in (("threadpool", send_command), ("asyncio", asend_command)):
        nr = lab.nornir(runner)
        try:
            result = nr.run(task=task, command="show version")
        finally:
            nr.close_connections()
        assert not result.failed, {h: m[0].exception for h, m in result.items()}
        for router in lab.plan.routers:
            assert f"({router.name})" in result[router.name][0].result
    done = nornir_bench("wait-lab", "--routers", "2", "--name", lab.name, "--timeout", "30")
    assert done.returncode == 0, done.stderr
