"""--logins: logins per second a client core makes, for netmiko and scrapli, and the lab's CPU
per login (its SSH server's reaped sessions; its FRR daemons)."""

from __future__ import annotations

import contextlib
import math
import os

import harness
from harness.child import ChildFailed, run_child
from harness.failures import failures_text
from harness.lab import Lab
from harness.processes import proc_stat
from harness.records import load_text

__all__ = ["lab_cpu", "logins_part"]


def logins_part(bench: harness.Bench, lab: Lab, count: int, at_once: int,
                child_seconds: float) -> None:
    print(f"\n### Logins: {count} per client, {at_once} at once, over {len(lab.ports)} routers "
          f"(load {load_text()})\n")
    rows = []
    for client in ("netmiko", "scrapli"):
        server_before = lab_cpu(lab)
        spec = {"client": client, "ports": lab.ports, "user": lab.user,
                "password": lab.password, "count": count, "at_once": at_once}
        try:
            result = run_child("harness.children.router_logins", spec, timeout=child_seconds)
        except ChildFailed as exc:
            result = {"error": str(exc)}
        lab.sessions_gone()
        server_after = lab_cpu(lab)
        rows.append((client, result, {k: server_after[k] - server_before[k]
                                      for k in server_before}))
    print("| client | ok / failed | wall s | logins/s (wall) | client CPU ms / login "
          "(user + sys) | logins/s per client core | lab CPU ms / login (sshd + vtysh; FRR "
          "daemons) | failures |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for client, r, server in rows:
        bench.record({**r, "lab": server}, part="logins", client=client, count=count,
                     at_once=at_once)
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
              f"{daemons:.1f} | {failures_text(r['failures'])} |")


def lab_cpu(lab: Lab) -> dict[str, float]:
    """CPU seconds so far: the sessions sshd's listener has reaped (each with its shell and
    vtysh) and the listener itself; the lab's FRR daemons."""
    ticks = os.sysconf("SC_CLK_TCK")
    fields = proc_stat(lab.sshd_pid)
    sessions = sum(int(fields[i]) for i in (11, 12, 13, 14)) / ticks
    frr = 0.0
    for pid in lab.frr_pids():
        with contextlib.suppress(OSError):
            stat = proc_stat(pid)
            frr += (int(stat[11]) + int(stat[12])) / ticks
    return {"sessions": sessions, "frr": frr}
