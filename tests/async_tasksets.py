"""Async twins of tests/tasksets.py: same names, same results, so runs compare one to one."""

from __future__ import annotations

import asyncio
import logging

from nornir.core.task import Result, Task

from nornir_bench import arun_subtask
from tests import tasksets


async def hello(task: Task) -> str:
    await asyncio.sleep(0)
    return f"hello from {task.host.name}"


async def returns_result(task: Task) -> Result:
    await asyncio.sleep(0)
    index = int(task.host.name[3:])
    return Result(host=task.host, result=index, changed=index % 2 == 0, diff=f"+{index}")


async def fails_on_odd(task: Task) -> int:
    await asyncio.sleep(0)
    index = int(task.host.name[3:])
    if index % 2:
        raise ValueError(f"odd host {task.host.name}")
    return index


async def reports_failure(task: Task) -> Result:
    return Result(host=task.host, result="bad state", failed=True)


async def warns(task: Task) -> Result:
    return Result(host=task.host, result="careful", severity_level=logging.WARNING)


async def grouped(task: Task) -> str:
    """An async subtask, then a blocking one (run in the pool), as tasksets.grouped does."""
    await arun_subtask(task, hello)
    await arun_subtask(task, tasksets._maybe_fail, name="maybe_fail")
    return "grouped done"


async def sees_dry_run(task: Task, dry_run: bool | None = None) -> bool:
    await asyncio.sleep(0)
    return task.is_dry_run(dry_run)


async def sets_data(task: Task, key: str) -> None:
    await asyncio.sleep(0)
    task.host.data[key] = task.host.name.upper()


ASYNC_TASK_SET = [hello, returns_result, fails_on_odd, reports_failure, warns, grouped]
