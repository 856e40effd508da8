"""A runner's own costs, measured: the runs it takes, the shape it reads, what it leaves behind."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from nornir.core import Nornir

from nornir_bench import ProcessPoolRunner
from nornir_bench.bench import calibrate
from nornir_bench.bench.calibrate import (
    MAX_CALIBRATION_HOSTS,
    cluster_shape,
    measure_costs,
    replay_cpu,
)
from nornir_bench.tasks import asim_rtt, sim_rtt
from tests.dask_cluster import shared_address

pytestmark = pytest.mark.usefixtures("no_leaked_threads", "no_leaked_processes")


class FakeWalls:
    """``calibrate._wall`` replaced: each run's hosts and task recorded, its wall given."""

    def __init__(self, walls: list[float]) -> None:
        self.walls = iter(walls)
        self.runs: list[int] = []
        self.tasks: set[Callable[..., Any]] = set()

    def __call__(self, nr: Nornir, task: Callable[..., Any]) -> float:
        self.runs.append(len(nr.inventory.hosts))
        self.tasks.add(task)
        return next(self.walls)


WARM_UP = 1e6  # a wall no close comes near


TIMED = [0.01, 0.21, 0.01, 0.31, 0.01, 0.11]  # three pairs of a run of one and of all


@pytest.mark.parametrize(
    ("runner", "async_task", "runs", "walls"),
    [
        ("threadpool", False, [1, *[1, 101] * 3], [0.5, *TIMED]),
        ("asyncio", True, [1, *[1, 101] * 3], [0.5, *TIMED]),
        # A runner of worker processes starts them all before the timed runs.
        ("processpool", True, [1, 101, *[1, 101] * 3], [0.5, WARM_UP, *TIMED]),
    ],
)
def test_the_figures_come_from_a_fresh_run_of_one_and_the_timed_runs(
    monkeypatch: pytest.MonkeyPatch,
    runner: str,
    async_task: bool,
    runs: list[int],
    walls: list[float],
) -> None:
    fake = FakeWalls(walls)
    monkeypatch.setattr(calibrate, "_wall", fake)  # nothing runs: only the runner's close
    costs = measure_costs(runner, async_task=async_task, hosts=101)
    assert fake.runs == runs
    assert fake.tasks == {asim_rtt if async_task else sim_rtt}
    assert 0.5 <= costs.startup < WARM_UP  # the fresh run of one and the close, no warm-up
    assert costs.per_host_measured == pytest.approx((0.002, 0.003, 0.001))
    assert costs.per_host == pytest.approx(0.002)  # their median


@pytest.mark.parametrize(
    ("runner", "async_task"), [("threadpool", False), ("asyncio", True), ("asyncio", False)]
)
def test_an_in_process_runner_is_one_process_on_one_core(runner: str, async_task: bool) -> None:
    costs = measure_costs(runner, async_task=async_task, hosts=1000)
    assert (costs.processes, costs.cores) == (1, 1)
    assert costs.startup > 0
    assert costs.per_host > 0  # a thousand hosts cost the parent more than one


