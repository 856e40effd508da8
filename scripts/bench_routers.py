#!/usr/bin/env python3
"""Real routers: the FRR router lab's start and stop, logins, memory per session, and a fleet.

    python scripts/bench_routers.py [--lab-times] [--logins] [--memory] [--fleet] [--changes]
                                    [--session-logs] [--dead-cli] [--quick] [--lab NAME]
                                    [--routers 10] [--repeat 3] [--logins-count 120]
                                    [--at-once 8] [--sessions 40] [--hosts 1000]
                                    [--runners threadpool asyncio processpool dask]
                                    [--num-workers 200] [--options JSON [--options JSON ...]]
                                    [--record PATH]

Every part runs against a lab of real FRR routers (network namespaces, one OpenSSH server on
127.0.0.1 whose logins land in vtysh) that this script starts itself through the package's
lab API (:mod:`harness.lab`), under a name of its own (``br`` and six random characters) and on
a free range of loopback ports; it is stopped at the end, on an error and on Ctrl-C (its guard
removes it if this script is killed). ``--lab NAME`` runs the parts on a lab already running
instead (``nornir-bench lab --routers N --name NAME``: its size is ``--routers``), and puts its
routers back as they were. Root only, as the lab. Without a part flag, every part runs (with
``--lab``, every part but ``--lab-times``, which starts labs of its own). The parts are modules
of scripts/routers/. Nothing leaves 127.0.0.1.

**--lab-times**: ``nornir-bench lab`` of ``--routers`` routers (default 10) started (from the
process's start
to its ``lab ready:`` line) and stopped (from SIGINT to the process's exit), ``--repeat``
times; after each stop, what is left of it is counted: network namespaces ``nb-NAME-*``, FRR
daemons with ``-N nb-NAME-``, the lab's sshd (its listener, its sessions, any process of its
user), the user ``nbl-NAME``, its guard, its files (state file, work folder, FRR folders).
Then once the stale path: the lab is SIGKILLed once ready, and a new lab of the same name
started at once (its start removes what the dead one left, racing its guard) is timed, and
checked for leftovers after its stop. Median / min / max beside the targets (ready <= 15 s,
stopped <= 5 s, 0 left).

**--logins**: ``--logins-count`` logins (default 120), ``--at-once`` at a time (default 8,
below OpenSSH's MaxStartups of 10, so none is refused), spread over the routers in turn, for
netmiko (``ConnectHandler(device_type="cisco_ios")`` then ``disconnect()``, a thread per login
in flight) and scrapli (``AsyncIOSXEDriver`` over asyncssh, ``open()`` then ``close()``). Each
client runs in a process of its own (:mod:`harness.children.router_logins`), warmed up by one
login first; its CPU (``getrusage``,
every thread) per login gives the logins per second one client core can make; the wall
logins/s is on this machine, whose cores the lab shares. The lab's CPU per login is read from
/proc: sshd's listener's reaped children (each session: sshd, the shell, vtysh) and the FRR
daemons.

**--memory**: ``--sessions`` scrapli sessions (default 40, 8 opened at a time) held open, then
the proportional set size (PSS, /proc/PID/smaps_rollup; RSS beside it) of the lab's session
processes summed: the sshd processes under the listener (``sshd_pid`` in
/run/nornir-bench/labs/NAME.json), the ForceCommand's shell, vtysh; and the FRR daemons'
growth. Per session, MiB.

**--fleet**: ``--hosts`` inventory hosts (default 1000, ``h0001``...) spread over the routers'
ports, ``show ip bgp summary`` on each: ``send_command`` (netmiko) on threadpool,
``asend_command`` (scrapli) on asyncio, processpool and dask; ``--num-workers`` hosts in flight
(default 200; processpool and dask share them out over a process per CPU, as ``script.py
--in-flight``), once per ``--options`` recipe (JSON run policies added to the runner's options,
e.g. ``'{"retries": 4, "max_starts_per_second": 25}'``; default ``{}``, none). Each run is a
fresh process (:mod:`harness.children.router_run`) printing one JSON line; dask starts its own
embedded
cluster on loopback. Per runner x recipe: hosts ok / failed, the run's wall, the close
(``nr.close_connections()`` and the runner's ``close()``), failures by type, hosts retried, and
the logins the SSH server refused, as the package's summary counts them. OpenSSH's MaxStartups
(10 unauthenticated connections, then drops from 30 % up) refuses logins beyond 10 at once, as
real devices throttle them: the runners try refused logins again by default
(``login_retries``); ``'{"login_retries": 0}'`` shows the bare throttling.

**--changes**: a configuration change on every router (a static route to a TEST-NET-3 /32 of
its own and its BGP ``network``, from a Jinja2 template), with ``asend_config`` on the asyncio
runner, one inventory host per router: ``--check`` (each router's diff must hold exactly those
two lines; every running configuration byte-identical before and after), then applied (every
router changed; the seconds until every announced prefix is in every neighbour's BGP table,
polled through vtysh), then applied again (0 changed). Then a rollout in canary batches (1, 10
%, the rest; ``max_fail_percentage: 0``) where r2 refuses a line: r2 rolled back to its backup,
the routers of later batches untouched, and ``--rerun-failed`` on the records running only r2
and those never started (through ``nornir-bench run``). Then, per runner, ``--hosts`` hosts
(``--fleet``'s inventory): the change as a dry run (``send_config``/``asend_config``,
``dry_run=True``) against the same job reading ``show running-config``
(``send_command``/``asend_command``), the dry run's wall over the read's (target <= 1.2). The
routers are put back as they were (root's vtysh) at the end.

**--session-logs**: per runner, ``nornir-bench run`` of ``show running-config`` on the
``--hosts`` hosts (``--fleet``'s inventory), without and with ``--session-logs``, alternately,
``--repeat`` times each; the best wall of each, from outside the process, and their ratio
(target <= 1.1).

**--dead-cli**: r1's CLI (its session's vtysh) killed with SIGKILL in the middle of a 150-line
change, ``--repeat`` times per driver: ``send_config`` (netmiko) on threadpool and
``asend_config`` (scrapli) on asyncio, each exchange given the task's default timeout. Each run
is a fresh process (:mod:`harness.children.dead_cli`) that starts the change in a thread, kills
the CLI
once r1 holds part of it, and times from the kill to the end of ``nr.run``; per driver the
runs that failed within 2 s (the target), the seconds (median, min, max) and what the host
failed with. r1 is put back as it was after each run.

**--quick**: everything small, for a test: 3 routers (``--lab-times``: 1), 4 logins, 2
sessions, 6 hosts, 1 repeat, the asyncio runner (``--runners`` others).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from routers.changes import changes_part
from routers.dead_cli import dead_cli_part
from routers.fleet import fleet_part
from routers.lab_times import lab_times_part
from routers.logins import logins_part
from routers.memory import memory_part
from routers.session_logs import session_logs_part

import harness
from harness.lab import add_lab_option, router_lab
from harness.records import load_text, measured_commit

PARTS = ("lab-times", "logins", "memory", "fleet", "changes", "session-logs", "dead-cli")
RUNNERS = ("threadpool", "asyncio", "processpool", "dask")
CHILD_SECONDS = 600.0  # one run in a process of its own (a logins client, a fleet run)
QUICK_CHILD_SECONDS = 120.0


def _options(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("a JSON object of runner options, e.g. '{\"retries\": 4}'")
    return value


PARSER = harness.parser(__doc__)
for _part in PARTS:
    PARSER.add_argument(f"--{_part}", action="store_true", help=f"run the {_part} part")
add_lab_option(PARSER)
PARSER.add_argument("--routers", type=harness.whole(),
                    help="routers in the lab (default 10; quick 3)")
PARSER.add_argument("--repeat", type=harness.whole(),
                    help="lab-times, session-logs, dead-cli: repeats "
                    "(default 3; quick 1)")
PARSER.add_argument("--logins-count", type=harness.whole(), help="logins: per client (default 120; "
                    "quick 4)")
PARSER.add_argument("--at-once", type=harness.whole(), default=8,
                    help="logins and memory: logins in flight at once (default 8, below "
                    "MaxStartups' 10)")
PARSER.add_argument("--sessions", type=harness.whole(),
                    help="memory: sessions held open (default 40; "
                    "quick 2)")
PARSER.add_argument("--hosts", type=harness.whole(), help="fleet: inventory hosts (default 1000; "
                    "quick 6)")
PARSER.add_argument("--runners", nargs="+", choices=RUNNERS, help="fleet, changes, "
                    "session-logs: the runners (default all four; quick asyncio)")
PARSER.add_argument("--num-workers", type=harness.whole(), default=200,
                    help="fleet: hosts in flight (default 200)")
PARSER.add_argument("--options", action="append", type=_options, metavar="JSON",
                    help="fleet: run policies for the runner, as JSON; again for another "
                    "recipe (default '{}': none)")


def main(bench: harness.Bench) -> int:
    args, quick = bench.args, bench.quick
    routers = args.routers or (3 if quick else 10)
    repeat = args.repeat or (1 if quick else 3)
    logins = args.logins_count or (4 if quick else 120)
    sessions = args.sessions or (2 if quick else 40)
    hosts = args.hosts or (6 if quick else 1000)
    runners = args.runners or (["asyncio"] if quick else list(RUNNERS))
    recipes = args.options or [{}]
    for name, value in (("--routers", routers), ("--repeat", repeat), ("--at-once", args.at_once),
                        ("--logins-count", logins), ("--sessions", sessions),
                        ("--hosts", hosts), ("--num-workers", args.num_workers)):
        if value < 1:
            PARSER.error(f"{name} must be at least 1, got {value}")
    if not 1 <= routers <= 100:
        PARSER.error(f"--routers must be from 1 to 100, got {routers}")
    if args.at_once > 9:
        print(f"note: --at-once {args.at_once} reaches OpenSSH's MaxStartups (10): logins may "
              "be refused", file=sys.stderr)
    chosen = [p for p in PARTS if getattr(args, p.replace("-", "_"))] or [
        p for p in PARTS if not (args.lab and p == "lab-times")]
    if os.geteuid() != 0:
        PARSER.error("the router lab needs root")

    commit = measured_commit()
    print(f"bench_routers: parts {', '.join(chosen)}; commit {commit}; {os.cpu_count()} CPUs; "
          f"load {load_text()}")
    child_seconds = QUICK_CHILD_SECONDS if quick else CHILD_SECONDS
    if "lab-times" in chosen:
        lab_times_part(bench, 1 if quick and not args.routers else routers, repeat)
    shared = [p for p in chosen if p != "lab-times"]
    if shared:
        with tempfile.TemporaryDirectory(prefix="bench-routers-") as temp, \
                router_lab(routers, attach=args.lab, prefix="br") as lab:
            folder = Path(temp)
            print(f"\n{lab.describe()}")
            fleet = lab.write_inventory(folder / "inventory", hosts)
            if "logins" in shared:
                logins_part(bench, lab, logins, args.at_once, child_seconds)
            if "memory" in shared:
                memory_part(bench, lab, sessions, args.at_once)
            if "fleet" in shared:
                fleet_part(bench, lab, fleet, hosts, runners, args.num_workers, recipes,
                           child_seconds)
            if "changes" in shared:
                changes_part(bench, lab, folder, fleet, hosts, runners, args.num_workers,
                             child_seconds)
            if "session-logs" in shared:
                session_logs_part(bench, lab, folder, fleet, hosts, runners, args.num_workers,
                                  repeat)
            if "dead-cli" in shared:
                dead_cli_part(bench, lab, folder, repeat, child_seconds)
    measured_commit.cache_clear()
    now = measured_commit()
    moved = "" if now == commit else f" at the start, {now} at the end (the code moved meanwhile)"
    print(f"\nmeasured on commit {commit}{moved}; load at the end {load_text()}")
    return 0


if __name__ == "__main__":
    harness.run_script(main, PARSER, interrupted="every lab and run this script started is "
                       "stopped")
