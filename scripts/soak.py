#!/usr/bin/env python3
"""A soak: the runner suites round after round under a CPU load, counting hangs and leftovers.

    python scripts/soak.py [--rounds 20] [--busy 2] [--runners threadpool,asyncio,...]
                           [--tests conformance,connections,stopping] [-k EXPR] [--timeout 1800]
                           [--quick] [--record PATH]

Each round is one pytest process (a process group of its own) on the chosen suites:
conformance, connections kept across runs, stopping on Ctrl-C and SIGTERM; ``--busy`` processes
spin on the CPU meanwhile. A test is its runner's when its parameter id starts with the name
(``[asyncio-uvloop-sync]``), else when its name has it as a word (``test_a_dask_worker_...``),
else ``other``'s. Tests are picked by id from one collection (``-k asyncio`` would take
asyncio-uvloop's cases too, ``-k threaded`` all of ``test_results_equal_nornirs_threaded``);
``-k`` narrows further.

Outcomes come from pytest's JUnit XML. A *hang*: a test failed by pytest-timeout or by the hang
guard (tests/waiting.py), or a round still running at ``--timeout`` (stopped as by Ctrl-C, its
process group killed a minute later); other failures and errors are *failures*. *Leftovers*:
the round's processes alive after it (this script is their subreaper: they become its
children, killed once counted), ``nornir-bench-*`` entries new in the rounds' ``TMPDIR`` (the
soak's own folder), network namespaces new since the soak started, but for those of a router
lab whose owner still runs once the round's processes are killed (another session's lab).

Prints a line per round, then ``rounds R, tests T, failures F, hangs H, leftovers L`` and the
tests that failed or hung, with how often. Ctrl-C or SIGTERM kills the round in flight and the
busy processes and sums up the rounds done. Exit status: 0 no failure, hang or leftover, 1
some, 2 bad usage, 130 Ctrl-C, 143 SIGTERM. Linux only (``/proc``, ``prctl``); the rounds import
this checkout's package. ``--quick``: one round of the conformance suite's ``no_hosts`` tests on
threadpool, no busy process (options given override it).
"""

from __future__ import annotations

import argparse
import ctypes
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections import Counter
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import NoReturn

import harness
from harness.child import ROOT, child_command, child_env
from harness.records import Records
from nornir_bench.lab import live_lab_namespaces

SUITES = {
    "conformance": "tests/runners/test_conformance.py",
    "connections": "tests/runners/test_connections.py",
    "stopping": "tests/core/test_stopping.py",
}
RUNNERS = ("threadpool", "asyncio", "asyncio-uvloop", "processpool", "dask", "threaded", "serial")
OTHER = "other"  # tests whose id names no runner
HANG = re.compile(r"hang guard:|Failed: Timeout \(?>")  # tests/waiting.py; pytest-timeout
STOP_GRACE = 60.0  # a round past its timeout: seconds to end as by Ctrl-C, then killed
LEFTOVER_GRACE = 10.0  # a process still ending as the round ends (its parent gone) is no leftover
KILL_WAIT = 10.0  # a process sent SIGKILL is gone within this, unless stuck in the kernel
PR_SET_CHILD_SUBREAPER = 36


class Terminated(Exception):
    """SIGTERM, stopping the soak as Ctrl-C does."""


class UsageError(Exception):
    """Options that select nothing, or a ``-k`` pytest refuses: one line, exit status 2."""


@dataclass
class Round:
    """What one round gave: tests by outcome (id and first line of the message), leftovers."""

    passed: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    hangs: list[tuple[str, str]] = field(default_factory=list)
    tests: int = 0
    leftovers: list[str] = field(default_factory=list)
    seconds: float = 0.0


def names(text: str, allowed: tuple[str, ...], what: str) -> list[str]:
    chosen = [name for name in text.split(",") if name]
    unknown = [name for name in chosen if name not in allowed]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(f"{what} must be among {','.join(allowed)}, got {text!r}")
    return list(dict.fromkeys(chosen))


def seconds(text: str) -> float:
    value = float(text) if re.fullmatch(r"\d+\.?\d*|\.\d+", text) else 0.0
    if not value:
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0, got {text!r}")
    return value


def runner_of(node_id: str) -> str:
    """The runner a test id names: its parameter id's first part, else a word of its name."""
    name, _, params = node_id.partition("[")
    for runner in sorted(RUNNERS, key=len, reverse=True):  # asyncio-uvloop before asyncio
        if params == f"{runner}]" or params.startswith(f"{runner}-"):
            return runner
    words = name.rpartition("::")[2].split("_")
    return next((runner for runner in RUNNERS if runner in words), OTHER)


