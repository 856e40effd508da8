#!/usr/bin/env python3
"""NETCONF reads on the NETCONF lab: which client the async tasks use, and what ncclient's TICK
costs (as root: the script starts a NETCONF lab of its own).

    python scripts/bench_netconf.py [--servers 5] [--hosts 50] [--reads 5] [--repeat 3]
                                    [--quick] [--record PATH]

``--hosts`` inventory hosts spread over ``--servers`` netconfd servers, each host logging in
and reading ``--reads`` times ``<get-config>`` of its interfaces (a subtree filter), 10 hosts
at once, the sides alternating:

- **ncclient as it ships** (``TICK`` 0.1 s), threads;
- **netconf_get_config** on threadpool (ncclient, ``TICK`` 0.01 s, its host key checked);
- **anetconf_get_config** on asyncio (the same calls in the run's thread pool);
- **scrapli-netconf** over asyncssh on one event loop (``AsyncNetconfDriver``), with the
  0.2 s pause after ``open()`` netconfd needs (a request it reads with the client's hello is
  never answered).

Each: the wall time of all the hosts (logins included), this process's CPU, and the median
time of one read once logged in (from the hosts' reads, the login's time taken out).
``--quick``: 2 servers, 4 hosts, 2 reads, 1 repeat.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

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

AT_ONCE = 10
INTERFACES = '<interfaces xmlns="urn:ietf:params:xml:ns:yang:ietf-interfaces"/>'
HELLO_PAUSE = 0.2


class Side:
    """One way of reading: its runs' wall times, CPU and read times."""

    def __init__(self, name: str, run: Callable[[], list[float]]) -> None:
        self.name, self.run = name, run
        self.walls: list[float] = []
        self.cpus: list[float] = []
        self.reads: list[float] = []

    def __call__(self) -> None:
        with harness.Stopwatch() as took:
            reads = self.run()
        self.walls.append(took.wall)
        self.cpus.append(took.cpu)
        self.reads.extend(reads)


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
    took = []
    with lab.nornir(runner, num_workers=AT_ONCE) as nr:
        for read in range(reads + 1):
            began = time.perf_counter()
            result = nr.run(task=task, filter=INTERFACES)
            if result.failed:
                raise SystemExit(f"bench_netconf: {task.__name__} failed: "
                                 f"{next(iter(result.failed_hosts.values()))[0].exception}")
            if read:  # per host: the run's time over the hosts at once
                took += [(time.perf_counter() - began) * min(AT_ONCE, len(result))
                         / len(result)] * len(result)
    return took


def scrapli_async(lab: RunningNetconfLab, ports: list[int], reads: int) -> list[float]:
    """Each host's reads with scrapli-netconf over asyncssh, 10 at once on one loop."""
    from scrapli_netconf.driver import AsyncNetconfDriver

    async def host(port: int, places: asyncio.Semaphore) -> list[float]:
        async with places:
            driver = AsyncNetconfDriver(
                host="127.0.0.1", port=port, auth_username=lab.user, auth_password=lab.password,
                auth_strict_key=False, transport="asyncssh", timeout_ops=30)
            await driver.open()
            await asyncio.sleep(HELLO_PAUSE)
            took = []
            for _ in range(reads):
                began = time.perf_counter()
                reply = await driver.get_config("running", filter_=INTERFACES)
                if reply.failed:
                    raise SystemExit(f"bench_netconf: scrapli-netconf: {reply.result}")
                took.append(time.perf_counter() - began)
            await driver.close()
            return took

    async def hosts() -> list[list[float]]:
        places = asyncio.Semaphore(AT_ONCE)
        return await asyncio.gather(*(host(port, places) for port in ports))

    return [t for each in asyncio.run(hosts()) for t in each]


def main(bench: harness.Bench) -> None:
    args = bench.args
    servers = args.servers or (2 if bench.quick else 5)
    hosts = args.hosts or (4 if bench.quick else 50)
    reads = args.reads or (2 if bench.quick else 5)
    repeat = args.repeat or (1 if bench.quick else 3)
    with tempfile.TemporaryDirectory(prefix="bench-netconf-") as folder, \
            netconf_lab(servers) as lab:
        lab = lab.with_inventory(Path(folder), hosts)
        ports = [s.port for _, s in zip(range(hosts), _cycle(lab), strict=False)]
        sides = [
            Side("ncclient as shipped (TICK 0.1 s), threads",
                 lambda: ncclient_threads(lab, ports, reads)),
            Side("netconf_get_config, threadpool", lambda: nornir_task(lab, "threadpool", reads)),
            Side("anetconf_get_config, asyncio", lambda: nornir_task(lab, "asyncio", reads)),
            Side(f"scrapli-netconf, asyncssh (+{HELLO_PAUSE:g} s after open)",
                 lambda: scrapli_async(lab, ports, reads)),
        ]
        harness.alternate({side.name: side for side in sides}, repeat)
    print(f"{hosts} hosts on {servers} netconfd servers, {reads} <get-config> each, "
          f"{AT_ONCE} at once; medians (min-max) of {repeat}")
    table(["client", "wall s", "CPU s", "one read ms"], [
        [side.name, harness.Spread.of(side.walls).text(), harness.Spread.of(side.cpus).text(),
         f"{statistics.median(side.reads) * 1000:.1f}"]
        for side in sides
    ], bench, servers=servers, hosts=hosts, reads=reads)


def _cycle(lab: RunningNetconfLab) -> Any:
    while True:
        yield from lab.plan.servers


if __name__ == "__main__":
    harness.run_script(main, PARSER, interrupted="the NETCONF lab is removed")
