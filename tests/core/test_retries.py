"""One host's retries, without a runner: :class:`HostAttempts` driven by ``run_policed`` (a
blocking task) and ``arun_policed`` (an ``async def`` one), in the test's thread.

Which errors are retried, what a subtask's error decides and which failure counts are decided
here, once; tests/runners/test_policies.py checks that every runner wires this in.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from nornir.core.processor import Processors
from nornir.core.task import MultiResult, Task

from nornir_bench import arun_subtask
from nornir_bench.core.attempts import attempts_of
from nornir_bench.core.execution import is_async_task
from nornir_bench.core.policies.hosts import HostAttempts, arun_policed, run_policed
from nornir_bench.core.policies.options import RunPolicy
from tests.conftest import make_nornir

QUICK_RETRIES = {"retry_delay": 0, "retry_jitter": 0}


def run_host(func: Callable[..., Any], options: dict[str, Any], **params: Any) -> MultiResult:
    """``func`` on one host under the policy ``options``, to the attempt that counts."""
    nr = make_nornir(hosts=1)
    template = Task(func, nr, global_dry_run=False, processors=Processors(), **params)
    policy = RunPolicy.build("test runner", {**QUICK_RETRIES, **options})
    attempts = HostAttempts(template, nr.inventory.hosts["dev0"], policy)
    if is_async_task(func):
        return asyncio.run(arun_policed(attempts, None))
    multi = run_policed(attempts)
    assert multi is not None
    return multi


class Tries:
    """A task's attempts, counted: each fails with ``error`` until the ``good_on``-th."""

    def __init__(self, error: type[Exception], good_on: int = 3) -> None:
        self.error = error
        self.good_on = good_on
        self.count = 0

    def __call__(self, task: Task) -> str:
        self.count += 1
        if self.count < self.good_on:
            raise self.error(f"attempt {self.count}")
        return f"ok on attempt {self.count}"


def tries(task: Task, counted: Tries) -> str:
    return counted(task)


async def atries(task: Task, counted: Tries) -> str:
    await asyncio.sleep(0)
    return counted(task)


def logs_in(task: Task, counted: Tries) -> str:
    """Its login is a subtask: the task fails with the subtask's ``NornirSubTaskError``."""
    task.run(task=tries, counted=counted)
    return "logged in"


async def alogs_in(task: Task, counted: Tries) -> str:
    await arun_subtask(task, atries, counted=counted)
    return "logged in"


@pytest.mark.parametrize("func", [tries, atries], ids=["sync", "async"])
def test_a_retried_error_runs_the_task_again_and_the_failed_attempts_are_kept(
    func: Callable[..., Any],
) -> None:
    multi = run_host(func, {"retries": 3}, counted=Tries(ConnectionResetError))
    assert not multi.failed and multi.result == "ok on attempt 3"
    attempts, failed = attempts_of(multi)
    assert attempts == 3
    assert [(f.exception, f.message) for f in failed] == [
        ("ConnectionResetError", "attempt 1"),
        ("ConnectionResetError", "attempt 2"),
    ]


@pytest.mark.parametrize(
    ("error", "options"),
    [
        (PermissionError, {}),  # an authentication failure: never retried by default
        (ValueError, {}),  # the task's own logic, not the connection
        (ConnectionResetError, {"retry_never": ["ConnectionResetError"]}),
        (ConnectionResetError, {"retry_on": ["ValueError"]}),
    ],
    ids=["auth", "logic", "retry_never", "retry_on"],
)
def test_errors_not_to_retry_fail_at_once(
    error: type[Exception], options: dict[str, Any]
) -> None:
    counted = Tries(error)
    multi = run_host(tries, {"retries": 5, **options}, counted=counted)
    assert type(multi[0].exception) is error
    assert attempts_of(multi)[0] == counted.count == 1


@pytest.mark.parametrize("func", [logs_in, alogs_in], ids=["sync", "async"])
@pytest.mark.parametrize(
    ("error", "attempts"), [(PermissionError, 1), (ConnectionResetError, 3)], ids=["auth", "io"]
)
def test_a_subtasks_error_decides_the_retry(
    func: Callable[..., Any], error: type[Exception], attempts: int
) -> None:
    """An authentication error is never retried, also when a subtask raised it (the task's own
    error is then a NornirSubTaskError); a connection error in a subtask is."""
    multi = run_host(func, {"retries": 5}, counted=Tries(error))
    assert attempts_of(multi)[0] == attempts
    if attempts == 1:
        assert type(multi[0].exception).__name__ == "NornirSubTaskError"
        assert type(multi[1].exception) is error
    else:
        assert not multi.failed
        # only the counting attempt's subtask is kept: the failed ones' were dropped with them
        assert [r.result for r in multi] == ["logged in", "ok on attempt 3"]


def test_when_retries_run_out_the_last_failure_counts() -> None:
    counted = Tries(ConnectionResetError, good_on=10)
    multi = run_host(tries, {"retries": 2}, counted=counted)
    assert str(multi[0].exception) == "attempt 3"
    assert attempts_of(multi)[0] == counted.count == 3


@pytest.mark.parametrize("runner", ["threadpool", "asyncio"])
def test_retries_cost_nothing_until_a_host_fails(
    runner: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``retries`` and no deadline a host runs plain; only a host whose task failed goes
    on through its attempts, its first failure kept as its first attempt."""
    from nornir_bench.core import one_host

    made: list[str] = []

    class Counted(HostAttempts):
        def __init__(self, template: Task, host: Any, *args: Any, **kwargs: Any) -> None:
            made.append(host.name)
            super().__init__(template, host, *args, **kwargs)

    monkeypatch.setattr(one_host, "HostAttempts", Counted)
    failed_once: set[str] = set()

    def flaky(task: Task) -> str:
        if task.host.name == "dev3" and "dev3" not in failed_once:
            failed_once.add("dev3")
            raise ConnectionError("reset")
        return "ok"

    nr = make_nornir(runner, hosts=8, retries=2, **QUICK_RETRIES)
    result = nr.run(task=flaky)
    assert not result.failed
    assert made == ["dev3"]
    assert attempts_of(result["dev3"])[0] == 2
    assert [a.exception for a in attempts_of(result["dev3"])[1]] == ["ConnectionError"]
    assert all(attempts_of(result[f"dev{i}"])[0] == 1 for i in range(8) if i != 3)
