"""Workers at each site (runners/dask/sites.py): a host whose inventory sets ``site`` runs only
on a Dask worker serving that site, a site no worker serves fails its own hosts, naming it. A
real scheduler and a worker process per site on 127.0.0.1, each saying its site from its
environment; scripts/bench_sites.py (tests/test_scripts.py) puts each site in network
namespaces of its own, where a worker cannot reach the other site's devices."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from nornir.core.task import Task

from nornir_bench import NoWorkerForSite, WorkerCrashed
from nornir_bench.runners.dask.address import described_workers
from nornir_bench.runners.dask.sites import SiteError
from nornir_bench.tasks import read_only
from tests.conftest import make_nornir
from tests.dask_cluster import SITE_ENV, DaskCluster, dask_cluster
from tests.waiting import HANG_GUARD, wait_until

pytestmark = pytest.mark.usefixtures("no_leaked_threads", "no_leaked_processes")


async def says_site(task: Task) -> str | None:
    return os.environ.get(SITE_ENV)


@pytest.fixture(scope="module")
def sites_cluster() -> Iterator[DaskCluster]:
    with dask_cluster(0, nanny=False, sites=["a", "b"]) as cluster:
        yield cluster


def test_each_host_runs_on_a_worker_of_its_site_and_a_site_without_one_fails_alone(
    sites_cluster: DaskCluster,
) -> None:
    nr = make_nornir("dask", hosts=40, address=sites_cluster.address, num_workers=3)
    hosts = list(nr.inventory.hosts.values())
    expected: dict[str, str | None] = {}
    group = next(iter(nr.inventory.groups.values()))
    group.data["site"] = "b"  # a group's site, for its hosts that name none
    for n, host in enumerate(hosts):
        if n % 5 == 4:
            host.data["site"] = "c"  # no worker serves it
        elif n % 5 == 3:
            host.data["site"] = None if group not in host.groups else "a"
        elif group not in host.groups:
            host.data["site"] = "ab"[n % 2]
        expected[host.name] = host.get("site")
    try:
        result = nr.run(task=says_site)
    finally:
        nr.runner.close()
    for name, multi in result.items():
        site = expected[name]
        if site == "c":
            assert isinstance(multi[0].exception, NoWorkerForSite), name
            assert str(multi[0].exception) == "no dask worker for site 'c'"
        elif site is None:
            assert not multi.failed and multi[0].result in {"a", "b"}, name
        else:
            assert not multi.failed and multi[0].result == site, (name, multi[0].result)
    assert {expected[n] for n in result} == {"a", "b", "c", None}
    assert sum(isinstance(m[0].exception, NoWorkerForSite) for m in result.values()) == 8


@pytest.mark.parametrize("site", [3, "", "two words", ["a"]], ids=repr)
def test_a_site_that_is_not_a_name_stops_the_run_before_any_host_runs(
    sites_cluster: DaskCluster, site: object
) -> None:
    nr = make_nornir("dask", hosts=4, address=sites_cluster.address)
    host = list(nr.inventory.hosts.values())[2]
    host.data["site"] = site
    try:
        with pytest.raises(SiteError) as caught:
            nr.run(task=says_site)
    finally:
        nr.runner.close()
    said = str(caught.value)
    assert said.startswith(f"host {host.name!r}: site must name a site") and "\n" not in said


def test_a_site_that_is_not_a_name_stops_a_run_on_the_embedded_cluster_too() -> None:
    """Bad input whatever the cluster: an embedded one serves no site, and the run was made
    on it all the same. Refused before the cluster starts."""
    nr = make_nornir("dask", hosts=3, num_procs=1)
    host = list(nr.inventory.hosts.values())[1]
    host.data["site"] = "lyon west"
    try:
        with pytest.raises(SiteError, match=rf"^host {host.name!r}: site must name a site"):
            nr.run(task=says_site)
        assert nr.runner._cluster.client is None  # never started
    finally:
        nr.runner.close()


@read_only  # run again after its worker dies, where it may run
async def says_site_once_told(task: Task, folder: str) -> str | None:
    """Site ``a``'s hosts write ``started-PID`` and wait for ``go`` (bounded)."""
    if task.host.get("site") == "a":
        Path(folder, f"started-{os.getpid()}").touch()
        ends = time.monotonic() + HANG_GUARD
        while not Path(folder, "go").exists() and time.monotonic() < ends:
            await asyncio.sleep(0.01)
    return os.environ.get(SITE_ENV)


