#!/usr/bin/env python3
"""A NETCONF change confirmed by the device itself, against the same change without confirm:
what the confirmed commit, its check and its confirming commit cost.

    python scripts/bench_netconf_change.py [--servers 5] [--hosts 50] [--repeat 3]
                                           [--runners threadpool asyncio] [--quick]
                                           [--record PATH]

As root (``apt-get install -y netconfd yangcli openssh-server``). A NETCONF lab of its own
(``nornir_bench.lab.netconf_lab``: ``--servers`` yuma123 netconfd servers, each in a namespace,
behind one OpenSSH on 127.0.0.1, removed at the end, on an error and on Ctrl-C), ``--hosts``
inventory hosts spread over them. Each host sets eth1's description on its server (its name
and the round: every run changes something), through ``netconf_edit_config`` (threadpool) or
``anetconf_edit_config`` (asyncio), in this process, each run timed whole:

- **plain**: lock, edit, validate, diff, ``<commit>``, unlock;
- **checked**: the same and one check (``<get>`` of eth1 by xpath) before and after;
- **confirmed**: the check, and ``confirm: {within: 30}``: ``<commit><confirmed/>``, the
  check, the confirming ``<commit>``;
- **new login**: as confirmed, with ``new_login: true``: a new login before the check;
- **lock wait**: as confirmed, every host at once, taking turns at its server's lock
  (``lock_wait``) instead of by ``group_limits``.

Hosts of one server share its candidate, its lock and its one pending confirmed commit: one
host a server at a time (``group_limits: {port: 1}``, or, for **lock wait**, the server's
lock), so a run is as long as the longest server's hosts one after the other, whatever
``num_workers``. The sides alternate, ``--repeat``
rounds each, medians; target: confirmed within 1.5x plain, every host changed.

**sigkill**: ``nornir-bench run`` of the confirmed change on every host, in a process of its
own (threadpool, a check that cannot hold, ``confirm: {within: 600}``: 660 s on the servers'
timers), SIGKILLed once each server holds a pending confirmed commit (the journal says so and
its running configuration shows it); then each server's running ``<data>`` read every 0.1 s
until it is byte for byte what it was before (target: within its confirm-timeout + 5 s, with
no controller running); then ``nornir-bench recover JOURNAL`` (target: nothing sent, the
servers unchanged).

``--quick``: 2 servers, 4 hosts, 1 round.
"""

from __future__ import annotations

import os
import signal
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import harness
from harness.stats import Spread
from harness.tables import met

RUNNERS = ("threadpool", "asyncio")
PARTS = ("overhead", "sigkill")
KILL_WITHIN = 600  # sigkill: the confirm window, far longer than the run lives
PENDING_SECONDS = 120.0  # sigkill: for every server to hold its pending commit
BACK_SECONDS = 60.0  # sigkill: for every server to be back, at most (its timer: 660 s)
TARGET = 1.5
WITHIN = 30
LOCK_WAIT = 120  # lock wait: a host's wait for its server's lock, at most
CHECK = {"name": "eth1 described", "xpath": "/interfaces/interface[name='eth1']",
         "path": "interfaces.interface.description", "expect": "present"}
TEMPLATE = ("<interfaces xmlns='urn:ietf:params:xml:ns:yang:ietf-interfaces'><interface>"
            "<name>eth1</name><description>{{ host.name }} round {{ round }}</description>"
            "</interface></interfaces>\n")

PARSER = harness.parser(__doc__)
PARSER.add_argument("--servers", type=harness.whole(), help="netconfd servers (default 5; "
                    "quick 2)")
PARSER.add_argument("--hosts", type=harness.whole(), help="inventory hosts spread over them "
                    "(default 50; quick 4)")
PARSER.add_argument("--repeat", type=harness.whole(), help="rounds of each side (default 3; "
                    "quick 1)")
PARSER.add_argument("--runners", nargs="+", choices=RUNNERS, default=list(RUNNERS),
                    help="the runners (default both)")
PARSER.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS),
                    help="the parts to run (default all)")


def main(bench: harness.Bench) -> int:
    from nornir_bench.lab import netconf_lab

    args = bench.args
    servers = args.servers or (2 if args.quick else 5)
    hosts = args.hosts or (4 if args.quick else 50)
    repeat = args.repeat or (1 if args.quick else 3)
    if not 1 <= servers <= 100:
        PARSER.error(f"--servers must be from 1 to 100, got {servers}")
    if os.geteuid() != 0:
        PARSER.error("the NETCONF lab needs root")
    bench.heading(f"{hosts} hosts over {servers} netconfd servers, {repeat} rounds; "
                  f"{datetime.now():%Y-%m-%d}")
    with tempfile.TemporaryDirectory(prefix="bench-netconf-") as folder:
        work = Path(folder)
        (work / "eth1.j2").write_text(TEMPLATE)
        with netconf_lab(servers, write=work / "inventory", hosts=hosts) as lab:
            if "overhead" in args.parts:
                print("| runner | plain (s) | checked (s) | confirmed (s) | new login (s) | "
                      "lock wait (s) | confirmed / plain | new login / plain | "
                      "lock wait / confirmed | target |\n"
                      "|---|---|---|---|---|---|---|---|---|---|", flush=True)
                for runner in args.runners:
                    Sides(bench, lab, work, runner, hosts).measure(repeat)
            if "sigkill" in args.parts:
                sigkill(bench, lab, work)
    return 0


