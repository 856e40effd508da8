#!/usr/bin/env python3
"""A fleet's compliance checked on real routers, against reading its configurations.

    python scripts/bench_compliance.py [--routers 10] [--hosts 1000] [--repeat 3]
                                       [--in-flight 200] [--runners asyncio threadpool]
                                       [--quick] [--lab NAME] [--record PATH]

As root (``apt-get install -y frr openssh-server``). A lab of ``--routers`` FRR routers of its
own (:mod:`harness.lab`, stopped at the end, on an error and on Ctrl-C; or the running lab
``--lab NAME``) and ``--hosts`` inventory hosts spread over them. On each runner, two jobs
through ``nornir-bench run``, in turn, ``--repeat`` times each, timed from outside, medians:

- **compliance**: ``asend_config`` (asyncio) or ``send_config`` (threadpool) with ``mode:
  replace``, ``scope: [ip route]`` and ``dry_run: true`` (a job's ``--check``): each host's
  intended static routes (two of its own, which the routers lack: every host drifts, so
  every host's remediation is computed);
- **show**: ``asend_command`` / ``send_command`` of ``show running-config``, the same hosts.

Target: compliance / show <= 1.2. ``--quick``: 3 routers, 6 hosts, 1 repeat, asyncio only.
"""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from datetime import datetime
from pathlib import Path

import harness
from harness.jobs import read_records
from harness.lab import Lab, add_lab_option, router_lab
from harness.lab_jobs import LabJobs
from harness.tables import met
from harness.timing import timed

TARGET = 1.2
INTENDED = """{%- set n = host.name[1:] | int %}
ip route 198.18.{{ 100 + n // 250 }}.{{ n % 250 }}/32 Null0
ip route 198.19.{{ 100 + n // 250 }}.{{ n % 250 }}/32 Null0
"""


def _compute_cost(lab: Lab, passes: int) -> float:
    """Seconds of hier_config's work for one host's compliance (parse the running and the
    intended configuration, the target, the diff, the remediation), on r1's configuration."""
    from nornir_bench.tasks.dialects.config_text import (
        config_diff,
        parse_config,
        remediation,
        replaced,
    )
    from nornir_bench.tasks.dialects.dialects import FRRDriver

    running = lab.vtysh("r1", "show running-config")
    intended = ["ip route 198.18.100.1/32 Null0", "ip route 198.19.100.1/32 Null0"]

    def hosts(count: int) -> None:
        for _ in range(count):
            driver = FRRDriver()
            before = parse_config(running, driver)
            target = replaced(before, parse_config(intended, driver), ["ip route"])
            config_diff(before, target)
            remediation(before, target)

    return harness.Spread.of(timed(hosts, 200)[1] / 200 for _ in range(passes)).median


PARSER = harness.parser(__doc__)
PARSER.add_argument("--routers", type=harness.whole(),
                    help="routers in the lab (default 10; quick 3)")
PARSER.add_argument("--hosts", type=harness.whole(), help="inventory hosts spread over the routers "
                    "(default 1000; quick 6)")
PARSER.add_argument("--repeat", type=harness.whole(), help="runs of each job (default 3; quick 1)")
PARSER.add_argument("--in-flight", type=harness.whole(), default=200,
                    help="hosts in flight (num_workers; default 200)")
PARSER.add_argument("--runners", nargs="+", choices=("asyncio", "threadpool"),
                    help="the runners (default both; quick asyncio)")
add_lab_option(PARSER)


def main(bench: harness.Bench) -> int:
    args = bench.args
    routers = args.routers or (3 if args.quick else 10)
    hosts = args.hosts or (6 if args.quick else 1000)
    repeat = args.repeat or (1 if args.quick else 3)
    runners = args.runners or ["asyncio", *([] if args.quick else ["threadpool"])]
    for name, value in (("--routers", routers), ("--hosts", hosts), ("--repeat", repeat),
                        ("--in-flight", args.in_flight)):
        if value < 1:
            PARSER.error(f"{name} must be at least 1, got {value}")
    if os.geteuid() != 0:
        PARSER.error("the router lab needs root")
    bench.heading(f"{datetime.now():%Y-%m-%d}")
    with tempfile.TemporaryDirectory(prefix="bench-compliance-") as folder, \
            router_lab(routers, attach=args.lab, prefix="bk") as lab:
        work = Path(folder)
        os.environ["XDG_STATE_HOME"] = str(work / "state")  # the runs' default records folder
        lab.write_inventory(work / "fleet", hosts)
        print(f"{lab.describe()}; {hosts} hosts\n", flush=True)
        jobs = LabJobs(lab, work)
        passes = 1 if args.quick else 5
        cost = _compute_cost(lab, passes)
        print(f"hier_config's work per host, r1's configuration: "
              f"{cost * 1e3:.2f} ms (median of {passes} passes of 200 hosts)\n", flush=True)
        bench.record({"seconds_per_host": cost}, what="hier_config")
        (work / "intended.j2").write_text(INTENDED)
        print("| runner | compliance (drifted) | show running-config | ratio | target |\n"
              "|---|---|---|---|---|", flush=True)
        for runner in runners:
            prefix = "a" if runner == "asyncio" else ""
            runs = {
                "compliance": jobs.job(
                    f"compliance-{runner}", "fleet", f"{prefix}send_config",
                    {"template_file": str(work / "intended.j2"), "mode": "replace",
                     "scope": ["ip route"], "dry_run": True}, num_workers=args.in_flight),
                "show": jobs.job(f"show-{runner}", "fleet", f"{prefix}send_command",
                                  {"command": "show running-config"},
                                  num_workers=args.in_flight),
            }
            got = jobs.alternate(runs, hosts, repeat)
            states = Counter(
                (row.get("change") or {}).get("state")
                for row in read_records(runs["compliance"].parent / f"run-{repeat - 1}.jsonl"))
            ratio = got["compliance"].median / got["show"].median
            print(f"| {runner} | {got['compliance'].median:.2f} s "
                  f"({got['compliance'].ok_text()} ok; {states.get('drifted', 0)} drifted) | "
                  f"{got['show'].median:.2f} s ({got['show'].ok_text()} ok) | {ratio:.2f} | "
                  f"{met(ratio <= TARGET, f'<= {TARGET}')} |", flush=True)
            bench.record({"compliance": got["compliance"].walls, "show": got["show"].walls,
                          "drifted": states.get("drifted", 0)}, runner=runner, hosts=hosts)
    return 0


if __name__ == "__main__":
    harness.run_script(main, PARSER, interrupted="the lab and every run this script started "
                       "are stopped")
