"""AsyncRunSession: what one async run owns on its loop, set up and torn down in one place."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest

from nornir_bench.core import subtasks
from nornir_bench.core.session import AsyncRunSession
from tests.conftest import make_nornir


class _FailsToClose:
    closed = False

    def close(self) -> None:
        type(self).closed = True
        raise RuntimeError("the device went away")


async def _async_task(task: Any) -> None:
    pass


def _blocking_task(task: Any) -> None:
    pass


def test_offload_is_the_pool_for_blocking_tasks_only() -> None:
    hosts = list(make_nornir(hosts=2).inventory.hosts.values())

    async def main() -> tuple[object, object]:
        async with AsyncRunSession(_async_task, hosts, max_threads=2) as for_async:
            pass
        async with AsyncRunSession(_blocking_task, hosts, max_threads=2) as for_blocking:
            pass
        return for_async.offload, for_blocking.offload

    for_async, for_blocking = asyncio.run(main())
    assert for_async is None
    assert for_blocking is not None


def test_everything_is_restored_even_when_closing_fails() -> None:
    """A processpool worker once entered the GC tuning by hand and never reset the offload
    context variable: an error while closing left the collector frozen."""
    hosts = list(make_nornir(hosts=1).inventory.hosts.values())
    hosts[0].connections["netmiko"] = _FailsToClose()  # type: ignore[assignment]
    threshold = gc.get_threshold()

    async def main() -> None:
        session = AsyncRunSession(_blocking_task, hosts, max_threads=1, close_blocking=True)
        session.open()
        assert subtasks._current_offload.get() is not None
        assert gc.get_freeze_count() > 0
        await session.aclose()

    asyncio.run(main())
    assert _FailsToClose.closed and not hosts[0].connections  # logged, closed all the same
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == threshold


def test_the_offload_is_reset_and_the_collector_restored_after_an_error_in_the_run() -> None:
    hosts = list(make_nornir(hosts=1).inventory.hosts.values())
    threshold = gc.get_threshold()

    async def main() -> None:
        with pytest.raises(ValueError):
            async with AsyncRunSession(_blocking_task, hosts, max_threads=1):
                raise ValueError("a task escaped")
        assert subtasks._current_offload.get() is None

    asyncio.run(main())
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == threshold
