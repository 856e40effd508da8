"""--lab-times: the ``nornir-bench lab --routers N`` command timed, as a user runs it: from its
start to its ``lab ready:`` line, from SIGINT to its exit; what it left after each stop; and
the stale path (a lab SIGKILLed once ready, another of its name started at once)."""

from __future__ import annotations

import json
import math
import os
import pwd
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import harness
from harness.jobs import nornir_bench
from harness.lab import frr_pids, lab_name
from harness.processes import Started
from harness.records import load_text
from nornir_bench.lab.ports import free_port_range
from routers.leftovers import STATE_FOLDER, Leftovers, left_of, leftovers

__all__ = ["LabProcess", "lab_times_part"]

TARGETS = {"ready": 15.0, "stopped": 5.0}
READY_SECONDS = 120.0  # for a lab to say "lab ready:" (it gives up itself after 60 s)
STOP_SECONDS = 30.0  # for a lab to exit after SIGINT, before it is killed (its guard cleans)


class LabProcess:
    """``nornir-bench lab --routers N`` in a process (and session) of its own: started until
    its ``lab ready:`` line, stopped by SIGINT (killed after STOP_SECONDS)."""

    def __init__(self, routers: int, name: str, write: Path) -> None:
        self.routers, self.name, self.write = routers, name, write
        self.base = free_port_range(routers)
        self.running: Started | None = None
        self.ready_after = math.nan  # seconds from the process's start to "lab ready:"
        self.ready_said = math.nan  # the "in X.X s" of that line
        self.stopped_said = math.nan  # the "removed in X.X s" of "lab stopped:"
        self.state: dict[str, Any] = {}
        self.uid = -1

    def start(self) -> None:
        command = nornir_bench("lab", "--routers", str(self.routers), "--name", self.name,
                               "--port", str(self.base), "--write", str(self.write))
        began = time.perf_counter()
        self.running = Started(subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, start_new_session=True,  # Ctrl-C in the terminal reaches this script only
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        ))
        when, line = self.running.wait_line(lambda text: text.startswith("lab ready:"),
                                            READY_SECONDS)
        self.ready_after = when - began
        self.ready_said = _seconds_in(line, " in ")
        self.state = json.loads((STATE_FOLDER / f"{self.name}.json").read_text())
        self.uid = pwd.getpwnam(f"nbl-{self.name}").pw_uid

    @property
    def pid(self) -> int:
        return -1 if self.running is None else self.running.pid

    def stop(self) -> float:
        """SIGINT, and the seconds until the process ended (nan if it was not running)."""
        if self.running is None or self.running.process.poll() is not None:
            return math.nan
        process = self.running.process
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
        for line in reversed(self.running.said):
            if line.startswith("lab stopped:"):
                self.stopped_said = _seconds_in(line, " in ")
                break
        return took

    def kill(self) -> None:
        assert self.running is not None
        self.running.process.kill()
        self.running.process.wait()


@contextmanager
def _stopping(lab: LabProcess) -> Iterator[None]:
    """On an error or Ctrl-C inside, the lab is stopped (on success, the caller times it)."""
    try:
        yield
    except BaseException:
        lab.stop()
        raise


def _seconds_in(line: str, before: str) -> float:
    try:
        return float(line.rsplit(before, 1)[1].split()[0])
    except (IndexError, ValueError):
        return math.nan


def lab_times_part(bench: harness.Bench, routers: int, repeat: int) -> None:
    name = lab_name("br")
    print(f"\n### Lab start and stop: {routers} routers (chain), lab {name}, {repeat} times "
          f"(load {load_text()})\n")
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-routers-") as folder:
        for k in range(repeat):
            lab = LabProcess(routers, name, Path(folder) / f"inventory{k}")
            with _stopping(lab):
                lab.start()
                uids, workdirs = {lab.uid}, {str(lab.state.get("workdir", ""))}
            stopped = lab.stop()
            left = leftovers(name, uids, workdirs)
            rows.append((f"run {k + 1}", lab.ready_after, lab.ready_said, stopped,
                         lab.stopped_said, left))
            bench.record({"ready": lab.ready_after, "stopped": stopped, "left": left.count},
                         part="lab-times", routers=routers)
        stale = _stale_run(routers, name, Path(folder))
    print("| run | ready s (process start to `lab ready:`) | lab's own `in` s | stopped s "
          "(SIGINT to exit) | lab's own `removed in` s | left after stop |")
    print("|---|---:|---:|---:|---:|---|")
    for label, up, up_said, down, down_said, left in rows:
        print(f"| {label} | {up:.2f} | {up_said:.1f} | {down:.2f} | {down_said:.1f} "
              f"| {left.said()} |")
    ready = [r[1] for r in rows]
    stops = [r[3] for r in rows if not math.isnan(r[3])]
    most = max(r[5].count for r in rows)
    print()
    print("| measure | median | min | max | target |")
    print("|---|---:|---:|---:|---|")
    print(f"| ready s | {harness.Spread.of(ready).cells()} | <= {TARGETS['ready']:g} s "
          f"({'met' if max(ready) <= TARGETS['ready'] else 'NOT met'}) |")
    if stops:
        print(f"| stopped s | {harness.Spread.of(stops).cells()} | <= {TARGETS['stopped']:g} s "
              f"({'met' if max(stops) <= TARGETS['stopped'] else 'NOT met'}) |")
    print(f"| left after stop | {most} (most of any run) | | | 0 "
          f"({'met' if most == 0 else 'NOT met'}) |")
    print()
    print("Stale path: the lab SIGKILLed once ready, a new lab of the same name started at once:")
    print()
    print("| step | s | left |")
    print("|---|---:|---|")
    for label, seconds, found in stale:
        print(f"| {label} | {seconds:.2f} | {'' if found is None else found.said()} |")


def _stale_run(routers: int, name: str, folder: Path) -> list[tuple[str, float, Leftovers | None]]:
    """Kill a ready lab (SIGKILL), start another of its name at once; the steps and leftovers."""
    steps: list[tuple[str, float, Leftovers | None]] = []
    first = LabProcess(routers, name, folder / "stale1")
    with _stopping(first):
        first.start()
        uids, workdirs = {first.uid}, {str(first.state.get("workdir", ""))}
        daemons = frr_pids(name)
        steps.append(("first lab ready", first.ready_after, None))
        began = time.perf_counter()
        first.kill()
        killed = time.perf_counter() - began
    steps.append(("SIGKILL to its exit; left at that moment", killed,
                  leftovers(name, uids, workdirs)))
    second = LabProcess(routers, name, folder / "stale2")
    try:
        with _stopping(second):
            second.start()
            steps.append((f"new lab of the same name, ready (its own: {second.ready_said:.1f} s);"
                          " left of the killed one then", second.ready_after,
                          left_of(name, str(first.state.get("workdir", "")),
                                  int(first.state.get("sshd_pid") or 0), daemons, second.pid)))
            uids.add(second.uid)
            workdirs.add(str(second.state.get("workdir", "")))
    except SystemExit as exc:  # what the race with the killed lab's guard did, reported
        steps.append((f"new lab of the same name did NOT start: {exc}", math.nan, None))
    stopped = second.stop()
    steps.append((f"new lab stopped (its own: {second.stopped_said:.1f} s); left", stopped,
                  leftovers(name, uids, workdirs)))
    return steps
