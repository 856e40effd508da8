#!/usr/bin/env python3
"""A fleet's compliance checked on real routers, against reading its configurations.

    python scripts/bench_compliance.py [--routers 10] [--hosts 1000] [--repeat 3]
                                       [--in-flight 200] [--runners asyncio threadpool]
                                       [--quick]

As root (``apt-get install -y frr openssh-server``). A lab of ``--routers`` FRR routers of its
own (bench_routers.RouterLab, stopped at the end, on an error and on Ctrl-C) and ``--hosts``
inventory hosts spread over them. On each runner, two jobs through ``nornir-bench run``, in
turn, ``--repeat`` times each, timed from outside, medians:

- **compliance**: ``asend_config`` (asyncio) or ``send_config`` (threadpool) with ``mode:
  replace``, ``scope: [ip route]`` and ``dry_run: true`` (a job's ``--check``): each host's
  intended static routes (two of its own, which the routers lack: every host drifts, so
  every host's remediation is computed);
- **show**: ``asend_command`` / ``send_command`` of ``show running-config``, the same hosts.

Target: compliance / show <= 1.2. ``--quick``: 3 routers, 30 hosts, 1 repeat, asyncio only.
"""

from __future__ import annotations

import argparse
import os
import random
import string
import tempfile
from collections import Counter
from datetime import datetime
from pathlib import Path

from bench_checks import Bench, _met, _rows
from bench_routers import RouterLab, _stop_on_sigterm, _vtysh, run_script
from faults_processes import measured_commit

TARGET = 1.2
INTENDED = """{%- set n = host.name[1:] | int %}
ip route 198.18.{{ 100 + n // 250 }}.{{ n % 250 }}/32 Null0
ip route 198.19.{{ 100 + n // 250 }}.{{ n % 250 }}/32 Null0
"""


def _compute_cost(lab: RouterLab) -> float:
    """Seconds of hier_config's work for one host's compliance (parse the running and the
    intended configuration, the target, the diff, the remediation), on r1's configuration."""
    import statistics
    import time

    from nornir_bench.tasks.config_text import config_diff, parse_config, remediation, replaced
    from nornir_bench.tasks.dialects import FRRDriver

    running = _vtysh(lab, "r1", "show running-config")
    intended = ["ip route 198.18.100.1/32 Null0", "ip route 198.19.100.1/32 Null0"]
    passes = []
    for _ in range(5):
        began = time.perf_counter()
        for _ in range(200):
            driver = FRRDriver()
            before = parse_config(running, driver)
            target = replaced(before, parse_config(intended, driver), ["ip route"])
            config_diff(before, target)
            remediation(before, target)
        passes.append((time.perf_counter() - began) / 200)
    return statistics.median(passes)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--routers", type=int, help="routers in the lab (default 10; quick 3)")
    parser.add_argument("--hosts", type=int, help="inventory hosts spread over the routers "
                        "(default 1000; quick 30)")
    parser.add_argument("--repeat", type=int, help="runs of each job (default 3; quick 1)")
    parser.add_argument("--in-flight", type=int, default=200,
                        help="hosts in flight (num_workers; default 200)")
    parser.add_argument("--runners", nargs="+", choices=("asyncio", "threadpool"),
                        help="the runners (default both; quick asyncio)")
    parser.add_argument("--quick", action="store_true", help="everything small, for a test")
    args = parser.parse_args()
    routers = args.routers or (3 if args.quick else 10)
    hosts = args.hosts or (30 if args.quick else 1000)
    repeat = args.repeat or (1 if args.quick else 3)
    runners = args.runners or ["asyncio", *([] if args.quick else ["threadpool"])]
    for name, value in (("--routers", routers), ("--hosts", hosts), ("--repeat", repeat),
                        ("--in-flight", args.in_flight)):
        if value < 1:
            parser.error(f"{name} must be at least 1, got {value}")
    if os.geteuid() != 0:
        parser.error("the router lab needs root")
    _stop_on_sigterm()
    print(f"bench_compliance: nornir_bench of commit {measured_commit()}; "
          f"{datetime.now():%Y-%m-%d}; {os.cpu_count()} CPUs; load "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    name = "bk" + "".join(random.choices(string.ascii_lowercase + string.digits, k=6))
    with tempfile.TemporaryDirectory(prefix="bench-compliance-") as folder:
        work = Path(folder)
        os.environ["XDG_STATE_HOME"] = str(work / "state")  # the runs' default records folder
        with RouterLab(routers, name, work / "fleet", hosts=hosts) as lab:
            print(f"lab {lab.name}: {routers} routers, {hosts} hosts, ready in "
                  f"{lab.ready_after:.1f} s\n", flush=True)
            bench = Bench(lab, work)
            print(f"hier_config's work per host, r1's configuration: "
                  f"{_compute_cost(lab) * 1e3:.2f} ms (median of 5 passes of 200 hosts)\n",
                  flush=True)
            (work / "intended.j2").write_text(INTENDED)
            print("| runner | compliance (drifted) | show running-config | ratio | target |\n"
                  "|---|---|---|---|---|", flush=True)
            for runner in runners:
                prefix = "a" if runner == "asyncio" else ""
                jobs = {
                    "compliance": bench.job(
                        f"compliance-{runner}", "fleet", f"{prefix}send_config",
                        {"template_file": str(work / "intended.j2"), "mode": "replace",
                         "scope": ["ip route"], "dry_run": True}, num_workers=args.in_flight),
                    "show": bench.job(f"show-{runner}", "fleet", f"{prefix}send_command",
                                      {"command": "show running-config"},
                                      num_workers=args.in_flight),
                }
                got = bench.alternate(jobs, hosts, repeat, None)
                states = Counter(
                    (row.get("change") or {}).get("state")
                    for row in _rows(jobs["compliance"].parent / f"run-{repeat - 1}.jsonl"))
                ratio = got["compliance"][0] / got["show"][0]
                print(f"| {runner} | {got['compliance'][0]:.2f} s ({got['compliance'][1]} ok; "
                      f"{states.get('drifted', 0)} drifted) | {got['show'][0]:.2f} s "
                      f"({got['show'][1]} ok) | {ratio:.2f} | "
                      f"{_met(ratio <= TARGET, f'<= {TARGET}')} |", flush=True)
    return 0


if __name__ == "__main__":
    run_script(main, "the lab and every run this script started are stopped")
