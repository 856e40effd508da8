"""The machine's ceiling for work spread over processes: what N processes of plain CPU work
gain over one, here and now (the other processes on the machine included)."""

from __future__ import annotations

import subprocess
import time

from harness.child import child_command, child_env

__all__ = ["SPIN_LOOPS", "cpu_ceiling"]

SPIN_LOOPS = 40_000_000  # about a second of one core on the build machine


def cpu_ceiling(procs: int, loops: int = SPIN_LOOPS) -> float:
    """A plain CPU loop run ``procs`` times in one process, against one loop in each of
    ``procs`` processes at once: the speed-up the machine allows ``procs`` processes."""
    env = child_env()
    began = time.perf_counter()
    subprocess.run(child_command("harness.children.spin", str(loops * procs)), env=env,
                   check=True)
    one = time.perf_counter() - began
    began = time.perf_counter()
    children = [subprocess.Popen(child_command("harness.children.spin", str(loops)), env=env)
                for _ in range(procs)]
    for child in children:
        child.wait()
    return one / (time.perf_counter() - began)
