"""``nornir-bench lab --routers N``: a router lab made, its routers printed, kept until
SIGINT or SIGTERM, and removed."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TextIO

from nornir_bench.lab._command import Interrupted, check_hosts, run_until_signal, signals_interrupt
from nornir_bench.lab.inventories import router_hosts
from nornir_bench.lab.ports import free_port_range
from nornir_bench.lab.routers import DEFAULT_ROUTER_PORT, RouterLab, check_max_startups
from nornir_bench.lab.topology import DEFAULT_LAB_NAME, plan_lab

__all__ = ["Interrupted", "router_hosts", "run_router_lab", "signals_interrupt"]


def run_router_lab(
    routers: int,
    *,
    topology: str = "chain",
    port: int | None = None,
    name: str | None = None,
    write: str | os.PathLike[str] | None = None,
    hosts: int | None = None,
    max_startups: str | None = None,
    bastion: bool = False,
    timeout: float = 60.0,
    out: TextIO | None = None,
) -> None:
    """``nornir-bench lab --routers N``: make the lab, print a line per router and then
    ``lab ready:`` once it is, and remove it all at SIGINT or SIGTERM (or an error). With
    ``bastion``, the routers are reached only through a bastion on 127.0.0.1
    (:mod:`~nornir_bench.lab.bastion`), which the inventory names. The lab of
    :func:`~nornir_bench.lab.labs.router_lab`, with the command's defaults (name ``frr``,
    ports from 2201) and its lines."""
    plan = plan_lab(
        routers, topology=topology, port=DEFAULT_ROUTER_PORT if port is None else port,
        name=DEFAULT_LAB_NAME if name is None else name,
        bastion_port=free_port_range(1) if bastion else None,
    )
    check_hosts(hosts)
    check_max_startups(max_startups)
    lab = RouterLab(plan, max_startups=max_startups)

    def made_lines() -> Iterator[str]:
        if lab.bastion is not None:
            yield (f"bastion 127.0.0.1:{lab.bastion.port}: the only way in to the routers, whose "
                   f"SSH server listens on 127.0.0.1 in netns {plan.management}")
        for router in plan.routers:
            peers = ", ".join(p.name for p, _ in plan.neighbours(plan.routers.index(router)))
            yield (f"{router.name:<4} 127.0.0.1:{router.port:<5}  AS {router.asn}  "
                   f"netns {router.namespace}  peers {peers or '-'}")

    run_until_signal(
        lab, made_lines=made_lines, write=write, hosts=hosts, timeout=timeout, out=out,
        ready_line=lambda took: (
            f"lab ready: {len(plan.routers)} FRR routers ({plan.topology}) accept logins, "
            f"BGP established, in {took:.1f} s; Ctrl-C or SIGTERM removes them"),
    )
