#!/usr/bin/env python3
"""Hosts in flight under an open-file limit, on every runner, side by side for two (or more)
checkouts of the package.

    python scripts/bench_open_files.py [--tree PATH ...] [--hosts 2000]
                                       [--runners threadpool,asyncio,processpool,dask]
                                       [--cases soft,hard] [--delay 1] [--quick]
                                       [--record PATH]

Each line is a fresh interpreter importing the package from one checkout (``PYTHONPATH``;
:mod:`harness.children.open_files_run`), all
``--hosts`` hosts in flight at once (threadpool and asyncio: that many workers; processpool
and dask: 2 processes with half each), every host running the package's blocking
``tcp_ping`` with a probe line against a loopback server this script runs (hung devices and
deadlines: ``bench_policies.py --sections hung``):

- ``soft``: the server answers after ``--delay`` (1 s); the process's soft ``RLIMIT_NOFILE`` is
  256, its hard
  one as it was. Reported: hosts ok, hosts failed with "Too many open files", wall time.
- ``hard``: the same under a hard limit of 256 too: hosts ok, and the warning saying how many
  hosts were in flight at once.

A runner a checkout does not have (``dask`` before it existed) is reported as such.
``--quick``: 300 hosts (past the limit of 256), threadpool and asyncio, a reply after 0.1 s.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import signal
import subprocess
import threading
from contextlib import suppress
from pathlib import Path
from typing import Any

import harness
from harness.child import ROOT, child_command, child_env
from nornir_bench.lab import RttServer

PARSER = harness.parser(__doc__)
PARSER.add_argument("--tree", action="append", type=Path, help="a checkout (repeatable)")
PARSER.add_argument("--hosts", type=harness.whole())
PARSER.add_argument("--runners")
PARSER.add_argument("--cases", default="soft,hard")
PARSER.add_argument("--delay", type=harness.number(),
                    help="the server's reply, seconds (default 1)")

CHILD_SECONDS = 900.0


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
    """One run in a fresh process (its stderr's warnings kept: they are a figure)."""
    spec = {"runner": runner, "case": case, "port": port, "hosts": hosts}
    child = subprocess.Popen(
        child_command("harness.children.open_files_run", json.dumps(spec)), cwd=tree,
        env=child_env(tree), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,  # its workers and cluster processes are stopped with it
    )
    try:
        out, err = child.communicate(timeout=CHILD_SECONDS)
    finally:
        with suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
    lines = out.strip().splitlines()
    if not lines:
        return {"crashed": (err.strip().splitlines() or ["no output"])[-1]}
    report: dict[str, Any] = json.loads(lines[-1])
    report["warnings"] = [
        line for line in err.splitlines() if "open files" in line or "in flight" in line
    ][:2]
    return report


def line(report: dict[str, Any], hosts: int) -> str:
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


def main(bench: harness.Bench) -> None:
    args, quick = bench.args, bench.quick
    hosts = args.hosts or (300 if quick else 2000)
    runners = args.runners or ("threadpool,asyncio" if quick else
                               "threadpool,asyncio,processpool,dask")
    trees = [tree.resolve() for tree in args.tree or [ROOT]]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # the servers hold every socket
    port = serve(args.delay or (0.1 if quick else 1.0))
    for case in args.cases.split(","):
        print(f"\n{case}: {hosts} hosts in flight")
        for runner in runners.split(","):
            for tree in trees:
                report = measure(tree, runner, case, port, hosts)
                print(f"  {runner:>11} {tree.name:>12}: {line(report, hosts)}")
                bench.record(report, case=case, runner=runner, tree=str(tree), hosts=hosts)


if __name__ == "__main__":
    harness.run_script(main, PARSER)
