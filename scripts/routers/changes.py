"""--changes: a configuration change on every router (a static route and its BGP ``network``),
checked, applied, applied again, rolled out in canary batches with a router refusing a line,
run again on the failed; then the change as a dry run against reading the configurations, per
runner, on ``--hosts`` hosts."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import harness
from harness.fleets import shared_out
from harness.jobs import read_records, run_job, write_job
from harness.lab import Lab
from harness.records import load_text
from routers.fleet import one_run

__all__ = ["CHANGE_TEMPLATE", "changes_part"]

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


def changes_part(bench: harness.Bench, lab: Lab, folder: Path, fleet: Path, hosts: int,
                 runners: list[str], in_flight: int, child_seconds: float) -> None:
    print(f"\n### Changes: a static route and a BGP network on each of {len(lab.ports)} routers "
          f"(load {load_text()})\n")
    one_each = lab.write_inventory(folder / "one-each")
    (folder / "change.j2").write_text(CHANGE_TEMPLATE)
    before = lab.configs()
    try:
        rows = _change_steps(lab, folder, one_each, before)
        print("| step | wall s | result | target |")
        print("|---|---:|---|---|")
        for step, wall, said, target in rows:
            print(f"| {step} | {wall} | {said} | {target} |")
            bench.record({"wall": wall, "result": said}, part="changes", step=step)
        lab.put_back(before)
        _check_scale(bench, lab, folder, fleet, hosts, runners, in_flight, child_seconds)
    finally:
        lab.put_back(before)


def _records(path: Path) -> dict[str, dict[str, Any]]:
    return {r["host"]: r for r in read_records(path)}


def _change_steps(lab: Lab, folder: Path, inventory: Path,
                  before: dict[str, str]) -> list[tuple[str, str, str, str]]:
    routers = lab.routers
    rows = []
    job = _change_job(lab, folder, inventory, refuse=[])
    took = run_job("run", str(job), "--check", "--show", "-o", str(folder / "check.jsonl"))
    records = _records(folder / "check.jsonl")
    exact = sum(
        sorted(line for line in (r["diff"] or "").splitlines() if line.startswith("+")
               and not line.startswith("+++"))
        == sorted([f"+ip route 203.0.113.{k}/32 Null0", f"+  network 203.0.113.{k}/32"])
        for k, r in ((int(h[1:]), records.get(h, {})) for h in routers)
    )
    same = sum(lab.vtysh(r, "show running-config") == before[r] for r in routers)
    rows.append(("--check", f"{took.seconds:.2f}", f"{exact}/{len(routers)} diffs exactly the "
                 f"2 lines; {same}/{len(routers)} running configurations byte-identical",
                 "all (met)" if exact == same == len(routers) else "all (MISSED)"))
    took = run_job("run", str(job), "-o", str(folder / "apply.jsonl"))
    applied = time.perf_counter()
    changed = sum(r["change"] and r["change"]["state"] == "changed"
                  for r in _records(folder / "apply.jsonl").values())
    seen = _converged(lab, routers)
    converged = time.perf_counter() - applied
    rows.append(("applied", f"{took.seconds:.2f}", f"{changed}/{len(routers)} changed; every "
                 f"prefix in every neighbour's BGP table {converged:.1f} s after the run"
                 + ("" if seen else " (NOT SEEN)"),
                 "<= 10 s (met)" if seen and converged <= 10 else "<= 10 s (MISSED)"))
    took = run_job("run", str(job), "-o", str(folder / "again.jsonl"))
    again = sum(bool(r["changed"]) for r in _records(folder / "again.jsonl").values())
    rows.append(("applied again", f"{took.seconds:.2f}", f"{again} changed",
                 "0 (met)" if again == 0 else "0 (MISSED)"))
    lab.put_back(before)
    canary = _change_job(lab, folder, inventory, refuse=["r2"],
                         options={"batches": [1, "10%", "100%"], "max_fail_percentage": 0})
    took = run_job("run", str(canary), "-o", str(folder / "rollout.jsonl"))
    rollout = _records(folder / "rollout.jsonl")
    r2 = rollout.get("r2", {})
    rolled = (r2.get("change") or {}).get("state") == "rolled back" and _same_config(
        lab.vtysh("r2", "show running-config"), before["r2"])
    later = [r for r in routers if r not in ("r1", "r2")]
    untouched = sum(lab.vtysh(r, "show running-config") == before[r] for r in later)
    line = "line 5 of 5 refused" in str(r2.get("message"))
    rows.append(("canary rollout, r2 refuses a line", f"{took.seconds:.2f}",
                 f"r2 {'rolled back, equal to its backup' if rolled else 'NOT rolled back'}"
                 f"{', the line named' if line else ''}; {untouched}/{len(later)} routers of "
                 "later batches untouched",
                 "all (met)" if rolled and line and untouched == len(later) else "(MISSED)"))
    fixed = _change_job(lab, folder, inventory, refuse=[],
                        options={"batches": [1, "10%", "100%"], "max_fail_percentage": 0})
    took = run_job("run", str(fixed), "--rerun-failed", str(folder / "rollout.jsonl"), "-o",
                   str(folder / "rerun.jsonl"))
    rerun = sorted(_records(folder / "rerun.jsonl"), key=lambda h: int(h[1:]))
    wanted = f"{routers[1]} .. {routers[-1]} only"
    rows.append(("--rerun-failed", f"{took.seconds:.2f}", f"ran {', '.join(rerun)}",
                 f"{wanted} (met)" if rerun == routers[1:] else f"{wanted} (MISSED)"))
    return rows


def _check_scale(bench: harness.Bench, lab: Lab, folder: Path, fleet: Path, hosts: int,
                 runners: list[str], in_flight: int, child_seconds: float) -> None:
    print(f"\n{hosts} hosts, {in_flight} in flight: the change as a dry run against reading "
          "`show running-config`, the same hosts (one run each, its own process):\n")
    print("| runner | read: ok, wall s | dry run: ok, would change, wall s | dry run / read |")
    print("|---|---|---|---:|")
    for runner in runners:
        spec = {"part": "check", "runner": runner, "inventory": str(fleet),
                "options": shared_out(runner, in_flight), "template": str(folder / "change.j2"),
                "base": lab.base}
        read = one_run({**spec, "dry_run": False}, child_seconds)
        lab.sessions_gone()
        dry = one_run({**spec, "dry_run": True}, child_seconds)
        lab.sessions_gone()
        bench.record({"read": read, "dry_run": dry}, part="changes", runner=runner,
                     hosts=hosts, in_flight=in_flight)
        if "error" in read or "error" in dry:
            print(f"| {runner} | {read.get('error', '')} | {dry.get('error', '')} | |")
            continue
        ratio = dry["wall"] / read["wall"]
        print(f"| {runner} | {read['ok']}/{hosts}, {read['wall']:.2f} | {dry['ok']}/{hosts}, "
              f"{dry['would']}, {dry['wall']:.2f} | {ratio:.2f} "
              f"({'met' if ratio <= 1.2 else 'MISSED'}) |")


def _change_job(lab: Lab, folder: Path, inventory: Path, *, refuse: list[str],
                options: dict[str, Any] | None = None) -> Path:
    return write_job(folder / "change.yaml", inventory=inventory, runner="asyncio",
                     options={"num_workers": 50, **(options or {})}, task="asend_config",
                     params={"template_file": "change.j2",
                             "variables": {"base": lab.base, "refuse": refuse},
                             "backup_dir": str(folder / "backups")}, logging=True)


def _converged(lab: Lab, routers: list[str]) -> bool:
    """Wait (at most CONVERGE_SECONDS) until each router's prefix is in its neighbours' BGP
    tables (the chain: r(k-1) and r(k+1))."""
    deadline = time.perf_counter() + CONVERGE_SECONDS
    waiting = {(r, n) for k, r in enumerate(routers) for n in routers[max(0, k - 1):k + 2]
               if n != r}
    while waiting and time.perf_counter() < deadline:
        for router, neighbour in list(waiting):
            table = json.loads(lab.vtysh(neighbour, "show ip bgp json") or "{}")
            if f"203.0.113.{router[1:]}/32" in table.get("routes", {}):
                waiting.discard((router, neighbour))
        if waiting:
            time.sleep(0.1)
    return not waiting


def _same_config(one: str, other: str) -> bool:
    from nornir_bench.tasks.dialects.config_text import parse_config, same
    from nornir_bench.tasks.dialects.dialects import FRRDriver

    return same(parse_config(one, FRRDriver()), parse_config(other, FRRDriver()))
