"""The runner core's Scheduler and its async driver, without a runner: what it says to do next,
step by step (every runner drives it: tests/runners/test_conformance.py, test_policies.py)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from nornir.core.task import MultiResult, Result, Task

from nornir_bench.core.policies.hosts import HostAttempts
from nornir_bench.core.policies.options import RunPolicy
from nornir_bench.runners._core.async_scheduler import AsyncScheduler
from nornir_bench.runners._core.blocking import BlockingCalls
from nornir_bench.runners._core.lifecycle import Lifecycle
from nornir_bench.runners._core.limiter import InFlight
from nornir_bench.runners._core.scheduler import DONE, Scheduler, Start, TakeOver, Wait
from tests.conftest import make_nornir
from tests.waiting import HANG_GUARD


def hello(task: Task) -> Result:
    return Result(host=task.host)


ENTERED, RELEASED = threading.Event(), threading.Event()


def blocked(task: Task) -> Result:
    ENTERED.set()
    RELEASED.wait(HANG_GUARD)
    return Result(host=task.host)


def lifecycle(count: int, func: Any = hello, **options: Any) -> Lifecycle:
    nr = make_nornir(hosts=count)
    task = Task(func, nr, global_dry_run=False, processors=nr.processors)
    policy = RunPolicy.build("test runner", options)
    return Lifecycle(task, list(nr.inventory.hosts.values()), policy, planned=bool(options))


def result(run: Lifecycle, index: int, *, failed: bool = False) -> MultiResult:
    multi = MultiResult("hello")
    multi.append(Result(host=run.hosts[index], failed=failed))
    return multi


def starts(scheduler: Scheduler) -> list[int]:
    """The hosts the scheduler starts now, until it says something else."""
    started = []
    while type(action := scheduler.next()) is Start:
        started.append(action.index)
    return started


def test_without_a_plan_hosts_start_in_order_as_places_free_then_done() -> None:
    run = lifecycle(5)
    scheduler = Scheduler(run, InFlight(2))
    assert starts(scheduler) == [0, 1]
    assert scheduler.next() == Wait(0.1, foreseen=False, starts=True)
    assert scheduler.ended(1, result(run, 1)) is False
    assert starts(scheduler) == [2]
    for index in (0, 2):
        scheduler.ended(index, result(run, index))
    assert starts(scheduler) == [3, 4]
    assert scheduler.next() == Wait(0.1, foreseen=False, starts=False)  # only ends are left
    for index in (3, 4):
        scheduler.ended(index, result(run, index))
    assert scheduler.next() is DONE
    assert all(multi is not None for multi in run.result.values())


def test_a_batch_waits_for_its_hosts_and_its_end_says_many_may_start() -> None:
    run = lifecycle(6, batches=[2])
    scheduler = Scheduler(run, InFlight(6))
    assert starts(scheduler) == [0, 1]
    assert scheduler.ended(0, result(run, 0)) is False
    assert starts(scheduler) == []
    assert scheduler.ended(1, result(run, 1)) is True  # the batch ended
    assert starts(scheduler) == [2, 3]


def test_the_halt_starts_nothing_more_and_waits_for_the_hosts_out_only() -> None:
    run = lifecycle(5)
    scheduler = Scheduler(run, InFlight(2))
    assert starts(scheduler) == [0, 1]
    run.halt.set()
    assert scheduler.next() == Wait(0.1, foreseen=False, starts=False)
    scheduler.ended(0, result(run, 0))
    scheduler.ended(1, None)  # queued when the halt came: it never started
    assert scheduler.next() is DONE
    assert [run.result[host.name] is None for host in run.hosts] == [False, True, True, True, True]


def test_a_task_s_system_exit_halts_the_run_and_is_kept_to_be_raised() -> None:
    run = lifecycle(3)
    scheduler = Scheduler(run, InFlight(1))
    assert starts(scheduler) == [0]
    exit_ = SystemExit(3)
    assert scheduler.ended(0, exit_) is True
    assert run.escaped == [exit_] and run.halt.is_set()
    assert scheduler.next() is DONE


def test_an_end_told_twice_or_for_a_host_never_out_is_ignored() -> None:
    run = lifecycle(2)
    scheduler = Scheduler(run, InFlight(2))
    assert starts(scheduler) == [0, 1]
    scheduler.ended(0, result(run, 0))
    scheduler.ended(0, result(run, 0))
    assert scheduler.places.taken == 1


def test_a_call_past_its_deadline_is_taken_over_in_its_place() -> None:
    run = lifecycle(2, blocked, task_timeout=0.001)
    calls = BlockingCalls()
    scheduler = Scheduler(run, InFlight(1), calls)
    assert starts(scheduler) == [0]
    attempts = HostAttempts(run.task, run.hosts[0], run.policy)
    ENTERED.clear()
    RELEASED.clear()
    thread = threading.Thread(target=calls.call, args=(attempts,))
    thread.start()
    try:
        assert ENTERED.wait(HANG_GUARD)
        action = scheduler.next()
        while type(action) is Wait:  # until the deadline is past
            assert action.foreseen
            threading.Event().wait(action.seconds)
            action = scheduler.next()
        assert type(action) is TakeOver and action.index == 0 and action.attempts is attempts
        assert scheduler.places.taken == 1  # the host keeps its place
    finally:
        RELEASED.set()
        thread.join(HANG_GUARD)
    assert thread in calls.abandoned


def test_one_end_wakes_one_waiting_coroutine_and_the_halt_wakes_them_all(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As few coroutines woken as can be: 1,000 waiters woken for each of 10,000 hosts would
    cost more than the run (their polls pushed out of the test's way)."""
    from nornir_bench.runners._core import async_scheduler, scheduler

    monkeypatch.setattr(scheduler, "POLL_SECONDS", HANG_GUARD)
    monkeypatch.setattr(async_scheduler, "POLL_SECONDS", HANG_GUARD)
    run = lifecycle(10, max_failures=5)  # a plan

    async def main() -> tuple[int, list[Start | None]]:
        waiters = AsyncScheduler(Scheduler(run, InFlight(1)))
        asked = 0
        next_action = waiters.scheduler.next

        def counted() -> Any:
            nonlocal asked
            asked += 1
            return next_action()

        waiters.scheduler.next = counted  # type: ignore[method-assign]
        first = waiters.take()
        assert first is not None
        waiting = [asyncio.ensure_future(waiters.next()) for _ in range(5)]
        for _ in range(3):
            await asyncio.sleep(0)
        assert len(waiters._waiters) == 5
        asked = 0
        waiters.ended(first, result(run, 0))  # room for one host: one waiter looks
        for _ in range(5):
            await asyncio.sleep(0)
        looked = asked
        waiters.halt()
        return looked, await asyncio.wait_for(asyncio.gather(*waiting), HANG_GUARD)

    looked, started = asyncio.run(main())
    # The one woken starts host 1; it was the waiter timed for the next start, so it hands
    # that wait on to one other: two looks, not five.
    assert looked <= 2
    assert [start.index if start else None for start in started] == [1, None, None, None, None]
