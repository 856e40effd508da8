"""The asyncio runner keeps nornir's semantics, runs async and blocking tasks, and cleans up."""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import pickle
import signal
import threading
import time
from typing import Any

import pytest
from nornir.core.exceptions import NornirExecutionError, NornirSubTaskError
from nornir.core.task import AggregatedResult, Task

from nornir_bench import AsyncioRunner, RunInterrupted, TaskTimeout, arun, arun_subtask
from nornir_bench.tasks import asim_rtt
from tests import tasksets
from tests.async_tasksets import ASYNC_TASK_SET
from tests.conftest import Recorder, aggregated_view, make_nornir

pytestmark = pytest.mark.usefixtures("no_leaked_threads")
LOOPS = ["asyncio", "uvloop"] if importlib.util.find_spec("uvloop") else ["asyncio"]


@pytest.mark.parametrize("loop", LOOPS)
@pytest.mark.parametrize("index", range(len(ASYNC_TASK_SET)), ids=lambda i: ASYNC_TASK_SET[i].__name__)
def test_async_tasks_give_what_threadpool_gives_for_their_sync_twins(loop: str, index: int) -> None:
    ours = make_nornir("asyncio", hosts=30, num_workers=7, loop=loop).run(task=ASYNC_TASK_SET[index])
    sync = make_nornir("threadpool", hosts=30, num_workers=7).run(task=tasksets.TASK_SET[index])
    assert isinstance(ours, AggregatedResult)
    assert aggregated_view(ours) == aggregated_view(sync)


@pytest.mark.parametrize("task_fn", tasksets.TASK_SET, ids=lambda f: f.__name__)
def test_blocking_tasks_give_what_threadpool_gives(task_fn: Any) -> None:
    ours = make_nornir("asyncio", hosts=30, num_workers=5).run(task=task_fn)
    theirs = make_nornir("threadpool", hosts=30, num_workers=5).run(task=task_fn)
    assert aggregated_view(ours) == aggregated_view(theirs)


def test_loaded_through_nornirs_entry_point() -> None:
    nr = make_nornir("asyncio", num_workers=321, loop="asyncio", task_timeout=2.5)
    assert isinstance(nr.runner, AsyncioRunner)
    assert (nr.runner.num_workers, nr.runner.loop, nr.runner.task_timeout) == (321, "asyncio", 2.5)
    assert nr.runner.max_threads == 321
    assert make_nornir("asyncio").runner.num_workers == 100


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"num_workers": 0}, "num_workers must be a whole number >= 1, got 0"),
        ({"num_workers": "9"}, "num_workers must be a whole number >= 1, got '9'"),
        ({"loop": "trio"}, "loop must be one of auto, asyncio, uvloop; got 'trio'"),
        ({"task_timeout": 0}, "task_timeout must be a number of seconds > 0, or None"),
        ({"task_timeout": -1.0}, "task_timeout must be a number of seconds > 0, or None"),
        ({"task_timeout": "5"}, "task_timeout must be a number of seconds > 0, or None"),
        ({"task_timeout": float("inf")}, "task_timeout must be a number of seconds > 0, or None"),
        ({"max_threads": 0}, "max_threads must be a whole number >= 1, got 0"),
    ],
)
def test_bad_options_rejected_when_built(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match="^asyncio runner: " + message.replace("(", r"\(")):
        AsyncioRunner(**options)


def test_uvloop_asked_for_but_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "uvloop" else real(n, *a))
    with pytest.raises(ValueError, match="loop 'uvloop' needs the uvloop package"):
        AsyncioRunner(loop="uvloop")
    assert AsyncioRunner(loop="auto").loop_implementation == "asyncio"


def test_in_flight_hosts_bounded_by_num_workers() -> None:
    in_flight, most = 0, 0

    async def crowded(task: Task) -> None:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        await asyncio.sleep(0.001)
        in_flight -= 1

    result = make_nornir("asyncio", hosts=200, num_workers=13).run(task=crowded)
    assert not result.failed
    assert most == 13


def test_blocking_tasks_run_concurrently_in_a_bounded_pool() -> None:
    threads = 6
    barrier = threading.Barrier(threads, timeout=10)
    lock = threading.Lock()
    in_flight, most = 0, 0
    names: set[str] = set()

    def blocking(task: Task) -> None:
        nonlocal in_flight, most
        with lock:
            in_flight += 1
            most = max(most, in_flight)
            names.add(threading.current_thread().name)
        if int(task.host.name[3:]) < threads:
            barrier.wait()  # only passes if `threads` hosts block at the same time
        time.sleep(0.001)
        with lock:
            in_flight -= 1

    nr = make_nornir("asyncio", hosts=60, num_workers=50, max_threads=threads)
    result = nr.run(task=blocking)
    assert not result.failed, result.failed_hosts
    assert most == threads
    assert len(names) <= threads and all(n.startswith("asyncio-runner") for n in names)


