"""One run on a router lab's inventory, in this fresh process (scripts/bench_routers.py
--fleet and --changes). The spec: ``{"part": "fleet" | "check", "runner", "options",
"inventory"}`` (a SimpleInventory folder), and for ``check`` the change's ``template`` and
``base`` and whether it is a ``dry_run`` (else the read it is compared with).

- fleet: ``show ip bgp summary`` on every host (``send_command`` on threadpool, else
  ``asend_command``); printed: hosts ok and failed, the run's wall, the close, failures by type
  with a sample, hosts ok without a BGP table, this process's CPU, the summary's retries and
  login counts;
- check: the change as a dry run, or ``show running-config``; printed: hosts ok, would
  change, the wall.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from nornir.core import Nornir

from harness.child import child_main
from harness.fleets import close, simple
from harness.timing import Stopwatch
from nornir_bench.bench.summary import summarize
from nornir_bench.core.failures import failure_kind, failure_of
from nornir_bench.lab import raise_open_file_limit
from nornir_bench.tasks import asend_command, asend_config, send_command, send_config

COMMAND = "show ip bgp summary"


def nornir_of(spec: dict[str, Any]) -> Nornir:
    """The inventory folder and runner of ``spec``, the open-files limit raised (a host in
    flight holds a socket or more)."""
    raise_open_file_limit()
    return simple(Path(spec["inventory"]), spec["runner"], **spec["options"])


def fleet(spec: dict[str, Any]) -> dict[str, Any]:
    nr = nornir_of(spec)
    task = send_command if spec["runner"] == "threadpool" else asend_command
    with Stopwatch() as took:
        try:
            result = nr.run(task=task, command=COMMAND)
            wall = took.wall
            closing = time.perf_counter()
            nr.close_connections()
        finally:
            close(nr)
        closed = time.perf_counter() - closing
    failures: dict[str, dict[str, Any]] = {}
    odd = 0
    for multi in result.values():
        if not multi.failed:
            odd += "Neighbor" not in str(multi[0].result)
            continue
        kind = str(failure_kind(failure_of(multi)))
        error = next((r.exception for r in multi if r.exception is not None), None)
        entry = failures.setdefault(kind, {"count": 0, "sample": str(error)[:300]})
        entry["count"] += 1
    summary = summarize(result)
    return {
        "ok": len(result) - len(result.failed_hosts), "failed": len(result.failed_hosts),
        "wall": wall, "close": closed, "failures": failures, "odd": odd, "cpu": took.cpu,
        "retried": summary.retried, "login_refusals": summary.login_refusals,
        "login_retried": summary.login_retried, "login_slowed": summary.login_slowed,
    }


def check(spec: dict[str, Any]) -> dict[str, Any]:
    nr = nornir_of(spec)
    blocking = spec["runner"] == "threadpool"
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
        close(nr)
    return {"ok": len(result) - len(result.failed_hosts), "wall": wall,
            "would": sum(bool(m.changed) for m in result.values())}


def run(spec: dict[str, Any]) -> dict[str, Any]:
    return fleet(spec) if spec["part"] == "fleet" else check(spec)


if __name__ == "__main__":
    child_main(run)