@pytest.mark.slow  # a Dask cluster of its own
def test_the_only_worker_of_a_site_dying_fails_its_hosts_at_once_not_elsewhere(
    tmp_path: Path,
) -> None:
    """Its chunk may run again (a read-only task), but only on a worker of its site: with none
    left, Dask kept it waiting for one without end (the run gave up on the silent worker a
    minute later), and it must never go to the other site."""
    with dask_cluster(0, nanny=False, sites=["a", "b"]) as cluster:
        nr = make_nornir("dask", hosts=8, address=cluster.address, num_workers=4)
        for n, host in enumerate(nr.inventory.hosts.values()):
            host.data["site"] = "ab"[n % 2]

        def kill_the_worker_of_a() -> None:
            wait_until(lambda: list(tmp_path.glob("started-*")), "a host of site a started")
            pid = int(next(tmp_path.glob("started-*")).name.split("-")[1])
            os.kill(pid, signal.SIGKILL)

        killer = threading.Thread(target=kill_the_worker_of_a)
        killer.start()
        try:
            result = nr.run(task=says_site_once_told, folder=str(tmp_path))
        finally:
            killer.join()
            (tmp_path / "go").touch()
            nr.runner.close()
    crashed = 0
    for n, (name, multi) in enumerate(result.items()):
        if n % 2:
            assert not multi.failed and multi[0].result == "b", name
            continue
        error = multi[0].exception  # out when the worker died, or not sent yet
        assert isinstance(error, (WorkerCrashed, NoWorkerForSite)), (name, error)
        if isinstance(error, WorkerCrashed):
            assert "not run again: no other worker of its site is left" in str(error), error
            crashed += 1
    assert crashed >= 1  # the host running when it died, at least


@pytest.mark.parametrize("embedded", [False, True], ids=["address", "embedded"])
def test_a_job_whose_host_site_is_not_a_name_exits_2_in_one_line(
    sites_cluster: DaskCluster, tmp_path: Path, embedded: bool
) -> None:
    import json
    import subprocess
    import sys

    (tmp_path / "hosts.yaml").write_text(json.dumps(
        {"h1": {"hostname": "127.0.0.1", "data": {"site": 3}}}
    ))
    (tmp_path / "job.yaml").write_text(json.dumps({
        "inventory": {"plugin": "SimpleInventory",
                      "options": {"host_file": str(tmp_path / "hosts.yaml")}},
        "runner": {"plugin": "dask",
                   "options": {"num_procs": 1} if embedded else {"address": sites_cluster.address}},
        "task": {"name": "atcp_ping"},
    }))
    done = subprocess.run(
        [sys.executable, "-m", "nornir_bench", "run", str(tmp_path / "job.yaml"), "--quiet",
         "--output", str(tmp_path / "records.jsonl")],
        capture_output=True, text=True, timeout=HANG_GUARD,
    )
    assert done.returncode == 2
    assert done.stderr == (
        "nornir-bench: error: host 'h1': site must name a site, a string without spaces such as "
        "'paris' (as its Dask workers' resource 'site:paris'), got 3\n"
    )


def _hold_paused(worker: Any, paused: bool) -> None:
    """On a worker's own loop: pause it, as Dask does under memory pressure (the scheduler
    gives it no task), its memory monitor kept from resuming it at once; or resume it."""
    from distributed.core import Status

    manager = worker.memory_manager
    if paused and manager.memory_pause_fraction is not False:
        manager.kept_pause_fraction = manager.memory_pause_fraction
        manager.memory_pause_fraction = False
    elif not paused:
        manager.memory_pause_fraction = manager.kept_pause_fraction
    worker.status = Status.paused if paused else Status.running


def pauses_its_worker_at_site_a(task: Task) -> str | None:
    """A host of site a pauses its worker before it ends: the worker's word reaches the
    scheduler before the host's end (one stream, in order), so site a's next chunk finds no
    worker of its site taking tasks."""
    if task.host.get("site") == "a":
        from distributed.worker import Worker

        (worker,) = list(Worker._instances)
        paused = threading.Event()

        def pause() -> None:
            _hold_paused(worker, True)
            paused.set()

        worker.loop.add_callback(pause)
        assert paused.wait(HANG_GUARD)
    return os.environ.get(SITE_ENV)


def test_a_sites_hosts_never_run_on_another_sites_worker_even_with_their_own_paused(
    sites_cluster: DaskCluster,
) -> None:
    """Site a's only worker is there but takes no more tasks (paused): Dask may not give a's
    next chunks to site b's idle worker (it may not reach a's devices); they fail instead."""
    nr = make_nornir("dask", hosts=6, address=sites_cluster.address, num_workers=1,
                     chunk_size=1)
    for n, host in enumerate(nr.inventory.hosts.values()):
        host.data["site"] = "ab"[n % 2]
    with sites_cluster.client() as client:
        workers = described_workers(client)
        (worker_a,) = [w for w, info in workers.items() if "site:a" in info["resources"]]

        def resume(dask_worker: Any) -> None:
            _hold_paused(dask_worker, False)

        def status(dask_scheduler: Any) -> str:
            return str(dask_scheduler.workers[worker_a].status.name)

        try:
            result = nr.run(task=pauses_its_worker_at_site_a)
        finally:
            nr.runner.close()
            if client.run_on_scheduler(status) == "paused":
                client.run(resume, workers=[worker_a])
                wait_until(lambda: client.run_on_scheduler(status) == "running",
                           f"the scheduler seeing {worker_a} resumed")
    at_a = [multi for n, multi in enumerate(result.values()) if n % 2 == 0]
    at_b = [multi for n, multi in enumerate(result.values()) if n % 2]
    assert [multi[0].result for multi in at_a if not multi.failed] == ["a"]  # the first
    for multi in at_a:
        if multi.failed:  # and none ran at site b (it would say "b")
            assert isinstance(multi[0].exception, (WorkerCrashed, NoWorkerForSite)), multi
    assert all(not multi.failed and multi[0].result == "b" for multi in at_b)
