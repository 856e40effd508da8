"""The tests' Dask cluster (tests/dask_cluster.py) ends with the process that started it,
however that process ends: once, a pytest killed with SIGKILL left its shared cluster running,
a scheduler and two workers holding ports and memory until someone found them."""

from __future__ import annotations

import json
import select
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from tests.waiting import HANG_GUARD, wait_until

pytestmark = pytest.mark.slow  # a cluster of its own, killed

ROOT = Path(__file__).resolve().parents[1]


def alive(processes: list[psutil.Process]) -> list[str]:
    """The command lines of those of ``processes`` still running (a zombie has ended)."""
    left = []
    for process in processes:
        try:
            if process.status() != psutil.STATUS_ZOMBIE:
                left.append(" ".join(process.cmdline())[:120])
        except psutil.NoSuchProcess:
            continue
    return left


def test_every_process_of_the_cluster_ends_when_its_owner_is_killed() -> None:
    owner = subprocess.Popen([sys.executable, "-m", "tests.dask_cluster"], cwd=ROOT,
                             stdout=subprocess.PIPE, text=True)
    cluster: list[psutil.Process] = []
    try:
        assert owner.stdout is not None
        ready, _, _ = select.select([owner.stdout], [], [], HANG_GUARD)
        assert ready, f"hang guard: the cluster not started within {HANG_GUARD:g} s"
        folder = Path(json.loads(owner.stdout.readline())["folder"])
        cluster = psutil.Process(owner.pid).children(recursive=True)
        commands = " ".join(" ".join(process.cmdline()) for process in cluster)
        assert "dask_scheduler" in commands and "dask_worker" in commands, commands
        assert len(cluster) >= 4  # the scheduler, the workers' parent, two worker processes
        owner.send_signal(signal.SIGKILL)
        owner.wait()
        wait_until(lambda: not alive(cluster), "every process of the cluster ended", every=0.1)
        assert not folder.exists()
    finally:
        owner.kill()
        owner.wait()
        if owner.stdout is not None:
            owner.stdout.close()
        for process in cluster:  # the orphans this test made, if any
            try:
                process.kill()
            except psutil.NoSuchProcess:
                pass
