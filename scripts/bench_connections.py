#!/usr/bin/env python3
"""Connections kept across runs: logins per multi-step workflow, and processpool's kept workers.

    python scripts/bench_connections.py [--part lab|synthetic|both] [--devices 20]
                                        [--hosts 10000] [--rtt 0.05] [--repeat 3]
    python scripts/bench_connections.py --part scrapli --before DIR [--devices 20] [--repeat 3]

**lab**: a three-step workflow (``show version``, ``show clock``, ``show interfaces``: three
``nr.run`` calls on one ``Nornir``) on ``--devices`` FakeNOS devices (``nornir-bench lab``, in a
process of its own), for each runner and task: asyncio + ``asend_command``, threadpool +
``send_command`` (netmiko), processpool + each. Two modes: **kept** (connections kept across the
steps, as nornir keeps them, closed once at the end) and **reconnect** (``nr.close_connections()``
after every step: a login per step, what the async runners did before connections outlived a
run). Logins are counted at the device side: a TCP proxy in a process of its own stands in
front of each device and counts the connections it accepts. Prints logins and wall time (the
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
``PLATFORM_STEPS``) on ``--devices`` FakeNOS devices with sessions kept, on the asyncio runner,
once on a mix of every lab platform scrapli reads (cisco_ios, arista_eos, cisco_nxos,
juniper_junos) and once on each alone. Each run is a process of its own with ``PYTHONPATH`` at
the code it measures (this checkout, or ``DIR``), the two taking turns against one lab. Prints
the wall time of the three steps and the close, of the first step (logins) and of steps 2-3
(kept sessions), the client's CPU, logins per device, and after / before, medians over
``--repeat``.

Everything talks to 127.0.0.1 only; the lab, the proxy and the workers are stopped on success,
error and Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import queue
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from nornir_bench.core.library_warnings import quiet_library_deprecations
from nornir_bench.lab.ports import free_port_range

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
# The lab's devices have no enable password: scrapli's warning that it sends enable without
# one (auth_secondary), printed once by each process, says nothing here. For this process and
# every process it starts (the lab, the workers, the measured runs).
QUIET_SCRAPLI = "ignore::UserWarning:scrapli.helper"
READY_SECONDS = 60.0  # for the lab or the proxy to say it is ready
STOP_SECONDS = 15.0

PROXY = r"""
import asyncio, json, sys

async def main(targets):
    accepted = 0

    async def pipe(reader, writer):
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except OSError:
            pass
        finally:
            writer.close()

    def serving(target):
        async def serve(reader, writer):
            nonlocal accepted
            accepted += 1
            try:
                up_reader, up_writer = await asyncio.open_connection("127.0.0.1", target)
            except OSError:
                writer.close()
                return
            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        return serve

    servers = [await asyncio.start_server(serving(t), "127.0.0.1", 0) for t in targets]
    print(json.dumps([s.sockets[0].getsockname()[1] for s in servers]), flush=True)
    loop = asyncio.get_running_loop()
    while await loop.run_in_executor(None, sys.stdin.readline):  # a line: how many so far
        print(accepted, flush=True)

try:
    asyncio.run(main([int(p) for p in sys.argv[1:]]))
except (KeyboardInterrupt, RuntimeError):  # stopped by the benchmark, maybe as it was ending
    pass  # (a SIGINT while asyncio.run closes: "Event loop stopped before Future completed")
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=("lab", "synthetic", "both", "scrapli"), default="both")
    parser.add_argument("--before", type=Path, help="--part scrapli: a checkout of the code before")
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)  # a run, in its process
    parser.add_argument("--devices", type=int, default=20, help="FakeNOS devices (default 20)")
    parser.add_argument("--hosts", type=int, default=10_000, help="synthetic hosts (10,000)")
    parser.add_argument("--rtt", type=float, default=0.05, help="asim_rtt's round trip (0.05)")
    parser.add_argument("--repeat", type=int, default=3, help="repetitions, medians (3)")
    args = parser.parse_args()
    if args.measure is not None:
        print(json.dumps(_measure_steps(args.measure)))
        return 0
    if args.part == "scrapli":
        if args.before is None or not (args.before / "nornir_bench").is_dir():
            parser.error("--part scrapli needs --before DIR, a checkout of nornir-bench")
        scrapli_part(args.before.resolve(), args.devices, args.repeat)
        return 0
    if args.part in ("lab", "both"):
        lab_part(args.devices, args.repeat)
    if args.part in ("synthetic", "both"):
        synthetic_part(args.hosts, args.rtt, args.repeat)
    return 0


