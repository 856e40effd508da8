"""The run policies' decisions, without a runner: options, retry waits, the host plan.

Every runner applies them alike (tests/runners/test_policies.py); here their arithmetic is
checked exactly, with injected random numbers and an injected clock instead of wall time.
"""

from __future__ import annotations

import math
import time
from typing import Any

import pytest
from nornir.core.exceptions import NornirSubTaskError
from nornir.core.processor import Processors
from nornir.core.task import MultiResult, Result, Task

from nornir_bench.core.exceptions import HostSkipped, RunAborted, RunTimeout
from nornir_bench.core.policies.groups import in_flight_cap
from nornir_bench.core.policies.hosts import HostAttempts
from nornir_bench.core.policies.options import POLICY_OPTIONS, RunPolicy
from nornir_bench.core.policies.plan import HostPlan
from nornir_bench.core.policies.retry import retry_wait, retryable
from tests.conftest import make_nornir, modules_after


def policy(**options: Any) -> RunPolicy:
    return RunPolicy.build("test runner", options)


def test_the_defaults_are_the_same_built_or_not_and_within_their_own_bounds() -> None:
    default = RunPolicy()
    assert RunPolicy.build("test runner", {}) == default
    # Given back, they pass their own checks unchanged. Not the empty tuples (given, "none"
    # is None), nor the exception types (their defaults name libraries not installed here).
    values = {
        name: getattr(default, name)
        for name in POLICY_OPTIONS
        if name not in {"retry_on", "retry_never", "batches", "group_limits", "group_max_failures"}
    }
    assert RunPolicy.build("test runner", values) == default


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"retrys": 1}, "no option 'retrys'; run policy options: task_timeout, retries"),
        ({"retries": -1}, "retries must be a whole number from 0 to 100, got -1"),
        ({"retries": 1000}, "retries must be a whole number from 0 to 100, got 1000"),
        ({"retry_backoff": 0.5}, "retry_backoff must be a number from 1 to 10, got 0.5"),
        ({"retry_on": ["NoSuchError"]}, "retry_on: 'NoSuchError' is not a builtin exception"),
        ({"retry_on": ["no.such.Error"]}, "retry_on: no exception type 'no.such.Error'"),
        ({"max_fail_percentage": 150}, "max_fail_percentage must be a number from 0 to 100"),
        ({"batches": []}, "batches must be a list of 1 to 1000 batch sizes"),
        ({"batches": ["0%"]}, "batches must be a list of 1 to 1000 batch sizes"),
        ({"group_limits": {"site": 0}}, "group_limits must be a mapping of a host attribute"),
        ({"max_starts_per_second": 0}, "max_starts_per_second must be a number > 0 and <= 1000000"),
        ({"run_timeout": -1}, "run_timeout must be a number of seconds > 0, or None"),
        ({"task_timeout": float("nan")}, "task_timeout must be a number of seconds > 0, or None"),
        ({"max_start_burst": 5}, "max_start_burst sizes the bucket of max_starts_per_second"),
        ({"retries": 2, "retry_on": []}, "retry_on is empty, so retries 2 would retry nothing"),
    ],
)
def test_bad_options_are_one_line_value_errors(options: dict[str, Any], message: str) -> None:
    """Each runner passes its name and its policy options here (one bad option per runner:
    tests/runners/test_policies.py)."""
    with pytest.raises(ValueError) as caught:
        policy(**options)
    assert str(caught.value).startswith(f"test runner: {message}"), str(caught.value)
    assert "\n" not in str(caught.value)


def test_retry_waits_grow_exponentially_are_capped_and_spread_by_the_jitter() -> None:
    p = policy(retries=6, retry_delay=1, retry_backoff=3, retry_max_delay=20, retry_jitter=2)
    error = ConnectionResetError()
    least = [retry_wait(p, error, n, lambda: 0.0) for n in range(1, 7)]
    most = [retry_wait(p, error, n, lambda: 0.999999) for n in range(1, 7)]
    assert least == [1, 3, 9, 20, 20, 20]  # 1, 3, 9, 27 -> capped at 20
    assert most == pytest.approx([3, 5, 11, 22, 22, 22], abs=1e-5)
    assert retry_wait(p, error, 7, lambda: 0.0) is None  # no retries left


