"""A runner's traits, not its name, shape what calibrate and advise do with it: a runner written
here and registered in code, as a user's would be, is calibrated and advised as the built-in
runner whose traits it shares."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from nornir.core.inventory import Host
from nornir.core.plugins.runners import RunnersPluginRegister
from nornir.core.task import AggregatedResult, Task
from nornir.plugins.runners import ThreadedRunner

from nornir_bench.bench.advise import Limits, Sample, predict
from nornir_bench.bench.advise_runners import advised_runners
from nornir_bench.bench.calibrate import measure_costs
from nornir_bench.bench.costs import RunnerCosts
from nornir_bench.core.runner_traits import Placement
from nornir_bench.jobs.advise import advise_job
from nornir_bench.jobs.load import load_job

pytestmark = pytest.mark.usefixtures("no_leaked_threads")

RUNS: list[int] = []  # the hosts of each run of the runners below, in order


class Undeclared(ThreadedRunner):
    """nornir's threaded runner, its runs counted: it declares no trait."""

    def run(self, task: Task, hosts: list[Host]) -> AggregatedResult:
        RUNS.append(len(hosts))
        return super().run(task, hosts)


class TwoProcesses(Undeclared):
    """Declares the traits of a runner of two worker processes on this machine, as
    processpool's ``num_procs=2``; its hosts still run on threads: the traits are the subject."""

    runs_elsewhere = True

    def placement(self) -> Placement:
        return Placement(processes=2, cores=2)


@pytest.fixture(autouse=True)
def registered() -> Iterator[None]:
    RunnersPluginRegister.register("two-procs", TwoProcesses)
    RunnersPluginRegister.register("undeclared", Undeclared)
    RUNS.clear()
    yield
    RunnersPluginRegister.deregister("two-procs")
    RunnersPluginRegister.deregister("undeclared")


def test_calibrate_warms_a_runner_whose_hosts_run_elsewhere_and_reads_its_placement() -> None:
    costs = measure_costs("two-procs", async_task=False, hosts=20)
    # A run of one, every host once to start the workers, then three timed pairs.
    assert RUNS == [1, 20, *[1, 20] * 3]
    assert (costs.processes, costs.cores, costs.processes_here) == (2, 2, 2)
    RUNS.clear()
    costs = measure_costs("undeclared", async_task=False, hosts=20)
    assert RUNS == [1, *[1, 20] * 3]  # in process: nothing to warm
    assert (costs.processes, costs.cores, costs.processes_here) == (1, 1, 0)


def test_the_model_reads_the_traits_as_for_the_built_in_runner_that_shares_them() -> None:
    limits = Limits(cpus=2, open_files_soft=10**6, open_files_hard=10**6)
    # Unmeasured, a runner is costed by its traits: worker processes, one per CPU, or none.
    assert limits.costs("two-procs") == limits.costs("processpool") == RunnerCosts(
        processes=2, cores=2, processes_here=2
    )
    assert limits.costs("undeclared") == limits.costs("threadpool") == RunnerCosts()
    sample = Sample(latencies=(0.1,) * 20, base_memory=2**20, cpu_per_host=0.001)
    two = predict(sample, runner="two-procs", workers=50, hosts=1_000, limits=limits)
    pool = predict(sample, runner="processpool", workers=50, hosts=1_000, limits=limits)
    assert replace(two, runner="processpool") == pool
    assert two.in_flight == 100  # 50 in each of two processes
    assert two.memory == 3 * 2**20  # the parent's and each worker's
    one = predict(sample, runner="undeclared", workers=50, hosts=1_000, limits=limits)
    assert replace(one, runner="threadpool") == predict(
        sample, runner="threadpool", workers=50, hosts=1_000, limits=limits
    )
    assert (one.in_flight, one.memory) == (50, 2**20)


def test_a_runner_registered_in_code_is_advised_by_its_traits(tmp_path: Path) -> None:
    # A blocking task: advised on the runners that declare traits and take blocking tasks;
    # one that declares none only when named; the sample on the first in process.
    chosen = advised_runners(async_task=False)
    assert chosen.predicted == ("threadpool", "two-procs")
    assert chosen.sample == "threadpool"
    assert advised_runners(False, ["undeclared"]).predicted == ("undeclared",)
    with pytest.raises(ValueError, match="--runners: advise predicts .*'two-procs'"):
        advised_runners(True, ["two-procs"])  # it does not run async def tasks natively
    path = tmp_path / "job.yaml"
    path.write_text(textwrap.dedent("""\
        inventory: {plugin: synthetic, options: {hosts: 40}}
        runner: {plugin: threadpool, options: {num_workers: 5}}
        logging: {enabled: false}
        task: {name: sim_rtt, params: {rtt: 0.01}}
        """))
    found = advise_job(load_job(path), sample=10, seed=1, runners=["two-procs"])
    assert found.sample_runner == "threadpool"
    assert (found.costs["two-procs"].processes, found.costs["two-procs"].processes_here) == (2, 2)
    assert found.advice.best.runner == "two-procs"
    assert {p.in_flight for p in found.advice.predictions if p.workers == 10} == {20}
