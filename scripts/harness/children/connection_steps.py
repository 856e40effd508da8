"""Three steps with kept sessions and the close, on whichever ``nornir_bench`` this process
imports (scripts/bench_connections.py --part scrapli: this checkout's, or the code before it):
the spec ``{"inventory": FOLDER}``, a SimpleInventory of FakeNOS devices; each host runs its
platform's commands (:data:`PLATFORM_STEPS`) through ``asend_command`` on the asyncio runner.
Printed: the wall of the three steps and the close, of the first (logins) and of the two
others (kept sessions), this process's CPU, the sessions opened."""

from __future__ import annotations

import resource
import time
from pathlib import Path
from typing import Any

from harness.child import child_main
from harness.fleets import close, simple

# Per platform, the three steps: (command, enable). Junos logs in at its command level.
PLATFORM_STEPS = {
    "cisco_ios": (("show version", True), ("show clock", False), ("show interfaces", False)),
    "arista_eos": (("show version", True), ("show clock", False), ("show interfaces", False)),
    "cisco_nxos": (("show version", True), ("show clock", False),
                   ("show ip interface brief", False)),
    "juniper_junos": (("show version", False), ("show system uptime", False),
                      ("show interfaces", False)),
}


async def platform_step(task: Any, step: int) -> str:
    """The step's command for the host's platform (``PLATFORM_STEPS``)."""
    from nornir_bench.tasks import asend_command

    command, enable = PLATFORM_STEPS[task.host.platform][step]
    result = await asend_command(task, command, enable=enable)
    return str(result.result)


def steps(spec: dict[str, Any]) -> dict[str, float]:
    nr = simple(Path(spec["inventory"]), "asyncio", num_workers=100)
    sessions: dict[str, set[int]] = {name: set() for name in nr.inventory.hosts}
    walls = []
    cpu = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    try:
        for step in range(3):
            began = time.perf_counter()
            result = nr.run(task=platform_step, step=step)
            walls.append(time.perf_counter() - began)
            if result.failed:
                failed = {h: repr(m.exception) for h, m in result.failed_hosts.items()}
                raise SystemExit(f"step {step + 1}: failed: {failed}")
            for name, host in nr.inventory.hosts.items():
                for key in ("scrapli_async", "asyncssh"):  # the session, after and before
                    if key in host.connections:
                        sessions[name].add(id(host.connections[key].connection))
        nr.close_connections()
        wall = time.perf_counter() - start
    finally:
        close(nr)
    used = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "wall": wall,
        "first": walls[0],
        "kept": walls[1] + walls[2],
        "cpu": used.ru_utime + used.ru_stime - cpu.ru_utime - cpu.ru_stime,
        "logins": sum(len(ids) for ids in sessions.values()),
    }


if __name__ == "__main__":
    child_main(steps)