# -- the lab -------------------------------------------------------------------------------


def lab_part(devices: int, repeat: int) -> None:
    from nornir_bench.lab import load_lab_devices, write_inventory

    with tempfile.TemporaryDirectory() as folder, ExitStack() as stack:
        lab_dir, proxied = Path(folder) / "lab", Path(folder) / "proxied"
        base = free_port_range(devices)
        stack.enter_context(_process(
            [sys.executable, "-m", "nornir_bench", "lab", "--count", str(devices),
             "--platform", "cisco_ios", "--port", str(base), "--write", str(lab_dir)],
            ready=lambda line: line.startswith("lab ready"),
        ))
        lab = load_lab_devices(lab_dir)
        proxy = stack.enter_context(_process(
            [sys.executable, "-c", PROXY, *(str(device.port) for device in lab)],
            ready=lambda line: line.startswith("["),
        ))
        ports = json.loads(proxy.first_line)
        write_inventory([replace(d, port=p) for d, p in zip(lab, ports, strict=True)], proxied)
        rows = []
        for runner, task in LAB_RUNS:
            timed: dict[str, list[tuple[int, float, float]]] = {"kept": [], "reconnect": []}
            for _ in range(repeat):
                for mode in timed:
                    before, CHECKED[0] = proxy.count(), 0.0
                    wall = _three_steps(proxied, runner, task, reconnect=mode == "reconnect")
                    timed[mode].append((proxy.count() - before, wall, CHECKED[0]))
            kept = statistics.median(w for _, w, _ in timed["kept"])
            again = statistics.median(w for _, w, _ in timed["reconnect"])
            for mode, runs in timed.items():
                logins = sorted({n for n, _, _ in runs})
                wall = statistics.median(w for _, w, _ in runs)
                ratio = f"{again / kept:.2f}" if mode == "reconnect" else ""
                checks = statistics.median(c / w for _, w, c in runs)
                share = "in workers" if runner == "processpool" else f"{100 * checks:.3f} %"
                rows.append((runner, task, mode, devices, logins, wall, ratio, share))
    print(f"\n### Three steps on {devices} FakeNOS devices (medians of {repeat})\n")
    print("| runner | task | mode | hosts | logins | wall s | reconnect / kept "
          "| liveness checks / wall |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for runner, task, mode, hosts, logins, wall, ratio, share in rows:
        shown = ", ".join(str(n) for n in logins)
        print(f"| {runner} | {task} | {mode} | {hosts} | {shown} | {wall:.3f} | {ratio} "
              f"| {share} |")


# Seconds spent checking kept connections (core.liveness, before each host's task), in this
# process: the runners that run hosts here (asyncio, threadpool), not processpool's workers.
CHECKED = [0.0]


@contextmanager
def _timing_liveness() -> Iterator[None]:
    """Time every liveness check the core makes in this process (added to CHECKED)."""
    from nornir_bench.core import execution

    check = execution.drop_dead_connections

    def timed(host: Any) -> None:
        start = time.perf_counter()
        try:
            check(host)
        finally:
            CHECKED[0] += time.perf_counter() - start

    execution.drop_dead_connections = timed
    try:
        yield
    finally:
        execution.drop_dead_connections = check


def _three_steps(inventory: Path, runner: str, task_name: str, *, reconnect: bool) -> float:
    from nornir_bench import tasks

    task = getattr(tasks, task_name)
    nr = _lab_nornir(inventory, runner, 20)
    start = time.perf_counter()
    try:
        with _timing_liveness():
            for step in STEPS:
                _succeeded(nr.run(task=task, **step), f"{runner} {task_name} {step['command']}")
                if reconnect:
                    nr.close_connections()
            nr.close_connections()
        return time.perf_counter() - start
    finally:
        close = getattr(nr.runner, "close", None)
        if callable(close):
            close()


def _lab_nornir(inventory: Path, runner: str, workers: int) -> Any:
    """A Nornir on the SimpleInventory in the folder ``inventory``."""
    from nornir import InitNornir

    files = {"host_file": "hosts", "group_file": "groups", "defaults_file": "defaults"}
    return InitNornir(
        runner={"plugin": runner, "options": {"num_workers": workers}},
        inventory={
            "plugin": "SimpleInventory",
            "options": {name: str(inventory / f"{stem}.yaml") for name, stem in files.items()},
        },
        logging={"enabled": False},
    )


def _succeeded(result: Any, what: str) -> None:
    if result.failed:
        failed = {h: repr(m.exception) for h, m in result.failed_hosts.items()}
        raise SystemExit(f"{what}: failed: {failed}")


# -- asend_command on scrapli against the code before it ------------------------------------

# Per platform, the three steps: (command, enable). Junos logs in at its command level.
PLATFORM_STEPS = {
    "cisco_ios": (("show version", True), ("show clock", False), ("show interfaces", False)),
    "arista_eos": (("show version", True), ("show clock", False), ("show interfaces", False)),
    "cisco_nxos": (("show version", True), ("show clock", False),
                   ("show ip interface brief", False)),
    "juniper_junos": (("show version", False), ("show system uptime", False),
                      ("show interfaces", False)),
}


def scrapli_part(before: Path, devices: int, repeat: int) -> None:
    from nornir_bench.lab import load_lab_devices, write_inventory

    platforms = list(PLATFORM_STEPS)
    codes = {"before": before, "scrapli": Path(__file__).resolve().parents[1]}
    with tempfile.TemporaryDirectory() as folder, ExitStack() as stack:
        lab_dir = Path(folder) / "lab"
        count = devices * len(platforms)  # each platform's run has devices of its own
        base = free_port_range(count)
        stack.enter_context(_process(
            [sys.executable, "-m", "nornir_bench", "lab", "--count", str(count), "--platform",
             *platforms, "--port", str(base), "--write", str(lab_dir)],
            ready=lambda line: line.startswith("lab ready"),
        ))
        lab = load_lab_devices(lab_dir)
        runs = {"every platform": lab[:devices]}
        runs.update({p: [d for d in lab if d.platform == p][:devices] for p in platforms})
        measured: dict[tuple[str, str], list[dict[str, float]]] = {}
        for name, chosen in runs.items():
            inventory = Path(folder) / name.replace(" ", "_")
            write_inventory(chosen, inventory)
            for _ in range(repeat):
                for code, path in codes.items():
                    measured.setdefault((name, code), []).append(_steps_in(path, inventory))
    print(f"\n### asend_command, three steps with kept sessions on {devices} FakeNOS devices, "
          f"asyncio runner (medians of {repeat})\n")
    print("| devices | code | logins / device | wall s (3 steps + close) | step 1 s (logins) "
          "| steps 2-3 s | client CPU s | wall scrapli / before |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for name in runs:
        walls = {code: statistics.median(r["wall"] for r in measured[(name, code)])
                 for code in codes}
        for code in codes:
            rows = measured[(name, code)]
            med = {key: statistics.median(r[key] for r in rows) for key in rows[0]}
            ratio = f"{walls['scrapli'] / walls['before']:.2f}" if code == "scrapli" else ""
            print(f"| {name} | {code} | {med['logins'] / devices:g} | {med['wall']:.3f} "
                  f"| {med['first']:.3f} | {med['kept']:.3f} | {med['cpu']:.2f} | {ratio} |")


def _steps_in(code: Path, inventory: Path) -> dict[str, float]:
    """One measured run in a process of its own, importing nornir_bench from ``code``."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    done = subprocess.run(
        [sys.executable, __file__, "--measure", str(inventory)],
        env=env, capture_output=True, text=True, timeout=600,
    )
    if done.returncode != 0:
        raise SystemExit(f"a run with {code} failed: {done.stdout}{done.stderr}")
    figures: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    return figures


async def platform_step(task: Any, step: int) -> str:
    """The step's command for the host's platform (``PLATFORM_STEPS``)."""
    from nornir_bench.tasks import asend_command

    command, enable = PLATFORM_STEPS[task.host.platform][step]
    result = await asend_command(task, command, enable=enable)
    return str(result.result)


def _measure_steps(inventory: Path) -> dict[str, float]:
    """The three steps and the close, on whichever nornir_bench this process imports."""
    import resource

    nr = _lab_nornir(inventory, "asyncio", 100)
    sessions: dict[str, set[int]] = {name: set() for name in nr.inventory.hosts}
    walls = []
    cpu = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    try:
        for step in range(3):
            began = time.perf_counter()
            result = nr.run(task=platform_step, step=step)
            walls.append(time.perf_counter() - began)
            _succeeded(result, f"step {step + 1}")
            for name, host in nr.inventory.hosts.items():
                for key in ("scrapli_async", "asyncssh"):  # the session, after and before
                    if key in host.connections:
                        sessions[name].add(id(host.connections[key].connection))
        nr.close_connections()
        wall = time.perf_counter() - start
    finally:
        getattr(nr.runner, "close", lambda: None)()
    used = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "wall": wall,
        "first": walls[0],
        "kept": walls[1] + walls[2],
        "cpu": used.ru_utime + used.ru_stime - cpu.ru_utime - cpu.ru_stime,
        "logins": sum(len(ids) for ids in sessions.values()),
    }


# -- the synthetic fleet -------------------------------------------------------------------


def synthetic_part(hosts: int, rtt: float, repeat: int) -> None:
    configurations: dict[str, tuple[str, dict[str, Any]]] = {
        "asyncio": ("asyncio", {"num_workers": hosts}),
        "processpool, kept workers": ("processpool", {"num_workers": max(1, hosts // 2)}),
        "processpool, keep_workers=False": (
            "processpool", {"num_workers": max(1, hosts // 2), "keep_workers": False}
        ),
    }
    walls: dict[str, list[list[float]]] = {name: [] for name in configurations}
    left: dict[str, tuple[int, int]] = {}
    for _ in range(repeat):
        for name, (runner, options) in configurations.items():
            runs, after, closed = _three_runs(runner, options, hosts, rtt)
            walls[name].append(runs)
            left[name] = (after, closed)
    medians = {name: [statistics.median(r[i] for r in runs) for i in range(3)]
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


def _three_runs(
    runner: str, options: dict[str, Any], hosts: int, rtt: float
) -> tuple[list[float], int, int]:
    from nornir_bench.core.plugins import init_nornir
    from nornir_bench.tasks import asim_rtt

    nr = init_nornir(
        inventory={"plugin": "synthetic", "options": {"hosts": hosts}},
        runner={"plugin": runner, "options": options},
        logging={"enabled": False},
        connections=(),
    )
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
        close = getattr(nr.runner, "close", None)
        if callable(close):
            close()
    return walls, after, len(getattr(nr.runner, "worker_pids", []))


# -- processes -----------------------------------------------------------------------------


class _Started:
    """A subprocess and the lines it prints (read by a thread: a pipe's reader buffers lines
    ahead, so waiting on its descriptor would miss them); ``count()`` asks the proxy."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.first_line = ""

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.strip())
        self.lines.put(None)

    def line(self, timeout: float) -> str:
        try:
            line = self.lines.get(timeout=max(0.0, timeout))
        except queue.Empty:
            raise SystemExit(f"no answer within {READY_SECONDS:g} s") from None
        if line is None:
            raise SystemExit("a process this benchmark started ended early")
        return line

    def count(self) -> int:
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write("count\n")
        stdin.flush()
        return int(self.line(READY_SECONDS))


@contextmanager
def _process(command: list[str], ready: Callable[[str], bool]) -> Iterator[_Started]:
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        start_new_session=True,  # Ctrl-C in the terminal reaches this script alone
    )
    started = _Started(process)
    try:
        deadline = time.monotonic() + READY_SECONDS
        while not ready(line := started.line(deadline - time.monotonic())):
            pass
        started.first_line = line
        yield started
    finally:
        if process.stdin is not None:
            process.stdin.close()  # the proxy ends at the end of its input (the lab does not)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(1.0)
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(STOP_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        started.reader.join(STOP_SECONDS)
        if process.stdout is not None:
            process.stdout.close()




if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    os.environ["PYTHONWARNINGS"] = ",".join(
        filter(None, [os.environ.get("PYTHONWARNINGS"), QUIET_SCRAPLI])
    )
    warnings.filterwarnings("ignore", category=UserWarning, module="scrapli.helper")
    quiet_library_deprecations()
    sys.exit(main())
