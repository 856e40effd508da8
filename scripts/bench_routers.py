#!/usr/bin/env python3
"""Real routers: the FRR router lab's start and stop, logins, memory per session, and a fleet.

    python scripts/bench_routers.py [--lab-times] [--logins] [--memory] [--fleet] [--changes]
                                    [--session-logs] [--dead-cli] [--quick]
                                    [--routers 10] [--repeat 3] [--logins-count 120]
                                    [--at-once 8] [--sessions 40] [--hosts 1000]
                                    [--runners threadpool asyncio processpool dask]
                                    [--num-workers 200] [--options JSON [--options JSON ...]]

Every part runs against a lab of real FRR routers (``nornir-bench lab --routers N``: network
namespaces, one OpenSSH server on 127.0.0.1 whose logins land in vtysh) that this script
starts itself, as a process of its own (``python -m nornir_bench lab --routers ...``), under a
name of its own (``br`` and six random characters) and on a free range of loopback ports; it
is stopped (SIGINT) at the end, on an error and on Ctrl-C. Root only, as the lab. Without a
part flag, every part runs. Nothing leaves 127.0.0.1.

**--lab-times**: a lab of ``--routers`` routers (default 10) started (from the process's start
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
client runs in a process of its own, warmed up by one login first; its CPU (``getrusage``,
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
fresh process of this script (``--one``) printing one JSON line; dask starts its own embedded
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
is a fresh process of this script (``--one``) that starts the change in a thread, kills the CLI
once r1 holds part of it, and times from the kill to the end of ``nr.run``; per driver the
runs that failed within 2 s (the target), the seconds (median, min, max) and what the host
failed with. r1 is put back as it was after each run.

**--quick**: everything small (3 routers, 24 logins, 8 sessions, 60 hosts, 1 repeat), for a
test: about 10 s each for lab-times, logins and memory, 40 s for the fleet on four runners
(dask's own cluster about half of it; ``--runners threadpool asyncio``: about 15 s), on 2
loaded cores.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import pwd
import queue
import random
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from nornir_bench.core.library_warnings import quiet_library_deprecations
from nornir_bench.lab.ports import free_port_range

PARTS = ("lab-times", "logins", "memory", "fleet", "changes", "session-logs", "dead-cli")
RUNNERS = ("threadpool", "asyncio", "processpool", "dask")
PROCESS_RUNNERS = ("processpool", "dask")  # num_workers is per process there
COMMAND = "show ip bgp summary"
STATE_FOLDER = Path("/run/nornir-bench/labs")
TARGETS = {"ready": 15.0, "stopped": 5.0}

READY_SECONDS = 120.0  # for a lab to say "lab ready:" (it gives up itself after 60 s)
STOP_SECONDS = 30.0  # for a lab to exit after SIGINT, before it is killed (its guard cleans)
LOGIN_SECONDS = 20.0  # one login, either client
CHILD_SECONDS = 600.0  # one --one process (a logins client, a fleet run)
QUICK_CHILD_SECONDS = 120.0

# scrapli warns, once a process, that it may send enable without a password (auth_secondary);
# vtysh's login is at the privileged level already: the warning says nothing here.
QUIET_SCRAPLI = "ignore::UserWarning:scrapli.helper"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for part in PARTS:
        parser.add_argument(f"--{part}", action="store_true", help=f"run the {part} part")
    parser.add_argument("--quick", action="store_true",
                        help="everything small (3 routers, 60 hosts, 1 repeat), for a test")
    parser.add_argument("--routers", type=int, help="routers in the lab (default 10; quick 3)")
    parser.add_argument("--repeat", type=int, help="lab-times: starts and stops (default 3; "
                        "quick 1)")
    parser.add_argument("--logins-count", type=int, help="logins: per client (default 120; "
                        "quick 24)")
    parser.add_argument("--at-once", type=int, default=8,
                        help="logins and memory: logins in flight at once (default 8, below "
                        "MaxStartups' 10)")
    parser.add_argument("--sessions", type=int, help="memory: sessions held open (default 40; "
                        "quick 8)")
    parser.add_argument("--hosts", type=int, help="fleet: inventory hosts (default 1000; "
                        "quick 60)")
    parser.add_argument("--runners", nargs="+", choices=RUNNERS, help="fleet: the runners "
                        "(default all four)")
    parser.add_argument("--num-workers", type=int, default=200,
                        help="fleet: hosts in flight (default 200)")
    parser.add_argument("--options", action="append", type=_options, metavar="JSON",
                        help="fleet: run policies for the runner, as JSON; again for another "
                        "recipe (default '{}': none)")
    parser.add_argument("--one", metavar="JSON", help=argparse.SUPPRESS)  # a run, in its process
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(_one(json.loads(args.one))), flush=True)
        return 0

    quick = args.quick
    routers = args.routers or (3 if quick else 10)
    repeat = args.repeat or (1 if quick else 3)
    logins = args.logins_count or (24 if quick else 120)
    sessions = args.sessions or (8 if quick else 40)
    hosts = args.hosts or (60 if quick else 1000)
    recipes = args.options or [{}]
    for name, value in (("--routers", routers), ("--repeat", repeat), ("--at-once", args.at_once),
                        ("--logins-count", logins), ("--sessions", sessions),
                        ("--hosts", hosts), ("--num-workers", args.num_workers)):
        if value < 1:
            parser.error(f"{name} must be at least 1, got {value}")
    if not 1 <= routers <= 100:
        parser.error(f"--routers must be from 1 to 100, got {routers}")
    if args.at_once > 9:
        print(f"note: --at-once {args.at_once} reaches OpenSSH's MaxStartups (10): logins may "
              "be refused", file=sys.stderr)
    chosen = [p for p in PARTS if getattr(args, p.replace("-", "_"))] or list(PARTS)
    if os.geteuid() != 0:
        parser.error("the router lab needs root")

    _stop_on_sigterm()
    commit = _git_commit()
    print(f"bench_routers: parts {', '.join(chosen)}; commit {commit}; {os.cpu_count()} CPUs; "
          f"load {_load()}")
    child_seconds = QUICK_CHILD_SECONDS if quick else CHILD_SECONDS
    if "lab-times" in chosen:
        lab_times_part(routers, repeat)
    shared = [p for p in chosen if p != "lab-times"]
    if shared:
        with tempfile.TemporaryDirectory(prefix="bench-routers-") as folder:
            inventory = Path(folder) / "inventory"
            lab_hosts = hosts if {"fleet", "changes", "session-logs"} & set(shared) else None
            with RouterLab(routers, _lab_name(), inventory, hosts=lab_hosts) as lab:
                print(f"\nlab {lab.name}: {routers} routers on 127.0.0.1:{lab.base}-"
                      f"{lab.base + routers - 1}, ready in {lab.ready_after:.1f} s")
                if "logins" in shared:
                    logins_part(lab, logins, args.at_once, child_seconds)
                if "memory" in shared:
                    memory_part(lab, sessions, args.at_once)
                if "fleet" in shared:
                    fleet_part(lab, inventory, hosts, args.runners or list(RUNNERS),
                               args.num_workers, recipes, child_seconds)
                if "changes" in shared:
                    changes_part(lab, Path(folder), inventory, hosts,
                                 args.runners or list(RUNNERS), args.num_workers, child_seconds)
                if "session-logs" in shared:
                    session_logs_part(lab, Path(folder), inventory, hosts,
                                      args.runners or list(RUNNERS), args.num_workers, repeat)
                if "dead-cli" in shared:
                    dead_cli_part(lab, Path(folder), repeat, child_seconds)
    now = _git_commit()
    moved = "" if now == commit else f" at the start, {now} at the end (the code moved meanwhile)"
    print(f"\nmeasured on commit {commit}{moved}; load at the end {_load()}")
    return 0


def _options(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("a JSON object of runner options, e.g. '{\"retries\": 4}'")
    return value


# -- the lab, as a process of its own ----------------------------------------------------------


class RouterLab:
    """``python -m nornir_bench lab --routers N`` in a process (and session) of its own: started
    until its ``lab ready:`` line, stopped by SIGINT (killed after STOP_SECONDS)."""

    def __init__(self, routers: int, name: str, write: Path, *, hosts: int | None = None,
                 base: int | None = None) -> None:
        self.routers, self.name, self.write, self.hosts = routers, name, write, hosts
        self.base = base if base is not None else free_port_range(routers)
        self.process: subprocess.Popen[str] | None = None
        self.lines: queue.Queue[tuple[float, str | None]] = queue.Queue()
        self.said: list[str] = []
        self.ready_after = math.nan  # seconds from the process's start to "lab ready:"
        self.ready_said = math.nan  # the "in X.X s" of that line
        self.stopped_said = math.nan  # the "removed in X.X s" of "lab stopped:"
        self.state: dict[str, Any] = {}
        self.uid: int | None = None

    def __enter__(self) -> RouterLab:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def user(self) -> str:
        return f"nbl-{self.name}"

    def start(self) -> None:
        command = [sys.executable, "-m", "nornir_bench", "lab", "--routers", str(self.routers),
                   "--name", self.name, "--port", str(self.base), "--write", str(self.write)]
        if self.hosts is not None:
            command += ["--hosts", str(self.hosts)]
        began = time.perf_counter()
        self.process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, start_new_session=True,  # Ctrl-C in the terminal reaches this script only
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        threading.Thread(target=self._read, daemon=True).start()
        deadline = began + READY_SECONDS
        while True:
            try:
                when, line = self.lines.get(timeout=max(0.0, deadline - time.perf_counter()))
            except queue.Empty:
                raise SystemExit(f"lab {self.name}: not ready within {READY_SECONDS:g} s; it "
                                 f"said: {self._told()}") from None
            if line is None:
                raise SystemExit(f"lab {self.name} ended before it was ready "
                                 f"(exit {self.process.wait()}): {self._told()}")
            if line.startswith("lab ready:"):
                self.ready_after = when - began
                self.ready_said = _seconds_in(line, " in ")
                break
        self.state = json.loads((STATE_FOLDER / f"{self.name}.json").read_text())
        self.uid = pwd.getpwnam(self.user).pw_uid

    def _read(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        for line in self.process.stdout:
            line = line.rstrip("\n")
            self.said.append(line)
            self.lines.put((time.perf_counter(), line))
        self.lines.put((time.perf_counter(), None))

    def _told(self) -> str:
        return " | ".join(self.said[-5:]) or "nothing"

    @property
    def ports(self) -> list[int]:
        return list(range(self.base, self.base + self.routers))

    @property
    def password(self) -> str:
        return str(self.state["password"])

    @property
    def host_key(self) -> str:
        """Its routers' SSH host key, for the inventories written here (checked by default)."""
        from nornir_bench.lab.routers import host_key_of

        return host_key_of(self.state["workdir"])

    def stop(self) -> float:
        """SIGINT, and the seconds until the process ended (nan if it was not running)."""
        process = self.process
        if process is None or process.poll() is not None:
            return math.nan
        began = time.perf_counter()
        process.send_signal(signal.SIGINT)
        try:
            process.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            print(f"lab {self.name}: not stopped {STOP_SECONDS:g} s after SIGINT: killed (its "
                  "guard removes it)", file=sys.stderr)
            process.kill()
            process.wait()
            return math.nan
        took = time.perf_counter() - began
        for line in reversed(self.said):
            if line.startswith("lab stopped:"):
                self.stopped_said = _seconds_in(line, " in ")
                break
        return took

    def kill(self) -> None:
        assert self.process is not None
        self.process.kill()
        self.process.wait()


