"""Blocking calls run off the event loop, in a bounded thread pool that starts on first use."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

__all__ = ["ThreadOffloader"]


class ThreadOffloader:
    """Runs blocking calls in a thread pool that is created on first use and closed after.

    The pool is bounded; its threads start only as calls need them, and ``aclose`` waits for
    them without blocking the loop (a blocking call cannot be stopped, only waited for).
    """

    def __init__(self, max_threads: int) -> None:
        self.max_threads = max_threads
        self._pool: ThreadPoolExecutor | None = None

    def __call__(self, call: Callable[[], Any]) -> asyncio.Future[Any]:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.max_threads, thread_name_prefix="asyncio-runner")
        return asyncio.get_running_loop().run_in_executor(self._pool, call)

    async def aclose(self) -> None:
        if self._pool is not None:
            shutdown = functools.partial(self._pool.shutdown, wait=True, cancel_futures=True)
            await asyncio.get_running_loop().run_in_executor(None, shutdown)
