"""``nornir-bench lab --netconf N``: a NETCONF lab made, its servers printed, kept until SIGINT
or SIGTERM, and removed."""

from __future__ import annotations

import os
import signal
import sys
import time
from typing import TextIO

from nornir_bench.lab._errors import LabError
from nornir_bench.lab.netconf import NetconfLab
from nornir_bench.lab.netconf_plan import (
    DEFAULT_NETCONF_LAB_NAME,
    DEFAULT_NETCONF_PORT,
    YANG_MODULES,
    plan_netconf_lab,
)
from nornir_bench.lab.router_command import Interrupted, signals_interrupt

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
    if hosts is not None and not 1 <= hosts <= 100_000:
        raise LabError(f"--hosts must be a whole number from 1 to 100000, got {hosts!r}")

    def say(text: str) -> None:
        print(text, file=out or sys.stdout, flush=True)

    with signals_interrupt():
        lab = NetconfLab(plan)
        try:
            started = time.monotonic()
            lab.start()
            for server in plan.servers:
                say(f"{server.name:<5} 127.0.0.1:{server.port:<5}  netconfd  "
                    f"netns {server.namespace}")
            if write is not None:
                files = lab.running().write_inventory(write, hosts)
                say(f"inventory written: {', '.join(os.fspath(f) for f in files)}")
            lab.wait_ready(timeout)
            say(f"lab ready: {len(plan.servers)} NETCONF servers (candidate, confirmed commit; "
                f"{', '.join(YANG_MODULES)}) answer NETCONF over SSH, in "
                f"{time.monotonic() - started:.1f} s; Ctrl-C or SIGTERM removes them")
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
