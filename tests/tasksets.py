"""Tasks that exercise nornir's semantics: plain values, Results, failures, subtasks, host data."""

from __future__ import annotations

import logging

from nornir.core.task import Result, Task


def hello(task: Task) -> str:
    return f"hello from {task.host.name}"


def returns_result(task: Task) -> Result:
    index = int(task.host.name[3:])
    return Result(host=task.host, result=index, changed=index % 2 == 0, diff=f"+{index}")


def fails_on_odd(task: Task) -> int:
    index = int(task.host.name[3:])
    if index % 2:
        raise ValueError(f"odd host {task.host.name}")
    return index


def reports_failure(task: Task) -> Result:
    """Fails without raising, as some nornir tasks do."""
    return Result(host=task.host, result="bad state", failed=True)


def warns(task: Task) -> Result:
    return Result(host=task.host, result="careful", severity_level=logging.WARNING)


def grouped(task: Task) -> str:
    """Two subtasks; the second fails on hosts divisible by three."""
    task.run(task=hello)
    task.run(task=_maybe_fail, name="maybe_fail")
    return "grouped done"


def _maybe_fail(task: Task) -> str:
    if int(task.host.name[3:]) % 3 == 0:
        raise RuntimeError("third host")
    return "fine"


def sees_dry_run(task: Task, dry_run: bool | None = None) -> bool:
    """nornir's convention for config tasks (``napalm_configure``, ``netmiko_send_config``): the
    run's ``dry_run``, unless the call gives its own (nornir's own test_dry_run's task)."""
    return task.is_dry_run(dry_run)


def sets_data(task: Task, key: str) -> None:
    task.host.data[key] = task.host.name.upper()


TASK_SET = [hello, returns_result, fails_on_odd, reports_failure, warns, grouped]
