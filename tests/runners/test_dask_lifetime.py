"""The dask runner's embedded cluster when a process of its own dies: two bugs found while
documenting the runner (docs/runners.md, "The embedded cluster"), each test failing before its
fix: the cluster outlived a killed parent; a run after its workers died failed at once, for
ever."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil

from nornir_bench.core.plugins import init_nornir
from nornir_bench.tasks import asim_rtt

# The scheduler, the workers' command and, per worker, its nanny's process.
CLUSTER_PROCESSES = 3


def _cluster_of(pid: int, timeout: float = 60) -> list[psutil.Process]:
    """The processes of the embedded cluster ``pid`` started, once they are all there."""
    deadline = time.monotonic() + timeout
    found: list[psutil.Process] = []
    while len(found) < CLUSTER_PROCESSES and time.monotonic() < deadline:
        time.sleep(0.2)
        found = [
            process for process in psutil.Process(pid).children(recursive=True)
            if "dask" in " ".join(process.cmdline()) or "spawn_main" in " ".join(process.cmdline())
        ]
    assert len(found) >= CLUSTER_PROCESSES, found
    return found


def test_the_embedded_cluster_ends_when_its_parent_is_killed(tmp_path: Path) -> None:
    script = tmp_path / "run.py"
    script.write_text(textwrap.dedent("""\
        from nornir_bench.core.plugins import init_nornir
        from nornir_bench.tasks import asim_rtt

        nr = init_nornir(
            inventory={"plugin": "synthetic", "options": {"hosts": 4000}},
            runner={"plugin": "dask", "options": {"num_workers": 10, "num_procs": 1}},
            logging={"enabled": False},
            connections=(),
        )
        nr.run(task=asim_rtt, rtt=0.05)  # 20 s: killed before its end
        """))
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    cluster: list[psutil.Process] = []
    try:
        cluster = _cluster_of(parent.pid)
        time.sleep(1.0)
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
        _, alive = psutil.wait_procs(cluster, timeout=15)
        assert not alive, [" ".join(process.cmdline())[:120] for process in alive]
    finally:
        parent.kill()
        parent.wait()
        for process in cluster:  # the orphans this test made, if any
            try:
                process.kill()
            except psutil.NoSuchProcess:
                pass


def test_a_run_after_the_embedded_workers_died_gets_a_new_cluster() -> None:
    nr = init_nornir(
        inventory={"plugin": "synthetic", "options": {"hosts": 20}},
        runner={"plugin": "dask", "options": {"num_workers": 10, "num_procs": 1}},
        logging={"enabled": False},
        connections=(),
    )
    try:
        assert not nr.run(task=asim_rtt, rtt=0).failed
        (workers,) = [  # the runner's, not the shared cluster of the runner tests
            process for process in psutil.Process().children()
            if "dask_worker" in (command := " ".join(process.cmdline()))
            and "nornir-bench-dask-" in command
        ]
        workers.kill()
        workers.wait(10)
        result = nr.run(task=asim_rtt, rtt=0)
        assert len(result) == 20 and not result.failed
    finally:
        nr.runner.close()