def test_async_subtasks_fire_hooks_and_fail_like_task_run() -> None:
    ours, theirs = Recorder(), Recorder()
    async_result = make_nornir("asyncio", hosts=6).with_processors([ours]).run(
        task=ASYNC_TASK_SET[-1]
    )
    make_nornir("serial", hosts=6).with_processors([theirs]).run(task=tasksets.grouped)
    assert ours.per_host() == theirs.per_host()
    top = async_result["dev3"][0]
    assert isinstance(top.exception, NornirSubTaskError)
    assert [r.name for r in async_result["dev3"]] == ["grouped", "hello", "maybe_fail"]


def test_arun_subtask_outside_a_task_is_refused() -> None:
    bare = Task(tasksets.hello, nornir=None, global_dry_run=False, processors=[])  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="from within a running task"):
        asyncio.run(arun_subtask(bare, tasksets.hello))


def test_task_timeout_cancels_the_host_and_spares_the_others() -> None:
    cancelled: list[str] = []

    async def slow_on_dev2(task: Task) -> str:
        try:
            await asyncio.sleep(30 if task.host.name == "dev2" else 0)
        except asyncio.CancelledError:
            cancelled.append(task.host.name)
            raise
        return "done"

    result = make_nornir("asyncio", hosts=5, task_timeout=0.2).run(task=slow_on_dev2)
    assert sorted(result.failed_hosts) == ["dev2"]
    exc = result["dev2"][0].exception
    assert isinstance(exc, TaskTimeout) and isinstance(exc, TimeoutError)
    assert str(exc) == "task 'slow_on_dev2' on host 'dev2' timed out after 0.2 s"
    assert cancelled == ["dev2"]  # the coroutine really was cancelled
    assert all(result[f"dev{i}"][0].result == "done" for i in (0, 1, 3, 4))
    assert pickle.loads(pickle.dumps(exc)).host == "dev2"


def test_a_tasks_own_timeout_error_is_not_mistaken_for_the_deadline() -> None:
    async def own_timeout(task: Task) -> None:
        raise TimeoutError("device did not answer")

    result = make_nornir("asyncio", hosts=2, task_timeout=5).run(task=own_timeout)
    exc = result["dev0"][0].exception
    assert type(exc) is TimeoutError and str(exc) == "device did not answer"


def test_task_timeout_on_a_blocking_task_fails_the_host_and_waits_for_its_thread() -> None:
    release = threading.Event()

    def stuck_on_dev1(task: Task) -> str:
        if task.host.name == "dev1":
            release.wait(1.0)  # cannot be interrupted; ends on its own
        return "done"

    result = make_nornir("asyncio", hosts=3, task_timeout=0.1).run(task=stuck_on_dev1)
    assert sorted(result.failed_hosts) == ["dev1"]
    assert isinstance(result["dev1"][0].exception, TaskTimeout)
    # no_leaked_threads: run() returned only after the stuck thread had finished


def test_nr_run_inside_a_running_loop_fails_at_once_and_arun_works() -> None:
    nr = make_nornir("asyncio", hosts=8, num_workers=3)
    recorder = Recorder()
    nr_recorded = nr.with_processors([recorder])

    async def application() -> AggregatedResult:
        with pytest.raises(RuntimeError, match=r"await nornir_bench.arun\(nr, task, \.\.\.\)"):
            nr.run(task=asim_rtt, rtt=0)
        return await arun(nr_recorded, ASYNC_TASK_SET[2])  # fails_on_odd

    result = asyncio.run(application())
    assert sorted(result.failed_hosts) == ["dev1", "dev3", "dev5", "dev7"]
    assert sorted(nr.data.failed_hosts) == ["dev1", "dev3", "dev5", "dev7"]  # recorded as nr.run does
    assert recorder.events[0] == ("task_started", "fails_on_odd", None)
    assert recorder.events[-1] == ("task_completed", "fails_on_odd", None)

    async def strict() -> None:
        await arun(nr, ASYNC_TASK_SET[2], raise_on_error=True, on_failed=True)

    with pytest.raises(NornirExecutionError):
        asyncio.run(strict())