def junit_key(node_id: str) -> tuple[str, str]:
    """The (classname, name) pytest's JUnit XML gives the test ``node_id``."""
    path, *parts = node_id.split("::")
    return ".".join([path.removesuffix(".py").replace("/", "."), *parts[:-1]]), parts[-1]


def collect(suites: list[str], runners: list[str], keyword: str | None) -> list[str]:
    """The ids of the tests of ``suites`` on ``runners`` (and matching ``keyword``)."""
    command = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
               "-n", "0"]
    done = subprocess.run(
        [*command, *(["-k", keyword] if keyword else []), *(SUITES[s] for s in suites)],
        cwd=ROOT, env=round_env(None), capture_output=True, text=True, timeout=300,
    )
    lines = (done.stdout + done.stderr).splitlines()
    if done.returncode == 4:  # usage: a -k expression pytest cannot read
        error = next((ln for ln in lines if ln.startswith("ERROR: ")), "ERROR: bad options")
        raise UsageError(error.removeprefix("ERROR: "))
    if done.returncode not in (0, 5):  # 5: no test matches -k
        sys.exit(f"soak.py: collecting the tests failed:\n{done.stdout[-3000:]}{done.stderr}")
    ids = [node_id for node_id in done.stdout.splitlines() if "::" in node_id]
    chosen = [node_id for node_id in ids if runner_of(node_id) in runners]
    if not chosen:
        matching = f" matches -k {keyword!r}" if keyword else ""
        raise UsageError(f"no test of {','.join(suites)} on {','.join(runners)}{matching}")
    return chosen


def round_env(tmp: Path | None) -> dict[str, str]:
    """The rounds import this checkout's package, and make their temporary files in ``tmp``."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, **({"TMPDIR": str(tmp)} if tmp else {})}


def descendants(spare: set[int]) -> list[int]:
    """This process's live descendants but ``spare``, from /proc; its zombie children reaped."""
    table = {}  # pid: (parent, state)
    for entry in filter(str.isdigit, os.listdir("/proc")):
        with suppress(OSError):  # ended since listed
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            table[int(entry)] = (int(fields[1]), fields[0])
    found: set[int] = set()
    frontier = {os.getpid()}
    while frontier:
        frontier = {pid for pid, (parent, _) in table.items() if parent in frontier} - found
        found |= frontier
    for pid in found - spare:
        if table[pid] == (os.getpid(), "Z"):
            with suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
    return sorted(pid for pid in found - spare if table[pid][1] != "Z")


def command_line(pid: int) -> str:
    with suppress(OSError):
        text = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        line = " ".join(text.replace("\0", " ").split())
        return line if len(line) <= 100 else line[:97] + "..."
    return "(gone)"


def kill_all(pids: list[int], spare: set[int]) -> None:
    """SIGKILL to each of ``pids``; returns once they are gone (or :data:`KILL_WAIT` passed)."""
    for pid in pids:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    ends = time.monotonic() + KILL_WAIT
    while set(descendants(spare)) & set(pids) and time.monotonic() < ends:
        time.sleep(0.05)


def leftover_processes(spare: set[int]) -> list[str]:
    """The round's processes still alive :data:`LEFTOVER_GRACE` after it: described, killed."""
    ends = time.monotonic() + LEFTOVER_GRACE
    while (left := descendants(spare)) and time.monotonic() < ends:
        time.sleep(0.1)
    described = [f"process {pid}: {command_line(pid)}" for pid in left]
    kill_all(left, spare)
    return described


def namespaces() -> set[str]:
    """The network namespaces ``ip netns list`` shows (none if ``ip`` cannot say)."""
    try:
        done = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return set()
    return {line.split()[0] for line in done.stdout.splitlines() if line.strip()}


