"""The runner registry: which runners are installed and what each can do, without loading them."""

from __future__ import annotations

import subprocess
import sys

import nornir_bench
from nornir_bench.runners import AsyncioRunner, ProcessPoolRunner, ThreadPoolRunner
from nornir_bench.runners.registry import available_runners, prefers_async_tasks, takes_workers


def test_ours_and_nornirs_runners_are_installed() -> None:
    assert {"threadpool", "asyncio", "processpool", "threaded", "serial"} <= set(
        available_runners()
    )
    assert nornir_bench.available_runners is available_runners


def test_what_each_runner_can_do() -> None:
    assert prefers_async_tasks(AsyncioRunner) and prefers_async_tasks(ProcessPoolRunner)
    assert not prefers_async_tasks(ThreadPoolRunner)
    assert takes_workers("threadpool") and takes_workers("threaded")
    assert not takes_workers("serial") and not takes_workers("no-such-runner")


def test_asking_the_registry_loads_no_runner() -> None:
    done = subprocess.run(
        [sys.executable, "-c",
         "import sys\n"
         "from nornir_bench.runners.registry import available_runners\n"
         "assert 'threadpool' in available_runners()\n"
         "loaded = [m for m in sys.modules if m.startswith('nornir_bench.runners.')]\n"
         "assert loaded == ['nornir_bench.runners.registry'], loaded\n"],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
