#!/usr/bin/env python3
"""Real sockets against simulated waits: 10,000 hosts on the emulated-RTT server, asyncio runner.

    python scripts/bench_devices.py [--hosts 10000] [--delay 0.05] [--repeat 5]
                                    [--port 7000] [--ports 16]

In one invocation, with the RTT server (``nornir-bench rtt-server``) in a process of its own:

- **real**: ``nr.run(task=atcp_ping, probe="ping")`` on N synthetic hosts, all in flight
  (asyncio runner, ``num_workers=N``): N TCP connections, each sending one line and waiting
  for the server to echo it ``--delay`` seconds later;
- **simulated**: ``nr.run(task=asim_rtt, rtt=DELAY)`` on the same hosts, same runner settings;
- **sockets**: the same N connections and lines from bare asyncio (no nornir), the floor the
  real run cannot go below on this machine.

Each kind runs in a worker process of its own (so its peak RSS is its own), the kinds take turns
``--repeat`` times after a warm-up, and each run phase is measured from inside the worker: wall
(``perf_counter`` around the run), CPU (``getrusage`` user + sys), hosts ok / failed, plus the
server's CPU over the same run (from /proc). Prints a markdown table of medians and the ratio
real / simulated (the target: <= 4 at 10,000 hosts and 50 ms).

The server listens on ``--ports`` consecutive ports and the hosts are spread over them: 10,000
emulated devices on one address:port would make each run's connections share one destination,
and the TIME_WAIT entries each run leaves (60 s on Linux) then make the kernel search long for a
free local port in the next run; real devices are 10,000 different destinations.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from nornir import InitNornir

from nornir_bench.core.library_warnings import quiet_library_deprecations
from nornir_bench.lab import raise_open_file_limit
from nornir_bench.tasks import asim_rtt, atcp_ping

KINDS = ("real", "simulated", "sockets")
WARM_UP_HOSTS = 1000


def build(hosts: int, port: int, ports: int) -> Any:
    nr = InitNornir(
        inventory={
            "plugin": "synthetic",
            "options": {"hosts": hosts, "hostname": "127.0.0.1", "port": port},
        },
        runner={"plugin": "asyncio", "options": {"num_workers": hosts}},
        logging={"enabled": False},
    )
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

        loop = uvloop.new_event_loop()
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


def run_once(kind: str, nr: Any, hosts: int, delay: float, port: int, ports: int) -> dict[str, Any]:
    before = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    replies: list[float] = []
    if kind == "sockets":
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


def worker(kind: str, hosts: int, delay: float, port: int, ports: int) -> None:
    """--worker KIND: warm up, say "ready", then one measured run per line read on stdin."""
    raise_open_file_limit()
    nr = None if kind == "sockets" else build(hosts, port, ports)
    warm = None if nr is None else nr.filter(filter_func=lambda h: int(h.name[3:]) < WARM_UP_HOSTS)
    run_once(kind, warm, min(hosts, WARM_UP_HOSTS), delay, port, ports)
    print("ready", flush=True)
    for _ in sys.stdin:
        print(json.dumps(run_once(kind, nr, hosts, delay, port, ports)), flush=True)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux /proc)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def listen_overflows() -> int | None:
    """The kernel's count of connections dropped because a listen queue was full."""
    try:
        lines = Path("/proc/net/netstat").read_text().splitlines()
    except OSError:
        return None
    for names, values in zip(lines[::2], lines[1::2], strict=False):
        if names.startswith("TcpExt:"):
            table = dict(zip(names.split(), values.split(), strict=True))
            return int(table.get("ListenOverflows", 0))
    return None


