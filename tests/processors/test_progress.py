"""The progress bar processor on every runner: it counts each host once, and failures."""

from __future__ import annotations

import io
import threading
from collections.abc import Mapping
from typing import Any

import pytest

from nornir_bench.processors.progress import ProgressBar
from nornir_bench.tasks import asim_rtt, sim_rtt
from tests.conftest import make_nornir
from tests.dask_cluster import SharedClusterOptions

RUNNERS = ["threadpool", "asyncio", "processpool", "dask", "threaded", "serial"]
# Two worker processes; dask's on the session's shared cluster.
RUNNER_OPTIONS: dict[str, Mapping[str, Any]] = {
    "processpool": {"num_procs": 2},
    "dask": SharedClusterOptions(),
}


@pytest.mark.parametrize("runner", RUNNERS)
def test_the_bar_counts_every_host_and_the_failed_ones(runner: str) -> None:
    out = io.StringIO()
    bar = ProgressBar(file=out, enabled=True)
    options = RUNNER_OPTIONS.get(runner, {})
    nr = (
        make_nornir(runner, hosts=30, num_workers=4, **options)
        if runner != "serial"
        else make_nornir(runner, hosts=30)
    )
    task = asim_rtt if getattr(nr.runner, "prefers_async_tasks", False) else sim_rtt
    result = nr.with_processors([bar]).run(task=task, rtt=0, fail_rate=0.3, seed=3)
    getattr(nr.runner, "close", lambda: None)()
    failed = len(result.failed_hosts)
    assert 0 < failed < 30
    final = out.getvalue().split("\r")[-1]
    assert "30/30" in final and f"failed={failed}" in final
    assert bar.failed == failed


def test_the_bar_is_off_when_the_output_is_not_a_terminal() -> None:
    out = io.StringIO()
    bar = ProgressBar(file=out)
    assert bar.enabled is False
    make_nornir("threadpool", hosts=5).with_processors([bar]).run(task=sim_rtt, rtt=0)
    assert out.getvalue() == ""


def test_the_bar_leaves_no_thread_behind() -> None:
    before = set(threading.enumerate())
    bar = ProgressBar(file=io.StringIO(), enabled=True)
    make_nornir("threadpool", hosts=5).with_processors([bar]).run(task=sim_rtt, rtt=0.01)
    assert set(threading.enumerate()) <= before
