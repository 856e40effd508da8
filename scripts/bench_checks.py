#!/usr/bin/env python3
"""Changes checked against the network, on real routers: a BGP break caught in a canary
rollout, a run SIGKILLed before confirming and recovered, and what checks and parsing cost.

    python scripts/bench_checks.py [--routers 10] [--hosts 1000] [--repeat 3] [--in-flight 200]
                                   [--parts broken-bgp sigkill overhead parse] [--quick]
                                   [--lab NAME] [--record PATH]

As root (``apt-get install -y frr openssh-server``). A lab of ``--routers`` FRR routers of its
own (:mod:`harness.lab`: a name ``bc`` + six random characters, free loopback ports, stopped at
the end, on an error and on Ctrl-C), or the running lab ``--lab NAME`` (its routers put back as
they were), one inventory host per router (r1 ...) and
``--hosts`` hosts spread over them (h0001 ...). Every job runs through ``nornir-bench run`` in
a process of its own, on the asyncio runner (scrapli) unless said; every file it writes (jobs,
records, journals, backups, state) is in a temporary folder removed at the end.

**broken-bgp**: ``asend_config`` on every router in canary batches ``[1, "10%", "100%"]``,
``max_fail_percentage: 0``; r1's change mistypes its neighbour r2's AS (``neighbor <r2's
address> remote-as 65099``, from the lab's plan), the others add a static route. The check,
on r2 for every host: its Established BGP sessions, ``no_fewer``, ``settle: 2``, ``confirm:
{within: 10}``. Measured: r1's running configuration byte-identical to before (root's vtysh);
the seconds from the break (r1's ``pending`` entry in the journal, written just before the
lines are sent) until r2's session is Established again (r2 polled through vtysh, every 0.1
s; target <= 30 s); the later routers whose running configuration changed (target 0).

**sigkill**: a static route on every router, with a check that cannot hold (``as`` equals
-1) and ``confirm: {within: 300}``; the run SIGKILLed once the journal holds every router as
pending and every router runs its route; then ``nornir-bench recover JOURNAL``. Measured: the
routers byte-identical to before (target all), the journal's last entry per host and the
recover records (target all reverted / rolled back).

**overhead**: ``--hosts`` hosts, ``--in-flight`` at a time: a static route of each host's own
(``asend_config``) with one check read before and after it (its router's Established
sessions, ``no_fewer``) against the same change without it (target <= 1.6x); and ``show bgp
ipv4 unicast summary json`` with ``parse: json`` against without (**parse**), through
``send_command`` on threadpool and ``asend_command`` on asyncio (target <= 1.10x). Whole runs
timed from outside, alternating, ``--repeat`` each, medians; the routers put back (root's
vtysh) after each change.

``--quick``: 3 routers, 6 hosts, 1 repeat, asyncio only, broken-bgp's settle 1 s and confirm
window 4 s, for a test.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import harness
from harness.jobs import nornir_bench, read_records, run_job
from harness.lab import Lab, add_lab_option, router_lab
from harness.lab_jobs import LabJobs
from harness.owned import Child
from harness.tables import met

PARTS = ("broken-bgp", "sigkill", "overhead", "parse")
SUMMARY = "show bgp ipv4 unicast summary json"
ESTABLISHED = "length(peers.* | [?state=='Established'])"
SHOW = "show running-config"
WRONG_AS = 65099
SETTLE, WITHIN = 2, 10  # broken-bgp: seconds before the check, and to confirm in
QUICK_SETTLE, QUICK_WITHIN = 1, 4
POLL = 0.1  # seconds between two reads of r2's sessions
BACK_SECONDS = 60.0  # after the run, at most, for r2's session to come back
PENDING_SECONDS = 120.0  # sigkill: for every router to be pending and changed
RUN_SECONDS = 600.0  # one `nornir-bench run` or `recover`
TARGETS = {"back": 30.0, "checks": 1.6, "parse": 1.10}
BREAK = """{% if host.name == broken %}router bgp {{ asn }}
 neighbor {{ peer }} remote-as {{ wrong_as }}
{% else %}ip route 203.0.113.{{ host.name[1:] }}/32 Null0
{% endif %}"""
ROUTE = "ip route 203.0.113.{{ host.name[1:] }}/32 Null0\n"
HOST_ROUTE = """{%- set n = host.name[1:] | int %}
ip route 198.18.{{ 100 + n // 250 }}.{{ n % 250 }}/32 Null0
"""


PARSER = harness.parser(__doc__)
PARSER.add_argument("--routers", type=harness.whole(),
                    help="routers in the lab (default 10; quick 3)")
PARSER.add_argument("--hosts", type=harness.whole(),
                    help="overhead, parse: inventory hosts spread over "
                    "the routers (default 1000; quick 6)")
PARSER.add_argument("--repeat", type=harness.whole(), help="overhead, parse: runs of each variant "
                    "(default 3; quick 1)")
PARSER.add_argument("--in-flight", type=harness.whole(), default=200,
                    help="overhead, parse: hosts in flight (num_workers; default 200)")
PARSER.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS),
                    help="the parts to run (default all)")
PARSER.add_argument("--parse-runners", nargs="+", choices=("asyncio", "threadpool"),
                    help="parse: the runners (default both; quick asyncio)")
add_lab_option(PARSER)


def main(bench: harness.Bench) -> int:
    args = bench.args
    routers = args.routers or (3 if args.quick else 10)
    hosts = args.hosts or (6 if args.quick else 1000)
    repeat = args.repeat or (1 if args.quick else 3)
    parse_runners = args.parse_runners or ["asyncio", *([] if args.quick else ["threadpool"])]
    if not 2 <= routers <= 100:
        PARSER.error(f"--routers must be from 2 to 100 (r1 needs a neighbour), got {routers}")
    for name, value in (("--hosts", hosts), ("--repeat", repeat), ("--in-flight", args.in_flight)):
        if value < 1:
            PARSER.error(f"{name} must be at least 1, got {value}")
    if os.geteuid() != 0:
        PARSER.error("the router lab needs root")
    bench.heading(f"parts {', '.join(args.parts)}; {datetime.now():%Y-%m-%d}")
    with tempfile.TemporaryDirectory(prefix="bench-checks-") as folder, \
            router_lab(routers, attach=args.lab, prefix="bc") as lab:
        work = Path(folder)
        os.environ["XDG_STATE_HOME"] = str(work / "state")  # the runs' default records folder
        if len(lab.ports) < 2:
            raise SystemExit(f"bench_checks: lab {lab.name} has one router: r1 needs a neighbour")
        print(f"{lab.describe()}\n", flush=True)
        if {"overhead", "parse"} & set(args.parts):
            lab.write_inventory(work / "fleet", hosts)
        checks = Checks(bench, lab, work)
        print("| part | measure | measured | target |\n|---|---|---|---|", flush=True)
        if "broken-bgp" in args.parts:
            checks.broken_bgp()
        if "sigkill" in args.parts:
            checks.sigkill()
        if "overhead" in args.parts:
            checks.overhead(hosts, repeat, args.in_flight)
        if "parse" in args.parts:
            checks.parse(hosts, repeat, args.in_flight, parse_runners)
    return 0


class Checks:
    """The lab, its plan and its inventories, and the parts measured on them."""

    def __init__(self, bench: harness.Bench, lab: Lab, work: Path) -> None:
        self.bench, self.lab, self.work = bench, lab, work
        self.plan = lab.plan
        self.routers = lab.routers
        self.jobs = LabJobs(lab, work)
        self.settle, self.within = (QUICK_SETTLE, QUICK_WITHIN) if bench.quick else (SETTLE,
                                                                                   WITHIN)
        lab.write_inventory(work / "one-each")

    def row(self, part: str, measure: str, measured: str, target: str = "") -> None:
        print(f"| {part} | {measure} | {measured} | {target} |", flush=True)
        self.bench.record({"measured": measured, "target": target}, part=part, measure=measure)

    def configs(self) -> dict[str, str]:
        return self.lab.configs()

    def job(self, name: str, inventory: str, task: str, params: dict[str, Any],
            **options: Any) -> Path:
        return self.jobs.job(name, inventory, task, params, **options)

    def established(self, router: str) -> int:
        text = self.lab.vtysh(router, SUMMARY)
        try:
            peers = json.loads(text).get("peers", {})
        except ValueError:
            return -1  # not read (bgpd busy): not counted as up
        return sum(peer.get("state") == "Established" for peer in peers.values())

    # -- broken-bgp ------------------------------------------------------------------------

    def broken_bgp(self) -> None:
        first, neighbour = self.routers[0], self.routers[1]
        (_, peer), *_ = self.plan.neighbours(0)
        sessions = len(self.plan.neighbours(1))
        (self.work / "break.j2").write_text(BREAK)
        job = self.job("broken-bgp", "one-each", "asend_config", {
            "template_file": str(self.work / "break.j2"),
            "variables": {"broken": first, "asn": self.plan.routers[0].asn, "peer": peer,
                          "wrong_as": WRONG_AS},
            "checks": [{"name": f"{neighbour} sessions", "host": neighbour, "command": SUMMARY,
                        "path": ESTABLISHED, "expect": "no_fewer"}],
            "settle": self.settle, "confirm": {"within": self.within},
        }, batches=[1, "10%", "100%"], max_fail_percentage=0)
        before = self.configs()
        samples: list[tuple[float, int]] = []
        stop = threading.Event()

        def watch() -> None:  # ends with the run, or RUN_SECONDS + BACK_SECONDS at most
            ends = time.monotonic() + RUN_SECONDS + BACK_SECONDS
            while not stop.is_set() and time.monotonic() < ends:
                samples.append((time.time(), self.established(neighbour)))
                stop.wait(POLL)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        try:
            took = run_job("run", str(job), "-q", "-o", str(job.parent / "rollout.jsonl")).seconds
            ends = time.monotonic() + BACK_SECONDS
            while time.monotonic() < ends and not (samples and samples[-1][1] == sessions):
                time.sleep(POLL)
        finally:
            stop.set()
            watcher.join(5)
        after = self.configs()
        self.lab.put_back(before)
        records = {r["host"]: r for r in read_records(job.parent / "rollout.jsonl")}
        journal = read_records(job.parent / "rollout.journal")
        state = (records.get(first, {}).get("change") or {}).get("state")
        same = after[first] == before[first]
        self.row("broken-bgp", f"{first} reverted (run {took:.1f} s)",
                 f"change.state {state}; running config "
                 f"{'byte-identical' if same else 'DIFFERS'}",
                 met(same and state == "rolled back", "rolled back, identical"))
        pending = [e for e in journal[1:] if e["host"] == first and e["state"] == "pending"]
        broke = datetime.fromisoformat(pending[0]["at"]).timestamp() if pending else None
        down = next((t for t, n in samples if broke and t >= broke and n < sessions), None)
        back = next((t for t, n in samples if down and t > down and n == sessions), None)
        if broke is None or down is None or back is None:
            said = "NOT SEEN: " + (f"no pending entry for {first} in the journal" if broke is None
                                    else "the session never left Established" if down is None
                                    else f"not Established {BACK_SECONDS:g} s after the run")
            self.row("broken-bgp", f"break to {neighbour}'s session Established", said,
                     met(False, "<= 30 s"))
        else:
            self.row("broken-bgp", f"break to {neighbour}'s session Established",
                     f"{back - broke:.1f} s (down seen {down - broke:.1f} s after the break; "
                     f"confirm window {self.within} s, settle {self.settle} s)",
                     met(back - broke <= TARGETS["back"], "<= 30 s"))
        later = [r for r in self.routers[1:] if after[r] != before[r]]
        aborted = sum(records.get(r, {}).get("exception") == "RunAborted"
                      for r in self.routers[1:])
        self.row("broken-bgp", "later routers touched",
                 f"{len(later)} of {len(self.routers) - 1} ({aborted} RunAborted)",
                 met(not later, "0"))

    # -- sigkill ---------------------------------------------------------------------------

    def sigkill(self) -> None:
        from nornir_bench.tasks.changes.journal import read_journal

        (self.work / "route.j2").write_text(ROUTE)
        job = self.job("sigkill", "one-each", "asend_config", {
            "template_file": str(self.work / "route.j2"),
            "checks": [{"name": "never", "command": SUMMARY, "path": "as",
                        "expect": {"equals": -1}}],
            "confirm": {"within": 300},
        })
        folder, count = job.parent, len(self.routers)
        before = self.configs()
        journal = folder / "run.journal"
        command = nornir_bench("run", str(job), "-q", "-o", str(folder / "run.jsonl"))

        def all_pending() -> bool:  # in the journal before its lines are sent: then sent
            try:
                if len(read_journal(journal).pending()) < count:
                    return False
            except (OSError, ValueError):
                return False
            return all(f"ip route 203.0.113.{r[1:]}/32 Null0" in self.lab.vtysh(r, SHOW)
                       for r in self.routers)

        try:
            with Child(command, folder, "run") as child:
                ends = time.monotonic() + PENDING_SECONDS
                while child.process.poll() is None and time.monotonic() < ends:
                    if all_pending():
                        break
                    time.sleep(0.2)
                killed = child.process.poll() is None and all_pending()
                waited = time.perf_counter() - child.began
            # leaving the block SIGKILLed the run's session
            if not killed:
                self.row("sigkill", "run killed with every router pending",
                         f"NO: not all pending within {PENDING_SECONDS:g} s, or the run ended",
                         met(False, "all"))
                return
            self.lab.sessions_gone()
            recovered = run_job("recover", str(journal), timeout=RUN_SECONDS)
            took, said = recovered.seconds, " ".join(recovered.output.split())
            after = self.configs()
        finally:
            self.lab.put_back(before)
        same = sum(after[r] == before[r] for r in self.routers)
        self.row("sigkill", f"SIGKILL {waited:.1f} s after start, all {count} pending; "
                 f"recover {took:.1f} s", f"{same}/{count} routers byte-identical to before",
                 met(same == count, f"{count}/{count}"))
        last = read_journal(journal).hosts
        reverted = sum(last.get(r, {}).get("state") == "reverted" for r in self.routers)
        rows = [r for r in read_records(folder / "run.jsonl") if r.get("task") == "recover"]
        rolled = sum((r.get("change") or {}).get("state") == "rolled back" for r in rows)
        self.row("sigkill", "journal's last entry per host / recover records",
                 f"{reverted}/{count} reverted / {rolled}/{count} 'rolled back'"
                 + ("" if said.count("reverted to its backup") == count else f" ({said[:200]})"),
                 met(reverted == rolled == count, "all"))

    def overhead(self, hosts: int, repeat: int, in_flight: int) -> None:
        (self.work / "host-route.j2").write_text(HOST_ROUTE)
        change = {"template_file": str(self.work / "host-route.j2")}
        check = {"checks": [{"name": "sessions", "command": SUMMARY, "path": ESTABLISHED,
                             "expect": "no_fewer"}]}
        jobs = {name: self.job(f"overhead-{name}", "fleet", "asend_config", params,
                               num_workers=in_flight)
                for name, params in (("checks", {**change, **check}), ("plain", change))}
        before = self.configs()
        try:
            got = self.jobs.alternate(jobs, hosts, repeat, before)
        finally:
            self.lab.put_back(before)
        ratio = got["checks"].median / got["plain"].median
        self.row("overhead", f"asend_config, {hosts} hosts, {in_flight} in flight, median of "
                 f"{repeat}: with a check / without",
                 f"{got['checks'].median:.1f} s ({got['checks'].ok_text()} ok) / "
                 f"{got['plain'].median:.1f} s ({got['plain'].ok_text()} ok) = {ratio:.2f}",
                 met(ratio <= TARGETS["checks"], "<= 1.6"))

    def parse(self, hosts: int, repeat: int, in_flight: int, runners: list[str]) -> None:
        for runner in runners:
            task = "send_command" if runner == "threadpool" else "asend_command"
            jobs = {name: self.job(f"parse-{runner}-{name}", "fleet", task, {
                "command": SUMMARY, **extra}, num_workers=in_flight)
                for name, extra in (("json", {"parse": "json"}), ("text", {}))}
            got = self.jobs.alternate(jobs, hosts, repeat)
            ratio = got["json"].median / got["text"].median
            self.row("parse", f"{task} ({runner}), {hosts} hosts, {in_flight} in flight, "
                     f"median of {repeat}: parse json / text",
                     f"{got['json'].median:.1f} s ({got['json'].ok_text()} ok) / "
                     f"{got['text'].median:.1f} s ({got['text'].ok_text()} ok) = {ratio:.2f}",
                     met(ratio <= TARGETS["parse"], "<= 1.10"))


if __name__ == "__main__":
    harness.run_script(main, PARSER, interrupted="the lab and every run this script started "
                       "are stopped")