def _seconds_in(line: str, before: str) -> float:
    try:
        return float(line.rsplit(before, 1)[1].split()[0])
    except (IndexError, ValueError):
        return math.nan


def _lab_name() -> str:
    return "br" + "".join(random.choices("abcdefghijklmnopqrstuvwxyz0123456789", k=6))




# -- what a lab leaves ---------------------------------------------------------------------------


@dataclass
class Leftovers:
    found: dict[str, list[str]] = field(default_factory=dict)
    zombies: int = 0  # processes of the lab's user already dead, not reaped by their parent

    @property
    def count(self) -> int:
        return sum(len(v) for v in self.found.values())

    def text(self) -> str:
        shown = "; ".join(f"{k}: {', '.join(v[:3])}{' ...' if len(v) > 3 else ''}"
                          for k, v in self.found.items() if v)
        return shown or "none"


def leftovers(name: str, uids: set[int], workdirs: set[str]) -> Leftovers:
    """Everything of lab ``name`` still on this machine (``uids``: its user's ids while it ran,
    ``workdirs``: its work folders)."""
    found: dict[str, list[str]] = {}
    prefix = f"nb-{name}-"
    try:
        found["namespaces"] = sorted(n for n in os.listdir("/run/netns") if n.startswith(prefix))
    except FileNotFoundError:
        found["namespaces"] = []
    frr, sshd, user_procs, guard = [], [], [], []
    zombies = 0
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            args = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        words = [a.decode(errors="replace") for a in args if a]
        line = " ".join(words)
        fields = dict(row.split(":", 1) for row in status.splitlines() if ":" in row)
        uid = int(fields.get("Uid", "-1").split()[0])
        zombie = fields.get("State", "").strip().startswith("Z")
        label = f"{entry} {line[:60] or fields.get('Name', '').strip()}"
        pairs = zip(words, words[1:], strict=False)
        if any(w == "-N" and nxt.startswith(prefix) for w, nxt in pairs):
            frr.append(label)
        elif any(d and d in line for d in workdirs) or line.startswith(f"sshd: nbl-{name}"):
            sshd.append(label)
        elif "nornir_bench.lab._guard" in words and name in words:
            guard.append(label)
        elif uid in uids:
            if zombie:
                zombies += 1
            else:
                user_procs.append(label)
    found["frr"], found["sshd"], found["user processes"], found["guard"] = (
        frr, sshd, user_procs, guard
    )
    try:
        pwd.getpwnam(f"nbl-{name}")
        found["user"] = [f"nbl-{name}"]
    except KeyError:
        found["user"] = []
    files = [STATE_FOLDER / f"{name}.json", *(Path(d) for d in workdirs if d)]
    for base in (Path("/etc/frr"), Path("/var/run/frr")):
        with contextlib.suppress(OSError):
            files += [p for p in base.iterdir() if p.name.startswith(prefix)]
    found["files"] = [str(p) for p in files if p.exists()]
    return Leftovers(found, zombies)


