"""What is the dask runner's own: its embedded cluster, schedulers reached by address, dead workers
and a lost scheduler, the checks before anything is sent. What it shares with every runner
(nornir's semantics, Ctrl-C, host data, hooks in order) is in test_conformance.py; Ctrl-C and
SIGTERM through ``nornir-bench run`` in tests/core/test_stopping.py.

Every cluster here is real: Dask's own scheduler and workers, as processes on 127.0.0.1. A task
that must be in flight when something dies waits for a file the test writes once it has killed.
"""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import dask
import pytest
from distributed import Client
from nornir import InitNornir
from nornir.core import Nornir
from nornir.core.inventory import Host
from nornir.core.task import MultiResult, Task

from nornir_bench import RemoteException, WorkerCrashed, WorkerUnavailable
from nornir_bench.core.hooks import NoOpProcessor
from nornir_bench.runners.dask import DaskClusterError, DaskRunner
from nornir_bench.tasks import read_only
from tests import async_tasksets, tasksets
from tests.conftest import descendant_pids, make_nornir
from tests.dask_cluster import DaskCluster, dask_cluster, shared_address
from tests.devices import closed_port, silent_port
from tests.runners.test_connections import _wait_gone
from tests.waiting import HANG_GUARD, LIVENESS_IN_TESTS, wait_until

if TYPE_CHECKING:
    from nornir.core.inventory import Host

    from nornir_bench.runners._remote.spec import RunSpec

pytestmark = pytest.mark.usefixtures("no_leaked_threads", "no_leaked_processes")

ROOT = Path(__file__).resolve().parents[2]


def embedded(hosts: int = 8, **options: Any) -> Nornir:
    """A Nornir whose dask runner starts a cluster of its own, of two worker processes."""
    options.setdefault("num_procs", 2)
    return make_nornir("dask", hosts=hosts, **options)


async def naps_and_says_pid(task: Task, seconds: float = 0.05) -> int:
    await asyncio.sleep(seconds)
    return os.getpid()


async def waits_for_go(
    task: Task, folder: str, quick: tuple[str, ...] = (), patience: float = HANG_GUARD
) -> int:
    """Hosts in ``quick`` return at once; the others write ``started-HOST-PID`` (holding their
    Dask worker's address), then wait for the file ``go`` (``patience`` seconds at most)."""
    from distributed import get_worker

    if task.host.name not in quick:
        # Written whole, then renamed: a worker killed between creating and writing the file
        # would leave an empty address for the watcher and the test to read.
        name = f"started-{task.host.name}-{os.getpid()}"
        Path(folder, f".{name}").write_text(get_worker().address)
        os.replace(Path(folder, f".{name}"), Path(folder, name))
        go = Path(folder, "go")
        ends = time.monotonic() + patience
        while not go.exists():
            if time.monotonic() > ends:
                raise TimeoutError(f"{task.host.name} was never told to go")
            await asyncio.sleep(0.01)
    return os.getpid()


def started(folder: Path) -> dict[str, list[tuple[int, str]]]:
    """Where each host started, by host: (worker pid, worker address) for each start."""
    found: dict[str, list[tuple[int, str]]] = {}
    for path in sorted(folder.glob("started-*"), key=lambda p: p.stat().st_mtime_ns):
        _, host, pid = path.name.split("-")
        found.setdefault(host, []).append((int(pid), path.read_text()))
    return found


@contextmanager
def watching(
    folder: Path, ready: Callable[[Counter[int]], int | None], then: Callable[[int], None]
) -> Iterator[threading.Thread]:
    """A thread that waits until ``ready`` (given the hosts started per worker pid) names a
    worker pid, calls ``then`` with it, and lets every host go; joined on leaving."""

    def watch() -> None:
        try:
            deadline = time.monotonic() + HANG_GUARD
            while time.monotonic() < deadline:
                pid = ready(Counter(p for starts in started(folder).values() for p, _ in starts))
                if pid is not None:
                    then(pid)
                    return
                time.sleep(0.01)
        finally:
            (folder / "go").touch()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        yield thread
    finally:
        (folder / "go").touch()
        thread.join(HANG_GUARD)


def dask_worker_pids(address: str, security: Any = None) -> set[int]:
    with Client(address, security=security, timeout=30, set_as_default=False) as client:
        return set(client.run(os.getpid).values())


# -- the embedded cluster ------------------------------------------------------------------


def test_the_embedded_cluster_starts_at_the_first_run_is_kept_and_ends_with_close() -> None:
    before = descendant_pids()
    nr = embedded(hosts=6, num_workers=1, chunk_size=1)
    assert descendant_pids() == before  # built: nothing started yet
    first = nr.run(task=naps_and_says_pid, seconds=0.05)
    cluster = descendant_pids() - before
    client = nr.runner._cluster.client
    workers = client.run(os.getpid)
    # Dask's own command line, on loopback, encrypted: the scheduler and each worker
    assert nr.runner._cluster.embedded.address.startswith("tls://127.0.0.1:")
    assert all(address.startswith("tls://127.0.0.1:") for address in workers)
    assert len(workers) == 2 and set(workers.values()) <= cluster
    second = nr.run(task=naps_and_says_pid, seconds=0.05)
    assert not first.failed and not second.failed
    ran_on = {multi.result for result in (first, second) for multi in result.values()}
    assert ran_on == set(workers.values())  # the same two worker processes, both runs
    assert descendant_pids() - before == cluster  # kept: none started, none ended
    nr.runner.close()
    assert descendant_pids() == before


def test_the_embedded_cluster_ends_when_its_runner_is_collected() -> None:
    import gc

    before = descendant_pids()
    nr = embedded(hosts=2)
    assert not nr.run(task=naps_and_says_pid).failed
    assert descendant_pids() - before
    del nr
    gc.collect()
    assert descendant_pids() == before