def read_report(xml: Path, ids: list[str], result: Round) -> bool:
    """The tests' outcomes from pytest's JUnit XML into ``result``; False if there is none."""
    try:
        cases = list(ElementTree.parse(xml).getroot().iter("testcase"))
    except (OSError, ElementTree.ParseError):
        return False
    by_key = {junit_key(node_id): node_id for node_id in ids}
    outcomes: dict[str, tuple[int, str]] = {}  # a test twice (call and teardown): the worse
    for case in cases:
        classname, name = case.get("classname", ""), case.get("name", "")
        if not name:  # what pytest writes for the test Ctrl-C interrupted
            continue
        test = by_key.get((classname, name), f"{classname}::{name}")
        worst = (1 if case.find("skipped") is not None else 0, "")
        for problem in (*case.findall("failure"), *case.findall("error")):
            message = problem.get("message", "")
            hung = HANG.search(f"{message}\n{problem.text or ''}") is not None
            worst = max(worst, (3 if hung else 2, message.splitlines()[0] if message else ""))
        outcomes[test] = max(outcomes.get(test, worst), worst)
    for test, (outcome, message) in outcomes.items():
        result.passed += outcome == 0
        if outcome >= 2:
            (result.hangs if outcome == 3 else result.failed).append((test, message))
    result.tests += len(outcomes)
    return True


def running_test(log: Path) -> tuple[str, str]:
    """The test pytest -v is at (its last line): running, or past its outcome (its teardown)."""
    last = log.read_text(errors="replace").rstrip().rpartition("\n")[2]
    if "::" not in last:
        return "pytest", "before or after its tests"
    return last.split()[0], "after its outcome" if last.endswith("%]") else "running"


def stop(pytest: subprocess.Popen[bytes], grace: float) -> None:
    """pytest stopped as by Ctrl-C (fixtures torn down, report written), then its group killed."""
    if grace > 0 and pytest.poll() is None:
        pytest.send_signal(signal.SIGINT)
        with suppress(subprocess.TimeoutExpired):
            pytest.wait(grace)
    with suppress(ProcessLookupError):
        os.killpg(pytest.pid, signal.SIGKILL)  # what of the group outlived pytest, too
    with suppress(subprocess.TimeoutExpired):  # stuck in the kernel: a leftover
        pytest.wait(KILL_WAIT)


def run_round(number: int, ids: list[str], work: Path, timeout: float, spare: set[int]) -> Round:
    """One pytest on ``ids``, then what it left; the round killed if this is interrupted."""
    tmp, xml, log = work / "tmp", work / f"round-{number}.xml", work / f"round-{number}.log"
    before = set(tmp.glob("nornir-bench-*"))
    result, started = Round(), time.monotonic()
    # In one process (-n 0, over the suite's own -n): a round's tests, its busy processes
    # and its leftovers are this process's.
    command = [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-n", "0",
               f"--junitxml={xml}", *ids]
    with log.open("wb") as out:
        pytest = subprocess.Popen(command, cwd=ROOT, env=round_env(tmp), stdout=out,
                                  stderr=subprocess.STDOUT, start_new_session=True)
    stopped = False
    try:
        pytest.wait(timeout)
    except subprocess.TimeoutExpired:
        test, state = running_test(log)
        result.hangs.append((test, f"{state} when the round reached {timeout:g} s: stopped"))
        result.tests += state == "running"
        stopped = True
        stop(pytest, STOP_GRACE)
    finally:
        if pytest.poll() is None:  # interrupted: no grace, the soak is stopping
            stop(pytest, 0)
    result.seconds = time.monotonic() - started
    reported = read_report(xml, ids, result)
    if not stopped and (not reported or pytest.returncode not in (0, 1)):
        why = f"exit status {pytest.returncode}" + ("" if reported else ", no JUnit XML")
        result.failed.append(("pytest", why))
    result.leftovers += leftover_processes(spare)
    new = sorted(set(tmp.glob("nornir-bench-*")) - before)
    result.leftovers += [f"temporary {path.name}" for path in new]
    return result


@dataclass
class Soak:
    """The rounds so far, summed up."""

    rounds: list[Round] = field(default_factory=list)
    netns_seen: set[str] = field(default_factory=namespaces)

    def add(self, number: int, of: int, runners: str, result: Round) -> None:
        now = namespaces()
        others = now & live_lab_namespaces()  # a lab another session runs, not this round's
        new = now - self.netns_seen - others  # each namespace counted once, by its round
        self.netns_seen |= new | others
        result.leftovers += [f"network namespace {name}" for name in sorted(new)]
        self.rounds.append(result)
        print(f"round {number}/{of} {runners}: passed {result.passed}, failed "
              f"{len(result.failed)}, hangs {len(result.hangs)}, leftovers "
              f"{len(result.leftovers)}, {result.seconds:.0f} s")
        details = [("hang", *h) for h in result.hangs] + [("failed", *f) for f in result.failed]
        print("".join(f"  {kind}: {test}: {why[:200]}\n" for kind, test, why in details)
              + "".join(f"  left: {leftover}\n" for leftover in result.leftovers), end="",
              flush=True)

    def clean(self) -> bool:
        return not any(r.failed or r.hangs or r.leftovers for r in self.rounds)

    def summary(self) -> None:
        rounds = self.rounds
        print(f"rounds {len(rounds)}, tests {sum(r.tests for r in rounds)}, failures "
              f"{sum(len(r.failed) for r in rounds)}, hangs {sum(len(r.hangs) for r in rounds)}, "
              f"leftovers {sum(len(r.leftovers) for r in rounds)}")
        hangs = Counter(test for r in rounds for test, _ in r.hangs)
        failed = Counter(test for r in rounds for test, _ in r.failed)
        for kind, counts in (("hang", hangs), ("failed", failed)):
            print("".join(f"  {n}x {kind}: {test}\n" for test, n in counts.most_common()), end="")


