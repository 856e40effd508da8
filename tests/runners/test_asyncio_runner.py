"""What is the asyncio runner's own: its loops, its thread pool, timeouts, arun, cancellation.

What it shares with every runner (nornir's semantics, Ctrl-C, leaving nothing behind) is in
test_conformance.py."""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import pickle
import signal
import threading
import time

import pytest
from nornir.core.exceptions import NornirExecutionError
from nornir.core.task import AggregatedResult, Task

from nornir_bench import AsyncioRunner, RunInterrupted, TaskTimeout, arun, arun_subtask
from nornir_bench.tasks import asim_rtt
from tests import tasksets
from tests.async_tasksets import ASYNC_TASK_SET
from tests.conftest import Recorder, make_nornir
from tests.waiting import HANG_GUARD

pytestmark = pytest.mark.usefixtures("no_leaked_threads")
LOOPS = ["asyncio", "uvloop"]


def test_uvloop_asked_for_but_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: None if n == "uvloop" else real(n, *a)
    )
    with pytest.raises(ValueError, match="loop 'uvloop' needs the uvloop package"):
        AsyncioRunner(loop="uvloop")
    assert AsyncioRunner(loop="auto").loop_implementation == "asyncio"


def test_blocking_tasks_run_concurrently_in_a_bounded_pool() -> None:
    threads = 6
    barrier = threading.Barrier(threads, timeout=HANG_GUARD)
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


def test_a_blocking_task_past_its_deadline_is_abandoned_and_the_run_does_not_wait_for_it() -> None:
    """Once, run() waited for the stuck thread: a hung device held the run for ever."""
    release = threading.Event()

    def stuck_on_dev1(task: Task) -> str:
        if task.host.name == "dev1":
            release.wait(30)  # cannot be interrupted; ends when the test lets it
        return "done"

    result = make_nornir("asyncio", hosts=3, task_timeout=0.1).run(task=stuck_on_dev1)
    stuck = [t for t in threading.enumerate() if t.name.startswith("asyncio-runner")]
    assert stuck and all(t.is_alive() for t in stuck)  # run() returned while it was stuck
    release.set()
    for thread in stuck:
        thread.join(10)
    assert sorted(result.failed_hosts) == ["dev1"]
    error = result["dev1"][0].exception
    assert isinstance(error, TaskTimeout) and error.abandoned
    # no_leaked_threads: the stuck thread ended once its call returned, its return dropped


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
    # recorded as nr.run does
    assert sorted(nr.data.failed_hosts) == ["dev1", "dev3", "dev5", "dev7"]
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


@pytest.mark.parametrize("loop", LOOPS)
def test_the_first_ctrl_c_lets_hosts_in_flight_finish_the_second_cancels_them(loop: str) -> None:
    """Timers on one loop fire in the order of their deadlines: dev5 presses first, dev7
    finishes after it, dev6 presses again; the hosts still in flight are then cancelled."""
    cancelled: list[str] = []
    naps = {5: 0.05, 7: 0.1, 6: 0.2}

    async def slow(task: Task) -> str:
        index = int(task.host.name[3:])
        try:
            await asyncio.sleep(0.01 if index < 5 else naps.get(index, 10))
            if index in (5, 6):
                signal.raise_signal(signal.SIGINT)  # Ctrl-C, delivered to this (main) thread
                await asyncio.sleep(10)
        except (asyncio.CancelledError, KeyboardInterrupt):  # dev6: its own press's
            cancelled.append(task.host.name)
            raise
        return task.host.name

    nr = make_nornir("asyncio", hosts=40, num_workers=10, loop=loop)
    with pytest.raises(RunInterrupted) as info:
        nr.run(task=slow)
    partial = info.value.result
    # dev0-4 finished, their workers moved on to dev10-14; dev7 finished after the first press
    assert list(partial) == ["dev0", "dev1", "dev2", "dev3", "dev4", "dev7"]
    assert info.value.pending == 34 and info.value.abandoned
    # the second press cancelled the ten hosts still in flight; no host started after the first
    assert sorted(cancelled, key=lambda n: int(n[3:])) == [
        f"dev{i}" for i in (5, 6, 8, 9, 10, 11, 12, 13, 14)
    ]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


class _PressesOnData(asyncio.Protocol):
    """A connection whose data arriving is a Ctrl-C: the press lands inside the loop's
    protocol callback, where uvloop takes an exception for the connection's error."""

    def data_received(self, data: bytes) -> None:
        signal.raise_signal(signal.SIGINT)


@pytest.mark.parametrize("loop", LOOPS)
def test_a_second_ctrl_c_during_a_connections_callback_still_abandons_the_hosts(
    loop: str,
) -> None:
    """The second press arrives while the loop delivers a connection's data: the host in
    flight (a device that does not answer) is cancelled, not waited for. Its wait ends at the
    hang guard: a lost press (which pytest-timeout's own SIGALRM would share) fails, not hangs."""
    cancelled: list[str] = []

    async def pressed_twice(task: Task) -> None:
        async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.write(b"prompt#")
            await writer.drain()
            writer.close()

        signal.raise_signal(signal.SIGINT)  # the first press: the host goes on
        server = await asyncio.start_server(answer, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        transport, _ = await asyncio.get_running_loop().create_connection(
            _PressesOnData, "127.0.0.1", port
        )
        try:
            await asyncio.sleep(HANG_GUARD)
        except asyncio.CancelledError:
            cancelled.append(task.host.name)
            raise
        finally:
            transport.close()
            server.close()

    nr = make_nornir("asyncio", hosts=1, loop=loop)
    with pytest.raises(RunInterrupted) as info:
        nr.run(task=pressed_twice)
    assert info.value.abandoned and not info.value.result
    assert cancelled == ["dev0"]


def test_logging_of_failures_goes_to_nornirs_logger(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="nornir.core.task"):
        make_nornir("asyncio", hosts=2).run(task=ASYNC_TASK_SET[2])
    assert any("dev1" in r.getMessage() for r in caplog.records)


class _LoopConnection:
    """An async connection held on the runner's kept loop; says how it was closed."""

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.closed_on: asyncio.AbstractEventLoop | None = None

    async def aclose(self) -> None:
        self.closed_on = asyncio.get_running_loop()

    def close(self) -> None:
        pass


async def keeps_a_connection(task: Task) -> None:
    task.host.connections["held"] = _LoopConnection()  # type: ignore[assignment]


def test_a_runner_collected_while_another_loop_runs_closes_its_connections_on_their_loop() -> None:
    """Once, the finalizer of a runner holding connections ran its kept loop from inside the
    loop of whatever run the garbage collector interrupted: RuntimeError, connections left."""
    import gc

    nr = make_nornir("asyncio", hosts=3)
    nr.run(task=keeps_a_connection)
    held = [host.connections["held"] for host in nr.inventory.hosts.values()]
    assert len({connection.loop for connection in held}) == 1  # type: ignore[attr-defined]
    loop = held[0].loop  # type: ignore[attr-defined]

    async def elsewhere() -> None:
        nonlocal nr
        del nr
        gc.collect()

    asyncio.run(elsewhere())
    assert all(connection.closed_on is loop for connection in held)  # type: ignore[attr-defined]
    assert loop.is_closed()
