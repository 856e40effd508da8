"""``nornir-bench lab --routers N``: a router lab made, its routers printed, kept until
SIGINT or SIGTERM, and removed."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from nornir_bench.lab._errors import LabError
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
    if hosts is not None and not 1 <= hosts <= 100_000:
        raise LabError(f"--hosts must be a whole number from 1 to 100000, got {hosts!r}")
    check_max_startups(max_startups)

    def say(text: str) -> None:
        print(text, file=out or sys.stdout, flush=True)

    with signals_interrupt():
        lab = RouterLab(plan, max_startups=max_startups)
        try:
            started = time.monotonic()
            lab.start()
            if lab.bastion is not None:
                say(f"bastion 127.0.0.1:{lab.bastion.port}: the only way in to the routers, whose "
                    f"SSH server listens on 127.0.0.1 in netns {plan.management}")
            for router in plan.routers:
                peers = ", ".join(p.name for p, _ in plan.neighbours(plan.routers.index(router)))
                say(f"{router.name:<4} 127.0.0.1:{router.port:<5}  AS {router.asn}  "
                    f"netns {router.namespace}  peers {peers or '-'}")
            if write is not None:
                files = lab.running().write_inventory(write, hosts)
                say(f"inventory written: {', '.join(os.fspath(f) for f in files)}")
            lab.wait_ready(timeout)
            say(f"lab ready: {len(plan.routers)} FRR routers ({plan.topology}) accept logins, "
                f"BGP established, in {time.monotonic() - started:.1f} s; Ctrl-C or SIGTERM "
                "removes them")
            while True:
                signal.pause()
        except Interrupted:
            pass
        finally:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C: the guard finishes
            ended = time.monotonic()
            lab.stop()
            if lab.made:  # a refusal (a name running, a port held) made nothing to remove
                say(f"lab stopped: everything removed in {time.monotonic() - ended:.1f} s")


class Interrupted(BaseException):
    """SIGINT or SIGTERM reached the lab: it stops."""


@contextmanager
def signals_interrupt() -> Iterator[None]:
    """SIGINT and SIGTERM raise :class:`Interrupted` inside: a lab command stops."""
    def interrupt(signum: int, frame: object) -> None:
        raise Interrupted

    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
