"""The shared host-execution core behaves exactly like nornir's Task.start."""

from __future__ import annotations

import logging

import pytest
from nornir.core.exceptions import NornirSubTaskError
from nornir.core.processor import Processors
from nornir.core.task import Result, Task

from nornir_bench.core.execution import run_host
from tests.conftest import Recorder, make_nornir, result_view
from tests.tasksets import TASK_SET, fails_on_odd, grouped, hello, returns_result, warns


def _template(nr_task: object, recorder: Recorder, **params: object) -> Task:
    return Task(nr_task, nornir=None, global_dry_run=False,  # type: ignore[arg-type]
                processors=Processors([recorder]), **params)


@pytest.mark.parametrize("task_fn", TASK_SET, ids=lambda f: f.__name__)
def test_same_results_and_hook_order_as_task_start(task_fn: object) -> None:
    nr = make_nornir(hosts=7)
    ours, theirs = Recorder(), Recorder()
    for host in nr.inventory.hosts.values():
        mine = run_host(_template(task_fn, ours), host)
        nornirs = _template(task_fn, theirs).copy().start(host)
        assert result_view(mine) == result_view(nornirs)
        assert mine.name == nornirs.name
    assert ours.events == theirs.events


def test_template_task_is_left_untouched() -> None:
    nr = make_nornir(hosts=3)
    template = _template(grouped, Recorder())
    for host in nr.inventory.hosts.values():
        run_host(template, host)
    assert not hasattr(template, "host")
    assert len(template.results) == 0


def test_exception_becomes_failed_result_with_traceback() -> None:
    host = make_nornir(hosts=2).inventory.hosts["dev1"]
    multi = run_host(_template(fails_on_odd, Recorder()), host)
    assert multi.failed
    (result,) = multi
    assert isinstance(result.exception, ValueError)
    assert "Traceback" in result.result and "odd host dev1" in result.result
    assert result.severity_level == logging.ERROR
    assert result.name == "fails_on_odd"


def test_failed_subtask_gives_its_message_and_keeps_subtask_results() -> None:
    host = make_nornir(hosts=4).inventory.hosts["dev3"]
    multi = run_host(_template(grouped, Recorder()), host)
    assert [r.name for r in multi] == ["grouped", "hello", "maybe_fail"]
    top = multi[0]
    assert isinstance(top.exception, NornirSubTaskError)
    assert top.result == str(top.exception)
    assert [r.failed for r in multi] == [True, False, True]


def test_returned_result_keeps_its_own_fields() -> None:
    host = make_nornir(hosts=3).inventory.hosts["dev2"]
    (result,) = run_host(_template(returns_result, Recorder()), host)
    assert (result.result, result.changed, result.diff) == (2, True, "+2")
    (warned,) = run_host(_template(warns, Recorder()), host)
    assert warned.severity_level == logging.WARNING


def test_params_reach_the_task_and_severity_default_applies() -> None:
    host = make_nornir(hosts=1).inventory.hosts["dev0"]

    def echo(task: Task, word: str) -> str:
        return word

    template = _template(echo, Recorder(), word="ping")
    template.severity_level = logging.DEBUG
    (result,) = run_host(template, host)
    assert result.result == "ping"
    assert result.severity_level == logging.DEBUG


def test_failure_logged_on_nornirs_logger(caplog: pytest.LogCaptureFixture) -> None:
    host = make_nornir(hosts=2).inventory.hosts["dev1"]
    with caplog.at_level(logging.ERROR, logger="nornir.core.task"):
        run_host(_template(fails_on_odd, Recorder()), host)
    assert any("dev1" in rec.getMessage() and rec.name == "nornir.core.task"
               for rec in caplog.records)


def test_keyboard_interrupt_is_not_swallowed() -> None:
    host = make_nornir(hosts=1).inventory.hosts["dev0"]

    def interrupted(task: Task) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_host(_template(interrupted, Recorder()), host)


def test_plain_value_is_wrapped() -> None:
    host = make_nornir(hosts=1).inventory.hosts["dev0"]
    (result,) = run_host(_template(hello, Recorder()), host)
    assert isinstance(result, Result)
    assert (result.result, result.host, result.failed) == ("hello from dev0", host, False)


async def _async_task(task: Task) -> str:
    return "awaited"


def test_an_async_task_on_a_blocking_runner_fails_its_hosts_clearly(
    recwarn: pytest.WarningsRecorder,
) -> None:
    """Once: every host reported ok, its result a coroutine that never ran."""
    result = make_nornir("threadpool", hosts=3).run(task=_async_task)
    assert sorted(result.failed_hosts) == ["dev0", "dev1", "dev2"]
    exc = result["dev1"][0].exception
    assert isinstance(exc, TypeError)
    assert str(exc) == (
        "task '_async_task' is async (it returned coroutine _async_task, which this runner "
        "cannot await): run it with the asyncio or processpool runner, or make it a plain def"
    )
    assert not [w for w in recwarn if "never awaited" in str(w.message)]


def test_a_blocking_task_returning_a_coroutine_is_awaited_by_the_asyncio_runner() -> None:
    result = make_nornir("asyncio", hosts=3).run(task=lambda task: _async_task(task))
    assert not result.failed
    assert {multi.result for multi in result.values()} == {"awaited"}
