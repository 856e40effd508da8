"""The labs as context managers: what tests and benchmarks start a lab with.

- :func:`router_lab`: FRR routers behind OpenSSH (:class:`~nornir_bench.lab.routers.RouterLab`),
  ready, its inventory written, its baseline taken;
- :func:`throttling_lab`: one router whose OpenSSH lets few logins through at once
  (``MaxStartups``), many inventory hosts on its port;
- :func:`bastion_lab`: routers reached only through a bastion (``--bastion``);
- :func:`netconf_lab`: NETCONF servers (netconfd) behind OpenSSH
  (:class:`~nornir_bench.lab.netconf.NetconfLab`), yielding a
  :class:`~nornir_bench.lab.netconf_running.RunningNetconfLab`.

The router labs yield a :class:`~nornir_bench.lab.running.RunningRouterLab`. Each lab is
removed when the block ends, also on an error or Ctrl-C (KeyboardInterrupt); if this process
is killed (SIGKILL, the OOM killer), the lab's guard process removes it. ``nornir-bench lab
--routers`` (``--netconf``) is the same lab, kept until SIGINT or SIGTERM
(:mod:`~nornir_bench.lab.router_command`, :mod:`~nornir_bench.lab.netconf_command`).
"""

from __future__ import annotations

import os
import random
import string
from collections.abc import Iterator
from contextlib import contextmanager

from nornir_bench.lab.netconf import NetconfLab
from nornir_bench.lab.netconf_plan import plan_netconf_lab
from nornir_bench.lab.netconf_running import RunningNetconfLab
from nornir_bench.lab.ports import free_port_range
from nornir_bench.lab.routers import RouterLab
from nornir_bench.lab.running import RunningRouterLab
from nornir_bench.lab.topology import plan_lab

__all__ = [
    "THROTTLING_MAX_STARTUPS", "bastion_lab", "netconf_lab", "new_lab_name", "router_lab",
    "throttling_lab",
]

THROTTLING_MAX_STARTUPS = "1"
"""OpenSSH lets one login at a time through to authentication and drops the others, as a
loaded device does past ``10:30:100``: every runner's logins are throttled."""


def new_lab_name(prefix: str = "l") -> str:
    """A lab name no other lab is likely to have: ``prefix`` and six lowercase letters or
    digits (a lab's name is machine-wide: its user, namespaces and FRR folders)."""
    return prefix + "".join(random.choices(string.ascii_lowercase + string.digits, k=6))


@contextmanager
def router_lab(
    routers: int = 3,
    *,
    topology: str = "chain",
    name: str | None = None,
    port: int | None = None,
    write: str | os.PathLike[str] | None = None,
    hosts: int | None = None,
    max_startups: str | None = None,
    bastion: bool = False,
    timeout: float = 60.0,
) -> Iterator[RunningRouterLab]:
    """A router lab made in this process, ready, removed when the block ends.

    Args:
        routers: how many FRR routers (1 to 100).
        topology: how they are linked: ``chain``, ``ring``, ``star`` or ``mesh``.
        name: its name (its namespaces, user and FRR folders derive from it); a new one
            (:func:`new_lab_name`) if not given.
        port: the first router's SSH port on 127.0.0.1, the others after it; free ports if
            not given.
        write: a folder to write its inventory to (:meth:`RunningRouterLab.write_inventory`).
        hosts: that many inventory hosts spread over the routers, instead of one a router.
        max_startups: its OpenSSH's ``MaxStartups``; OpenSSH's default (10:30:100) if not
            given.
        bastion: reach the routers only through a bastion on 127.0.0.1.
        timeout: seconds it has to become ready (logins accepted, BGP established).

    Raises:
        LabError: bad options, what the machine lacks, a lab of that name running, a port
            held (each in one line), or a system command that failed.
        RouterNotReady: not ready within ``timeout``.
    """
    plan = plan_lab(
        routers, topology=topology, port=free_port_range(routers) if port is None else port,
        name=new_lab_name() if name is None else name,
        bastion_port=free_port_range(1) if bastion else None,
    )
    with RouterLab(plan, max_startups=max_startups) as made:
        lab = made.running(write)
        try:
            if write is not None:
                lab.write_inventory(write, hosts)
            lab.wait_ready(timeout)
            yield lab
        finally:
            lab.close()


@contextmanager
def throttling_lab(
    hosts: int = 30, *, max_startups: str = THROTTLING_MAX_STARTUPS,
    write: str | os.PathLike[str] | None = None, name: str | None = None,
    port: int | None = None, timeout: float = 60.0,
) -> Iterator[RunningRouterLab]:
    """One router whose OpenSSH throttles logins (``max_startups``, one at a time by
    default), ``hosts`` inventory hosts on its port written to ``write``: a run of many hosts
    at once finds logins dropped before authentication, as devices and AAA servers do.
    Otherwise as :func:`router_lab`."""
    with router_lab(1, name=name, port=port, write=write, hosts=hosts,
                    max_startups=max_startups, timeout=timeout) as lab:
        yield lab


@contextmanager
def bastion_lab(
    routers: int = 2, *, write: str | os.PathLike[str] | None = None, name: str | None = None,
    port: int | None = None, hosts: int | None = None, timeout: float = 60.0,
) -> Iterator[RunningRouterLab]:
    """Routers whose SSH server listens only inside the lab's management namespace, reached
    through a bastion on 127.0.0.1 (``--bastion``), which the inventory written to ``write``
    names as every host's jump host. Otherwise as :func:`router_lab`."""
    with router_lab(routers, name=name, port=port, write=write, hosts=hosts, bastion=True,
                    timeout=timeout) as lab:
        yield lab


@contextmanager
def netconf_lab(
    servers: int = 2, *, name: str | None = None, port: int | None = None,
    write: str | os.PathLike[str] | None = None, hosts: int | None = None,
    timeout: float = 60.0,
) -> Iterator[RunningNetconfLab]:
    """A NETCONF lab made in this process, ready, removed when the block ends.

    Args:
        servers: how many netconfd servers (1 to 100), each in a namespace of its own.
        name: its name (its namespaces, user and work folder derive from it); a new one
            (:func:`new_lab_name`) if not given.
        port: the first server's SSH port on 127.0.0.1, the others after it; free ports if
            not given.
        write: a folder to write its inventory to (:meth:`RunningNetconfLab.write_inventory`).
        hosts: that many inventory hosts spread over the servers, instead of one a server.
        timeout: seconds it has to become ready (every server answering a NETCONF session).

    Raises:
        LabError: bad options, what the machine lacks, a lab of that name running, a port
            held (each in one line), or a system command that failed.
        NetconfNotReady: not ready within ``timeout``.
    """
    plan = plan_netconf_lab(
        servers, port=free_port_range(servers) if port is None else port,
        name=new_lab_name() if name is None else name,
    )
    with NetconfLab(plan) as made:
        lab = made.running(write)
        if write is not None:
            lab.write_inventory(write, hosts)
        lab.wait_ready(timeout)
        lab.take_baseline()
        yield lab
