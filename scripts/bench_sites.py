#!/usr/bin/env python3
"""Workers at each site: two sites, each in a network namespace of its own with its devices and
a Dask worker, the scheduler and the client in a third; a third site has no worker.

    python scripts/bench_sites.py [--hosts 500] [--devices 5] [--orphans 20] [--quick]
                                  [--record PATH]

As root (``ip netns``). The network, every address inside namespaces made here:

- ``NAME-c``: the Dask scheduler (``tcp://127.0.0.1:8786`` from inside it) and the client
  (``nornir-bench run``); linked to each site by a veth pair (10.91.0.0/30, 10.91.0.4/30),
  forwarding off: a site reaches the scheduler, not the other site;
- ``NAME-a``, ``NAME-b``: a site's devices (``nornir-bench rtt-server`` on 10.91.1.10 and
  10.91.2.10, ``--devices`` ports, 5 ms a reply) and one Dask worker started for the site
  (``--resources site:a=1``, no nanny: its process is the one that runs hosts). A worker
  cannot reach the other site's devices (no route): the script checks it first.

The job: ``atcp_ping`` with a probe on ``--hosts`` hosts of each site (group ``site-a``, data
``site: a``) and ``--orphans`` hosts of site ``c``, which no worker serves; runner ``dask`` at
the scheduler's address. Measured from its records: hosts ok per site (target all), hosts run
on a worker of their own site (each record names its worker, ``host:pid``; target all), and
site ``c``'s hosts failed with ``no dask worker for site 'c'`` (target all, and no other).

Everything is stopped at the end, on an error and on Ctrl-C; a guard process
(:mod:`harness.children.netns_guard`) removes the namespaces and what runs in them if this
script is killed. ``--quick``: 20 hosts a site, 4
orphans, for a test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import harness
from harness.child import child_command, child_env
from harness.jobs import nornir_bench
from harness.processes import stop

SITES = {"a": 1, "b": 2}  # site -> its subnet's third byte: 10.91.N.10 its devices
SCHEDULER_PORT = 8786
DEVICE_PORT = 7000
READY_SECONDS = 60.0
RUN_SECONDS = 600.0

PARSER = harness.parser(__doc__)
PARSER.add_argument("--hosts", type=harness.whole(), default=500, help="hosts a site (default 500)")
PARSER.add_argument("--devices", type=harness.whole(), default=5, help="devices a site (default 5)")
PARSER.add_argument("--orphans", type=harness.whole(), default=20,
                    help="hosts of site c (default 20)")


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


def in_namespace(name: str, *command: str) -> list[str]:
    return ["ip", "netns", "exec", name, *command]


def remove_stale() -> None:
    """Namespaces left by a run of this script killed with its guard (a SIGKILL of both)."""
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    for line in listed.splitlines():
        name = line.split()[0] if line.split() else ""
        parts = name.split("-")
        if len(parts) == 3 and parts[0] == "nbsite" and parts[1].isdigit():
            try:
                os.kill(int(parts[1]), 0)
            except ProcessLookupError:
                subprocess.run(["ip", "netns", "del", name], capture_output=True)


@contextmanager
def network() -> Iterator[dict[str, str]]:
    """The three namespaces, linked; their names by role (``a``, ``b``, ``c``)."""
    remove_stale()
    names = {role: f"nbsite-{os.getpid()}-{role}" for role in ("c", *SITES)}
    guard = subprocess.Popen(
        child_command("harness.children.netns_guard", *names.values()), env=child_env(),
        stdin=subprocess.PIPE, start_new_session=True,
    )
    try:
        for name in names.values():
            ip("netns", "add", name)
            ip("-n", name, "link", "set", "lo", "up")
        ip("netns", "exec", names["c"], "sysctl", "-qw", "net.ipv4.ip_forward=0")
        for site, third in SITES.items():
            base = 4 * (third - 1)
            ip("link", "add", f"to-{site}", "netns", names["c"], "type", "veth",
               "peer", "name", "to-c", "netns", names[site])
            ip("-n", names["c"], "addr", "add", f"10.91.0.{base + 1}/30", "dev", f"to-{site}")
            ip("-n", names["c"], "link", "set", f"to-{site}", "up")
            ip("-n", names[site], "addr", "add", f"10.91.0.{base + 2}/30", "dev", "to-c")
            ip("-n", names[site], "link", "set", "to-c", "up")
            ip("-n", names[site], "addr", "add", f"10.91.{third}.10/32", "dev", "lo")
        yield names
    finally:
        assert guard.stdin is not None
        guard.stdin.close()  # the guard empties and removes the namespaces
        guard.wait(60)


def started(stack: ExitStack, command: list[str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                   env=child_env(), start_new_session=True)
    stack.callback(stop, process, 20.0)
    return process


def wait_for(what: str, ready: Callable[[], bool]) -> None:
    ends = time.monotonic() + READY_SECONDS
    while not ready():
        if time.monotonic() > ends:
            raise SystemExit(f"bench_sites: {what} not ready within {READY_SECONDS:g} s")
        time.sleep(0.1)


def probe_in(name: str, spec: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    """:mod:`harness.children.site_probe` run inside the namespace ``name``."""
    return subprocess.run(
        in_namespace(name, *child_command("harness.children.site_probe", json.dumps(spec))),
        capture_output=True, text=True, timeout=READY_SECONDS, env=child_env())


def reaches(name: str, address: str, port: int) -> bool:
    return probe_in(name, {"reach": [address, port]}).returncode == 0


def workers_at(name: str) -> dict[str, list[str]]:
    """The scheduler's workers (by address) and the sites each serves, asked from ``name``."""
    done = probe_in(name, {"workers": f"tcp://127.0.0.1:{SCHEDULER_PORT}"})
    found: dict[str, list[str]] = json.loads(done.stdout) if done.returncode == 0 else {}
    return found


