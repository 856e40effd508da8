#!/usr/bin/env python3
"""Hosts in flight under an open-file limit, on every runner, side by side for two (or more)
checkouts of the package.

    python scripts/bench_open_files.py [--tree PATH ...] [--hosts 2000]
                                       [--runners threadpool,asyncio,processpool,dask]
                                       [--cases soft,hard]

Each line is a fresh interpreter importing the package from one checkout (``PYTHONPATH``), all
``--hosts`` hosts in flight at once (threadpool and asyncio: that many workers; processpool
and dask: 2 processes with half each), every host running the package's blocking
``tcp_ping`` with a probe line against a loopback server this script runs (hung devices and
deadlines: ``bench_policies.py --sections hung``):

- ``soft``: the server answers after 1 s; the process's soft ``RLIMIT_NOFILE`` is 256, its hard
  one as it was. Reported: hosts ok, hosts failed with "Too many open files", wall time.
- ``hard``: the same under a hard limit of 256 too: hosts ok, and the warning saying how many
  hosts were in flight at once.

A runner a checkout does not have (``dask`` before it existed) is reported as such.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from nornir_bench.lab import RttServer  # noqa: E402 - this checkout's, whichever is measured

CHILD = r"""
import json, logging, os, resource, sys, time, warnings
runner, case, port, hosts = json.loads(sys.argv[1])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256 if case == "hard" else hard))
logging.basicConfig(level=logging.WARNING, format="%(message)s", stream=sys.stderr)
logging.getLogger("nornir.core.task").setLevel(logging.CRITICAL)  # each failed host's traceback
warnings.simplefilter("always")
from importlib.metadata import entry_points
from nornir import InitNornir
from nornir.core.plugins.runners import RunnersPluginRegister
from nornir_bench.tasks import tcp_ping

# The installed entry points may name a runner the measured checkout does not have: register
# those it has, and only those.
for entry in entry_points(group="nornir.plugins.runners"):
    try:
        RunnersPluginRegister.register(entry.name, entry.load())
    except Exception:
        pass
RunnersPluginRegister.auto_register = lambda: None

half = max(1, hosts // 2)
options = {
    "threadpool": {"num_workers": hosts},
    "asyncio": {"num_workers": hosts},
    "processpool": {"num_workers": half, "num_procs": 2},
    "dask": {"num_workers": half, "num_procs": 2},
}[runner]
try:
    nr = InitNornir(
        inventory={"plugin": "synthetic",
                   "options": {"hosts": hosts, "hostname": "127.0.0.1", "port": port}},
        runner={"plugin": runner, "options": options},
        logging={"enabled": False},
    )
except Exception as exc:
    print(json.dumps({"missing": f"{type(exc).__name__}: {exc}"}), flush=True)
    os._exit(0)

def noop(task):
    return None

nr.run(task=noop)  # the workers (or the cluster) start: not part of the measure
started = time.perf_counter()
result = nr.run(task=tcp_ping, timeout=30, probe="show clock")
wall = time.perf_counter() - started
errors = {}
for multi in result.values():
    if multi.failed:
        text = str(multi[0].exception)
        key = type(multi[0].exception).__name__
        if "Too many open files" in text:
            key = "Too many open files"
        errors[key] = errors.get(key, 0) + 1
print(json.dumps({
    "wall": wall, "ok": sum(1 for m in result.values() if not m.failed), "errors": errors,
}), flush=True)
os._exit(0)
"""


def serve(delay: float) -> int:
    """An emulated device on a free loopback port, answering each line after ``delay``, served
    by a thread until this script ends; its port."""
    server = RttServer("127.0.0.1", 0, delay=delay, backlog=4096)
    ready = threading.Event()

    async def main() -> None:
        async with server:
            ready.set()
            await asyncio.Event().wait()

    threading.Thread(target=asyncio.run, args=(main(),), daemon=True).start()
    if not ready.wait(10):
        raise SystemExit("bench_open_files: the loopback server did not start")
    return server.port


def measure(tree: Path, runner: str, case: str, port: int, hosts: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, json.dumps([runner, case, port, hosts])],
        cwd=tree,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its workers and cluster processes are stopped with it
    )
    try:
        out, err = child.communicate(timeout=900)
    finally:
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    lines = out.strip().splitlines()
    if not lines:
        return {"crashed": (err.strip().splitlines() or ["no output"])[-1]}
    report: dict[str, Any] = json.loads(lines[-1])
    report["warnings"] = [
        line for line in err.splitlines() if "open files" in line or "in flight" in line
    ][:2]
    return report


def line(report: dict[str, Any], case: str, hosts: int) -> str:
    if "missing" in report:
        return "no such runner"
    if "crashed" in report:
        return f"did not report: {report['crashed']}"
    text = f"{report['wall']:.2f} s, {report['ok']}/{hosts} ok"
    if report["errors"]:
        text += ", failed: " + ", ".join(f"{n} {k}" for k, n in report["errors"].items())
    if report["warnings"]:
        text += f"; said: {report['warnings'][0].strip()}"
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", action="append", type=Path, help="a checkout (repeatable)")
    parser.add_argument("--hosts", type=int, default=2000)
    parser.add_argument("--runners", default="threadpool,asyncio,processpool,dask")
    parser.add_argument("--cases", default="soft,hard")
    args = parser.parse_args()
    trees = [tree.resolve() for tree in args.tree or [ROOT]]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # the servers hold every socket
    port = serve(1.0)
    for case in args.cases.split(","):
        print(f"\n{case}: {args.hosts} hosts in flight")
        for runner in args.runners.split(","):
            for tree in trees:
                report = measure(tree, runner, case, port, args.hosts)
                print(f"  {runner:>11} {tree.name:>12}: {line(report, case, args.hosts)}")


if __name__ == "__main__":
    main()
