#!/usr/bin/env python3
"""NETCONF reads and changes on the NETCONF lab: which client the async tasks use, and what
ncclient's TICK costs (as root: the script starts a NETCONF lab of its own).

    python scripts/bench_netconf.py [--servers 5] [--hosts 50] [--reads 5] [--repeat 3]
                                    [--change [--rounds 5]] [--quick] [--record PATH]

``--hosts`` inventory hosts spread over ``--servers`` netconfd servers, each host logging in
and reading ``--reads`` times ``<get-config>`` of its interfaces (a subtree filter), 10 hosts
at once, the sides alternating:

- **ncclient as it ships** (``TICK`` 0.1 s), threads;
- **netconf_get_config** on threadpool (ncclient, ``TICK`` 0.01 s, its host key checked);
- **anetconf_get_config** on asyncio (the same calls in the run's thread pool);
- **scrapli-netconf** over asyncssh on one event loop (``AsyncNetconfDriver``), with the
  0.2 s pause after ``open()`` netconfd needs (a request it reads with the client's hello is
  never answered).

``--change``: a change instead of reads, one host a server (``--hosts`` is not taken), each
making ``--rounds`` changes of eth1's description in a row, plain and confirmed, by ncclient
in threads, ``netconf_edit_config``, ``anetconf_edit_config`` and scrapli-netconf
(netconf_bench/changes.py says which RPCs).

Each: the wall time of all the hosts (logins included), this process's CPU, and the median
time of one read (one change) once logged in (from the hosts' own, the login's time taken
out). ``--quick``: 2 servers, 4 hosts, 2 reads (2 rounds), 1 repeat.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from netconf_bench.changes import change_sides, idle_ticks
from netconf_bench.sides import (
    AT_ONCE,
    HELLO_PAUSE,
    Side,
    cycle,
    nornir_rounds,
    scrapli_rounds,
)

import harness
from harness.entry import quiet_warnings
from harness.tables import table
from nornir_bench.lab import RunningNetconfLab, netconf_lab

quiet_warnings()  # before asyncssh's import, which warns of cryptography's DSA

PARSER = harness.parser(__doc__)
PARSER.add_argument("--servers", type=harness.whole())
PARSER.add_argument("--hosts", type=harness.whole())
PARSER.add_argument("--reads", type=harness.whole())
PARSER.add_argument("--repeat", type=harness.whole())
PARSER.add_argument("--change", action="store_true",
                    help="a change's RPCs instead of reads, one host a server")
PARSER.add_argument("--rounds", type=harness.whole(),
                    help="--change: changes a host makes in a row (default 5; quick 2)")

INTERFACES = '<interfaces xmlns="urn:ietf:params:xml:ns:yang:ietf-interfaces"/>'


def ncclient_threads(lab: RunningNetconfLab, ports: list[int], reads: int) -> list[float]:
    """Each host's reads with ncclient as it ships (TICK 0.1 s), 10 threads."""
    from ncclient import manager
    from ncclient.transport import session

    def host(port: int) -> list[float]:
        connection = manager.connect(
            host="127.0.0.1", port=port, username=lab.user, password=lab.password,
            hostkey_verify=False, allow_agent=False, look_for_keys=False, timeout=30,
            device_params={"name": "default"})
        took = []
        for _ in range(reads):
            began = time.perf_counter()
            connection.get_config("running", filter=("subtree", INTERFACES))
            took.append(time.perf_counter() - began)
        connection.close_session()
        return took

    shipped, session.TICK = session.TICK, 0.1
    try:
        with ThreadPoolExecutor(AT_ONCE) as pool:
            return [t for each in pool.map(host, ports) for t in each]
    finally:
        session.TICK = shipped


def nornir_task(lab: RunningNetconfLab, runner: str, reads: int) -> list[float]:
    """The package's task on a runner: the first read logs in, the others are timed."""
    from nornir_bench.tasks import anetconf_get_config, netconf_get_config

    task = anetconf_get_config if runner == "asyncio" else netconf_get_config
    return nornir_rounds(lab, runner, reads, task, lambda _: {"filter": INTERFACES})


def scrapli_async(lab: RunningNetconfLab, ports: list[int], reads: int) -> list[float]:
    """Each host's reads with scrapli-netconf over asyncssh, 10 at once on one loop."""

    async def read(driver: Any, port: int) -> None:
        reply = await driver.get_config("running", filter_=INTERFACES)
        if reply.failed:
            raise SystemExit(f"bench_netconf: scrapli-netconf: {reply.result}")

    return scrapli_rounds(lab, ports, reads, 30, read)


def main(bench: harness.Bench) -> None:
    args = bench.args
    if args.change and args.hosts:
        PARSER.error("--change takes one host a server: give --servers, not --hosts")
    if args.change and args.reads or args.rounds and not args.change:
        PARSER.error("--reads counts reads, --rounds counts the changes of --change")
    servers = args.servers or (2 if bench.quick else 5)
    hosts = servers if args.change else args.hosts or (4 if bench.quick else 50)
    reads = (args.rounds if args.change else args.reads) or (2 if bench.quick else 5)
    repeat = args.repeat or (1 if bench.quick else 3)
    with tempfile.TemporaryDirectory(prefix="bench-netconf-") as folder, \
            netconf_lab(servers) as lab:
        lab = lab.with_inventory(Path(folder), hosts)
        ports = [s.port for _, s in zip(range(hosts), cycle(lab.plan.servers), strict=False)]
        sides = change_sides(lab, ports, reads) if args.change else read_sides(lab, ports, reads)
        harness.alternate({side.name: side for side in sides}, repeat, mirror=args.change)
        idle = 1.0 if bench.quick else 5.0
        shares = idle_ticks(lab, ports, idle) if args.change else {}
    what = f"{reads} changes in a row" if args.change else f"{reads} <get-config>"
    print(f"{hosts} hosts on {servers} netconfd servers, {what} each, {AT_ONCE} at once; "
          f"medians (min-max) of {repeat}")
    one = "one change ms" if args.change else "one read ms"
    table(["client", "wall s", "CPU s", one], [
        [side.name, harness.Spread.of(side.walls).text(), harness.Spread.of(side.cpus).text(),
         f"{statistics.median(side.times) * 1000:.1f}"]
        for side in sides
    ], bench, servers=servers, hosts=hosts, reads=reads, change=args.change)
    if args.change:
        print(f"idle: {AT_ONCE} ncclient sessions open, {idle:g} s: "
              + ", ".join(f"TICK {tick:g} s {share:.1%} of a core"
                          for tick, share in shares.items()), flush=True)
        bench.record({f"idle_tick_{tick:g}": share for tick, share in shares.items()},
                     part="idle", sessions=AT_ONCE, seconds=idle)


def read_sides(lab: RunningNetconfLab, ports: list[int], reads: int) -> list[Side]:
    """Each client's side reading."""
    return [
        Side("ncclient as shipped (TICK 0.1 s), threads",
             lambda: ncclient_threads(lab, ports, reads)),
        Side("netconf_get_config, threadpool", lambda: nornir_task(lab, "threadpool", reads)),
        Side("anetconf_get_config, asyncio", lambda: nornir_task(lab, "asyncio", reads)),
        Side(f"scrapli-netconf, asyncssh (+{HELLO_PAUSE:g} s after open)",
             lambda: scrapli_async(lab, ports, reads)),
    ]


if __name__ == "__main__":
    harness.run_script(main, PARSER, interrupted="the NETCONF lab is removed")