def parse_arguments() -> argparse.Namespace:
    parser = harness.parser(__doc__)
    parser.add_argument("--rounds", type=harness.whole(1))
    parser.add_argument("--busy", type=harness.whole(0), help="busy processes (CPU load)")
    parser.add_argument("--runners", type=lambda t: names(t, (*RUNNERS, OTHER), "runners"),
                        help="comma-separated; default all")
    parser.add_argument("--tests", type=lambda t: names(t, tuple(SUITES), "tests"),
                        help="suites, comma-separated; default all")
    parser.add_argument("-k", dest="keyword", help="a pytest -k expression, narrowing further")
    parser.add_argument("--timeout", type=seconds, default=1800.0,
                        help="seconds a round may take before it counts as a hang")
    args = parser.parse_args()
    quick = args.quick
    args.rounds = args.rounds or (1 if quick else 20)
    args.busy = args.busy if args.busy is not None else (0 if quick else 2)
    args.runners = args.runners or (["threadpool"] if quick else [*RUNNERS, OTHER])
    args.tests = args.tests or (["conformance"] if quick else list(SUITES))
    args.keyword = args.keyword or ("no_hosts" if quick else None)
    return args


def on_sigterm(signum: int, frame: FrameType | None) -> NoReturn:
    raise Terminated


def main() -> int:
    args = parse_arguments()
    # Also when started in the background, where a shell leaves SIGINT ignored.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, on_sigterm)
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        sys.exit(f"soak.py: cannot become a subreaper: {os.strerror(ctypes.get_errno())}")
    records = Records("soak", args.record)
    work = Path(tempfile.mkdtemp(prefix="soak-"))
    (work / "tmp").mkdir()
    soak, status, where = Soak(), 0, "before the first round"
    busy: list[subprocess.Popen[bytes]] = []
    try:
        ids = collect(args.tests, args.runners, args.keyword)
        runners = ",".join(args.runners)
        print(f"soak: rounds {args.rounds} x tests {len(ids)} ({', '.join(args.tests)}) on "
              f"{runners}; busy processes {args.busy}, cores {os.cpu_count()}; round timeout "
              f"{args.timeout:g} s", flush=True)
        busy += [subprocess.Popen(child_command("harness.children.busy"), env=child_env(),
                                  start_new_session=True)
                 for _ in range(args.busy)]
        spare = {process.pid for process in busy}
        for number in range(1, args.rounds + 1):
            where = f"during round {number}"
            result = run_round(number, ids, work, args.timeout, spare)
            soak.add(number, args.rounds, runners, result)
            records.write({"passed": result.passed, "failed": len(result.failed),
                           "hangs": len(result.hangs), "leftovers": len(result.leftovers),
                           "seconds": result.seconds}, round=number, runners=runners,
                          tests=args.tests, busy=args.busy)
            where = "between rounds"
    except UsageError as exc:
        print(f"soak.py: error: {exc}", file=sys.stderr)
        status = 2
    except (KeyboardInterrupt, Terminated) as exc:
        status = 143 if isinstance(exc, Terminated) else 130
        print(f"stopped by {'SIGTERM' if status == 143 else 'Ctrl-C'} {where}: the summary "
              "counts the rounds done", flush=True)
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the clean-up is bounded: let it end
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        kill_all(descendants(set()), set())  # the busy processes, and a stopped round's
        for process in busy:
            process.poll()  # reaped
        if soak.clean():
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"each round's pytest output and JUnit XML are kept in {work}")
    if status == 2:
        return status
    soak.summary()
    return status or (0 if soak.clean() else 1)


if __name__ == "__main__":
    sys.exit(main())
