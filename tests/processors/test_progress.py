"""The progress bar processor: it counts each host once, and failures.

On one blocking and one async runner: that every runner fires each host's hooks once, in the
parent, is the conformance suite's (``test_processor_hooks_per_host_in_nornirs_order``)."""

from __future__ import annotations

import io
import threading

import pytest

from nornir_bench.processors.progress import ProgressBar
from nornir_bench.tasks import asim_rtt, sim_rtt
from tests.conftest import make_nornir

RUNNERS = ["threadpool", "asyncio"]


@pytest.mark.parametrize("runner", RUNNERS)
def test_the_bar_counts_every_host_and_the_failed_ones(runner: str) -> None:
    out = io.StringIO()
    bar = ProgressBar(file=out, enabled=True)
    nr = make_nornir(runner, hosts=30, num_workers=4)
    task = asim_rtt if getattr(nr.runner, "prefers_async_tasks", False) else sim_rtt
    result = nr.with_processors([bar]).run(task=task, rtt=0, fail_rate=0.3, seed=3)
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
