#!/usr/bin/env python3
"""Connections kept across runs: logins per multi-step workflow, and processpool's kept workers.

    python scripts/bench_connections.py [--part lab|synthetic|both] [--devices 20]
                                        [--hosts 10000] [--rtt 0.05] [--repeat 3] [--quick]
                                        [--record PATH]
    python scripts/bench_connections.py --part scrapli --before DIR [--devices 20] [--repeat 3]

**lab**: a three-step workflow (``show version``, ``show clock``, ``show interfaces``: three
``nr.run`` calls on one ``Nornir``) on ``--devices`` FakeNOS devices (``nornir-bench lab``, in a
process of its own), for each runner and task: asyncio + ``asend_command``, threadpool +
``send_command`` (netmiko), processpool + each. Two modes: **kept** (connections kept across the
steps, as nornir keeps them, closed once at the end) and **reconnect** (``nr.close_connections()``
after every step: a login per step, what the async runners did before connections outlived a
run). Logins are counted at the device side: a TCP proxy in a process of its own
(:mod:`harness.children.proxy`) stands in front of each device and counts the connections it
accepts. Prints logins and wall time (the
three steps and the final close) per mode, medians over ``--repeat``, and the share of that
wall spent checking kept connections before each host's task (``core.liveness``, timed where
hosts run in this process: asyncio and threadpool).

**synthetic**: three ``nr.run(task=asim_rtt, rtt=RTT)`` in a row on ``--hosts`` synthetic hosts,
one ``Nornir``: the asyncio runner, processpool keeping its workers (the default) and processpool
with ``keep_workers=False``. Prints each run's wall time (medians), processpool's ratio to the
asyncio runner per run (the target: runs 2 and 3 at most 1.2x), and the worker processes left
after the runs and after ``nr.runner.close()``.

**scrapli** (``--part scrapli --before DIR``): ``asend_command`` on scrapli against the code
before it, a checkout of nornir-bench whose ``asend_command`` is its own asyncssh session
(``git worktree add --detach DIR <commit>``): three steps (a privileged command, two more; see
``PLATFORM_STEPS``) on ``--devices`` FakeNOS devices with sessions kept, on the asyncio runner
(:mod:`harness.children.connection_steps`),
once on a mix of every lab platform scrapli reads (cisco_ios, arista_eos, cisco_nxos,
juniper_junos) and once on each alone. Each run is a process of its own with ``PYTHONPATH`` at
the code it measures (this checkout, or ``DIR``), the two taking turns against one lab. Prints
the wall time of the three steps and the close, of the first step (logins) and of steps 2-3
(kept sessions), the client's CPU, logins per device, and after / before, medians over
``--repeat``.

Everything talks to 127.0.0.1 only; the lab, the proxy and the workers are stopped on success,
error and Ctrl-C. ``--quick``: 2 devices (asyncio + ``asend_command`` and processpool +
``send_command``), 200 synthetic hosts, 1 repeat.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any
from unittest.mock import patch

import harness
from harness.child import ROOT, ChildFailed, run_child
from harness.children.connection_steps import PLATFORM_STEPS
from harness.fleets import close, simple, synthetic
from harness.servers import counting_proxy, device_lab
from nornir_bench.lab import write_inventory

STEPS = (
    {"command": "show version", "enable": True},
    {"command": "show clock"},
    {"command": "show interfaces"},
)
LAB_RUNS = (
    ("asyncio", "asend_command"),
    ("threadpool", "send_command"),
    ("processpool", "send_command"),
    ("processpool", "asend_command"),
)
QUICK_LAB_RUNS = (("asyncio", "asend_command"), ("processpool", "send_command"))
CHILD_SECONDS = 600.0

PARSER = harness.parser(__doc__)
PARSER.add_argument("--part", choices=("lab", "synthetic", "both", "scrapli"), default="both")
PARSER.add_argument("--before", type=Path, help="--part scrapli: a checkout of the code before")
PARSER.add_argument("--devices", type=harness.whole(), help="FakeNOS devices (default 20; quick 2)")
PARSER.add_argument("--hosts", type=harness.whole(), help="synthetic hosts (10,000; quick 200)")
PARSER.add_argument("--rtt", type=harness.number(), default=0.05,
                    help="asim_rtt's round trip (0.05)")
PARSER.add_argument("--repeat", type=harness.whole(), help="repetitions, medians (3; quick 1)")


def main(bench: harness.Bench) -> int:
    args, quick = bench.args, bench.quick
    devices = args.devices or (2 if quick else 20)
    hosts = args.hosts or (200 if quick else 10_000)
    repeat = args.repeat or (1 if quick else 3)
    if args.part == "scrapli":
        if args.before is None or not (args.before / "nornir_bench").is_dir():
            PARSER.error("--part scrapli needs --before DIR, a checkout of nornir-bench")
        scrapli_part(bench, args.before.resolve(), devices, repeat)
        return 0
    if args.part in ("lab", "both"):
        lab_part(bench, devices, repeat, QUICK_LAB_RUNS if quick else LAB_RUNS)
    if args.part in ("synthetic", "both"):
        synthetic_part(bench, hosts, args.rtt, repeat)
    return 0


# -- the lab -------------------------------------------------------------------------------


def lab_part(bench: harness.Bench, devices: int, repeat: int,
             pairs: tuple[tuple[str, str], ...]) -> None:
    with tempfile.TemporaryDirectory() as folder, \
            device_lab(Path(folder) / "lab", devices) as lab, \
            counting_proxy([device.port for device in lab]) as proxy:
        proxied = Path(folder) / "proxied"
        write_inventory([replace(d, port=p) for d, p in zip(lab, proxy.ports, strict=True)],
                        proxied)
        rows = []
        for runner, task in pairs:

            def steps(mode: str, runner: str = runner, task: str = task
                      ) -> tuple[int, float, float]:
                before = proxy.accepted()
                wall, checked = _three_steps(proxied, runner, task, reconnect=mode == "reconnect")
                return proxy.accepted() - before, wall, checked

            timed = harness.alternate({mode: partial(steps, mode)
                                       for mode in ("kept", "reconnect")}, repeat)
            kept = harness.Spread.of(w for _, w, _ in timed["kept"]).median
            again = harness.Spread.of(w for _, w, _ in timed["reconnect"]).median
            for mode, runs in timed.items():
                logins = sorted({n for n, _, _ in runs})
                wall = harness.Spread.of(w for _, w, _ in runs).median
                ratio = f"{again / kept:.2f}" if mode == "reconnect" else ""
                checks = harness.Spread.of(c / w for _, w, c in runs).median
                share = "in workers" if runner == "processpool" else f"{100 * checks:.3f} %"
                rows.append((runner, task, mode, devices, logins, wall, ratio, share))
                bench.record({"runs": runs}, part="lab", runner=runner, task=task, mode=mode,
                             devices=devices)
    print(f"\n### Three steps on {devices} FakeNOS devices (medians of {repeat})\n")
    print("| runner | task | mode | hosts | logins | wall s | reconnect / kept "
          "| liveness checks / wall |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for runner, task, mode, hosts, logins, wall, ratio, share in rows:
        shown = ", ".join(str(n) for n in logins)
        print(f"| {runner} | {task} | {mode} | {hosts} | {shown} | {wall:.3f} | {ratio} "
              f"| {share} |")


@contextmanager
def _timing_liveness() -> Iterator[list[float]]:
    """Time every liveness check the core makes in this process (core.liveness, before each
    host's task; the runners that run hosts here, asyncio and threadpool, not processpool's
    workers): the seconds of each, in the list yielded."""
    from nornir_bench.core import execution
    from nornir_bench.core.liveness import drop_dead_connections

    spent: list[float] = []

    def timed(host: Any) -> None:
        start = time.perf_counter()
        try:
            drop_dead_connections(host)
        finally:
            spent.append(time.perf_counter() - start)

    with patch.object(execution, "drop_dead_connections", timed):
        yield spent


def _three_steps(inventory: Path, runner: str, task_name: str, *,
                 reconnect: bool) -> tuple[float, float]:
    """The wall of three steps and the close, and the seconds of liveness checks in it."""
    from nornir_bench import tasks

    task = getattr(tasks, task_name)
    nr = simple(inventory, runner, num_workers=20)
    start = time.perf_counter()
    try:
        with _timing_liveness() as checked:
            for step in STEPS:
                _succeeded(nr.run(task=task, **step), f"{runner} {task_name} {step['command']}")
                if reconnect:
                    nr.close_connections()
            nr.close_connections()
        return time.perf_counter() - start, sum(checked)
    finally:
        close(nr)


def _succeeded(result: Any, what: str) -> None:
    if result.failed:
        failed = {h: repr(m.exception) for h, m in result.failed_hosts.items()}
        raise SystemExit(f"{what}: failed: {failed}")


# -- asend_command on scrapli against the code before it ------------------------------------

def scrapli_part(bench: harness.Bench, before: Path, devices: int, repeat: int) -> None:
    platforms = list(PLATFORM_STEPS)
    codes = {"before": before, "scrapli": ROOT}
    count = devices * len(platforms)  # each platform's run has devices of its own
    with tempfile.TemporaryDirectory() as folder, \
            device_lab(Path(folder) / "lab", count, platforms) as lab:
        runs = {"every platform": lab[:devices]}
        runs.update({p: [d for d in lab if d.platform == p][:devices] for p in platforms})
        measured: dict[tuple[str, str], list[dict[str, float]]] = {}
        for name, chosen in runs.items():
            inventory = Path(folder) / name.replace(" ", "_")
            write_inventory(chosen, inventory)
            got = harness.alternate({code: partial(_steps_in, path, inventory)
                                     for code, path in codes.items()}, repeat)
            for code in codes:
                measured[(name, code)] = got[code]
    print(f"\n### asend_command, three steps with kept sessions on {devices} FakeNOS devices, "
          f"asyncio runner (medians of {repeat})\n")
    print("| devices | code | logins / device | wall s (3 steps + close) | step 1 s (logins) "
          "| steps 2-3 s | client CPU s | wall scrapli / before |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for name in runs:
        walls = {code: harness.Spread.of(r["wall"] for r in measured[(name, code)]).median
                 for code in codes}
        for code in codes:
            rows = measured[(name, code)]
            med = {key: harness.Spread.of(r[key] for r in rows).median for key in rows[0]}
            ratio = f"{walls['scrapli'] / walls['before']:.2f}" if code == "scrapli" else ""
            print(f"| {name} | {code} | {med['logins'] / devices:g} | {med['wall']:.3f} "
                  f"| {med['first']:.3f} | {med['kept']:.3f} | {med['cpu']:.2f} | {ratio} |")
            bench.record({"runs": rows}, part="scrapli", devices=name, code=code)


def _steps_in(code: Path, inventory: Path) -> dict[str, float]:
    """One measured run in a process of its own, importing nornir_bench from ``code``."""
    try:
        figures: dict[str, float] = run_child("harness.children.connection_steps",
                                              {"inventory": str(inventory)},
                                              timeout=CHILD_SECONDS, tree=code)
    except ChildFailed as exc:
        raise SystemExit(f"a run with {code} failed: {exc}") from None
    return figures


# -- the synthetic fleet -------------------------------------------------------------------


def synthetic_part(bench: harness.Bench, hosts: int, rtt: float, repeat: int) -> None:
    configurations: dict[str, tuple[str, dict[str, Any]]] = {
        "asyncio": ("asyncio", {"num_workers": hosts}),
        "processpool, kept workers": ("processpool", {"num_workers": max(1, hosts // 2)}),
        "processpool, keep_workers=False": (
            "processpool", {"num_workers": max(1, hosts // 2), "keep_workers": False}
        ),
    }
    got = harness.alternate({name: partial(_three_runs, runner, options, hosts, rtt)
                             for name, (runner, options) in configurations.items()}, repeat)
    walls = {name: [runs for runs, _, _ in results] for name, results in got.items()}
    left = {name: results[-1][1:] for name, results in got.items()}
    medians = {name: [harness.Spread.of(r[i] for r in runs).median for i in range(3)]
               for name, runs in walls.items()}
    base = medians["asyncio"]
    print(f"\n### Three runs of asim_rtt (rtt {rtt:g} s) on {hosts:,} synthetic hosts "
          f"(medians of {repeat})\n")
    print("| runner | run 1 s | run 2 s | run 3 s | run 2 / asyncio | run 3 / asyncio "
          "| workers after the runs | after close |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, (one, two, three) in medians.items():
        after, closed = left[name]
        print(f"| {name} | {one:.3f} | {two:.3f} | {three:.3f} | {two / base[1]:.2f} "
              f"| {three / base[2]:.2f} | {after} | {closed} |")
        bench.record({"walls": walls[name], "left": after, "after_close": closed},
                     part="synthetic", configuration=name, hosts=hosts, rtt=rtt)


def _three_runs(
    runner: str, options: dict[str, Any], hosts: int, rtt: float
) -> tuple[list[float], int, int]:
    from nornir_bench.tasks import asim_rtt

    nr = synthetic(runner, hosts, lean=True, **options)
    walls = []
    try:
        for _ in range(3):
            start = time.perf_counter()
            result = nr.run(task=asim_rtt, rtt=rtt)
            walls.append(time.perf_counter() - start)
            if result.failed:
                raise SystemExit(f"{runner}: {len(result.failed_hosts)} hosts failed")
        after = len(getattr(nr.runner, "worker_pids", []))
    finally:
        close(nr)
    return walls, after, len(getattr(nr.runner, "worker_pids", []))


if __name__ == "__main__":
    harness.run_script(main, PARSER, interrupted="the lab, the proxy and every run this script "
                       "started are stopped")
