"""``nornir-bench lab --netconf N``: a NETCONF lab made, its servers printed, kept until SIGINT
or SIGTERM, and removed."""

from __future__ import annotations

import os
from typing import TextIO

from nornir_bench.lab._command import check_hosts, run_until_signal
from nornir_bench.lab.netconf import NetconfLab
from nornir_bench.lab.netconf_plan import (
    DEFAULT_NETCONF_LAB_NAME,
    DEFAULT_NETCONF_PORT,
    YANG_MODULES,
    plan_netconf_lab,
)

__all__ = ["run_netconf_lab"]


def run_netconf_lab(
    servers: int,
    *,
    port: int | None = None,
    name: str | None = None,
    write: str | os.PathLike[str] | None = None,
    hosts: int | None = None,
    timeout: float = 60.0,
    out: TextIO | None = None,
) -> None:
    """``nornir-bench lab --netconf N``: make the lab, print a line per server and then
    ``lab ready:`` once it is, and remove it all at SIGINT or SIGTERM (or an error). The lab
    of :func:`~nornir_bench.lab.labs.netconf_lab`, with the command's defaults (name
    ``netconf``, ports from 2830) and its lines."""
    plan = plan_netconf_lab(
        servers, port=DEFAULT_NETCONF_PORT if port is None else port,
        name=DEFAULT_NETCONF_LAB_NAME if name is None else name,
    )
    check_hosts(hosts)
    run_until_signal(
        NetconfLab(plan), write=write, hosts=hosts, timeout=timeout, out=out,
        made_lines=lambda: (
            f"{server.name:<5} 127.0.0.1:{server.port:<5}  netconfd  netns {server.namespace}"
            for server in plan.servers),
        ready_line=lambda took: (
            f"lab ready: {len(plan.servers)} NETCONF servers (candidate, confirmed commit; "
            f"{', '.join(YANG_MODULES)}) answer NETCONF over SSH, in {took:.1f} s; Ctrl-C or "
            "SIGTERM removes them"),
    )