def write_job(folder: Path, hosts: int, devices: int, orphans: int) -> Path:
    inventory: dict[str, dict[str, object]] = {}
    for site, third in {**SITES, "c": 3}.items():
        for n in range(orphans if site == "c" else hosts):
            inventory[f"{site}-{n}"] = {
                "hostname": f"10.91.{third}.10", "port": DEVICE_PORT + n % devices,
                "groups": [f"site-{site}"],
            }
    (folder / "hosts.yaml").write_text(json.dumps(inventory))
    (folder / "groups.yaml").write_text(json.dumps(
        {f"site-{site}": {"data": {"site": site}} for site in (*SITES, "c")}))
    job = folder / "job.yaml"
    job.write_text(json.dumps({
        "inventory": {"plugin": "SimpleInventory", "options": {
            "host_file": str(folder / "hosts.yaml"), "group_file": str(folder / "groups.yaml")}},
        "runner": {"plugin": "dask", "options": {
            "address": f"tcp://127.0.0.1:{SCHEDULER_PORT}", "num_workers": 200,
            "connect_timeout": 30}},
        "task": {"name": "atcp_ping", "params": {"probe": "ping", "timeout": 10}},
    }))
    return job


def main(bench: harness.Bench) -> int:
    args = bench.args
    if args.quick:
        args.hosts, args.orphans = 20, 4
    if os.geteuid() != 0:
        print("bench_sites: needs root (ip netns)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="nornir-bench-sites-") as tmp, network() as names, \
            ExitStack() as stack:
        folder = Path(tmp)
        os.chmod(folder, 0o755)
        started(stack, in_namespace(
            names["c"], sys.executable, "-m", "distributed.cli.dask_scheduler", "--host",
            "0.0.0.0", "--port", str(SCHEDULER_PORT), "--no-dashboard",
        ), folder / "scheduler.log")
        pids: dict[int, str] = {}
        for site, third in SITES.items():
            base = 4 * (third - 1)
            started(stack, in_namespace(
                names[site], *nornir_bench("rtt-server", "--address"),
                f"10.91.{third}.10", "--any-address", "--port", str(DEVICE_PORT), "--ports",
                str(args.devices), "--delay", "0.005",
            ), folder / f"devices-{site}.log")
            worker = started(stack, in_namespace(
                names[site], sys.executable, "-m", "distributed.cli.dask_worker",
                f"tcp://10.91.0.{base + 1}:{SCHEDULER_PORT}", "--host", f"10.91.0.{base + 2}",
                "--resources", f"site:{site}=1", "--no-nanny", "--nthreads", "1",
                "--no-dashboard", "--local-directory", str(folder), "--death-timeout", "30",
            ), folder / f"worker-{site}.log")
            pids[worker.pid] = site  # ip netns exec runs the worker in its own process
        wait_for("the workers", lambda: len(workers_at(names["c"])) == len(SITES))
        for site, third in SITES.items():
            wait_for(f"site {site}'s devices",
                     partial(reaches, names[site], f"10.91.{third}.10", DEVICE_PORT))
        crossing = [f"{site} -> {other}" for site in SITES for other, third in SITES.items()
                    if other != site and reaches(names[site], f"10.91.{third}.10", DEVICE_PORT)]
        if crossing:
            print(f"bench_sites: a site reaches another's devices: {crossing}", file=sys.stderr)
            return 1
        job = write_job(folder, args.hosts, args.devices, args.orphans)
        records = folder / "records.jsonl"
        began = time.perf_counter()
        done = subprocess.run(
            in_namespace(names["c"], *nornir_bench("run", str(job), "--quiet", "--output",
                                                   str(records))),
            capture_output=True, text=True, timeout=RUN_SECONDS,
        )
        seconds = time.perf_counter() - began
        if not records.exists():
            print(done.stdout[-2000:] + done.stderr[-2000:], file=sys.stderr)
            return 1
        report(bench, records, pids, args, seconds, done.returncode)
    return 0


def report(bench: harness.Bench, records: Path, pids: dict[int, str], args: Any,
           seconds: float, status: int) -> None:
    ok: Counter[str] = Counter()
    at_home: Counter[str] = Counter()
    orphaned = other = 0
    for line in records.read_text().splitlines():
        record = json.loads(line)
        if "host" not in record:
            continue
        site = record["host"].split("-")[0]
        worker = record.get("worker") or ""
        if site == "c":
            named = (record.get("exception") == "NoWorkerForSite"
                     and record.get("message") == "no dask worker for site 'c'")
            orphaned += named
            other += not named
            continue
        ok[site] += not record.get("failed")
        at_home[site] += pids.get(int(worker.rsplit(":", 1)[-1] or 0), "") == site
    print(f"\n### Workers at each site: {args.hosts} hosts at each of sites a and b, "
          f"{args.orphans} at site c (no worker), 2 cores\n")
    print("| site | hosts ok (target all) | on a worker of its site (target all) | run |")
    print("|---|---|---|---|")
    for site in SITES:
        print(f"| {site} | {ok[site]}/{args.hosts} | {at_home[site]}/{args.hosts} | "
              f"{seconds:.2f} s, exit {status} |")
    print(f"| c | failed naming the site: {orphaned}/{args.orphans} | other failures: {other} "
          "| - |")
    bench.record({"ok": dict(ok), "at_home": dict(at_home), "orphans_named": orphaned,
                  "other_failures": other, "seconds": seconds, "status": status},
                 hosts=args.hosts, devices=args.devices, orphans=args.orphans)


if __name__ == "__main__":
    harness.run_script(main, PARSER, interrupted="the namespaces and everything this script "
                       "started are removed")