# -- lab-times ------------------------------------------------------------------------------------


def lab_times_part(routers: int, repeat: int) -> None:
    name = _lab_name()
    print(f"\n### Lab start and stop: {routers} routers (chain), lab {name}, {repeat} times "
          f"(load {_load()})\n")
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-routers-") as folder:
        for k in range(repeat):
            lab = RouterLab(routers, name, Path(folder) / f"inventory{k}")
            with _stopping(lab):
                lab.start()
                uids, workdirs = {lab.uid or -1}, {str(lab.state.get("workdir", ""))}
            stopped = lab.stop()
            left = leftovers(name, uids, workdirs)
            rows.append((f"run {k + 1}", lab.ready_after, lab.ready_said, stopped,
                         lab.stopped_said, left))
        stale = _stale_run(routers, name, Path(folder))
    print("| run | ready s (process start to `lab ready:`) | lab's own `in` s | stopped s "
          "(SIGINT to exit) | lab's own `removed in` s | left after stop |")
    print("|---|---:|---:|---:|---:|---|")
    for label, up, up_said, down, down_said, left in rows:
        print(f"| {label} | {up:.2f} | {up_said:.1f} | {down:.2f} | {down_said:.1f} "
              f"| {left.count} ({left.text()}){_zombies(left)} |")
    ready = [r[1] for r in rows]
    stops = [r[3] for r in rows if not math.isnan(r[3])]
    most = max(r[5].count for r in rows)
    print()
    print("| measure | median | min | max | target |")
    print("|---|---:|---:|---:|---|")
    print(f"| ready s | {_stats(ready)} | <= {TARGETS['ready']:g} s "
          f"({'met' if max(ready) <= TARGETS['ready'] else 'NOT met'}) |")
    if stops:
        print(f"| stopped s | {_stats(stops)} | <= {TARGETS['stopped']:g} s "
              f"({'met' if max(stops) <= TARGETS['stopped'] else 'NOT met'}) |")
    print(f"| left after stop | {most} (most of any run) | | | 0 "
          f"({'met' if most == 0 else 'NOT met'}) |")
    print()
    print("Stale path: the lab SIGKILLed once ready, a new lab of the same name started at once:")
    print()
    print("| step | s | left |")
    print("|---|---:|---|")
    for label, seconds, found in stale:
        shown = "" if found is None else f"{found.count} ({found.text()}){_zombies(found)}"
        print(f"| {label} | {seconds:.2f} | {shown} |")


def _stale_run(routers: int, name: str, folder: Path) -> list[tuple[str, float, Leftovers | None]]:
    """Kill a ready lab (SIGKILL), start another of its name at once; the steps and leftovers."""
    steps: list[tuple[str, float, Leftovers | None]] = []
    first = RouterLab(routers, name, folder / "stale1")
    with _stopping(first):
        first.start()
        uids, workdirs = {first.uid or -1}, {str(first.state.get("workdir", ""))}
        daemons = _frr_pids(name)
        steps.append(("first lab ready", first.ready_after, None))
        began = time.perf_counter()
        first.kill()
        killed = time.perf_counter() - began
    steps.append(("SIGKILL to its exit; left at that moment", killed,
                  leftovers(name, uids, workdirs)))
    second = RouterLab(routers, name, folder / "stale2")
    try:
        with _stopping(second):
            second.start()
            steps.append((f"new lab of the same name, ready (its own: {second.ready_said:.1f} s);"
                          " left of the killed one then", second.ready_after,
                          _left_of(first, daemons, second)))
            uids.add(second.uid or -1)
            workdirs.add(str(second.state.get("workdir", "")))
    except SystemExit as exc:  # what the race with the killed lab's guard did, reported
        steps.append((f"new lab of the same name did NOT start: {exc}", math.nan, None))
    stopped = second.stop()
    steps.append((f"new lab stopped (its own: {second.stopped_said:.1f} s); left", stopped,
                  leftovers(name, uids, workdirs)))
    return steps


def _left_of(first: RouterLab, daemons: list[int], second: RouterLab) -> Leftovers:
    """What is left of the killed lab ``first`` while ``second`` (same name, so the same
    namespaces, user and state file) runs: its sshd, work folder, guard and FRR daemons."""
    found: dict[str, list[str]] = {"frr": [], "sshd": [], "guard": [], "files": []}
    workdir = str(first.state.get("workdir", ""))
    listener = int(first.state.get("sshd_pid") or 0)
    for pid in {*daemons, listener} - {0}:
        try:
            line = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = _stat(pid)[0]
        except OSError:
            continue
        if state != "Z" and (pid == listener and workdir in line or pid != listener and
                             f"nb-{first.name}-" in line):
            found["sshd" if pid == listener else "frr"].append(f"{pid} {line[:60]}")
    second_pid = second.process.pid if second.process else -1
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, IndexError):
                words = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
                if b"nornir_bench.lab._guard" in words and first.name.encode() in words and \
                        int(_stat(int(entry))[1]) != second_pid:
                    found["guard"].append(entry)
    if workdir and Path(workdir).exists():
        found["files"].append(workdir)
    return Leftovers(found)


@contextmanager
def _stopping(lab: RouterLab) -> Iterator[None]:
    """On an error or Ctrl-C inside, the lab is stopped (on success, the caller times it)."""
    try:
        yield
    except BaseException:
        lab.stop()
        raise


def _zombies(left: Leftovers) -> str:
    return f"; {left.zombies} zombie(s) of its user not yet reaped" if left.zombies else ""


def _stats(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} | {min(values):.2f} | {max(values):.2f}"


# -- logins ----------------------------------------------------------------------------------------