@pytest.fixture
def pool_sizes(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The worker processes processpool runners have after each run."""
    sizes: list[int] = []
    run = ProcessPoolRunner.run

    def counted(self: ProcessPoolRunner, *args: Any) -> Any:
        try:
            return run(self, *args)
        finally:
            sizes.append(len(self.worker_pids))

    monkeypatch.setattr(ProcessPoolRunner, "run", counted)
    yield sizes


@pytest.mark.slow  # a fork server and workers of its own
@pytest.mark.parametrize("options", [{"num_procs": 1}, {}])
def test_processpool_costs_its_pool_and_leaves_no_process(
    pool_sizes: list[int], options: dict[str, Any]
) -> None:
    costs = measure_costs("processpool", async_task=True, hosts=200, options=options)
    expected = ProcessPoolRunner(**options).num_procs  # the CPU count by default
    assert costs.processes == expected == max(pool_sizes)
    assert costs.cores == min(expected, os.cpu_count() or 1)
    assert costs.startup > 0 and costs.per_host >= 0
    # no_leaked_processes: the fork server and the workers were stopped


@pytest.mark.slow  # a fork server of its own
def test_ctrl_c_during_a_calibration_stops_what_it_started(
    monkeypatch: pytest.MonkeyPatch, pool_sizes: list[int]
) -> None:
    real = calibrate._wall
    walls = 0

    def pressed_after_the_first(nr: Nornir, task: Callable[..., Any]) -> float:
        nonlocal walls
        walls += 1
        if walls > 1:
            raise KeyboardInterrupt
        return real(nr, task)

    monkeypatch.setattr(calibrate, "_wall", pressed_after_the_first)
    with pytest.raises(KeyboardInterrupt):
        measure_costs("processpool", async_task=True, hosts=10, options={"num_procs": 1})
    assert pool_sizes == [1]  # a worker was running
    # no_leaked_processes: it was stopped


def test_a_host_that_fails_fails_the_calibration_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refused(task: Any, **params: Any) -> None:
        raise ConnectionRefusedError(task.host.name)

    monkeypatch.setattr(calibrate, "sim_rtt", refused)
    with pytest.raises(RuntimeError, match="calibrate: 1 of 1 hosts failed, dev0 first") as err:
        measure_costs("threadpool", async_task=False, hosts=5)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("runner", "options", "message"),
    [
        ("serial", {}, "calibrate: runner 'serial' takes no num_workers"),
        ("no-such-runner", {}, "unknown runner 'no-such-runner'; available: asyncio"),
        ("threadpool", {"hosts": 1}, "hosts must be"),
        ("threadpool", {"hosts": MAX_CALIBRATION_HOSTS + 1}, "hosts must be"),
        ("threadpool", {"hosts": True}, "hosts must be"),
        ("threadpool", {"address": "tcp://127.0.0.1:1"}, "no option 'address'"),
        ("processpool", {"options": {"num_procs": 0}}, "num_procs must be"),
    ],
)
def test_bad_input_is_refused_in_one_line_before_anything_starts(
    runner: str, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message) as err:
        measure_costs(runner, async_task=False, **options)
    assert "\n" not in str(err.value)


def test_dask_on_a_scheduler_reads_its_workers_and_threads() -> None:
    address = shared_address()  # two workers of one thread each
    assert cluster_shape(address) == (2, 2)
    # num_procs is the embedded cluster's: a scheduler's own workers are what count.
    costs = measure_costs(
        "dask", async_task=True, hosts=100, address=address, options={"num_procs": 1}
    )
    assert (costs.processes, costs.cores) == (2, 2)
    assert costs.startup > 0 and costs.per_host >= 0


def test_dask_on_a_scheduler_given_in_the_options_reads_it_too() -> None:
    costs = measure_costs("dask", async_task=True, hosts=10, options={"address": shared_address()})
    assert (costs.processes, costs.cores) == (2, 2)


def test_cluster_shape_says_in_one_line_when_nothing_answers() -> None:
    from nornir_bench.runners.dask import DaskClusterError

    with pytest.raises(DaskClusterError, match="cannot reach the scheduler") as err:
        cluster_shape("tcp://127.0.0.1:1", {"connect_timeout": 0.5})
    assert "\n" not in str(err.value)


@pytest.mark.slow  # an embedded Dask cluster of its own
def test_dask_embedded_costs_its_cluster_and_stops_it() -> None:
    costs = measure_costs("dask", async_task=True, hosts=20, options={"num_procs": 1})
    assert (costs.processes, costs.cores) == (1, 1)
    assert costs.startup > 0 and costs.per_host >= 0
    # no_leaked_processes: the scheduler and its worker were stopped


def test_replaying_latencies_measures_the_in_process_runners_own_cpu_and_refuses_the_rest() -> None:
    assert replay_cpu("asyncio", async_task=True, latencies=[0.001, 0.002, 0.003]) >= 0
    assert replay_cpu("threadpool", async_task=False, latencies=[0.001, 0.002]) >= 0
    with pytest.raises(ValueError, match="replay_cpu measures an in-process runner, got 'dask'"):
        replay_cpu("dask", async_task=True, latencies=[0.1, 0.1])
    with pytest.raises(ValueError, match="two latencies or more"):
        replay_cpu("asyncio", async_task=True, latencies=[0.1])