def spread(samples: list[float], fmt: str = "{:.3f}") -> str:
    low, middle, high = (
        fmt.format(x) for x in (min(samples), statistics.median(samples), max(samples))
    )
    return f"{middle} ({low}–{high})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument(
        "--delay", type=float, default=0.05, help="the server's reply delay = the simulated RTT"
    )
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--port", type=int, default=7000, help="the RTT server's first port")
    parser.add_argument(
        "--ports", type=int, default=16, help="how many ports the server listens on"
    )
    parser.add_argument("--worker", choices=KINDS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.hosts, args.delay, args.port, args.ports)
        return

    common = [
        "--hosts",
        str(args.hosts),
        "--delay",
        str(args.delay),
        "--port",
        str(args.port),
        "--ports",
        str(args.ports),
    ]
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "nornir_bench",
            "rtt-server",
            "--port",
            str(args.port),
            "--ports",
            str(args.ports),
            "--delay",
            str(args.delay),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    workers: dict[str, subprocess.Popen[str]] = {}
    try:
        ready = server.stdout.readline() if server.stdout else ""
        if not ready.startswith("rtt server ready:"):
            raise SystemExit(f"the RTT server did not start: {ready!r}")
        for kind in KINDS:
            workers[kind] = subprocess.Popen(
                [sys.executable, __file__, "--worker", kind, *common],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
        for kind, proc in workers.items():
            assert proc.stdout is not None
            if proc.stdout.readline().strip() != "ready":
                raise SystemExit(f"the {kind} worker did not start")
        records: dict[str, list[dict[str, Any]]] = {kind: [] for kind in KINDS}
        overflows_before = listen_overflows()
        for _ in range(args.repeat):
            for kind in ("simulated", "real", "sockets"):
                proc = workers[kind]
                assert proc.stdin is not None and proc.stdout is not None
                server_cpu = cpu_seconds(server.pid)
                proc.stdin.write("run\n")
                proc.stdin.flush()
                record = json.loads(proc.stdout.readline())
                record["server_cpu"] = cpu_seconds(server.pid) - server_cpu
                records[kind].append(record)
        overflows_after = listen_overflows()
    finally:
        for proc in workers.values():
            if proc.stdin:
                proc.stdin.close()
            proc.wait(30)
        server.send_signal(2)
        server.communicate(timeout=30)

    print(
        f"## {args.hosts} hosts, delay {args.delay * 1000:g} ms, "
        f"asyncio runner (num_workers={args.hosts}), "
        f"median of {args.repeat} (min–max)\n"
    )
    print(
        "| run | hosts ok / failed | wall (s) | client CPU (s, user+sys) "
        "| client peak RSS (MiB) | server CPU (s) |"
    )
    print("|---|---|---|---|---|---|")
    labels = {
        "real": 'real: `atcp_ping(probe="ping")`',
        "simulated": f"simulated: `asim_rtt(rtt={args.delay:g})`",
        "sockets": "bare asyncio sockets (no nornir)",
    }
    for kind in ("real", "simulated", "sockets"):
        rows = records[kind]
        ok = min(r["ok"] for r in rows)
        failed = max(r["failed"] for r in rows)
        print(
            f"| {labels[kind]} | {ok} / {failed} | {spread([r['wall'] for r in rows])} | "
            f"{spread([r['user'] + r['sys'] for r in rows], '{:.2f}')} | "
            f"{max(r['rss_peak_kib'] for r in rows) / 1024:.0f} | "
            f"{spread([r['server_cpu'] for r in rows], '{:.2f}')} |"
        )
    real = statistics.median(r["wall"] for r in records["real"])
    simulated = statistics.median(r["wall"] for r in records["simulated"])
    floor = statistics.median(r["wall"] for r in records["sockets"])
    replies = [r["reply_median"] for r in records["real"] if "reply_median" in r]
    print()
    print(
        f"real / simulated: {real / simulated:.2f} (target <= 4); "
        f"real / bare sockets: {real / floor:.2f}"
    )
    if replies:
        print(
            "reply time per host (median of the runs' medians): "
            f"{statistics.median(replies) * 1000:.1f} ms"
        )
    if overflows_before is not None and overflows_after is not None:
        print(f"listen-queue overflows during the runs: {overflows_after - overflows_before}")
    print(f"CPUs: {os.cpu_count()}, open-file limit raised to {raise_open_file_limit()}")


if __name__ == "__main__":
    quiet_library_deprecations()
    main()