def logins_part(lab: RouterLab, count: int, at_once: int, child_seconds: float) -> None:
    print(f"\n### Logins: {count} per client, {at_once} at once, over {lab.routers} routers "
          f"(load {_load()})\n")
    rows = []
    for client in ("netmiko", "scrapli"):
        server_before = _lab_cpu(lab)
        spec = {"part": "logins", "client": client, "ports": lab.ports, "user": lab.user,
                "password": lab.password, "count": count, "at_once": at_once}
        result = _run_one(spec, child_seconds)
        _sessions_gone(lab)
        server_after = _lab_cpu(lab)
        rows.append((client, result, {k: server_after[k] - server_before[k]
                                      for k in server_before}))
    print("| client | ok / failed | wall s | logins/s (wall) | client CPU ms / login "
          "(user + sys) | logins/s per client core | lab CPU ms / login (sshd + vtysh; FRR "
          "daemons) | failures |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for client, r, server in rows:
        if "error" in r:
            print(f"| {client} | | | | | | | {r['error']} |")
            continue
        ok = r["ok"]
        cpu = (r["user"] + r["sys"]) / ok if ok else math.nan
        per_core = 1 / cpu if ok and cpu > 0 else math.nan
        made = ok + 1  # the lab served the warm-up login too
        sessions = 1000 * server["sessions"] / made if ok else math.nan
        daemons = 1000 * server["frr"] / made if ok else math.nan
        print(f"| {client} | {ok} / {r['failed']} | {r['wall']:.2f} | {ok / r['wall']:.1f} "
              f"| {1000 * cpu:.1f} ({1000 * r['user'] / max(ok, 1):.1f} + "
              f"{1000 * r['sys'] / max(ok, 1):.1f}) | {per_core:.1f} | {sessions:.1f}; "
              f"{daemons:.1f} | {_failures_text(r['failures'])} |")


def _lab_cpu(lab: RouterLab) -> dict[str, float]:
    """CPU seconds so far: the sessions sshd's listener has reaped (each with its shell and
    vtysh) and the listener itself; the lab's FRR daemons."""
    sshd = int(lab.state["sshd_pid"])
    fields = _stat(sshd)
    sessions = sum(int(fields[i]) for i in (11, 12, 13, 14)) / os.sysconf("SC_CLK_TCK")
    frr = 0.0
    for pid in _frr_pids(lab.name):
        with contextlib.suppress(OSError):
            stat = _stat(pid)
            frr += (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")
    return {"sessions": sessions, "frr": frr}


def _stat(pid: int) -> list[str]:
    """/proc/PID/stat's fields after the command name (field 3 onwards: index 0 is state)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _frr_pids(name: str) -> list[int]:
    """The lab's FRR daemons (not vtysh, which takes -N too)."""
    prefix = f"nb-{name}-"
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                words = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            pairs = zip(words, words[1:], strict=False)
            daemon = words[0].startswith(b"/usr/lib/frr/")
            if daemon and any(w == b"-N" and n.startswith(prefix.encode()) for w, n in pairs):
                pids.append(int(entry))
    return pids


def _children(pid: int) -> list[int]:
    """Every descendant of ``pid``."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, IndexError):
                parents.setdefault(int(_stat(int(entry))[1]), []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _sessions_gone(lab: RouterLab, timeout: float = 10.0) -> None:
    """Wait until sshd's listener has no session left (so their CPU is in its reaped total)."""
    ends = time.monotonic() + timeout
    while _children(int(lab.state["sshd_pid"])) and time.monotonic() < ends:
        time.sleep(0.1)


def _logins_client(spec: dict[str, Any]) -> dict[str, Any]:
    """--one logins: a warm-up login, then ``count`` logins ``at_once`` at a time, timed."""
    ports, count, at_once = spec["ports"], spec["count"], spec["at_once"]
    login = _netmiko_login if spec["client"] == "netmiko" else _scrapli_login
    user, password = spec["user"], spec["password"]
    failures: Counter[str] = Counter()
    samples: dict[str, str] = {}

    def note(exc: BaseException) -> None:
        kind = type(exc).__name__
        failures[kind] += 1
        samples.setdefault(kind, str(exc)[:300])

    if spec["client"] == "netmiko":
        _netmiko_login(ports[0], user, password)  # imports, and the first login's costs
        before = resource.getrusage(resource.RUSAGE_SELF)
        began = time.perf_counter()

        def one(k: int) -> None:
            try:
                login(ports[k % len(ports)], user, password)
            except Exception as exc:  # noqa: BLE001 - counted by type
                note(exc)

        with ThreadPoolExecutor(at_once) as pool:
            list(pool.map(one, range(count)))
    else:
        async def run() -> None:
            gate = asyncio.Semaphore(at_once)

            async def one(k: int) -> None:
                async with gate:
                    try:
                        await asyncio.wait_for(_scrapli_login(ports[k % len(ports)], user,
                                                              password), LOGIN_SECONDS)
                    except Exception as exc:  # noqa: BLE001 - counted by type
                        note(exc)

            await asyncio.gather(*(one(k) for k in range(count)))

        async def warm() -> None:
            await asyncio.wait_for(_scrapli_login(ports[0], user, password), LOGIN_SECONDS)

        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(warm())
            before = resource.getrusage(resource.RUSAGE_SELF)
            began = time.perf_counter()
            loop.run_until_complete(run())
        finally:
            loop.close()
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_SELF)
    failed = sum(failures.values())
    return {"ok": count - failed, "failed": failed, "wall": wall,
            "user": after.ru_utime - before.ru_utime, "sys": after.ru_stime - before.ru_stime,
            "failures": {k: {"count": n, "sample": samples[k]} for k, n in failures.items()}}


def _netmiko_login(port: int, user: str, password: str) -> None:
    from netmiko import ConnectHandler

    connection = ConnectHandler(device_type="cisco_ios", host="127.0.0.1", port=port,
                                username=user, password=password, conn_timeout=LOGIN_SECONDS,
                                auth_timeout=LOGIN_SECONDS, banner_timeout=LOGIN_SECONDS)
    connection.disconnect()


async def _scrapli_login(port: int, user: str, password: str) -> None:
    driver = _scrapli_driver(port, user, password)
    await driver.open()
    await driver.close()


def _scrapli_driver(port: int, user: str, password: str) -> Any:
    from scrapli.driver.core import AsyncIOSXEDriver

    return AsyncIOSXEDriver("127.0.0.1", port=port, auth_username=user, auth_password=password,
                            auth_strict_key=False, transport="asyncssh",
                            timeout_socket=LOGIN_SECONDS, timeout_transport=LOGIN_SECONDS,
                            timeout_ops=LOGIN_SECONDS)


# -- memory ----------------------------------------------------------------------------------------


def memory_part(lab: RouterLab, sessions: int, at_once: int) -> None:
    print(f"\n### Memory per open session: {sessions} scrapli sessions held open, {at_once} "
          f"opened at a time, over {lab.routers} routers (load {_load()})\n")
    listener = int(lab.state["sshd_pid"])
    frr_before = _memory(_frr_pids(lab.name))
    idle = _session_memory(listener, lab.uid)
    opened, failures, held = asyncio.run(_hold_sessions(lab, sessions, at_once, listener))
    if opened == 0:
        print(f"no session opened: {_failures_text(failures)}")
        return
    frr_after = held.pop("frr")
    rows = [("sshd (monitor + session, per login)", "sshd"), ("shell (sh -c, ForceCommand)", "sh"),
            ("vtysh", "vtysh"), ("total, session processes", "total")]
    print("| part | processes | PSS MiB per session | RSS MiB per session |")
    print("|---|---:|---:|---:|")
    for label, key in rows:
        procs, pss, rss = held[key]
        procs0, pss0, rss0 = idle[key]
        print(f"| {label} | {procs - procs0} | {(pss - pss0) / opened / 1024:.2f} "
              f"| {(rss - rss0) / opened / 1024:.2f} |")
    print(f"| FRR daemons' growth ({len(_frr_pids(lab.name))} daemons) | | "
          f"{(frr_after[1] - frr_before[1]) / opened / 1024:.3f} "
          f"| {(frr_after[2] - frr_before[2]) / opened / 1024:.3f} |")
    print(f"\nsessions open: {opened} of {sessions}; failed: {_failures_text(failures)}; the "
          f"listener itself: PSS {_memory([listener])[1] / 1024:.1f} MiB")


async def _hold_sessions(
    lab: RouterLab, count: int, at_once: int, listener: int
) -> tuple[int, dict[str, Any], dict[str, Any]]:
    """Open ``count`` sessions, measure the lab's memory with them open, close them."""
    gate = asyncio.Semaphore(at_once)
    drivers: list[Any] = []
    failures: Counter[str] = Counter()
    samples: dict[str, str] = {}

    async def one(k: int) -> None:
        driver = _scrapli_driver(lab.ports[k % len(lab.ports)], lab.user, lab.password)
        async with gate:
            try:
                await asyncio.wait_for(driver.open(), LOGIN_SECONDS)
                drivers.append(driver)
            except Exception as exc:  # noqa: BLE001 - counted by type
                failures[type(exc).__name__] += 1
                samples.setdefault(type(exc).__name__, str(exc)[:300])

    try:
        await asyncio.gather(*(one(k) for k in range(count)))
        await asyncio.sleep(1.0)  # every session at its prompt, nothing starting
        held: dict[str, Any] = _session_memory(listener, lab.uid)
        held["frr"] = _memory(_frr_pids(lab.name))
    finally:
        for driver in drivers:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(driver.close(), LOGIN_SECONDS)
    return len(drivers), {k: {"count": n, "sample": samples[k]} for k, n in failures.items()}, held


def _session_memory(listener: int, uid: int | None) -> dict[str, tuple[int, int, int]]:
    """Per kind of session process under the listener (and vtysh of the lab's user anywhere):
    (processes, PSS KiB, RSS KiB)."""
    pids = set(_children(listener))
    if uid is not None:
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                with contextlib.suppress(OSError):
                    if os.stat(f"/proc/{entry}").st_uid == uid and \
                            Path(f"/proc/{entry}/comm").read_text().strip() == "vtysh":
                        pids.add(int(entry))
    kinds: dict[str, list[int]] = {"sshd": [], "sh": [], "vtysh": []}
    for pid in pids:
        with contextlib.suppress(OSError):
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
            kinds.setdefault(comm if comm in kinds else "other", []).append(pid)
    measured = {kind: _memory(p) for kind, p in kinds.items()}
    measured["total"] = _memory(sorted(pids))
    return measured


def _memory(pids: list[int]) -> tuple[int, int, int]:
    """(processes, PSS KiB, RSS KiB) summed over ``pids`` (from /proc/PID/smaps_rollup)."""
    count = pss = rss = 0
    for pid in pids:
        try:
            rows = Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()
        except OSError:
            continue
        values = {r.split(":")[0]: int(r.split()[1]) for r in rows[1:] if r.endswith("kB")}
        if not values:  # a zombie: no memory left
            continue
        count += 1
        pss += values.get("Pss", 0)
        rss += values.get("Rss", 0)
    return count, pss, rss


# -- fleet -----------------------------------------------------------------------------------------


def fleet_part(lab: RouterLab, inventory: Path, hosts: int, runners: list[str], in_flight: int,
               recipes: list[dict[str, Any]], child_seconds: float) -> None:
    print(f"\n### Fleet: `{COMMAND}` on {hosts} hosts over {lab.routers} routers, {in_flight} "
          f"hosts in flight (load {_load()})\n")
    rows = []
    for recipe in recipes:
        for runner in runners:
            spec = {"part": "fleet", "runner": runner, "inventory": str(inventory),
                    "options": {**_workers(runner, in_flight), **recipe}}
            began = time.perf_counter()
            result = _run_one(spec, child_seconds)
            result["process"] = time.perf_counter() - began
            _sessions_gone(lab)
            rows.append((runner, recipe, _workers(runner, in_flight), result))
    print("| runner | task | recipe | ok / failed | run wall s | close s | process wall s "
          "| retried | logins refused / hosts tried again / slowed | failures by type |")
    print("|---|---|---|---|---:|---:|---:|---:|---:|---|")
    for runner, recipe, options, r in rows:
        task = "send_command" if runner == "threadpool" else "asend_command"
        shown = json.dumps(recipe) if recipe else "none"
        workers = f" (num_workers {options['num_workers']}" + (
            f" x {options['num_procs']} procs)" if "num_procs" in options else ")")
        if "error" in r:
            print(f"| {runner}{workers} | {task} | {shown} | | | | {r['process']:.1f} | | "
                  f"| {r['error']} |")
            continue
        odd = f", {r['odd']} ok without a BGP table" if r.get("odd") else ""
        print(f"| {runner}{workers} | {task} | {shown} | {r['ok']} / {r['failed']} "
              f"| {r['wall']:.2f} | {r['close']:.2f} | {r['process']:.1f} | {r.get('retried', '')} "
              f"| {_logins_text(r)} | {_failures_text(r['failures'])}{odd} |")


# -- changes -----------------------------------------------------------------------------------

# The change: a /32 of TEST-NET-3 per router (its number k), announced in BGP. A host's router
# is found from its port (``base``: the first router's).
CHANGE_TEMPLATE = """\
{%- set k = host.port - base + 1 %}
ip route 203.0.113.{{ k }}/32 Null0
router bgp {{ 65000 + k }}
 address-family ipv4 unicast
  network 203.0.113.{{ k }}/32
{% if host.name in refuse %}ip routx 198.51.100.0/24
{% endif %}"""
CONVERGE_SECONDS = 30.0  # at most, for the announced prefixes to reach the neighbours


def session_logs_part(lab: RouterLab, folder: Path, fleet: Path, hosts: int,
                      runners: list[str], in_flight: int, repeat: int) -> None:
    """The same job (``show running-config`` on every host) run by ``nornir-bench run``
    without and with ``--session-logs``, alternately, ``repeat`` times each; the best wall
    of each (from outside the process), and their ratio against the target (<= 1.1)."""
    print(f"\n### Session logs: {hosts} hosts, {in_flight} in flight, `show running-config`, "
          f"best of {repeat} (load {_load()})\n")
    print("| runner | without: ok, wall s | with: ok, logs, wall s | with / without |")
    print("|---|---|---|---:|")
    for runner in runners:
        job = folder / f"show-{runner}.yaml"
        job.write_text(json.dumps({
            "inventory": {"plugin": "SimpleInventory", "options": {
                "host_file": str(fleet / "hosts.yaml"),
                "group_file": str(fleet / "groups.yaml"),
                "defaults_file": str(fleet / "defaults.yaml")}},
            "runner": {"plugin": runner, "options": _workers(runner, in_flight)},
            "task": {"name": "send_command" if runner == "threadpool" else "asend_command",
                     "params": {"command": "show running-config"}},
            "logging": {"enabled": False},
        }))
        walls: dict[bool, list[float]] = {False: [], True: []}
        said: dict[bool, str] = {}
        for k in range(repeat * 2):
            logged = bool(k % 2)
            out = folder / f"{runner}-{k}.jsonl"
            args = [sys.executable, "-m", "nornir_bench", "run", str(job), "-o", str(out),
                    "--quiet", *(["--session-logs"] if logged else [])]
            began = time.perf_counter()
            done = subprocess.run(args, capture_output=True, text=True, timeout=900,
                                  check=False)
            walls[logged].append(time.perf_counter() - began)
            rows = [json.loads(line) for line in out.read_text().splitlines()]
            ok = sum(not r["failed"] for r in rows)
            logs = sum(bool(r.get("session_log")) for r in rows)
            said[logged] = f"{ok}/{hosts}" + (f", {logs}" if logged else "") + (
                f" (exit {done.returncode})" if done.returncode else "")
            _sessions_gone(lab)
        without, with_logs = min(walls[False]), min(walls[True])
        ratio = with_logs / without
        print(f"| {runner} | {said[False]}, {without:.2f} | {said[True]}, {with_logs:.2f} | "
              f"{ratio:.2f} ({'met' if ratio <= 1.1 else 'MISSED'}) |")


def changes_part(lab: RouterLab, folder: Path, fleet: Path, hosts: int,
                 runners: list[str], in_flight: int, child_seconds: float) -> None:
    from nornir_bench.lab import LabDevice, write_inventory

    print(f"\n### Changes: a static route and a BGP network on each of {lab.routers} routers "
          f"(load {_load()})\n")
    routers = [f"r{k}" for k in range(1, lab.routers + 1)]
    one_each = folder / "one-each"
    write_inventory([LabDevice(r, "127.0.0.1", port, "cisco_ios", lab.user, lab.password,
                               lab.host_key)
                     for r, port in zip(routers, lab.ports, strict=True)], one_each)
    (folder / "change.j2").write_text(CHANGE_TEMPLATE)
    before = {r: _vtysh(lab, r, "show running-config") for r in routers}
    try:
        rows = _change_steps(lab, folder, one_each, routers, before)
        print("| step | wall s | result | target |")
        print("|---|---:|---|---|")
        for step, wall, said, target in rows:
            print(f"| {step} | {wall} | {said} | {target} |")
        _put_back(lab, before)
        _check_scale(lab, folder, fleet, hosts, runners, in_flight, child_seconds)
    finally:
        _put_back(lab, before)


def _change_steps(lab: RouterLab, folder: Path, inventory: Path, routers: list[str],
                  before: dict[str, str]) -> list[tuple[str, str, str, str]]:
    rows = []
    job = _change_job(lab, folder, inventory, refuse=[])
    took, out = _nornir_bench_run(job, "--check", "--show", "-o", str(folder / "check.jsonl"))
    records = _records(folder / "check.jsonl")
    exact = sum(
        sorted(line for line in (r["diff"] or "").splitlines() if line.startswith("+")
               and not line.startswith("+++"))
        == sorted([f"+ip route 203.0.113.{k}/32 Null0", f"+  network 203.0.113.{k}/32"])
        for k, r in ((int(h[1:]), records.get(h, {})) for h in routers)
    )
    same = sum(_vtysh(lab, r, "show running-config") == before[r] for r in routers)
    rows.append(("--check", f"{took:.2f}", f"{exact}/{len(routers)} diffs exactly the 2 lines; "
                 f"{same}/{len(routers)} running configurations byte-identical",
                 "all (met)" if exact == same == len(routers) else "all (MISSED)"))
    took, out = _nornir_bench_run(job, "-o", str(folder / "apply.jsonl"))
    applied = time.perf_counter()
    changed = sum(r["change"] and r["change"]["state"] == "changed"
                  for r in _records(folder / "apply.jsonl").values())
    seen = _converged(lab, routers)
    converged = time.perf_counter() - applied
    rows.append(("applied", f"{took:.2f}", f"{changed}/{len(routers)} changed; every prefix in "
                 f"every neighbour's BGP table {converged:.1f} s after the run"
                 + ("" if seen else " (NOT SEEN)"),
                 "<= 10 s (met)" if seen and converged <= 10 else "<= 10 s (MISSED)"))
    took, out = _nornir_bench_run(job, "-o", str(folder / "again.jsonl"))
    again = sum(bool(r["changed"]) for r in _records(folder / "again.jsonl").values())
    rows.append(("applied again", f"{took:.2f}", f"{again} changed",
                 "0 (met)" if again == 0 else "0 (MISSED)"))
    _put_back(lab, before)
    canary = _change_job(lab, folder, inventory, refuse=["r2"],
                         options={"batches": [1, "10%", "100%"], "max_fail_percentage": 0})
    took, out = _nornir_bench_run(canary, "-o", str(folder / "rollout.jsonl"))
    rollout = _records(folder / "rollout.jsonl")
    r2 = rollout.get("r2", {})
    rolled = (r2.get("change") or {}).get("state") == "rolled back" and _same_config(
        _vtysh(lab, "r2", "show running-config"), before["r2"])
    later = [r for r in routers if r not in ("r1", "r2")]
    untouched = sum(_vtysh(lab, r, "show running-config") == before[r] for r in later)
    line = "line 5 of 5 refused" in str(r2.get("message"))
    rows.append(("canary rollout, r2 refuses a line", f"{took:.2f}",
                 f"r2 {'rolled back, equal to its backup' if rolled else 'NOT rolled back'}"
                 f"{', the line named' if line else ''}; {untouched}/{len(later)} routers of "
                 "later batches untouched",
                 "all (met)" if rolled and line and untouched == len(later) else "(MISSED)"))
    fixed = _change_job(lab, folder, inventory, refuse=[],
                        options={"batches": [1, "10%", "100%"], "max_fail_percentage": 0})
    took, out = _nornir_bench_run(fixed, "--rerun-failed", str(folder / "rollout.jsonl"), "-o",
                                  str(folder / "rerun.jsonl"))
    rerun = sorted(_records(folder / "rerun.jsonl"), key=lambda h: int(h[1:]))
    wanted = f"{routers[1]} .. {routers[-1]} only"
    rows.append(("--rerun-failed", f"{took:.2f}", f"ran {', '.join(rerun)}",
                 f"{wanted} (met)" if rerun == routers[1:] else f"{wanted} (MISSED)"))
    return rows


def _check_scale(lab: RouterLab, folder: Path, fleet: Path, hosts: int, runners: list[str],
                 in_flight: int, child_seconds: float) -> None:
    print(f"\n{hosts} hosts, {in_flight} in flight: the change as a dry run against reading "
          "`show running-config`, the same hosts (one run each, its own process):\n")
    print("| runner | read: ok, wall s | dry run: ok, would change, wall s | dry run / read |")
    print("|---|---|---|---:|")
    for runner in runners:
        spec = {"part": "check", "runner": runner, "inventory": str(fleet),
                "options": _workers(runner, in_flight), "template": str(folder / "change.j2"),
                "base": lab.base}
        read = _run_one({**spec, "dry_run": False}, child_seconds)
        _sessions_gone(lab)
        dry = _run_one({**spec, "dry_run": True}, child_seconds)
        _sessions_gone(lab)
        if "error" in read or "error" in dry:
            print(f"| {runner} | {read.get('error', '')} | {dry.get('error', '')} | |")
            continue
        ratio = dry["wall"] / read["wall"]
        print(f"| {runner} | {read['ok']}/{hosts}, {read['wall']:.2f} | {dry['ok']}/{hosts}, "
              f"{dry['would']}, {dry['wall']:.2f} | {ratio:.2f} "
              f"({'met' if ratio <= 1.2 else 'MISSED'}) |")


def _check_run(spec: dict[str, Any]) -> dict[str, Any]:
    """--one check: one runner, the change as a dry run or the read, in this fresh process."""

    from nornir_bench.tasks import asend_command, asend_config, send_command, send_config

    runner = spec["runner"]
    nr = _nornir(spec)
    blocking = runner == "threadpool"
    began = time.perf_counter()
    try:
        if spec["dry_run"]:
            result = nr.run(task=send_config if blocking else asend_config,
                            template_file=spec["template"],
                            variables={"base": spec["base"], "refuse": []}, dry_run=True)
        else:
            result = nr.run(task=send_command if blocking else asend_command,
                            command="show running-config")
        wall = time.perf_counter() - began
        nr.close_connections()
    finally:
        close = getattr(nr.runner, "close", None)
        if callable(close):
            close()
    return {"ok": len(result) - len(result.failed_hosts), "wall": wall,
            "would": sum(bool(m.changed) for m in result.values())}


def _change_job(lab: RouterLab, folder: Path, inventory: Path, *, refuse: list[str],
                options: dict[str, Any] | None = None) -> Path:
    job = folder / "change.yaml"
    job.write_text(json.dumps({
        "inventory": {"plugin": "SimpleInventory", "options": {
            "host_file": str(inventory / "hosts.yaml"),
            "group_file": str(inventory / "groups.yaml"),
            "defaults_file": str(inventory / "defaults.yaml")}},
        "runner": {"plugin": "asyncio", "options": {"num_workers": 50, **(options or {})}},
        "task": {"name": "asend_config", "params": {
            "template_file": "change.j2", "variables": {"base": lab.base, "refuse": refuse},
            "backup_dir": str(folder / "backups")}},
    }))
    return job


def _nornir_bench_run(job: Path, *args: str) -> tuple[float, str]:
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "nornir_bench", "run", str(job), *args],
                          capture_output=True, text=True, timeout=600, check=False)
    return time.perf_counter() - began, done.stdout + done.stderr


