"""--fleet: ``show ip bgp summary`` on ``--hosts`` hosts over the routers, on each runner and
run-policy recipe, each run a process of its own (:mod:`harness.children.router_run`)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import harness
from harness.child import ChildFailed, run_child
from harness.failures import failures_text, logins_text
from harness.fleets import shared_out
from harness.lab import Lab
from harness.records import load_text

__all__ = ["COMMAND", "fleet_part", "one_run"]

COMMAND = "show ip bgp summary"


def one_run(spec: dict[str, Any], seconds: float,
            module: str = "harness.children.router_run") -> dict[str, Any]:
    """One run of the child program ``module``; its figures, or ``{"error": ...}``."""
    try:
        figures: dict[str, Any] = run_child(module, spec, timeout=seconds)
    except ChildFailed as exc:
        return {"error": str(exc)}
    return figures


def fleet_part(bench: harness.Bench, lab: Lab, inventory: Path, hosts: int, runners: list[str],
               in_flight: int, recipes: list[dict[str, Any]], child_seconds: float) -> None:
    print(f"\n### Fleet: `{COMMAND}` on {hosts} hosts over {len(lab.ports)} routers, {in_flight} "
          f"hosts in flight (load {load_text()})\n")
    rows = []
    for recipe in recipes:
        for runner in runners:
            spec = {"part": "fleet", "runner": runner, "inventory": str(inventory),
                    "options": {**shared_out(runner, in_flight), **recipe}}
            began = time.perf_counter()
            result = one_run(spec, child_seconds)
            result["process"] = time.perf_counter() - began
            lab.sessions_gone()
            rows.append((runner, recipe, shared_out(runner, in_flight), result))
            bench.record(result, part="fleet", runner=runner, recipe=recipe, hosts=hosts,
                         in_flight=in_flight)
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
              f"| {logins_text(r)} | {failures_text(r['failures'])}{odd} |")