def test_a_failed_subtask_is_retried_for_the_error_inside_it() -> None:
    p = policy(retries=1)
    inner = MultiResult("connect")
    inner.append(Result(host=None, exception=ConnectionRefusedError("refused"), failed=True))
    wrapped = NornirSubTaskError(task="connect", result=inner)  # type: ignore[arg-type]
    assert retryable(p, wrapped)
    inner[0].exception = PermissionError("bad password")
    assert not retryable(p, wrapped)


def test_device_library_errors_match_by_name_without_importing_the_library() -> None:
    """In a fresh interpreter: this one has imported scrapli for the device tasks' tests."""
    modules = modules_after(
        "from nornir_bench.core.policies.options import RunPolicy\n"
        "from nornir_bench.core.policies.retry import retryable\n"
        "p = RunPolicy.build('test runner', {})\n"
        "assert not retryable(p, ValueError()) and retryable(p, TimeoutError())"
    )
    assert "scrapli" not in modules  # named in the defaults, never imported for it


def test_run_timeout_is_never_retried() -> None:
    assert not retryable(policy(retries=3), RunTimeout(5, started=True))


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def hosts(count: int) -> list[Any]:
    return list(make_nornir(hosts=count).inventory.hosts.values())


def test_the_token_bucket_starts_a_burst_then_keeps_to_the_rate() -> None:
    clock = Clock()
    plan = HostPlan(hosts(100), policy(max_starts_per_second=10, max_start_burst=3), clock=clock)
    assert [plan.take() for _ in range(4)] == [0, 1, 2, None]
    assert plan.wait_time() == pytest.approx(0.1)
    clock.now += 0.25  # 2.5 tokens
    assert [plan.take() for _ in range(3)] == [3, 4, None]
    clock.now += 100  # a long pause fills the bucket only to its size
    assert [plan.take() for _ in range(4)] == [5, 6, 7, None]


def test_batches_wait_for_each_other_and_the_last_size_repeats() -> None:
    plan = HostPlan(hosts(10), policy(batches=[1, "30%"]))
    assert [plan.take(), plan.take()] == [0, None]
    assert plan.wait_time() == math.inf  # until dev0 finishes
    plan.finished(0, failed=False)
    batch = [plan.take() for _ in range(4)]
    assert batch == [1, 2, 3, None]
    for index in (1, 2, 3):
        plan.finished(index, failed=False)
    assert [plan.take() for _ in range(4)] == [4, 5, 6, None]


def test_a_failed_canary_aborts_every_host_not_started() -> None:
    # 1 of 5 is not more than 50 % of the run, but the canary's batch is judged on its own
    plan = HostPlan(hosts(5), policy(batches=[1], max_fail_percentage=50))
    assert plan.take() == 0
    plan.finished(0, failed=True)
    assert plan.take() is None and plan.wait_time() is None
    left = list(plan.not_run())
    assert [h.name for h, _ in left] == ["dev1", "dev2", "dev3", "dev4"]
    assert all(type(e) is RunAborted and e.limit == "max_fail_percentage" for _, e in left)
    assert plan.stopped_by == (
        "run aborted by max_fail_percentage: 1 of 1 host failed (the hosts run so far), "
        "more than 50 %"
    )


def test_a_failure_limit_crossed_aborts_the_hosts_not_started() -> None:
    plan = HostPlan(hosts(6), policy(max_failures=2))
    for index in range(3):  # one at a time: dev0-dev2 fail, the third crossing the limit
        assert plan.take() == index
        assert plan.finished(index, failed=True) is (index == 2)  # the run stops: all look
    assert plan.take() is None and plan.wait_time() is None
    left = list(plan.not_run())
    assert [h.name for h, _ in left] == ["dev3", "dev4", "dev5"]
    assert {(type(e), e.limit, e.reason) for _, e in left} == {  # type: ignore[attr-defined]
        (RunAborted, "max_failures", "3 hosts failed, more than 2")
    }
    assert plan.stopped_by == "run aborted by max_failures: 3 hosts failed, more than 2"


