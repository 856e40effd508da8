"""--memory: the lab's memory per open session: scrapli sessions held open, the proportional
set size (PSS; RSS beside it) of the SSH server's session processes (sshd, the ForceCommand's
shell, vtysh) and the FRR daemons' growth."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections import Counter
from pathlib import Path
from typing import Any

import harness
from harness.children.router_logins import LOGIN_SECONDS, scrapli_driver
from harness.failures import failures_text
from harness.lab import Lab
from harness.processes import children_of
from harness.records import load_text

__all__ = ["memory_part"]


def memory_part(bench: harness.Bench, lab: Lab, sessions: int, at_once: int) -> None:
    print(f"\n### Memory per open session: {sessions} scrapli sessions held open, {at_once} "
          f"opened at a time, over {len(lab.ports)} routers (load {load_text()})\n")
    listener = lab.sshd_pid
    frr_before = _memory(lab.frr_pids())
    idle = _session_memory(listener, lab.uid)
    opened, failures, held = asyncio.run(_hold_sessions(lab, sessions, at_once, listener))
    if opened == 0:
        print(f"no session opened: {failures_text(failures)}")
        return
    frr_after = held.pop("frr")
    rows = [("sshd (monitor + session, per login)", "sshd"), ("shell (sh -c, ForceCommand)", "sh"),
            ("vtysh", "vtysh"), ("total, session processes", "total")]
    print("| part | processes | PSS MiB per session | RSS MiB per session |")
    print("|---|---:|---:|---:|")
    for label, key in rows:
        procs, pss, rss = held[key]
        procs0, pss0, rss0 = idle[key]
        print(f"| {label} | {procs - procs0} | {(pss - pss0) / opened / 1024:.2f} "
              f"| {(rss - rss0) / opened / 1024:.2f} |")
        bench.record({"processes": procs - procs0, "pss_kib": (pss - pss0) / opened,
                      "rss_kib": (rss - rss0) / opened}, part="memory", what=key,
                     sessions=opened)
    print(f"| FRR daemons' growth ({len(lab.frr_pids())} daemons) | | "
          f"{(frr_after[1] - frr_before[1]) / opened / 1024:.3f} "
          f"| {(frr_after[2] - frr_before[2]) / opened / 1024:.3f} |")
    print(f"\nsessions open: {opened} of {sessions}; failed: {failures_text(failures)}; the "
          f"listener itself: PSS {_memory([listener])[1] / 1024:.1f} MiB")


async def _hold_sessions(
    lab: Lab, count: int, at_once: int, listener: int
) -> tuple[int, dict[str, Any], dict[str, Any]]:
    """Open ``count`` sessions, measure the lab's memory with them open, close them."""
    gate = asyncio.Semaphore(at_once)
    drivers: list[Any] = []
    failures: Counter[str] = Counter()
    samples: dict[str, str] = {}

    async def one(k: int) -> None:
        driver = scrapli_driver(lab.ports[k % len(lab.ports)], lab.user, lab.password)
        async with gate:
            try:
                await asyncio.wait_for(driver.open(), LOGIN_SECONDS)
                drivers.append(driver)
            except Exception as exc:  # noqa: BLE001 - counted by type
                failures[type(exc).__name__] += 1
                samples.setdefault(type(exc).__name__, str(exc)[:300])

    try:
        await asyncio.gather(*(one(k) for k in range(count)))
        await asyncio.sleep(1.0)  # every session at its prompt, nothing starting
        held: dict[str, Any] = _session_memory(listener, lab.uid)
        held["frr"] = _memory(lab.frr_pids())
    finally:
        for driver in drivers:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(driver.close(), LOGIN_SECONDS)
    return len(drivers), {k: {"count": n, "sample": samples[k]} for k, n in failures.items()}, held


def _session_memory(listener: int, uid: int | None) -> dict[str, tuple[int, int, int]]:
    """Per kind of session process under the listener (and vtysh of the lab's user anywhere):
    (processes, PSS KiB, RSS KiB)."""
    pids = set(children_of(listener))
    if uid is not None:
        for entry in filter(str.isdigit, os.listdir("/proc")):
            with contextlib.suppress(OSError):
                if os.stat(f"/proc/{entry}").st_uid == uid and \
                        Path(f"/proc/{entry}/comm").read_text().strip() == "vtysh":
                    pids.add(int(entry))
    kinds: dict[str, list[int]] = {"sshd": [], "sh": [], "vtysh": []}
    for pid in pids:
        with contextlib.suppress(OSError):
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
            kinds.setdefault(comm if comm in kinds else "other", []).append(pid)
    measured = {kind: _memory(p) for kind, p in kinds.items()}
    measured["total"] = _memory(sorted(pids))
    return measured


def _memory(pids: list[int]) -> tuple[int, int, int]:
    """(processes, PSS KiB, RSS KiB) summed over ``pids`` (from /proc/PID/smaps_rollup)."""
    count = pss = rss = 0
    for pid in pids:
        try:
            rows = Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()
        except OSError:
            continue
        values = {r.split(":")[0]: int(r.split()[1]) for r in rows[1:] if r.endswith("kB")}
        if not values:  # a zombie: no memory left
            continue
        count += 1
        pss += values.get("Pss", 0)
        rss += values.get("Rss", 0)
    return count, pss, rss