NO_MAIN_GUARD = """
import json
import logging
import os
from pathlib import Path

from nornir import InitNornir

from tests.conftest import descendant_pids

with Path("imported.txt").open("a") as lines:  # every process that runs this body adds one
    lines.write(f"{os.getpid()}\\n")


def where(task):
    return os.getpid()


nr = InitNornir(
    inventory={"plugin": "synthetic", "options": {"hosts": 4}},
    runner={"plugin": "dask", "options": {"num_procs": 2, "num_workers": 1, "chunk_size": 1}},
    logging={"enabled": False},
)
result = nr.run(task=where)
assert not result.failed, result.failed_hosts
ran_on = sorted({multi.result for multi in result.values()})
print(json.dumps({"ran_on": ran_on, "cluster": sorted(descendant_pids())}))
# not closed: the interpreter's exit must stop the cluster
"""


@pytest.fixture(scope="module")
def script_without_main_guard(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """A user's script without ``if __name__ == "__main__":``, run as a user runs it (in
    development mode, which shows the warnings the default mode hides); its folder."""
    folder = tmp_path_factory.mktemp("script")
    (folder / "job.py").write_text(NO_MAIN_GUARD)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, sys.path)])}
    done = subprocess.run(
        [sys.executable, "-X", "dev", "job.py"],
        cwd=folder, env=env, capture_output=True, text=True, timeout=100,
    )
    return done, folder