def test_arun_needs_the_asyncio_runner() -> None:
    nr = make_nornir("threadpool", hosts=2)
    with pytest.raises(TypeError, match="arun needs the asyncio runner, got ThreadPoolRunner"):
        asyncio.run(arun(nr, ASYNC_TASK_SET[0]))


def test_on_good_on_failed_raise_on_error_like_nornir() -> None:
    def sequence(runner: str, task_fn: Any) -> list[object]:
        nr = make_nornir(runner, hosts=10, num_workers=4)
        first = nr.run(task=task_fn)
        return [
            sorted(first.failed_hosts),
            sorted(nr.run(task=tasksets.hello)),
            sorted(nr.run(task=tasksets.hello, on_good=False, on_failed=True)),
        ]

    assert sequence("asyncio", ASYNC_TASK_SET[2]) == sequence("threaded", tasksets.fails_on_odd)
    with pytest.raises(NornirExecutionError):
        make_nornir("asyncio", hosts=4).run(task=ASYNC_TASK_SET[2], raise_on_error=True)


def test_dry_run_reaches_async_tasks() -> None:
    from nornir import InitNornir

    async def dry(task: Task) -> bool:
        return task.is_dry_run()

    nr = InitNornir(
        inventory={"plugin": "synthetic", "options": {"hosts": 3}},
        runner={"plugin": "asyncio"},
        logging={"enabled": False},
        dry_run=True,
    )
    assert all(multi[0].result is True for multi in nr.run(task=dry).values())


def test_host_data_changes_and_results_pickle() -> None:
    async def mark(task: Task) -> str:
        task.host.data["mark"] = task.host.name.upper()
        return "marked"

    nr = make_nornir("asyncio", hosts=12, num_workers=5)
    result = nr.run(task=mark)
    assert nr.inventory.hosts["dev11"].data["mark"] == "DEV11"
    assert aggregated_view(pickle.loads(pickle.dumps(result))) == aggregated_view(result)
    grouped = nr.run(task=ASYNC_TASK_SET[-1])
    assert aggregated_view(pickle.loads(pickle.dumps(grouped))) == aggregated_view(grouped)


def test_many_runs_leave_no_loop_task_or_thread() -> None:
    stray: list[asyncio.Task[None]] = []

    async def leaves_a_task_behind(task: Task) -> None:
        stray.append(asyncio.ensure_future(asyncio.sleep(60)))

    nr = make_nornir("asyncio", hosts=20, num_workers=4)
    baseline = threading.active_count()
    for _ in range(20):
        assert not nr.run(task=leaves_a_task_behind).failed
        assert not nr.run(task=tasksets.hello).failed  # blocking: uses the pool
        assert threading.active_count() == baseline
    assert len(stray) == 400 and all(t.cancelled() for t in stray)
    with pytest.raises(RuntimeError):
        asyncio.get_running_loop()


def test_no_hosts() -> None:
    result = make_nornir("asyncio", hosts=3).filter(name="nobody").run(task=ASYNC_TASK_SET[0])
    assert len(result) == 0


def test_system_exit_from_a_task_propagates() -> None:
    async def exits(task: Task) -> None:
        if task.host.name == "dev1":
            raise SystemExit(4)

    with pytest.raises(SystemExit):
        make_nornir("asyncio", hosts=5).run(task=exits)


@pytest.mark.parametrize("loop", LOOPS)
def test_ctrl_c_cancels_in_flight_hosts_and_keeps_finished(loop: str) -> None:
    cancelled: list[str] = []

    async def slow(task: Task) -> str:
        index = int(task.host.name[3:])
        try:
            if index == 5:
                await asyncio.sleep(0.05)
                signal.raise_signal(signal.SIGINT)  # Ctrl-C, delivered to this (main) thread
            await asyncio.sleep(0.01 if index < 5 else 10)
        except asyncio.CancelledError:
            cancelled.append(task.host.name)
            raise
        return task.host.name

    nr = make_nornir("asyncio", hosts=40, num_workers=10, loop=loop)
    with pytest.raises(RunInterrupted) as info:
        nr.run(task=slow)
    partial = info.value.result
    assert list(partial) == ["dev0", "dev1", "dev2", "dev3", "dev4"]
    assert info.value.pending == 35
    # dev0-4 finished; their workers had moved on to dev10-14: ten hosts in flight, all cancelled
    assert sorted(cancelled, key=lambda n: int(n[3:])) == [f"dev{i}" for i in range(5, 15)]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_logging_of_failures_goes_to_nornirs_logger(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="nornir.core.task"):
        make_nornir("asyncio", hosts=2).run(task=ASYNC_TASK_SET[2])
    assert any("dev1" in r.getMessage() for r in caplog.records)
