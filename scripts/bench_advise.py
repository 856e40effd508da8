#!/usr/bin/env python3
"""``nornir-bench advise --check``: predicted against measured, job by job, repeat by repeat.

    python scripts/bench_advise.py [--jobs NAME ...] [--repeat 5] [--sample N] [--quick]
                                   [--lab NAME] [--no-pin] [--record PATH]

Each job is advised ``--repeat`` times (``--seed`` 1, 2 ...), each time in a process of its own
(``python -m nornir_bench advise JOB --check``, default options apart from what the job
needs), and its ``check:`` line read: the recommendation run on 2,000 of the job's hosts (all,
if fewer), its predicted wall (median, 5th-95th percentile of the simulated runs) against the
measured one. Per job: each repeat's figures, how far the median prediction was off, and how
many measured walls fell inside the predicted range, beside the issue's targets.

The jobs (``--jobs``, default all):

- ``synthetic-50``, ``synthetic-300``: ``asim_rtt`` with 50 ms ± 10 ms and 300 ms ± 100 ms on
  10,000 synthetic hosts (no network);
- ``rtt-50``, ``rtt-300``: ``atcp_ping`` against the emulated-RTT server (``nornir-bench
  rtt-server``, started here on 16 free loopback ports, 50 ms and 300 ms a reply), 10,000
  real sockets;
- ``routers``: ``send_command show version`` (netmiko) on 10 FRR routers x 50 hosts each,
  behind OpenSSH as it ships (its ``MaxStartups`` throttling logins), the lab started here
  (root; ``apt-get install -y frr openssh-server``) and stopped at the end, or the running
  lab ``--lab NAME`` (50 hosts a router);
- ``routers-3-steps``: three ``asend_command`` steps (scrapli) on the same routers.

The RTT server runs on the machine's second CPU and ``advise`` on its first (CPU affinity,
as ``taskset -c`` sets it), so that the devices do not share the client's cores, as on a
real network; ``advise`` then sees one CPU for itself. ``--no-pin`` runs both on every CPU.

``--quick``: 1 repeat, 500 hosts for the synthetic and RTT jobs, a sample of 30, the job
``synthetic-50`` (``--jobs`` others), only the job's own runner predicted: a smoke run.
Everything this script starts, it stops, on an error and on Ctrl-C too. Nothing leaves
127.0.0.1.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import harness
from harness.jobs import nornir_bench, write_job
from harness.lab import add_lab_option, router_lab
from harness.processes import on_cpus
from harness.servers import rtt_server
from nornir_bench.lab.ports import free_port_range

TARGETS = {  # job -> the most the median prediction may be off, as the issue sets it
    "synthetic-50": 0.10,
    "synthetic-300": 0.10,
    "rtt-50": 0.15,
    "rtt-300": 0.15,
    "routers": 0.20,
    "routers-3-steps": 0.20,
}
RTT_PORTS = 16
PINNED: dict[str, set[int]] = {}  # "client", "server" -> the CPUs each runs on, when pinned
ROUTERS, HOSTS_PER_ROUTER = 10, 50
ADVISE_TIMEOUT = 900.0  # seconds, at most, for one advise process
CHECK = re.compile(
    r"check: (?P<runner>\S+), num_workers (?P<workers>\d+) on (?P<hosts>[\d,]+) hosts?: "
    r"predicted (?P<p50>[\d.,]+) s \((?P<p5>[\d.,]+)-(?P<p95>[\d.,]+) s\), measured "
    r"(?P<measured>[\d.,]+) s"
)


PARSER = harness.parser(__doc__)
PARSER.add_argument("--jobs", nargs="+", choices=list(TARGETS))
PARSER.add_argument("--repeat", type=harness.whole(), default=5)
PARSER.add_argument("--sample", type=harness.whole(), default=None, help="advise's --sample")
PARSER.add_argument("--runners", metavar="NAME,...", help="advise's --runners (default "
                    "advise's; quick: the job's runner)")
PARSER.add_argument("--no-pin", dest="pin", action="store_false",
                    help="the RTT server and advise on every CPU, not one each")
add_lab_option(PARSER)


def main(bench: harness.Bench) -> int:
    args = bench.args
    jobs = args.jobs or (["synthetic-50"] if args.quick else list(TARGETS))
    sample = args.sample or (30 if args.quick else None)
    if args.pin and len(os.sched_getaffinity(0)) < 2:
        print("# one CPU: the RTT server and advise share it (not pinned)")
        args.pin = False
    if args.pin:
        cpus = os.sched_getaffinity(0)
        PINNED.update(client={min(cpus)}, server={max(cpus)})
        print(f"# advise on CPU {min(cpus)}, the RTT server on CPU {max(cpus)}")
    repeat = 1 if args.quick else args.repeat
    hosts = 500 if args.quick else 10_000
    print(f"# advise --check, {repeat} repeats a job, {_cores()} cores\n")
    with tempfile.TemporaryDirectory(prefix="bench-advise-") as temp:
        folder = Path(temp)
        for name in jobs:
            with _job(name, folder, hosts, args.lab) as job:
                runners = args.runners or (
                    ("threadpool" if name == "routers" else "asyncio") if args.quick else None)
                _advise_job(bench, name, job, repeat, sample, runners)
    return 0


def _advise_job(bench: harness.Bench, name: str, job: Path, repeat: int,
                sample: int | None, runners: str | None) -> None:
    print(f"\n## {name}\n")
    print("| seed | sample s | recommended | predicted s (p5-p95) | measured s | off | inside |")
    print("|---:|---:|---|---|---:|---:|---|")
    offs, inside = [], 0
    for seed in range(1, repeat + 1):
        command = nornir_bench("advise", str(job), "--check", "--seed", str(seed),
                               *(["--sample", str(sample)] if sample else []),
                               *(["--runners", runners] if runners else []))
        began = time.perf_counter()
        pin = PINNED.get("client") if name.startswith("rtt") else None
        done = subprocess.run(command, capture_output=True, text=True, timeout=ADVISE_TIMEOUT,
                              check=False, preexec_fn=on_cpus(pin))
        took = time.perf_counter() - began
        found = CHECK.search(done.stdout)
        if done.returncode or not found:
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            print(f"| {seed} | | advise failed (exit {done.returncode}): {' / '.join(tail)} "
                  "| | | | |")
            continue
        figure = {key: _number(value) for key, value in found.groupdict().items()
                  if key not in ("runner",)}
        off = (figure["p50"] - figure["measured"]) / figure["measured"]
        offs.append(off)
        within = figure["p5"] <= figure["measured"] <= figure["p95"]
        inside += within
        said = _said(done.stdout)
        print(f"| {seed} | {said.get('sample', '?')} (advise {took:.0f} s) | "
              f"{found['runner']}, {int(figure['workers']):,} on {int(figure['hosts']):,} | "
              f"{figure['p50']:.3f} ({figure['p5']:.3f}-{figure['p95']:.3f}) | "
              f"{figure['measured']:.3f} | {100 * off:+.0f} % | {'yes' if within else 'no'} |")
        for line in said.get("warnings", []):
            print(f"|  | | warning: {line} | | | | |")
        bench.record({"sample_s": said.get("sample"), "took": took, **figure}, job=name,
                     seed=seed, runner=found["runner"])
    if offs:
        worst = max(abs(off) for off in offs)
        target = TARGETS[name]
        print(f"\nmedian off {100 * harness.Spread.of(offs).median:+.0f} %, worst "
              f"{100 * worst:.0f} % "
              f"(target {100 * target:.0f} %: {'met' if worst <= target else 'MISSED'}); "
              f"inside the range {inside} of {len(offs)} (target 4 of 5)")


def _said(out: str) -> dict[str, Any]:
    said: dict[str, Any] = {"warnings": []}
    for line in out.splitlines():
        if line.startswith("sample: "):
            said["sample"] = line.rsplit(" in ", 1)[-1].removesuffix(" s")
        elif line.startswith("warning: ") and "as written" not in line:
            said["warnings"].append(line.removeprefix("warning: "))
    return said


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def _cores() -> int:
    return os.cpu_count() or 1


# -- the jobs, and what they need running ------------------------------------------------------


def _job(name: str, folder: Path, hosts: int, lab: str | None) -> AbstractContextManager[Path]:
    makers: dict[str, Callable[[str, Path, int, str | None], AbstractContextManager[Path]]] = {
        "synthetic": _synthetic, "rtt": _rtt, "routers": _routers,
    }
    return makers[name.split("-")[0]](name, folder, hosts, lab)


@contextmanager
def _synthetic(name: str, folder: Path, hosts: int, lab: str | None) -> Iterator[Path]:
    rtt, jitter = (0.05, 0.01) if name.endswith("-50") else (0.3, 0.1)
    yield write_job(folder / f"{name}.yaml", synthetic={"hosts": hosts}, runner="asyncio",
                    options={"num_workers": hosts}, task="asim_rtt",
                    params={"rtt": rtt, "jitter": jitter})


@contextmanager
def _rtt(name: str, folder: Path, hosts: int, lab: str | None) -> Iterator[Path]:
    delay = 0.05 if name.endswith("-50") else 0.3
    base = free_port_range(RTT_PORTS)
    inventory = folder / f"{name}-inventory"
    inventory.mkdir()
    (inventory / "hosts.yaml").write_text(json.dumps({
        f"h{index:05d}": {"hostname": "127.0.0.1", "port": base + index % RTT_PORTS}
        for index in range(hosts)
    }))
    with rtt_server(base, RTT_PORTS, delay, cpus=PINNED.get("server")):
        yield write_job(folder / f"{name}.yaml", inventory=inventory, runner="asyncio",
                        options={"num_workers": hosts, "task_timeout": 30}, task="atcp_ping",
                        params={"probe": "ping"})


@contextmanager
def _routers(name: str, folder: Path, hosts: int, attach: str | None) -> Iterator[Path]:
    with router_lab(ROUTERS, attach=attach, prefix="ba") as lab:
        inventory = lab.write_inventory(folder / "routers", len(lab.ports) * HOSTS_PER_ROUTER)
        path = folder / f"{name}.yaml"
        if name == "routers":
            yield write_job(path, inventory=inventory, runner="threadpool",
                            options={"num_workers": 20}, task="send_command",
                            params={"command": "show version"})
        else:
            yield write_job(path, inventory=inventory, runner="asyncio",
                            options={"num_workers": 100},
                            steps=[{"name": "asend_command", "params": {"command": command}}
                                   for command in ("show version", "show ip route",
                                                   "show interface")])


if __name__ == "__main__":
    harness.run_script(main, PARSER)
