"""One kind of run against the emulated-RTT server, kept in this process between runs
(scripts/bench_devices.py): the spec ``{"kind": "real" | "simulated" | "sockets", "hosts",
"delay", "port", "ports"}``. It warms up, prints ``ready``, then makes one measured run per line
it reads, printing its figures as a JSON line: wall, user and sys CPU, hosts ok and failed, its
peak RSS, and (real runs) the replies' median and largest time."""

from __future__ import annotations

import asyncio
import json
import resource
import statistics
import sys
import time
from typing import Any

from nornir.core import Nornir

from harness.entry import quiet_warnings
from harness.fleets import synthetic
from nornir_bench.lab import raise_open_file_limit
from nornir_bench.tasks import asim_rtt, atcp_ping

WARM_UP_HOSTS = 1000


def build(hosts: int, port: int, ports: int) -> Nornir:
    nr = synthetic("asyncio", hosts, inventory={"hostname": "127.0.0.1", "port": port},
                   num_workers=hosts)
    for i, host in enumerate(nr.inventory.hosts.values()):
        host.port = port + i % ports
    return nr


class _Exchange(asyncio.Protocol):
    """The floor: connect, send one line, wait for one line, close; nothing else."""

    def __init__(self, done: asyncio.Future[None]) -> None:
        self.done = done

    def connection_made(self, transport: Any) -> None:
        transport.write(b"ping\n")

    def data_received(self, data: bytes) -> None:
        if not self.done.done():
            self.done.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_result(None)


def sockets_floor(hosts: int, port: int, ports: int) -> tuple[int, int]:
    """N bare exchanges on a new loop (uvloop when installed, as the runner's "auto")."""
    try:
        import uvloop

        loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
    except ImportError:
        loop = asyncio.new_event_loop()

    async def one(i: int) -> None:
        done = loop.create_future()
        transport, _ = await loop.create_connection(
            lambda: _Exchange(done), "127.0.0.1", port + i % ports
        )
        try:
            await done
        finally:
            transport.close()

    async def main() -> list[Any]:
        return await asyncio.gather(*(one(i) for i in range(hosts)), return_exceptions=True)

    try:
        outcomes = loop.run_until_complete(main())
    finally:
        loop.close()
    failed = sum(isinstance(o, BaseException) for o in outcomes)
    return hosts - failed, failed


def run_once(kind: str, nr: Nornir | None, hosts: int, delay: float, port: int,
             ports: int) -> dict[str, Any]:
    before = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    replies: list[float] = []
    if kind == "sockets" or nr is None:
        ok, failed = sockets_floor(hosts, port, ports)
        wall = time.perf_counter() - start
    else:
        if kind == "real":
            result = nr.run(task=atcp_ping, probe="ping", timeout=30)
        else:
            result = nr.run(task=asim_rtt, rtt=delay)
        wall = time.perf_counter() - start
        failed = len(result.failed_hosts)
        ok = len(result) - failed
        if kind == "real":
            replies = sorted(m.result["reply"] for m in result.values() if not m.failed)
    after = resource.getrusage(resource.RUSAGE_SELF)
    record: dict[str, Any] = {
        "wall": wall,
        "user": after.ru_utime - before.ru_utime,
        "sys": after.ru_stime - before.ru_stime,
        "ok": ok,
        "failed": failed,
        "rss_peak_kib": after.ru_maxrss,
    }
    if replies:
        record["reply_median"] = statistics.median(replies)
        record["reply_max"] = replies[-1]
    return record


def serve(spec: dict[str, Any]) -> None:
    """Warm up, say ``ready``, then one measured run per line read on stdin."""
    kind, hosts, delay = spec["kind"], spec["hosts"], spec["delay"]
    port, ports = spec["port"], spec["ports"]
    raise_open_file_limit()
    nr = None if kind == "sockets" else build(hosts, port, ports)
    warm = None if nr is None else nr.filter(filter_func=lambda h: int(h.name[3:]) < WARM_UP_HOSTS)
    run_once(kind, warm, min(hosts, WARM_UP_HOSTS), delay, port, ports)
    print("ready", flush=True)
    for _ in sys.stdin:
        print(json.dumps(run_once(kind, nr, hosts, delay, port, ports)), flush=True)


if __name__ == "__main__":
    quiet_warnings()
    serve(json.loads(sys.argv[1]))