def test_a_script_without_a_main_guard_runs_once(
    script_without_main_guard: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    done, folder = script_without_main_guard
    assert done.returncode == 0, done.stderr
    (line,) = (folder / "imported.txt").read_text().splitlines()  # no worker imported it
    ran_on = json.loads(done.stdout)["ran_on"]
    assert len(ran_on) == 2 and int(line) not in ran_on  # the hosts ran in the workers


def test_the_embedded_cluster_ends_with_the_interpreter(
    script_without_main_guard: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    done, _ = script_without_main_guard
    assert done.returncode == 0, done.stderr
    # No warning, no "Exception ignored", no Dask log line. Development mode also logs each
    # event-loop callback slower than 0.1 s, which a loaded machine makes: not what is checked.
    slow = re.compile(r"Executing <.*> took [\d.]+ seconds")
    assert [line for line in done.stderr.splitlines() if not slow.fullmatch(line)] == []
    cluster = json.loads(done.stdout)["cluster"]
    assert len(cluster) >= 3  # a scheduler, the workers' command, two workers
    for pid in cluster:
        _wait_gone(pid)


# -- schedulers reached by address ----------------------------------------------------------


def test_each_run_asks_the_scheduler_for_its_workers_whatever_the_client_updates_meanwhile(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Once, a run on the shared cluster failed under load with "the scheduler at ... has no
    workers" (and the test that ran it left the client's IO loop thread at its teardown): the
    runner asked the client to update its copy of the scheduler's description and then read
    that copy, which the client's own periodic update (every 2 s, without the workers) could
    replace in between. Here that periodic update comes right after each update asked for."""
    from tests.dask_cluster import SharedClusterOptions

    nr = make_nornir("dask", hosts=4, **SharedClusterOptions())
    try:
        assert not nr.run(task=tasksets.hello).failed
        client = nr.runner._cluster.client
        update = client._update_scheduler_info

        async def then_the_periodic_one(n_workers: int = 0) -> None:
            await update(n_workers=n_workers)
            await update()  # as the client's periodic callback does: no workers described

        monkeypatch.setattr(client, "_update_scheduler_info", then_the_periodic_one)
        result = nr.run(task=tasksets.hello)
        assert not result.failed, {host: m.exception for host, m in result.failed_hosts.items()}
    finally:
        nr.runner.close()


def test_a_tcp_scheduler_started_with_dasks_command_line_is_reached_by_address() -> None:
    address = shared_address()
    assert address.startswith("tcp://127.0.0.1:")
    before = descendant_pids()
    nr = make_nornir("dask", hosts=6, address=address, num_workers=1, chunk_size=1)
    result = nr.run(task=naps_and_says_pid, seconds=0.05)
    assert descendant_pids() == before  # no cluster of its own
    nr.runner.close()
    assert not result.failed
    assert {multi.result for multi in result.values()} == dask_worker_pids(address)


@pytest.fixture(scope="module")
def tls_cluster() -> Iterator[DaskCluster]:
    with dask_cluster(2, tls=True) as cluster:
        yield cluster


@pytest.mark.parametrize("given", ["paths", "Security"])
def test_a_tls_scheduler_is_reached_with_security_as_paths_or_a_security_object(
    tls_cluster: DaskCluster, given: str
) -> None:
    assert tls_cluster.address.startswith("tls://127.0.0.1:") and tls_cluster.security
    security: Any = tls_cluster.security
    if given == "paths":  # a job file's form
        security = {
            "tls_ca_file": str(tls_cluster.folder / "ca.pem"),
            "tls_client_cert": str(tls_cluster.folder / "cert.pem"),
            "tls_client_key": str(tls_cluster.folder / "key.pem"),
        }
    nr = make_nornir(
        "dask", hosts=6, address=tls_cluster.address, security=security, num_workers=1,
        chunk_size=1,
    )
    result = nr.run(task=naps_and_says_pid, seconds=0.05)
    nr.runner.close()
    assert not result.failed
    assert {multi.result for multi in result.values()} == set(tls_cluster.worker_pids().values())


# -- a place comes free when its host ends --------------------------------------------------


async def waits_for_hosts_after_it(
    task: Task,
    folder: str,
    slow: tuple[str, ...],
    after: tuple[str, ...],
    patience: float = HANG_GUARD,
) -> str:
    """Says it started; a host of ``slow`` then waits until every host of ``after`` has
    started (``patience`` seconds at most)."""
    name = task.host.name
    Path(folder, f"started-{name}").touch()
    if name in slow:
        ends = time.monotonic() + patience
        while not all(Path(folder, f"started-{other}").exists() for other in after):
            if time.monotonic() > ends:
                raise TimeoutError(f"{name}: {after} never started while it ran")
            await asyncio.sleep(0.01)
    return name


def test_a_hosts_place_is_free_when_it_ends_not_when_its_chunk_does(tmp_path: Path) -> None:
    # Two workers, two places each, chunks of two: dev0 and dev2, the slow host of each first
    # chunk, wait until dev4 and dev5 have started. Once, a worker's places came back only
    # with its whole chunk, so dev4 and dev5 waited for dev0 or dev2 to end (the run's slowest
    # host held every other place of its chunk idle): both timed out.
    nr = make_nornir(
        "dask", hosts=6, address=shared_address(), num_workers=2, chunk_size=2
    )
    try:
        result = nr.run(
            task=waits_for_hosts_after_it, folder=str(tmp_path), slow=("dev0", "dev2"),
            after=("dev4", "dev5"),
        )
    finally:
        nr.runner.close()
    assert not result.failed, {h: m[0].exception for h, m in result.items() if m.failed}
    assert sorted(result) == [f"dev{i}" for i in range(6)]


# -- a worker killed mid-run ----------------------------------------------------------------


@read_only
async def reads_and_waits_for_go(task: Task, folder: str) -> int:
    """:func:`waits_for_go`, marked read-only: safe to run again."""
    return await waits_for_go(task, folder)


def _kill_a_worker_mid_run(
    tmp_path: Path, crash_reruns: int | None, task: Callable[..., Any] = waits_for_go
) -> tuple[Nornir, dict[str, MultiResult], int, dict[str, list[tuple[int, str]]]]:
    """8 hosts in chunks of 2 on two workers, each running 2 at once; once a worker has its
    chunk's 2 hosts started, SIGKILL to it. The run's results, the victim's pid, and where
    each host started. ``crash_reruns`` ``None``: not given."""
    given = {} if crash_reruns is None else {"crash_reruns": crash_reruns}
    nr = embedded(hosts=8, num_workers=2, chunk_size=2, **given)
    victims: list[int] = []

    def kill(pid: int) -> None:
        victims.append(pid)
        os.kill(pid, signal.SIGKILL)

    def with_a_chunk_started(by_pid: Counter[int]) -> int | None:
        return next((pid for pid, hosts in by_pid.items() if hosts == 2), None)

    try:
        with watching(tmp_path, with_a_chunk_started, kill):
            result = nr.run(task=task, folder=str(tmp_path))
    except BaseException:
        nr.runner.close()
        raise
    (victim,) = victims
    return nr, dict(result), victim, started(tmp_path)


@pytest.mark.parametrize("given", [0, None])
def test_a_killed_workers_hosts_fail_naming_it_and_the_run_goes_on(
    tmp_path: Path, given: int | None
) -> None:
    # None: not given, and the task is not read-only: not run again all the same.
    nr, result, victim, starts = _kill_a_worker_mid_run(tmp_path, crash_reruns=given)
    try:
        assert sorted(result) == [f"dev{i}" for i in range(8)]  # every host present
        on_victim = {host for host, where in starts.items() if where[0][0] == victim}
        assert len(on_victim) == 2
        assert {h for h, multi in result.items() if multi.failed} == on_victim
        (address,) = {where[0][1] for host, where in starts.items() if host in on_victim}
        for host in on_victim:
            exc = result[host][0].exception
            assert isinstance(exc, WorkerCrashed)
            why = (
                "crash_reruns is 0" if given == 0 else
                "the task is not read_only (it may change a device), and crash_reruns is not set"
            )
            assert str(exc) == (
                f"dask worker {address} died while running this host's chunk; not run again: "
                f"{why}"
            )
            assert len(starts[host]) == 1  # not run again
        assert all(
            multi.result != victim for host, multi in result.items() if host not in on_victim
        )
        # Its nanny starts a new worker in its place; the next run has two workers again.
        client = nr.runner._cluster.client

        def replaced() -> bool:
            now = client.run(os.getpid)
            return len(now) == 2 and victim not in now.values()

        wait_until(replaced, "a new worker in the victim's place", every=0.05)
        workers = client.run(os.getpid)
        assert len(workers) == 2 and address not in workers, workers
        again = nr.run(task=naps_and_says_pid, seconds=0.05)
        assert not again.failed
        assert {multi.result for multi in again.values()} <= set(workers.values())
    finally:
        nr.runner.close()


@pytest.mark.parametrize("given", [1, None])
def test_with_crash_reruns_a_killed_workers_hosts_run_again_elsewhere(
    tmp_path: Path, given: int | None
) -> None:
    # None: not given, and the task is read-only: run again once by default (it failed its
    # chunk's innocent hosts once, whatever the task).
    task = waits_for_go if given is not None else reads_and_waits_for_go
    nr, result, victim, starts = _kill_a_worker_mid_run(tmp_path, crash_reruns=given, task=task)
    nr.runner.close()
    assert sorted(result) == [f"dev{i}" for i in range(8)]
    assert not any(multi.failed for multi in result.values())
    again = {host for host, where in starts.items() if len(where) == 2}
    assert len(again) == 2  # the victim's chunk, started on it and again on another worker
    for host in again:
        assert starts[host][0][0] == victim and starts[host][1][0] != victim
        assert result[host][0].result == starts[host][1][0]
    assert victim not in {multi.result for multi in result.values()}


def test_a_killed_worker_is_known_gone_from_the_schedulers_word_and_asked_nothing_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Once, the run learnt of a death only from a chunk that failed (KilledWorker): a worker
    # whose chunks Dask ran again elsewhere was still one of the run's, asked to end the run,
    # and that question waited for Dask's connect timeout (30 s) before the run returned.
    from nornir_bench.runners.dask import run as dask_run

    asked: list[tuple[str, list[str]]] = []
    real = dask_run.run_on_workers

    def recorded(client: Client, call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        asked.append((call.__name__, list(kwargs.get("workers") or [])))
        return real(client, call, *args, **kwargs)

    monkeypatch.setattr(dask_run, "run_on_workers", recorded)
    with caplog.at_level(logging.WARNING, logger="nornir_bench.runners.dask.run"):
        nr, result, victim, starts = _kill_a_worker_mid_run(
            tmp_path, crash_reruns=None, task=reads_and_waits_for_go
        )
    nr.runner.close()
    assert not any(multi.failed for multi in result.values())
    (dead,) = {where[0][1] for where in starts.values() if where[0][0] == victim}
    (living,) = {where[-1][1] for where in starts.values()} - {dead}
    said = [record.getMessage() for record in caplog.records]
    assert f"dask: dask worker {dead} left the cluster with 2 hosts of the run not back" in said
    assert asked == [("end_run", [living])], asked


def _worker_run(hosts: int) -> tuple[RunSpec, list[Host]]:
    """A run as a worker gets it (2 places, ``hello`` async), and its ``hosts`` hosts."""
    from nornir_bench.core.policies.options import RunPolicy
    from nornir_bench.runners._remote.spec import pack_run, unpack_run

    nr = make_nornir("threadpool", hosts=hosts)
    task = Task(async_tasksets.hello, nr, global_dry_run=False, processors=nr.processors)
    payload = pack_run(
        task, what="dask runner", num_workers=2, policy=RunPolicy.build("dask runner", {}),
        deadline=None, loop="asyncio", keep_connections=False,
    )
    return unpack_run(payload), list(nr.inventory.hosts.values())


def test_hosts_a_worker_gets_beyond_its_limit_start_as_the_hosts_before_them_end() -> None:
    """A rerun chunk comes on top of the chunks the parent sent a worker. Once, hosts that came
    just as the hosts before them ended (before their asyncio tasks' done callbacks ran) were
    queued behind them, and nothing started them: the run waited for ever."""
    from nornir_bench.core.connections import HeldConnections
    from nornir_bench.runners._remote.hosts import WorkerHosts
    from nornir_bench.runners._remote.results import FinishedHost

    spec, hosts = _worker_run(hosts=4)

    async def run_four() -> list[int]:
        finished: list[int] = []
        all_done = asyncio.Event()

        def done(host: FinishedHost, left_a_call: bool) -> None:
            finished.append(host.position)
            if len(finished) == 1:  # dev0 and dev1 end in this turn of the loop; then:
                asyncio.get_running_loop().call_soon(
                    lambda: [run.start(i, hosts[i]) for i in (2, 3)]
                )
            if len(finished) == 4:
                all_done.set()

        run = WorkerHosts(spec, HeldConnections(), done, lambda i, exc: None, limit=2)
        try:
            run.start(0, hosts[0])
            run.start(1, hosts[1])
            await asyncio.wait_for(all_done.wait(), 10)
        except asyncio.TimeoutError:  # hosts left waiting: none started them
            pass
        finally:
            await run.aclose()
        return finished

    assert sorted(asyncio.run(run_four())) == [0, 1, 2, 3]


def test_a_halt_drops_only_the_hosts_a_worker_got_beyond_its_places() -> None:
    """A host that came with room starts, even if the halt comes before its first step (the
    parent counts it as started); a host beyond the places waits, and the halt drops it."""
    from nornir_bench.core.connections import HeldConnections
    from nornir_bench.runners._remote.hosts import WorkerHosts
    from nornir_bench.runners._remote.results import FinishedHost

    spec, hosts = _worker_run(hosts=3)

    async def halt_as_they_come() -> tuple[list[int], list[int]]:
        finished: list[int] = []
        two_done = asyncio.Event()

        def done(host: FinishedHost, left_a_call: bool) -> None:
            finished.append(host.position)
            if len(finished) == 2:
                two_done.set()

        run = WorkerHosts(spec, HeldConnections(), done, lambda i, exc: None, limit=2)
        try:
            for index, host in enumerate(hosts):
                run.start(index, host)
            dropped = run.halted()  # before any host's first step
            if dropped == [2]:  # else no host would end, and the assert below says why
                await asyncio.wait_for(two_done.wait(), HANG_GUARD)
        finally:
            await run.aclose()
        return dropped, finished

    dropped, finished = asyncio.run(halt_as_they_come())
    assert dropped == [2]
    assert sorted(finished) == [0, 1]


class _KeptInWorker:
    """A connection a host keeps in its Dask worker from one run to the next."""

    def open(self, *args: Any, **kwargs: Any) -> None:
        self.connection = True

    def close(self) -> None:
        self.connection = None


def _keeps_one(task: Task) -> str:
    task.host.get_connection("kept-in-worker", task.nornir.config)
    time.sleep(0.05)  # both workers full, taking turns: the hosts split about evenly
    return "opened"


async def _slow_where_held(task: Task) -> str:
    held = "kept-in-worker" in task.host.connections
    await asyncio.sleep(0.3 if held else 0)
    return "held" if held else "new"


def test_hosts_waiting_for_the_worker_keeping_their_connections_go_once_it_has_room() -> None:
    """Once, a run never ended: hosts waiting for the worker that keeps their connections were
    offered only to the worker with the most room, the other one, idle; both workers then
    waited, and so did the parent. Here the first worker (by address) keeps none, the second
    keeps more than its places, and its hosts are slow: the first is always the roomiest."""
    from nornir.core.plugins.connections import ConnectionPluginRegister

    from tests.dask_cluster import SharedClusterOptions

    ConnectionPluginRegister.register("kept-in-worker", _KeptInWorker)
    nr = make_nornir("dask", hosts=80, num_workers=10, **SharedClusterOptions())
    try:
        assert not nr.run(task=_keeps_one).failed
        hosts = nr.inventory.hosts
        where = {name: host.connections["kept-in-worker"].where for name, host in hosts.items()}
        first = min(where.values())
        for name, host in hosts.items():
            if where[name] == first:
                host.close_connection("kept-in-worker")
        held = {name for name in hosts if where[name] != first}
        assert len(held) > 10  # more than that worker's places: some wait for them
        result = nr.run(task=_slow_where_held)
        assert not result.failed, result.failed_hosts
        assert {name for name, multi in result.items() if multi.result == "held"} == held
    finally:
        nr.close_connections()
        nr.runner.close()
        ConnectionPluginRegister.available.pop("kept-in-worker", None)


def _holds_its_thread(started: str, go: str) -> None:
    """A Dask task of the test's own: it holds its worker's only thread until ``go`` exists."""
    Path(started).touch()
    ends = time.monotonic() + HANG_GUARD
    while not Path(go).exists() and time.monotonic() < ends:
        time.sleep(0.01)


def _nothing(number: int) -> int:
    return number


def _says_where_held(task: Task) -> str:
    return "held" if "kept-in-worker" in task.host.connections else "new"


def _chunks_processing(dask_scheduler: Any) -> dict[str, str]:
    """The run chunks the scheduler has processing: the worker of each, by key."""
    from nornir_bench.runners.dask.reruns import PREFIX

    return {str(task.key): task.processing_on.address for task in dask_scheduler.tasks.values()
            if str(task.key).startswith(PREFIX) and task.processing_on is not None}


def _work_stealing_now(dask_scheduler: Any) -> list[Any]:
    """One round of Dask's work stealing (as the scheduler runs every 100 ms); what it did."""
    dask_scheduler.extensions["stealing"].balance()
    return [said for _, said in dask_scheduler.get_events("stealing")]


def test_a_hosts_next_run_waits_for_the_busy_worker_keeping_its_connection(
    tmp_path: Path,
) -> None:
    """Once, a host's next run could go to the other worker and log in again, leaving its
    first session open (one login too many under load, in tests/jobs/test_steps.py and
    tests/runners/test_routers.py): its chunk went to the worker keeping its connection, but
    as a preference Dask's work stealing drops once that worker is busy and another idle.
    Here the worker keeping dev0's connection has its only thread held by a task of the test,
    with 50 more of the test's queued behind it (Dask counts half a second each), while dev0's
    chunk waits there, and the scheduler runs a round of work stealing: as a preference, the
    chunk would go to the idle worker (the test's tasks may not: they must run there)."""
    from nornir.core.plugins.connections import ConnectionPluginRegister

    from tests.dask_cluster import SharedClusterOptions

    ConnectionPluginRegister.register("kept-in-worker", _KeptInWorker)
    nr = make_nornir("dask", hosts=1, **SharedClusterOptions())
    go = tmp_path / "go"
    try:
        assert not nr.run(task=_keeps_one).failed
        holder = nr.runner._cluster.held.holders["dev0"]
        with Client(shared_address(), timeout=30, set_as_default=False) as client:
            holding = client.submit(_holds_its_thread, str(tmp_path / "holding"), str(go),
                                    workers=[holder], pure=False)
            wait_until((tmp_path / "holding").exists, "the test's task holding the thread")
            queued = client.map(_nothing, range(50), workers=[holder], pure=False)
            results: list[Any] = []
            run = threading.Thread(target=lambda: results.append(nr.run(task=_says_where_held)))
            run.start()
            try:
                wait_until(lambda: client.run_on_scheduler(_chunks_processing)
                           or not run.is_alive(), "dev0's chunk sent")
                chunks = client.run_on_scheduler(_chunks_processing)
                stealing = client.run_on_scheduler(_work_stealing_now)
            finally:
                go.touch()
                run.join(HANG_GUARD)
                holding.result(HANG_GUARD)
                client.gather(queued)
        (result,) = results
        assert result["dev0"].result == "held", (result["dev0"], stealing)
        assert nr.runner._cluster.held.holders["dev0"] == holder
        assert list(chunks.values()) == [holder], chunks
        assert not [said for said in stealing if list(chunks)[0] in str(said)], stealing
    finally:
        go.touch()
        nr.close_connections()
        nr.runner.close()
        ConnectionPluginRegister.available.pop("kept-in-worker", None)


def _stops_its_dask_worker(task: Task) -> int:
    """dev0 stops its Dask worker process (SIGSTOP): alive to the scheduler's TCP connection,
    silent to the run, with no deadline set."""
    if task.host.name == "dev0":
        os.kill(os.getpid(), signal.SIGSTOP)
    time.sleep(0.05)
    return os.getpid()


def test_a_dask_worker_alive_but_silent_past_the_liveness_bound_is_given_up_naming_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A worker with hosts out that says nothing (not even its heartbeat) for the liveness
    bound is given up: its hosts fail naming it, the others run on the other worker."""
    from nornir_bench.runners._remote import watchdog

    monkeypatch.setattr(watchdog, "LIVENESS_SECONDS", LIVENESS_IN_TESTS)
    with dask_cluster(2) as cluster:
        pids = dask_worker_pids(cluster.address)
        nr = make_nornir("dask", hosts=8, num_workers=2, address=cluster.address)
        try:
            result = nr.run(task=_stops_its_dask_worker)
        finally:
            for pid in pids:
                os.kill(pid, signal.SIGCONT)
            nr.runner.close()
    silent = {name: multi[0].exception for name, multi in result.items() if multi.failed}
    assert "dev0" in silent and len(result) == 8
    assert all(isinstance(error, WorkerUnavailable) for error in silent.values()), silent
    assert all("sent nothing for" in str(error) for error in silent.values())
    assert len({str(error).split(" sent nothing")[0] for error in silent.values()}) == 1
    ran_on = {multi.result for multi in result.values() if not multi.failed}
    assert len(ran_on) == 1 and ran_on < pids  # the other worker ran the rest


# -- the scheduler killed mid-run ------------------------------------------------------------


class CompletedHere(NoOpProcessor):
    """The hosts whose results this process has, as they come."""

    def __init__(self) -> None:
        self.completed: list[str] = []

    def task_instance_completed(self, task: Task, host: Host, result: MultiResult) -> None:
        self.completed.append(host.name)


def test_a_lost_scheduler_fails_the_hosts_not_back_with_one_reason_at_once(
    tmp_path: Path,
) -> None:
    """Once, the run waited out the client's attempts to reconnect (``connect_timeout``)
    before it returned, and the hosts failed with two different reasons."""
    # An hour to reconnect: a run that waited it out would hang, stopped by the per-test
    # timeout (the hang guard).
    nr = embedded(hosts=8, num_workers=1, chunk_size=1, connect_timeout=3600)
    quick = ("dev0", "dev1")  # back before the scheduler is killed
    back = CompletedHere()

    def both_quick_hosts_back(by_pid: Counter[int]) -> int | None:
        # Their results here (started elsewhere is not back: a result can still be on its
        # way), and both workers on other hosts.
        return 0 if set(back.completed) >= set(quick) and sum(by_pid.values()) >= 2 else None

    def kill_the_scheduler(_: int) -> None:
        os.kill(nr.runner._cluster.embedded.processes[0].pid, signal.SIGKILL)

    try:
        with watching(tmp_path, both_quick_hosts_back, kill_the_scheduler) as watcher:
            result = nr.with_processors([back]).run(
                task=waits_for_go, folder=str(tmp_path), quick=quick
            )
        scheduler = nr.runner._cluster.embedded.address
    finally:
        nr.runner.close()
    assert not watcher.is_alive()
    assert sorted(result) == [f"dev{i}" for i in range(8)]
    assert {h for h, multi in result.items() if not multi.failed} == set(quick)
    errors = [result[h][0].exception for h in result if h not in quick]
    assert all(isinstance(exc, WorkerUnavailable) for exc in errors)
    assert {str(exc) for exc in errors} == {
        f"no worker process could run this host: the connection to the dask scheduler at "
        f"{scheduler} was lost"
    }


# -- what comes back, as it comes back ------------------------------------------------------


class LetsDev0GoOnceTheOthersCompleted(NoOpProcessor):
    """Writes the file dev0 waits for once it has seen the other hosts complete, here."""

    def __init__(self, go: Path, others: int) -> None:
        self.go = go
        self.others = others
        self.completed: list[str] = []

    def task_instance_completed(self, task: Task, host: Host, result: MultiResult) -> None:
        self.completed.append(host.name)
        if len(self.completed) == self.others:
            self.go.touch()


def test_processor_hooks_fire_here_as_chunks_come_back_not_at_the_end(tmp_path: Path) -> None:
    """dev0 ends only once this process's processor has seen the five other hosts complete:
    hooks fired at the run's end would leave it waiting, and failing."""
    hooks = LetsDev0GoOnceTheOthersCompleted(tmp_path / "go", others=5)
    nr = make_nornir(
        "dask", hosts=6, address=shared_address(), num_workers=1, chunk_size=1
    ).with_processors([hooks])
    quick = tuple(f"dev{i}" for i in range(1, 6))
    result = nr.run(task=waits_for_go, folder=str(tmp_path), quick=quick, patience=30)
    nr.runner.close()
    assert not result.failed, {h: m.exception for h, m in result.failed_hosts.items()}
    assert sorted(hooks.completed[:5]) == sorted(quick) and hooks.completed[5] == "dev0"


class DeviceError(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.session = threading.Lock()  # a live object: cannot be pickled


def fails_with_a_live_session(task: Task) -> None:
    raise DeviceError(f"session to {task.host.name} dropped")


def test_an_unpicklable_exception_comes_back_as_text() -> None:
    nr = make_nornir("dask", hosts=4, address=shared_address())
    result = nr.run(task=fails_with_a_live_session)
    nr.runner.close()
    assert sorted(result.failed_hosts) == ["dev0", "dev1", "dev2", "dev3"]
    exc = result["dev2"][0].exception
    assert isinstance(exc, RemoteException)
    assert (exc.type_name, exc.message) == ("DeviceError", "session to dev2 dropped")
    assert "Traceback" in exc.traceback_text and "DeviceError" in exc.traceback_text
    assert "DeviceError: session to dev2 dropped" in result["dev2"][0].result


def test_an_exception_not_rebuilt_when_unpickled_comes_back_as_text() -> None:
    from tests.runners.test_processpool import refuses_on_dev2

    nr = make_nornir("dask", hosts=4, address=shared_address())
    result = nr.run(task=refuses_on_dev2)
    nr.runner.close()
    assert sorted(result.failed_hosts) == ["dev2"]
    exc = result["dev2"][0].exception
    assert isinstance(exc, RemoteException)
    assert (exc.type_name, exc.message) == ("RefusedLine", "line 3 refused")


def test_what_cannot_be_sent_to_the_workers_is_said_clearly() -> None:
    nr = make_nornir("dask", hosts=4, address=shared_address())
    try:
        with socket.socket() as sock:
            with pytest.raises(ValueError, match="^dask runner: .* cannot be sent"):
                nr.run(task=tasksets.sets_data, key=sock)
            nr.inventory.hosts["dev3"].data["session"] = sock
            result = nr.run(task=tasksets.hello)
    finally:
        nr.runner.close()
    assert sorted(result.failed_hosts) == ["dev3"]  # alone
    exc = result["dev3"][0].exception
    assert isinstance(exc, ValueError)
    assert str(exc).startswith(
        "dask runner: host dev3's inventory cannot be sent to its worker: TypeError"
    )
    assert result["dev2"].result == "hello from dev2"


# -- what is checked before anything is sent ------------------------------------------------


@pytest.mark.parametrize("port", [closed_port, silent_port], ids=["refused", "silent"])
def test_an_unreachable_scheduler_is_one_line_naming_it_within_connect_timeout(
    port: Callable[[], Any],
) -> None:
    # Dask's own connect timeout made an hour: an attempt not given connect_timeout would
    # hang, stopped by the per-test timeout (the hang guard).
    with port() as number, dask.config.set({"distributed.comm.timeouts.connect": "3600s"}):
        address = f"tcp://127.0.0.1:{number}"
        nr = make_nornir("dask", hosts=2, address=address, connect_timeout=0.5)
        with pytest.raises(DaskClusterError) as caught:
            nr.run(task=naps_and_says_pid)
        nr.runner.close()
    said = str(caught.value)
    assert said.startswith(f"dask runner: cannot reach the scheduler at {address} within 0.5 s (")
    assert "\n" not in said
    # Whichever wait ran out first: this one's (no answer), or Dask's, naming the 0.5 s it had.
    reason = said.split(" within 0.5 s (", 1)[1]
    assert reason == "TimeoutError: no answer)" or reason.endswith(" after 0.5 s)"), said


def test_an_unreachable_scheduler_in_a_job_is_one_line_and_exit_2(tmp_path: Path) -> None:
    with closed_port() as number:
        address = f"tcp://127.0.0.1:{number}"
        (tmp_path / "job.yaml").write_text(textwrap.dedent(f"""\
            inventory: {{plugin: synthetic, options: {{hosts: 3}}}}
            runner: {{plugin: dask, options: {{address: "{address}", connect_timeout: 0.5}}}}
            task: {{name: sim_rtt, params: {{rtt: 0}}}}
            logging: {{enabled: false}}
            """))
        done = subprocess.run(
            [sys.executable, "-m", "nornir_bench", "run", "job.yaml", "-o", "out.jsonl"],
            cwd=tmp_path, capture_output=True, text=True, timeout=60,
        )
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(
        f"nornir-bench: error: dask runner: cannot reach the scheduler at {address} within 0.5 s ("
    )


def test_a_worker_of_another_nornir_bench_is_refused_naming_it_and_both_versions(
    tmp_path: Path,
) -> None:
    from importlib import metadata

    other = tmp_path / "other" / "nornir_bench-9.9.9.dist-info"
    other.mkdir(parents=True)
    (other / "METADATA").write_text("Metadata-Version: 2.1\nName: nornir-bench\nVersion: 9.9.9\n")
    with dask_cluster(1, worker_path=[str(other.parent)]) as cluster:
        (worker,) = cluster.worker_pids()
        nr = make_nornir("dask", hosts=2, address=cluster.address)
        try:
            with pytest.raises(DaskClusterError) as caught:
                nr.run(task=naps_and_says_pid)
        finally:
            nr.runner.close()
    assert str(caught.value) == (
        f"dask runner: worker {worker} runs nornir-bench 9.9.9, this process "
        f"{metadata.version('nornir-bench')}: install the same versions everywhere"
    )


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


@pytest.fixture
def loopback_only(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every connection and name lookup this process tries beyond loopback is refused here,
    before the system sees it, and listed."""
    tried: list[str] = []

    def refuse(what: str, host: Any) -> None:
        if not _is_loopback(str(host)):
            tried.append(f"{what} {host}")
            raise OSError(errno.ENETUNREACH, f"the test allows loopback only, not {host}")

    def guarded(what: str, real: Callable[..., Any], at: Callable[..., Any]) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            refuse(what, at(*args))
            return real(*args, **kwargs)

        return call

    def on_socket(real: Callable[..., Any]) -> Any:
        def call(sock: socket.socket, address: Any) -> Any:
            if sock.family in (socket.AF_INET, socket.AF_INET6):
                refuse("connect", address[0])
            return real(sock, address)

        return call

    monkeypatch.setattr(socket.socket, "connect", on_socket(socket.socket.connect))
    monkeypatch.setattr(socket.socket, "connect_ex", on_socket(socket.socket.connect_ex))
    monkeypatch.setattr(
        socket, "create_connection",
        guarded("connect", socket.create_connection, lambda address, *_: address[0]),
    )
    monkeypatch.setattr(
        socket, "getaddrinfo", guarded("look up", socket.getaddrinfo, lambda host, *_: host)
    )
    return tried


@pytest.mark.parametrize(
    "address", ["tcp://192.0.2.10:8786", "192.0.2.10:8786", "tcp://scheduler.example.net:8786"]
)
def test_credentials_never_go_to_an_unencrypted_remote_scheduler(
    address: str, loopback_only: list[str]
) -> None:
    nr = InitNornir(
        inventory={"plugin": "synthetic", "options": {"hosts": 3, "password": "s3cret"}},
        runner={"plugin": "dask", "options": {"address": address}},
        logging={"enabled": False},
    )
    with pytest.raises(DaskClusterError) as caught:
        nr.run(task=naps_and_says_pid)
    nr.runner.close()
    assert str(caught.value) == (
        f"dask runner: the hosts carry passwords and {address} is not encrypted (tcp://, not "
        "loopback): use a tls:// address with security, or set allow_unencrypted: true"
    )
    assert loopback_only == []  # decided from the address's text: no connection, no lookup


def test_the_guard_refuses_what_goes_beyond_loopback(loopback_only: list[str]) -> None:
    with pytest.raises(OSError, match="loopback only"):
        socket.create_connection(("192.0.2.10", 8786), timeout=0.01)
    with pytest.raises(OSError, match="loopback only"):
        socket.getaddrinfo("scheduler.example.net", 8786)
    with socket.socket() as sock, pytest.raises(OSError, match="loopback only"):
        sock.connect(("192.0.2.10", 8786))
    assert loopback_only == [
        "connect 192.0.2.10", "look up scheduler.example.net", "connect 192.0.2.10"
    ]


def _hosts_with(password: str | None, where: str = "host") -> list[Host]:
    from nornir.core.inventory import ConnectionOptions, Defaults

    if where == "host":
        return [Host("dev0", password=password), Host("dev1")]
    defaults = Defaults(connection_options={"netmiko": ConnectionOptions(password=password)})
    return [Host("dev0", defaults=defaults)]


@pytest.mark.parametrize(
    ("address", "options", "hosts", "refused"),
    [
        ("tcp://192.0.2.10:8786", {}, _hosts_with("s3cret"), True),
        ("tcp://192.0.2.10:8786", {}, _hosts_with("s3cret", "connection options"), True),
        ("tcp://scheduler.example.net:8786", {}, _hosts_with("s3cret"), True),
        ("tcp://[2001:db8::10]:8786", {}, _hosts_with("s3cret"), True),
        ("tcp://192.0.2.10:8786", {"allow_unencrypted": True}, _hosts_with("s3cret"), False),
        ("tcp://192.0.2.10:8786", {}, _hosts_with(None), False),
        ("tls://192.0.2.10:8786", {}, _hosts_with("s3cret"), False),
        ("tcp://127.0.0.1:8786", {}, _hosts_with("s3cret"), False),
        ("tcp://[::1]:8786", {}, _hosts_with("s3cret"), False),
        ("tcp://localhost:8786", {}, _hosts_with("s3cret"), False),
    ],
    ids=[
        "tcp-remote", "password-in-connection-options", "tcp-name", "tcp-ipv6",
        "allow_unencrypted", "no-password", "tls-remote", "tcp-loopback", "tcp-ipv6-loopback",
        "tcp-localhost",
    ],
)
def test_where_credentials_may_go_is_decided_from_the_address_alone(
    address: str, options: dict[str, Any], hosts: list[Host], refused: bool,
    loopback_only: list[str],
) -> None:
    runner = DaskRunner(address=address, **options)
    if refused:
        with pytest.raises(DaskClusterError, match="is not encrypted"):
            runner._refuse_cleartext(hosts)
    else:
        runner._refuse_cleartext(hosts)
    runner.close()
    assert loopback_only == []


def _sleeps(task: Task) -> None:
    time.sleep(0.05)


def _pool_threads() -> int:
    """The threads of runs' thread pools in this Dask worker."""
    return sum(t.name.startswith("asyncio-runner_") for t in threading.enumerate())


def test_a_blocking_runs_threads_end_with_the_run_on_the_workers() -> None:
    """Once, ending a run on a worker failed (its session was opened in another task's
    context): a thread per host in flight stayed in every worker, run after run."""
    nr = embedded(hosts=40, num_workers=40, num_procs=1)
    try:
        assert not nr.run(task=_sleeps).failed
        client = nr.runner._cluster.client
        wait_until(
            lambda: sum(client.run(_pool_threads).values()) == 0,
            "the run's threads ending on the workers",
            every=0.05,
        )
    finally:
        nr.runner.close()


def _thread_name(task: Task) -> str:
    return threading.current_thread().name


async def _calls_a_blocking_subtask(task: Task) -> str:
    from nornir_bench import arun_subtask

    multi = await arun_subtask(task, _thread_name)
    return str(multi[0].result)


def test_every_chunks_blocking_subtasks_run_in_the_runs_thread_pool() -> None:
    """Once, only the hosts of a run's first chunk on a worker saw the run's thread pool (it
    was set in that chunk's context): later chunks' blocking subtasks went to asyncio's
    default executor, unbounded by the run and not ended with it."""
    nr = embedded(hosts=16, num_workers=2, num_procs=1, chunk_size=2)
    try:
        result = nr.run(task=_calls_a_blocking_subtask)
        assert not result.failed
        names = {name: multi.result for name, multi in result.items()}
        assert all(value.startswith("asyncio-runner_") for value in names.values()), names
    finally:
        nr.runner.close()


async def makes_folder(path: str) -> None:
    os.makedirs(path, exist_ok=True)


def test_a_ctrl_c_while_the_workers_are_asked_leaves_the_asking_to_its_end(
    tmp_path: Path,
) -> None:
    """A second Ctrl-C that lands while a run tells its workers to halt (``run_on_workers``)
    must not cancel the telling: ``client.sync`` cancelled it, and one cancelled before its
    first step never ran ``Client._run`` (workers not told; a coroutine never awaited).

    The client's loop is held so that the press lands at that very step: after the call is
    queued, before it starts."""
    from nornir_bench.runners.dask.asking import run_on_workers

    told = tmp_path / "told"
    waiting, interrupted = threading.Event(), threading.Event()
    landed = []

    def press() -> None:  # on the loop, after the call's own first step
        os.kill(os.getpid(), signal.SIGINT)
        interrupted.wait(HANG_GUARD)

    def hold() -> None:  # on the loop, until the caller waits for the answer
        waiting.wait(HANG_GUARD)
        client.loop.add_callback(press)

    def tracer(frame: Any, event: str, arg: Any) -> None:
        if (
            event == "call"
            and frame.f_code.co_name == "wait"
            and "threading" in (frame.f_code.co_filename)
        ):
            waiting.set()

    with Client(shared_address(), timeout=30, set_as_default=False) as client:
        client.loop.add_callback(hold)
        sys.settrace(tracer)
        try:
            run_on_workers(client, makes_folder, str(told), wait=False)
        except KeyboardInterrupt:
            landed.append("while asking")
        finally:
            sys.settrace(None)
            waiting.set()
            interrupted.set()
        assert landed == ["while asking"]
        wait_until(told.exists, "the workers told, though Ctrl-C came while asking")