def _records(path: Path) -> dict[str, dict[str, Any]]:
    if not path.exists():
        return {}
    return {r["host"]: r for r in map(json.loads, path.read_text().splitlines())}


def _vtysh(lab: RouterLab, router: str, command: str) -> str:
    from nornir_bench.lab.vtysh import vtysh

    return vtysh(lab.name, router, command)


def _converged(lab: RouterLab, routers: list[str]) -> bool:
    """Wait (at most CONVERGE_SECONDS) until each router's prefix is in its neighbours' BGP
    tables (the chain: r(k-1) and r(k+1))."""
    deadline = time.perf_counter() + CONVERGE_SECONDS
    waiting = {(r, n) for k, r in enumerate(routers) for n in routers[max(0, k - 1):k + 2]
               if n != r}
    while waiting and time.perf_counter() < deadline:
        for router, neighbour in list(waiting):
            table = json.loads(_vtysh(lab, neighbour, "show ip bgp json") or "{}")
            if f"203.0.113.{router[1:]}/32" in table.get("routes", {}):
                waiting.discard((router, neighbour))
        if waiting:
            time.sleep(0.1)
    return not waiting


def _same_config(one: str, other: str) -> bool:
    from nornir_bench.tasks.config_text import parse_config, same
    from nornir_bench.tasks.dialects import FRRDriver

    return same(parse_config(one, FRRDriver()), parse_config(other, FRRDriver()))


