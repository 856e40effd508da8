"""The dask runner's embedded cluster when a process of its own dies: two bugs found while
documenting the runner (docs/runners.md, "The embedded cluster"), each test failing before its
fix: the cluster outlived a killed parent; a run after its workers died failed at once, for
ever."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from nornir_bench.core.plugins import init_nornir
from nornir_bench.runners.dask.cluster import EmbeddedCluster, remove_stale_folders
from nornir_bench.tasks import asim_rtt
from tests.waiting import HANG_GUARD, wait_until

# The scheduler, the workers' command and, per worker, its nanny's process.
CLUSTER_PROCESSES = 3


def _cluster_of(pid: int) -> list[psutil.Process]:
    """The processes of the embedded cluster ``pid`` started, once they are all there."""
    found: list[psutil.Process] = []

    def all_there() -> bool:
        nonlocal found
        found = [
            process for process in psutil.Process(pid).children(recursive=True)
            if any(word in _command(process) for word in ("dask", "spawn_main"))
        ]
        return len(found) >= CLUSTER_PROCESSES

    wait_until(all_there, "the embedded cluster's processes", every=0.2)
    return found


def _command(process: psutil.Process) -> str:
    """``process``'s command line; empty for one that ended meanwhile, a zombie until its
    parent reaps it (a short-lived child of the cluster's start), whose line cannot be read."""
    try:
        return " ".join(process.cmdline())
    except psutil.NoSuchProcess:  # ZombieProcess included
        return ""


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
        (folder,) = {  # the cluster's private folder: its TLS key, its workers' files
            Path(word).parent for process in cluster for word in process.cmdline()
            if word.endswith("scheduler.json")
        }
        assert (folder / "key.pem").is_file()
        time.sleep(1.0)
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
        _, alive = psutil.wait_procs(cluster, timeout=HANG_GUARD)
        assert not alive, [" ".join(process.cmdline())[:120] for process in alive]
        assert not folder.exists()  # the private key is not left behind
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
            if "dask_worker" in (command := _command(process))
            and "nornir-bench-dask-" in command
        ]
        workers.kill()
        workers.wait(10)
        result = nr.run(task=asim_rtt, rtt=0)
        assert len(result) == 20 and not result.failed
    finally:
        nr.runner.close()


def test_a_folder_left_by_a_killed_cluster_is_removed_at_the_next_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    stale = tmp_path / f"nornir-bench-dask-{gone.stdout.strip()}-abc"  # its process is gone
    live = tmp_path / f"nornir-bench-dask-{os.getpid()}-def"  # a cluster of a live process
    other = tmp_path / "nornir-bench-dask-notapid"  # not one of ours
    for folder in (stale, live, other):
        folder.mkdir()
        (folder / "key.pem").write_text("secret")
    remove_stale_folders()
    assert not stale.exists()
    assert live.exists() and other.exists()


def test_the_embedded_cluster_listens_on_loopback_only() -> None:
    # The scheduler and each worker serve HTTP (/info: logs and call stacks, /metrics) even
    # without the dashboard: it was on 0.0.0.0, the scheduler's on port 8787.
    for dashboard in (False, True):
        cluster = EmbeddedCluster(2, dashboard=dashboard)
        try:
            cluster.start()
            # Every listener up: the scheduler's Dask and HTTP ones, each nanny's, and each
            # worker's Dask and HTTP ones: 2 + 2 + 2 x 2.
            wait_until(lambda up=cluster: len(_listening(up)) >= 8, "every listener up", every=0.1)
            listening = _listening(cluster)
            assert {address.ip for _, address in listening} == {"127.0.0.1"}, listening
        finally:
            cluster.close()


def _listening(cluster: EmbeddedCluster) -> set[tuple[int, Any]]:
    """The listening sockets of the cluster's processes and their children: (pid, address)."""
    found = set()
    for started in cluster.processes:
        try:
            top = psutil.Process(started.pid)
            processes = [top, *top.children(recursive=True)]
        except psutil.NoSuchProcess:
            continue
        for process in processes:
            try:
                connections = process.net_connections(kind="inet")
            except psutil.NoSuchProcess:
                continue
            found |= {
                (process.pid, connection.laddr)
                for connection in connections
                if connection.status == psutil.CONN_LISTEN
            }
    return found
