"""Simulated round trips: the draw, the failure, the blocking and awaitable twins."""

from __future__ import annotations

import asyncio
import pickle
import threading
import time
from types import SimpleNamespace
from typing import Any

import pytest

from nornir_bench import SimulatedFailure, asim_rtt, sim_rtt
from nornir_bench.tasks import MAX_RTT, params_check_of, plan_round_trip
from tests.conftest import make_nornir
from tests.waiting import HANG_GUARD, still_alive


def _task(host: str) -> Any:
    """Only ``task.host.name`` is read by the simulated tasks: the rest of Task is not tested
    here."""
    return SimpleNamespace(host=SimpleNamespace(name=host))


def test_plain_round_trip_is_exact_and_never_fails() -> None:
    assert plan_round_trip("dev0", 0.05) == (0.05, False)


def test_seeded_draw_depends_only_on_seed_and_host() -> None:
    def draw(seed: int) -> list[Any]:
        return [
            plan_round_trip(f"dev{i}", 0.1, jitter=0.05, fail_rate=0.3, seed=seed)
            for i in range(300)
        ]

    draws, again, other = draw(42), draw(42), draw(43)
    assert draws == again and draws != other
    assert all(0.05 <= d.delay <= 0.15 for d in draws)
    assert 0 < sum(d.fails for d in draws) < 300


def test_jitter_never_goes_below_zero() -> None:
    assert all(plan_round_trip(f"h{i}", 0.0, jitter=0.01, seed=1).delay >= 0 for i in range(100))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rtt": -0.1}, "rtt must be a number of seconds from 0 to 3600"),
        ({"rtt": float("nan")}, "rtt must be a number of seconds from 0 to 3600"),
        ({"rtt": float("inf")}, r"rtt must be a number of seconds from 0 to 3600 \(an hour"),
        ({"rtt": 1e300}, "rtt must be a number of seconds from 0 to 3600"),
        ({"rtt": MAX_RTT + 1}, "rtt must be a number of seconds from 0 to 3600"),
        ({"rtt": 0.1, "jitter": -1}, "jitter must be a number of seconds from 0 to 3600"),
        ({"rtt": 0.1, "jitter": 1e300}, "jitter must be a number of seconds from 0 to 3600"),
        ({"rtt": 0.1, "fail_rate": 1.5}, "fail_rate must be a probability from 0 to 1"),
    ],
)
def test_bad_parameters_rejected(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        plan_round_trip("dev0", **kwargs)


def test_sim_rtt_sleeps_at_least_the_delay_and_returns_it() -> None:
    start = time.perf_counter()
    assert sim_rtt(_task("dev0"), 0.02) == 0.02
    assert time.perf_counter() - start >= 0.02


def test_sim_and_asim_agree_on_delay_and_failure() -> None:
    for i in range(40):
        task = _task(f"dev{i}")
        plan = plan_round_trip(task.host.name, 0.0, jitter=0.002, fail_rate=0.5, seed=9)
        for run in (lambda task=task: sim_rtt(task, 0.0, 0.002, 0.5, 9),
                    lambda task=task: asyncio.run(asim_rtt(task, 0.0, 0.002, 0.5, 9))):
            if plan.fails:
                with pytest.raises(SimulatedFailure, match=f"simulated failure on dev{i}"):
                    run()
            else:
                assert run() == plan.delay


def test_failures_through_nornir_are_named_and_picklable() -> None:
    result = make_nornir("threadpool", hosts=10, num_workers=5).run(
        task=sim_rtt, rtt=0.0, fail_rate=1.0, seed=3
    )
    assert sorted(result.failed_hosts) == sorted(f"dev{i}" for i in range(10))
    exc = result["dev4"][0].exception
    assert isinstance(exc, SimulatedFailure) and exc.host == "dev4"
    copy = pickle.loads(pickle.dumps(exc))
    assert (type(copy), str(copy), copy.host) == (SimulatedFailure, str(exc), "dev4")


def test_the_longest_round_trip_allowed_is_max_rtt() -> None:
    assert plan_round_trip("dev0", MAX_RTT, jitter=MAX_RTT, seed=1).delay <= 2 * MAX_RTT


@pytest.mark.timeout(HANG_GUARD)
@pytest.mark.parametrize(
    "kwargs", [{"rtt": float("inf")}, {"rtt": 1e300}, {"rtt": 0.0, "jitter": float("inf")}]
)
def test_an_endless_round_trip_is_refused_instead_of_sleeping_or_overflowing(
    kwargs: dict[str, float],
) -> None:
    # Unchecked, asyncio.sleep(inf) never returns and time.sleep(1e300) overflows.
    with pytest.raises(ValueError, match="must be a number of seconds from 0 to 3600"):
        asyncio.run(asim_rtt(_task("dev0"), **kwargs))
    with pytest.raises(ValueError, match="must be a number of seconds from 0 to 3600"):
        sim_rtt(_task("dev0"), **kwargs)


def test_an_endless_round_trip_fails_its_host_with_the_reason() -> None:
    result = make_nornir("threadpool", hosts=2).run(task=sim_rtt, rtt=1e300)
    assert sorted(result.failed_hosts) == ["dev0", "dev1"]
    exc = result["dev0"][0].exception
    assert isinstance(exc, ValueError), exc
    assert str(exc) == (
        "rtt must be a number of seconds from 0 to 3600 (an hour: longer than any device takes "
        "to answer), got 1e+300"
    )


@pytest.mark.parametrize("task", [sim_rtt, asim_rtt])
def test_both_tasks_carry_the_check_job_files_run_first(task: Any) -> None:
    check = params_check_of(task)
    assert check is not None
    check({"rtt": 0.05, "jitter": 0.01, "fail_rate": 0.5})
    with pytest.raises(ValueError, match="jitter must be a number of seconds from 0 to 3600"):
        check({"rtt": 0.05, "jitter": float("inf")})


def test_a_round_trip_past_the_deadline_ends_there_and_leaves_no_thread() -> None:
    """Once, sim_rtt(rtt=600) under task_timeout 0.3 left its thread asleep for ten minutes."""
    before = set(threading.enumerate())
    result = make_nornir("threadpool", hosts=4, task_timeout=0.3).run(task=sim_rtt, rtt=600)
    assert {type(m[0].exception).__name__ for m in result.values()} == {"TaskTimeout"}
    # A thread asleep for the 600 s would outlive the hang guard.
    assert not still_alive(set(threading.enumerate()) - before)