def _put_back(lab: RouterLab, before: dict[str, str]) -> None:
    from nornir_bench.lab.vtysh import restore_config

    for router, text in before.items():
        restore_config(lab.name, router, text)


DEAD_CLI_LINES = 150
DEAD_CLI_TARGET = 2.0  # seconds from the CLI's death to the host's failure, at most


def dead_cli_part(lab: RouterLab, folder: Path, repeat: int, child_seconds: float) -> None:
    """r1's CLI killed in the middle of a change, ``repeat`` times per driver: the seconds
    from the kill to the host's failure."""
    from nornir_bench.lab import LabDevice, write_inventory
    from nornir_bench.tasks.config import DEFAULT_CONFIG_TIMEOUT

    print(f"\n### A CLI killed mid-change: r1's vtysh, {DEAD_CLI_LINES} lines, each exchange "
          f"given {DEFAULT_CONFIG_TIMEOUT:g} s, {repeat} times per driver (load {_load()})\n")
    inventory = folder / "dead-cli"
    write_inventory([LabDevice("r1", "127.0.0.1", lab.ports[0], "cisco_ios", lab.user,
                               lab.password, lab.host_key)], inventory)
    before = {"r1": _vtysh(lab, "r1", "show running-config")}
    print(f"| driver | failed within {DEAD_CLI_TARGET:g} s | from the kill to the failure: "
          "median s | min s | max s | failed with |")
    print("|---|---:|---:|---:|---:|---|")
    try:
        for driver, runner in (("netmiko", "threadpool"), ("scrapli", "asyncio")):
            seconds: list[float] = []
            said: Counter[str] = Counter()
            for _ in range(repeat):
                spec = {"part": "dead-cli", "driver": driver, "runner": runner,
                        "options": {"num_workers": 1}, "inventory": str(inventory),
                        "lab": lab.name, "sshd": int(lab.state["sshd_pid"]),
                        "backups": str(folder / "backups"), "timeout": DEFAULT_CONFIG_TIMEOUT}
                run = _run_one(spec, child_seconds)
                _put_back(lab, before)
                _sessions_gone(lab)
                if "error" in run:
                    said[run["error"]] += 1
                    continue
                seconds.append(run["seconds"])
                said[run["failure"]] += 1
            fast = sum(s <= DEAD_CLI_TARGET for s in seconds)
            spread = _stats(seconds) if seconds else "n/a | n/a | n/a"
            kinds = "; ".join(f"{kind} {count}" for kind, count in said.most_common())
            print(f"| {driver} ({runner}) | {fast}/{repeat} "
                  f"({'met' if fast == repeat else 'MISSED'}) | {spread} | {kinds} |")
    finally:
        _put_back(lab, before)