def sigkill(bench: harness.Bench, lab: Any, work: Path) -> None:
    from harness.jobs import nornir_bench, run_job, write_job
    from harness.owned import Child
    from nornir_bench.tasks.changes.journal import read_journal
    from nornir_bench.tasks.changes.netconf_config import DEFAULT_NETCONF_TIMEOUT

    servers = lab.servers()
    before = {server: lab.data(server) for server in servers}
    never = {**CHECK, "expect": {"equals": "never"}}
    job = write_job(work / "sigkill" / "job.json", runner="threadpool", inventory=lab.inventory,
                    options={"num_workers": 50, "group_limits": {"port": 1}},
                    task="netconf_edit_config",
                    params={"template_file": str(work / "eth1.j2"), "variables": {"round": 0},
                            "checks": [never], "confirm": {"within": KILL_WITHIN}})
    folder = job.parent
    journal = folder / "run.journal"

    def all_pending() -> bool:
        try:
            pending = len(read_journal(journal).pending())
        except (OSError, ValueError):
            return False
        return pending >= len(servers) and all(
            lab.data(server) != before[server] for server in servers)

    with Child(nornir_bench("run", str(job), "-q", "-o", str(folder / "run.jsonl")), folder,
               "run") as child:
        ends = time.monotonic() + PENDING_SECONDS
        while child.process.poll() is None and time.monotonic() < ends and not all_pending():
            time.sleep(0.2)
        pending = child.process.poll() is None and all_pending()
        os.kill(child.pid, signal.SIGKILL)
        killed = time.monotonic()
    back: dict[str, float] = {}
    while len(back) < len(servers) and time.monotonic() - killed < BACK_SECONDS:
        for server in servers:
            if server not in back and lab.data(server) == before[server]:
                back[server] = time.monotonic() - killed
        time.sleep(0.1)
    recovered = run_job("recover", str(journal))
    nothing = recovered.output.count("nothing to send")
    same = sum(lab.data(server) == before[server] for server in servers)
    slowest = max(back.values(), default=float("nan"))
    device_wait = KILL_WITHIN + int(DEFAULT_NETCONF_TIMEOUT)  # the servers' confirm-timeout
    print(f"\nsigkill: {len(servers)} servers each pending: {pending}; back byte for byte: "
          f"{len(back)}/{len(servers)}, the last {slowest:.1f} s after the SIGKILL "
          f"({met(len(back) == len(servers), f'<= {device_wait + 5} s')}); recover: "
          f"exit {recovered.status}, nothing to send for {nothing}, servers unchanged "
          f"{same}/{len(servers)} ({met(same == len(servers) and recovered.status == 0, 'all')})",
          flush=True)
    bench.record({"back": len(back), "slowest": slowest, "unchanged_after_recover": same},
                 part="sigkill", servers=len(servers))


class Sides:
    """The three sides on one runner, and their rounds."""

    def __init__(self, bench: harness.Bench, lab: Any, work: Path, runner: str,
                 hosts: int) -> None:
        self.bench, self.lab, self.work, self.runner, self.hosts = bench, lab, work, runner, hosts
        self.round = 0
        self.failed: list[str] = []

    def run(self, *, turns: bool = True, **params: Any) -> float:
        """One run of the change with ``params``, one host a server at a time by the run's
        ``group_limits`` (``turns``) or else by the servers' locks; its wall time."""
        from nornir_bench.tasks import anetconf_edit_config, netconf_edit_config

        self.round += 1
        limits = {"group_limits": {"port": 1}} if turns else {}
        nr = self.lab.nornir(self.runner, num_workers=self.hosts, **limits)
        task = anetconf_edit_config if self.runner == "asyncio" else netconf_edit_config
        watch = harness.Stopwatch().start()
        result = nr.run(task=task, template_file=str(self.work / "eth1.j2"),
                        variables={"round": self.round}, backup_dir=str(self.work / "backups"),
                        journal_file=str(self.work / f"{self.runner}-{self.round}.journal"),
                        raise_on_error=False, **params)
        watch.stop()
        nr.close_connections()
        changed = sum(1 for multi in result.values() if not multi.failed and multi.changed)
        if changed != self.hosts:
            failures = {h: str(m[0].exception).splitlines()[0] for h, m in result.items()
                        if m.failed}
            self.failed.append(f"{params and list(params) or 'plain'}: {changed} of "
                               f"{self.hosts} changed: {failures}")
        return watch.wall

    def measure(self, repeat: int) -> None:
        sides = harness.alternate({
            "plain": lambda: self.run(),
            "checked": lambda: self.run(checks=[CHECK]),
            "confirmed": lambda: self.run(checks=[CHECK], confirm={"within": WITHIN}),
            "new login": lambda: self.run(checks=[CHECK], confirm={"within": WITHIN,
                                                                    "new_login": True}),
            "lock wait": lambda: self.run(checks=[CHECK], confirm={"within": WITHIN},
                                          lock_wait=LOCK_WAIT, turns=False),
        }, repeat, mirror=True)
        spread = {name: Spread.of(times) for name, times in sides.items()}
        ratio = spread["confirmed"].median / spread["plain"].median
        login = spread["new login"].median / spread["plain"].median
        waited = spread["lock wait"].median / spread["confirmed"].median
        print(f"| {self.runner} | {spread['plain'].text()} | {spread['checked'].text()} | "
              f"{spread['confirmed'].text()} | {spread['new login'].text()} | "
              f"{spread['lock wait'].text()} | {ratio:.2f} | {login:.2f} | {waited:.2f} | "
              f"{met(ratio <= TARGET and not self.failed, f'<= {TARGET}')} |", flush=True)
        for failure in self.failed:
            print(f"  {self.runner}: {failure}", flush=True)
        self.bench.record({name: s.median for name, s in spread.items()}
                          | {"ratio": ratio, "new_login_ratio": login,
                             "lock_wait_ratio": waited},
                          runner=self.runner, hosts=self.hosts, repeat=repeat,
                          failed=len(self.failed))


if __name__ == "__main__":
    harness.run_script(main, PARSER, interrupted="the NETCONF lab is removed")
