"""What a router lab is made of: routers, the links between them, their addresses and configs.

Pure data, no I/O: :func:`plan_lab` turns ``--routers N --topology T`` into a
:class:`LabPlan` that :mod:`~nornir_bench.lab.routers` builds. Every address lies in the
benchmarking ranges (RFC 2544), which exist only inside the lab's own network namespaces:
links in 198.18.0.0/16 (a /30 each), each router's loopback (its BGP router id) in
198.19.0.0/16. Each router has an AS of its own and an eBGP session to each neighbour, and
announces its connected and static routes: a route added on one router shows in the BGP table
of every other one it is linked to, directly or through others.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from nornir_bench.lab._errors import LabError

__all__ = [
    "DEFAULT_LAB_NAME",
    "MAX_ROUTERS",
    "TOPOLOGIES",
    "LabPlan",
    "Link",
    "Router",
    "check_lab_name",
    "plan_lab",
]

TOPOLOGIES = ("chain", "ring", "star", "mesh")
"""chain: r1-r2-...-rN; ring: a chain closed back to r1; star: r1 linked to every other;
mesh: every router linked to every other."""

MAX_ROUTERS = 100
"""Three FRR daemons and an SSH port each: a hundred is already a large lab on 2 cores."""

DEFAULT_LAB_NAME = "frr"

_NAME = re.compile(r"[a-z][a-z0-9]{0,9}")
_LINKS = ipaddress.IPv4Network("198.18.0.0/16")
_LOOPBACKS = ipaddress.IPv4Network("198.19.0.0/16")
_FIRST_AS = 65001


@dataclass(frozen=True)
class Link:
    """A veth pair between routers ``a`` and ``b`` (indexes into the plan's routers), with the
    two ends' addresses (``/30``) and interface names (``to-<other router>``)."""

    a: int
    b: int
    a_address: str
    b_address: str
    prefix: int = 30


@dataclass(frozen=True)
class Router:
    """One FRR router: its name (the CLI prompt), namespace (FRR's pathspace too), AS, router
    id (on its loopback) and SSH port on 127.0.0.1."""

    name: str
    namespace: str
    asn: int
    router_id: str
    port: int


@dataclass(frozen=True)
class LabPlan:
    """Every router and link of one lab, and what each router's FRR is configured with."""

    name: str
    topology: str
    routers: tuple[Router, ...]
    links: tuple[Link, ...]
    bastion_port: int | None = None
    """With a bastion: its port on 127.0.0.1, the only way to the routers (lab/bastion.py)."""

    @property
    def management(self) -> str | None:
        """With a bastion: the namespace where the routers' SSH server listens."""
        return None if self.bastion_port is None else f"nb-{self.name}-m"

    @property
    def user(self) -> str:
        """The lab's own login user on this machine (a system-wide name: one per lab)."""
        return f"nbl-{self.name}"

    @property
    def kind(self) -> str:
        return "router lab"

    def exposed_ports(self) -> list[tuple[int, str]]:
        """Its ports on 127.0.0.1: a router's each, or only the bastion's (behind a bastion,
        the routers' ports are in the lab's own namespace)."""
        if self.bastion_port is not None:
            return [(self.bastion_port, "the bastion")]
        return [(r.port, f"router {r.name}") for r in self.routers]

    def interface(self, link: Link, side: int) -> str:
        """The name, inside router ``side``'s namespace, of its end of ``link``."""
        other = link.b if side == link.a else link.a
        return f"to-{self.routers[other].name}"

    def neighbours(self, index: int) -> list[tuple[Router, str]]:
        """Router ``index``'s neighbours, each with the address it peers with."""
        found = []
        for link in self.links:
            if link.a == index:
                found.append((self.routers[link.b], link.b_address))
            elif link.b == index:
                found.append((self.routers[link.a], link.a_address))
        return found

    def frr_config(self, index: int) -> str:
        """Router ``index``'s ``frr.conf``: its name, its BGP AS and neighbours, its routes
        announced. The timers make a lab come up, and a change spread, in seconds."""
        router = self.routers[index]
        lines = [
            "frr defaults datacenter",
            f"hostname {router.name}",
            "!",
            f"router bgp {router.asn}",
            f" bgp router-id {router.router_id}",
            " no bgp ebgp-requires-policy",
            " no bgp network import-check",
        ]
        for peer, address in self.neighbours(index):
            lines += [
                f" neighbor {address} remote-as {peer.asn}",
                f" neighbor {address} description {peer.name}",
                f" neighbor {address} timers connect 1",
                f" neighbor {address} advertisement-interval 0",
            ]
        lines += [
            " address-family ipv4 unicast",
            "  redistribute connected",
            "  redistribute static",
            " exit-address-family",
            "exit",
            "!",
        ]
        return "\n".join(lines) + "\n"

    def vtysh_config(self, index: int) -> str:
        """Router ``index``'s ``vtysh.conf``: the prompt is the router's name (vtysh shows
        the machine's host name otherwise)."""
        return f"hostname {self.routers[index].name}\n"


def check_lab_name(name: object, kind: str = "router lab") -> str:
    """``name`` if it can name a lab (its namespaces, user and FRR pathspaces derive from it)."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise LabError(
            f"a {kind}'s name must be 1-10 lowercase letters and digits, starting with a "
            f"letter, got {name!r}"
        )
    return name


def plan_lab(
    routers: int, *, topology: str = "chain", port: int, name: str,
    bastion_port: int | None = None,
) -> LabPlan:
    """The plan of a lab of ``routers`` FRR routers linked as ``topology``, the first SSH
    port ``port`` and the others after it; reached through a bastion on ``bastion_port``, if
    given.

    Raises:
        LabError: a count, topology, port or name that is not allowed, saying what is.
    """
    if isinstance(routers, bool) or not isinstance(routers, int) or not 1 <= routers <= MAX_ROUTERS:
        raise LabError(f"--routers must be a whole number from 1 to {MAX_ROUTERS}, got {routers!r}")
    if topology not in TOPOLOGIES:
        raise LabError(f"--topology must be one of {', '.join(TOPOLOGIES)}, got {topology!r}")
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65536 - routers:
        raise LabError(
            f"--port must leave room for {routers} ports up to 65535, from 1 to "
            f"{65536 - routers}, got {port!r}"
        )
    name = check_lab_name(name)
    nodes = tuple(
        Router(
            name=f"r{k + 1}",
            namespace=f"nb-{name}-r{k + 1}",
            asn=_FIRST_AS + k,
            router_id=str(_LOOPBACKS[k + 1]),
            port=port + k,
        )
        for k in range(routers)
    )
    pairs = _pairs(routers, topology)
    subnets = _LINKS.subnets(new_prefix=30)
    links = []
    for a, b in pairs:
        subnet = next(subnets)
        links.append(Link(a, b, str(subnet[1]), str(subnet[2])))
    return LabPlan(name, topology, nodes, tuple(links), bastion_port)


def _pairs(count: int, topology: str) -> list[tuple[int, int]]:
    if topology == "star":
        return [(0, k) for k in range(1, count)]
    if topology == "mesh":
        return [(a, b) for a in range(count) for b in range(a + 1, count)]
    chain = [(k, k + 1) for k in range(count - 1)]
    if topology == "ring" and count > 2:
        chain.append((count - 1, 0))
    return chain