def _dead_cli_run(spec: dict[str, Any]) -> dict[str, Any]:
    """--one dead-cli: the change in a thread, r1's CLI killed once r1 holds part of it; the
    seconds from the kill to the end of the run, and what the host failed with."""
    from nornir_bench.lab.vtysh import vtysh
    from nornir_bench.tasks import asend_config, send_config

    prefix = "ip route 198.18.101."
    lines = [f"{prefix}{k}/32 Null0" for k in range(DEAD_CLI_LINES)]

    def held() -> int:
        text = vtysh(spec["lab"], "r1", "show running-config")
        return sum(line.startswith(prefix) for line in text.splitlines())

    nr = _nornir(spec)
    task = send_config if spec["driver"] == "netmiko" else asend_config
    ended: dict[str, Any] = {}

    def change() -> None:
        ended["result"] = nr.run(task=task, lines=lines, timeout=spec["timeout"],
                                 backup_dir=spec["backups"])
        ended["at"] = time.perf_counter()

    worker = threading.Thread(target=change)
    worker.start()
    try:
        while worker.is_alive() and not 0 < held() < DEAD_CLI_LINES:
            time.sleep(0.02)
        killed = time.perf_counter()
        for pid in _session_clis(spec["sshd"], f"nb-{spec['lab']}-r1"):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        worker.join()
        multi = ended["result"]["r1"]
        error = multi.exception
        cause = getattr(error, "__cause__", None) or error  # a change's: what ended the session
        failure = "not failed" if not multi.failed else (
            f"{type(error).__name__} from {type(cause).__name__}: {_short(str(cause), 50)}"
        )
        return {"seconds": ended["at"] - killed, "failure": failure}
    finally:
        worker.join()
        nr.close_connections(on_failed=True)
        close = getattr(nr.runner, "close", None)
        if callable(close):
            close()


