"""The runner registry: which runners are installed and what each can do, without loading them."""

from __future__ import annotations

import nornir_bench
from nornir_bench.runners import AsyncioRunner, ProcessPoolRunner, ThreadPoolRunner
from nornir_bench.runners.dask import DaskRunner
from nornir_bench.runners.registry import available_runners, prefers_async_tasks, takes_workers
from tests.conftest import imported_by


def test_ours_and_nornirs_runners_are_installed() -> None:
    assert {"threadpool", "asyncio", "processpool", "dask", "threaded", "serial"} <= set(
        available_runners()
    )
    assert nornir_bench.available_runners is available_runners


def test_what_each_runner_can_do() -> None:
    assert prefers_async_tasks(AsyncioRunner) and prefers_async_tasks(ProcessPoolRunner)
    assert prefers_async_tasks(DaskRunner)
    assert not prefers_async_tasks(ThreadPoolRunner)
    assert takes_workers("threadpool") and takes_workers("threaded") and takes_workers("dask")
    assert not takes_workers("serial") and not takes_workers("no-such-runner")


def test_asking_the_registry_loads_no_runner() -> None:
    loaded = imported_by("from nornir_bench.runners.registry import available_runners\n"
                         "assert 'threadpool' in available_runners()")
    assert [name for name in loaded if name.startswith("nornir_bench.runners.")] == [
        "nornir_bench.runners.registry"
    ]