def test_a_full_group_lets_the_hosts_after_it_go_first() -> None:
    # synthetic hosts alternate between group0 and group1
    plan = HostPlan(hosts(8), policy(group_limits={"group": {"group0": 1}}))
    assert [plan.take() for _ in range(5)] == [0, 1, 3, 5, 7]
    assert plan.take() is None and plan.wait_time() == math.inf
    plan.finished(0, failed=False)
    assert [plan.take(), plan.take()] == [2, None]


def test_a_group_past_its_failure_limit_is_skipped_and_others_go_on() -> None:
    plan = HostPlan(hosts(6), policy(group_max_failures={"group": 0}))
    assert plan.take() == 0
    plan.finished(0, failed=True)
    taken = [plan.take() for _ in range(4)]
    assert taken == [1, 3, 5, None]
    skipped = {h.name: type(e) for h, e in plan.not_run()}
    assert skipped == {"dev2": HostSkipped, "dev4": HostSkipped}


def test_past_the_run_deadline_nothing_starts_and_the_rest_time_out() -> None:
    clock = Clock()
    plan = HostPlan(hosts(3), policy(run_timeout=5), clock=clock)
    assert plan.take() == 0
    assert plan.deadline == 105.0
    clock.now = 105.0
    assert plan.take() is None and plan.wait_time() is None
    left = list(plan.not_run())
    assert [h.name for h, _ in left] == ["dev1", "dev2"]
    assert all(type(e) is RunTimeout and not e.started for _, e in left)


def test_policies_without_a_schedule_do_not_plan_and_options_read_back() -> None:
    assert not policy(retries=3, task_timeout=2).schedules
    assert policy(max_failures=0).schedules
    assert policy(task_timeout=2, retries=2, retry_delay=1, retry_backoff=2, retry_jitter=0.5,
                  retry_max_delay=30).longest_host_time == 3 * 2 + (1 + 0.5) + (2 + 0.5)


def _times_out_after(task: Task, seconds: float) -> None:
    time.sleep(seconds)
    raise TimeoutError("no reply line within 0.0499 s")


@pytest.mark.parametrize(("seconds", "error"), [(0.1, "TaskTimeout"), (0.0, "TimeoutError")])
def test_a_tasks_own_timeout_at_the_deadline_is_the_deadlines(seconds: float, error: str) -> None:
    """A task bounding its own timeout by the time left (tcp_ping) raised its TimeoutError a
    hair before the runner gave the attempt up: the same hung device failed with one error or
    the other. At the deadline it is the deadline's; before it, the task's own."""
    nr = make_nornir("threadpool", hosts=1)
    template = Task(
        _times_out_after, nr, global_dry_run=False, processors=Processors(), seconds=seconds
    )
    host = nr.inventory.hosts["dev0"]
    attempts = HostAttempts(template, host, policy(task_timeout=0.05))
    attempts.deadline()
    outcome = attempts.call()
    assert type(outcome.error).__name__ == error
    if error == "TaskTimeout":
        assert not outcome.error.abandoned  # type: ignore[union-attr]
        assert "Traceback" not in outcome.text


def test_in_flight_cap_is_what_group_limits_allow() -> None:
    # synthetic hosts alternate between group0 and group1
    eight = hosts(8)
    assert in_flight_cap(eight, ()) is None
    assert in_flight_cap(eight, policy(group_limits={"group": {"group0": 1}}).group_limits) == 5
    assert in_flight_cap(eight, policy(group_limits={"group": 2}).group_limits) == 4
    assert in_flight_cap(eight, policy(group_limits={"group": 9}).group_limits) == 8
