"""The garbage-collector helpers leave the collector as they found it."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from nornir_bench.core._gc import RUN_GEN0_THRESHOLD, collector_paused, tuned_for_run

ROOT = Path(__file__).resolve().parents[2]


def test_run_tuning_is_undone_after_nested_and_concurrent_use() -> None:
    assert gc.get_freeze_count() == 0
    before = gc.get_threshold()
    with tuned_for_run():
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold()[0] == max(before[0], RUN_GEN0_THRESHOLD)
        inner_done = threading.Event()

        def other_run() -> None:
            with tuned_for_run():
                pass
            inner_done.set()

        thread = threading.Thread(target=other_run)
        thread.start()
        thread.join()
        assert inner_done.is_set()
        assert gc.get_freeze_count() > 0  # the other run's end did not unfreeze ours
        assert gc.get_threshold()[0] == max(before[0], RUN_GEN0_THRESHOLD)
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == before


def test_a_users_higher_threshold_is_kept() -> None:
    before = gc.get_threshold()
    gc.set_threshold(RUN_GEN0_THRESHOLD * 5, 10, 10)
    try:
        with tuned_for_run():
            assert gc.get_threshold()[0] == RUN_GEN0_THRESHOLD * 5
        assert gc.get_threshold() == (RUN_GEN0_THRESHOLD * 5, 10, 10)
    finally:
        gc.set_threshold(*before)


def test_collector_paused_restores_the_previous_state() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()  # a user's own choice to disable stays
    finally:
        gc.enable()


# Run in a fresh interpreter: when a full collection comes depends on the heap's size, and the
# heap of a test process depends on which tests ran before this one.
_MANY_RUNS = """
import gc, json, logging, sys
from nornir_bench import SimulatedFailure
from nornir_bench.tasks import asim_rtt, sim_rtt
from tests.conftest import make_nornir

logging.getLogger("nornir.core.task").disabled = True  # not the subject: 12,000 failure records
hosts, runs = 1_000, 12
procs = {"num_procs": 2} if sys.argv[1] == "dask" else {}  # its cluster: two workers
nr = make_nornir(sys.argv[1], hosts=hosts, num_workers=50, **procs)
task = asim_rtt if getattr(nr.runner, "prefers_async_tasks", False) else sim_rtt
alive = []
for _ in range(runs):
    result = nr.run(task=task, rtt=0, fail_rate=1.0, on_failed=True)
    assert len(result.failed_hosts) == hosts
    alive.append(sum(1 for o in gc.get_objects() if type(o) is SimulatedFailure))
    del result
print(json.dumps(alive))
"""


@pytest.mark.parametrize("runner", ["threaded", "threadpool", "asyncio", "processpool", "dask"])
def test_the_failures_of_earlier_runs_do_not_pile_up(runner: str) -> None:
    """A process running job after job: each run's failed results become garbage cycles
    (exception, traceback, frames) when the next result replaces them. Freezing the heap at
    each run's start once kept every one of them alive, run after run."""
    done = subprocess.run(
        [sys.executable, "-c", _MANY_RUNS, runner],
        cwd=ROOT, capture_output=True, text=True, timeout=100,
    )
    assert done.returncode == 0, done.stderr
    alive = json.loads(done.stdout)
    hosts, runs = 1_000, len(alive)
    # The last run's failures are alive (its result was just dropped, not collected yet); the
    # earlier runs' are garbage, collected once the heap has grown by a quarter.
    assert max(alive[runs // 2 :]) <= 6 * hosts, alive
