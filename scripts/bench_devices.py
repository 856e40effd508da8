#!/usr/bin/env python3
"""Real sockets against simulated waits: 10,000 hosts on the emulated-RTT server, asyncio runner.

    python scripts/bench_devices.py [--hosts 10000] [--delay 0.05] [--repeat 5]
                                    [--port PORT] [--ports 16] [--quick] [--record PATH]

In one invocation, with the RTT server (``nornir-bench rtt-server``) in a process of its own:

- **real**: ``nr.run(task=atcp_ping, probe="ping")`` on N synthetic hosts, all in flight
  (asyncio runner, ``num_workers=N``): N TCP connections, each sending one line and waiting
  for the server to echo it ``--delay`` seconds later;
- **simulated**: ``nr.run(task=asim_rtt, rtt=DELAY)`` on the same hosts, same runner settings;
- **sockets**: the same N connections and lines from bare asyncio (no nornir), the floor the
  real run cannot go below on this machine.

Each kind runs in a worker process of its own (:mod:`harness.children.device_worker`, so its
peak RSS is its own), the kinds take turns
``--repeat`` times after a warm-up, and each run phase is measured from inside the worker: wall
(``perf_counter`` around the run), CPU (``getrusage`` user + sys), hosts ok / failed, plus the
server's CPU over the same run (from /proc). Prints a markdown table of medians and the ratio
real / simulated (the target: <= 4 at 10,000 hosts and 50 ms).

The server listens on ``--ports`` consecutive ports and the hosts are spread over them: 10,000
emulated devices on one address:port would make each run's connections share one destination,
and the TIME_WAIT entries each run leaves (60 s on Linux) then make the kernel search long for a
free local port in the next run; real devices are 10,000 different destinations. Without
``--port``, the server takes a free range of loopback ports. ``--quick``: 200 hosts, 10 ms, 1
repeat, 4 ports.
"""

from __future__ import annotations

import json
import os
from contextlib import ExitStack
from functools import partial
from pathlib import Path
from typing import Any

import harness
from harness.child import child_command, child_env
from harness.processes import Started, started
from harness.servers import rtt_server
from harness.timing import cpu_seconds
from nornir_bench.lab import raise_open_file_limit
from nornir_bench.lab.ports import free_port_range

KINDS = ("real", "simulated", "sockets")
RUN_SECONDS = 600.0

PARSER = harness.parser(__doc__)
PARSER.add_argument("--hosts", type=harness.whole())
PARSER.add_argument("--delay", type=harness.number(),
                    help="the server's reply delay = the simulated RTT")
PARSER.add_argument("--repeat", type=harness.whole())
PARSER.add_argument("--port", type=harness.whole(),
                    help="the RTT server's first port (default: free ones)")
PARSER.add_argument("--ports", type=harness.whole(),
                    help="how many ports the server listens on (16)")


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


def spread(samples: list[float], digits: int = 3) -> str:
    values = harness.Spread.of(samples)
    return f"{values.median:.{digits}f} ({values.low:.{digits}f}–{values.high:.{digits}f})"


def main(bench: harness.Bench) -> None:
    args, quick = bench.args, bench.quick
    hosts = args.hosts or (200 if quick else 10_000)
    delay = args.delay or (0.01 if quick else 0.05)
    repeat = args.repeat or (1 if quick else 5)
    ports = args.ports or (4 if quick else 16)
    port = args.port or free_port_range(ports)
    with ExitStack() as stack:
        server = stack.enter_context(rtt_server(port, ports, delay))
        workers: dict[str, Started] = {}
        for kind in KINDS:
            spec = {"kind": kind, "hosts": hosts, "delay": delay, "port": port, "ports": ports}
            workers[kind] = stack.enter_context(started(
                child_command("harness.children.device_worker", json.dumps(spec)),
                env=child_env(), stdin=True, ready=lambda line: line == "ready",
                timeout=RUN_SECONDS))

        def one(kind: str) -> dict[str, Any]:
            server_cpu = cpu_seconds(server.pid)
            record: dict[str, Any] = json.loads(workers[kind].ask("run", RUN_SECONDS))
            record["server_cpu"] = cpu_seconds(server.pid) - server_cpu
            return record

        overflows_before = listen_overflows()
        records = harness.alternate({kind: partial(one, kind)
                                     for kind in ("simulated", "real", "sockets")}, repeat)
        overflows_after = listen_overflows()

    print(
        f"## {hosts} hosts, delay {delay * 1000:g} ms, "
        f"asyncio runner (num_workers={hosts}), "
        f"median of {repeat} (min–max)\n"
    )
    print(
        "| run | hosts ok / failed | wall (s) | client CPU (s, user+sys) "
        "| client peak RSS (MiB) | server CPU (s) |"
    )
    print("|---|---|---|---|---|---|")
    labels = {
        "real": 'real: `atcp_ping(probe="ping")`',
        "simulated": f"simulated: `asim_rtt(rtt={delay:g})`",
        "sockets": "bare asyncio sockets (no nornir)",
    }
    for kind in ("real", "simulated", "sockets"):
        rows = records[kind]
        ok = min(r["ok"] for r in rows)
        failed = max(r["failed"] for r in rows)
        print(
            f"| {labels[kind]} | {ok} / {failed} | {spread([r['wall'] for r in rows])} | "
            f"{spread([r['user'] + r['sys'] for r in rows], 2)} | "
            f"{max(r['rss_peak_kib'] for r in rows) / 1024:.0f} | "
            f"{spread([r['server_cpu'] for r in rows], 2)} |"
        )
        bench.record({"runs": rows}, kind=kind, hosts=hosts, delay=delay)
    real = harness.Spread.of(r["wall"] for r in records["real"]).median
    simulated = harness.Spread.of(r["wall"] for r in records["simulated"]).median
    floor = harness.Spread.of(r["wall"] for r in records["sockets"]).median
    replies = [r["reply_median"] for r in records["real"] if "reply_median" in r]
    print()
    print(
        f"real / simulated: {real / simulated:.2f} (target <= 4); "
        f"real / bare sockets: {real / floor:.2f}"
    )
    if replies:
        print(
            "reply time per host (median of the runs' medians): "
            f"{harness.Spread.of(replies).median * 1000:.1f} ms"
        )
    if overflows_before is not None and overflows_after is not None:
        print(f"listen-queue overflows during the runs: {overflows_after - overflows_before}")
    print(f"CPUs: {os.cpu_count()}, open-file limit raised to {raise_open_file_limit()}")


if __name__ == "__main__":
    harness.run_script(main, PARSER)