def _session_clis(sshd: int, namespace: str) -> list[int]:
    """The vtysh processes of the SSH server ``sshd``'s sessions on router ``namespace``."""
    pids = []
    for pid in _children(sshd):
        with contextlib.suppress(OSError):
            words = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if words[0].endswith(b"vtysh") and namespace.encode() in words:
                pids.append(pid)
    return pids


def _logins_text(r: dict[str, Any]) -> str:
    """The summary's login throttling counts (the package counts them since de7c72f)."""
    if "login_refusals" not in r:
        return "n/a"
    return f"{r['login_refusals']} / {r['login_retried']} / {r['login_slowed']}"


def _workers(runner: str, in_flight: int) -> dict[str, int]:
    """``in_flight`` hosts at once: shared out over a process runner's processes."""
    if runner in PROCESS_RUNNERS:
        procs = min(os.cpu_count() or 1, in_flight)
        return {"num_workers": math.ceil(in_flight / procs), "num_procs": procs}
    return {"num_workers": in_flight}


def _fleet_run(spec: dict[str, Any]) -> dict[str, Any]:
    """--one fleet: one runner, one recipe, one nr.run of COMMAND, in this fresh process."""

    from nornir_bench.tasks import asend_command, send_command

    runner = spec["runner"]
    nr = _nornir(spec)
    task = send_command if runner == "threadpool" else asend_command
    cpu = resource.getrusage(resource.RUSAGE_SELF)
    began = time.perf_counter()
    try:
        result = nr.run(task=task, command=COMMAND)
        wall = time.perf_counter() - began
        closing = time.perf_counter()
        nr.close_connections()
    finally:
        close = getattr(nr.runner, "close", None)
        if callable(close):
            close()
    closed = time.perf_counter() - closing
    used = resource.getrusage(resource.RUSAGE_SELF)
    failures: dict[str, dict[str, Any]] = {}
    odd = 0
    for multi in result.values():
        if not multi.failed:
            odd += "Neighbor" not in str(multi[0].result)
            continue
        error = next((r.exception for r in multi if r.exception is not None), None)
        kind = _kind(multi, error)
        entry = failures.setdefault(kind, {"count": 0, "sample": str(error)[:300]})
        entry["count"] += 1
    figures: dict[str, Any] = {
        "ok": len(result) - len(result.failed_hosts), "failed": len(result.failed_hosts),
        "wall": wall, "close": closed, "failures": failures, "odd": odd,
        "cpu": used.ru_utime + used.ru_stime - cpu.ru_utime - cpu.ru_stime,
    }
    with contextlib.suppress(Exception):  # the package's own count, if it loads
        from nornir_bench.bench.summary import summarize

        summary = summarize(result)
        figures["retried"] = summary.retried
        for key in ("login_refusals", "login_retried", "login_slowed"):  # since de7c72f
            if hasattr(summary, key):
                figures[key] = getattr(summary, key)
    return figures


def _nornir(spec: dict[str, Any]) -> Any:
    """A ``--one`` run's Nornir: the inventory folder and runner of ``spec``, the open-files
    limit raised to the hard one (a host in flight holds a socket or more)."""
    from nornir import InitNornir

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    folder = Path(spec["inventory"])
    return InitNornir(
        inventory={"plugin": "SimpleInventory", "options": {
            "host_file": str(folder / "hosts.yaml"), "group_file": str(folder / "groups.yaml"),
            "defaults_file": str(folder / "defaults.yaml")}},
        runner={"plugin": spec["runner"], "options": spec["options"]},
        logging={"enabled": False},
    )


def _kind(multi: Any, error: BaseException | None) -> str:
    """The failure's type name, as the package's summary names it when it loads."""
    try:
        from nornir_bench.core.failures import failure_kind, failure_of

        return str(failure_kind(failure_of(multi)))
    except Exception:  # noqa: BLE001 - another engineer's module, being edited: the type name
        return type(error).__name__ if error is not None else "unknown"


# -- processes ---------------------------------------------------------------------------------


def _one(spec: dict[str, Any]) -> dict[str, Any]:
    if spec["part"] == "logins":
        return _logins_client(spec)
    if spec["part"] == "fleet":
        return _fleet_run(spec)
    if spec["part"] == "check":
        return _check_run(spec)
    if spec["part"] == "dead-cli":
        return _dead_cli_run(spec)
    raise SystemExit(f"unknown --one part {spec['part']!r}")


def _run_one(spec: dict[str, Any], seconds: float) -> dict[str, Any]:
    """This script with ``--one SPEC`` in a process (and session) of its own; its JSON line, or
    ``{"error": ...}``. Stopped (SIGINT, then SIGKILL of its process group) on a timeout or
    Ctrl-C."""
    process = subprocess.Popen(
        [sys.executable, __file__, "--one", json.dumps(spec)], stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    try:
        out, err = process.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        _end(process)
        return {"error": f"not done within {seconds:g} s: stopped"}
    except BaseException:
        _end(process)
        raise
    for line in reversed(out.splitlines()):
        if line.startswith("{"):
            figures: dict[str, Any] = json.loads(line)
            return figures
    said = (err.strip().splitlines() or [f"exit {process.returncode}"])[-1]
    return {"error": f"exit {process.returncode}: {said[:200]}"}


def _end(process: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):
        process.send_signal(signal.SIGINT)
    try:
        process.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # its own session: it and its workers
        process.communicate()


def _stop_on_sigterm() -> None:
    """SIGTERM and SIGINT stop this script as Ctrl-C does: every lab and run it started is
    stopped."""
    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)
    # started in the background by a shell without job control, SIGINT comes ignored: take it
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _failures_text(failures: dict[str, dict[str, Any]]) -> str:
    if not failures:
        return "none"
    ordered = sorted(failures.items(), key=lambda kv: -kv[1]["count"])
    return "; ".join(f"{kind} {f['count']} (\"{_short(f['sample'])}\")" for kind, f in ordered)


def _short(message: str, width: int = 90) -> str:
    """A failure's message on one line, without the boilerplate netmiko wraps around it."""
    text = " ".join(message.replace("|", "/").split())
    text = text.replace("A paramiko SSHException occurred during connection creation: ", "")
    return text if len(text) <= width else text[: width - 3] + "..."


def _git_commit() -> str:
    done = subprocess.run(["git", "log", "-1", "--format=%h"], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parent, check=False)
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "nornir_bench"],
                           capture_output=True, text=True, cwd=Path(__file__).resolve().parents[1],
                           check=False)
    commit = done.stdout.strip() or "unknown"
    return commit + (" (+ uncommitted changes in nornir_bench/)" if dirty.stdout.strip() else "")


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def run_script(main: Callable[[], int], interrupted: str) -> NoReturn:
    """``main``'s exit status, with scrapli's warning about its asyncssh transport silenced
    here and in every run it starts; Ctrl-C says ``interrupted`` and exits 130."""
    os.environ["PYTHONWARNINGS"] = ",".join(
        filter(None, [os.environ.get("PYTHONWARNINGS"), QUIET_SCRAPLI])
    )
    warnings.filterwarnings("ignore", category=UserWarning, module="scrapli.helper")
    quiet_library_deprecations()
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print(f"interrupted: {interrupted}", file=sys.stderr)
        sys.exit(130)


if __name__ == "__main__":
    run_script(main, "every lab and run this script started is stopped")
