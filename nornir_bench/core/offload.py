"""Blocking calls run off the event loop, in a bounded pool of threads started as calls need them.

A blocking call cannot be stopped. When the coroutine awaiting one gives it up (its host's
deadline passed; the run was cancelled), the call goes on in its thread: that thread no longer
counts against ``max_threads`` (a new one takes its place, so a hung device does not shrink
the pool), it ends when the call returns, and what the call returns is dropped.
:attr:`ThreadOffloader.abandoned` counts such calls. The threads are daemons: a call that
never returns does not keep the process alive; :meth:`ThreadOffloader.aclose` waits for them
at most ``grace`` seconds.
"""

from __future__ import annotations

import asyncio
import itertools
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from nornir_bench.core.ctrl_c import ABANDONED_GRACE_SECONDS

__all__ = ["ThreadOffloader"]


_numbers = itertools.count()  # thread names, as ThreadPoolExecutor's: asyncio-runner_0, ...


class _Call:
    __slots__ = ("abandoned", "call", "future", "loop", "running", "thread")

    def __init__(
        self, call: Callable[[], Any], future: asyncio.Future[Any], loop: asyncio.AbstractEventLoop
    ) -> None:
        self.call = call
        self.future = future
        self.loop = loop
        self.running = False
        self.abandoned = False
        self.thread: threading.Thread | None = None  # the thread running it


class ThreadOffloader:
    """Runs blocking calls in up to ``max_threads`` threads, started on first use."""

    def __init__(self, max_threads: int) -> None:
        self.max_threads = max_threads
        self.abandoned = 0
        self._work: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads: set[threading.Thread] = set()  # those that count against max_threads
        self._left: set[threading.Thread] = set()  # those left in a call given up
        self._idle = 0

    def __call__(self, call: Callable[[], Any]) -> asyncio.Future[Any]:
        loop = asyncio.get_running_loop()
        item = _Call(call, loop.create_future(), loop)
        item.future.add_done_callback(lambda _: self._given_up(item))
        self._work.put(item)
        with self._lock:
            if self._idle:
                self._idle -= 1
            elif len(self._threads) < self.max_threads:
                self._start()
        return item.future

    @property
    def left_running(self) -> int:
        """Calls given up that have not returned yet (each holds a thread)."""
        return len(self._left)

    def _start(self) -> None:  # the lock held
        name = f"asyncio-runner_{next(_numbers)}"
        thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._threads.add(thread)
        thread.start()

    def _given_up(self, item: _Call) -> None:
        """On the loop: the awaiting side is done with ``item``; if it was cancelled while its
        call runs, that thread is left to it, and a new one takes its place."""
        if not item.future.cancelled():
            return
        with self._lock:
            if item.running:
                item.abandoned = True
                self.abandoned += 1
                assert item.thread is not None
                self._threads.discard(item.thread)
                self._left.add(item.thread)
                if not self._work.empty() and not self._idle:
                    self._start()

    def _serve(self) -> None:
        me = threading.current_thread()
        while True:
            item = self._work.get()
            if item is None:
                return
            with self._lock:
                if item.future.cancelled():
                    self._idle += 1
                    continue
                item.running = True
                item.thread = me
            try:
                value, error = item.call(), None
            except BaseException as exc:  # noqa: BLE001 - handed to the awaiting coroutine
                value, error = None, exc
            with self._lock:
                item.running = False
                if item.abandoned:  # given up meanwhile: drop the return, make way
                    self._left.discard(me)
                    return
                self._idle += 1
            try:
                item.loop.call_soon_threadsafe(_settle, item.future, value, error)
            except RuntimeError:  # the loop closed meanwhile: no one is waiting
                pass

    async def aclose(self, grace: float = ABANDONED_GRACE_SECONDS) -> None:
        """Stop the threads once their calls return; threads left in a call given up are
        waited for at most ``grace`` seconds."""
        with self._lock:
            threads, left = list(self._threads), list(self._left)
        for _ in threads:
            self._work.put(None)
        if threads or left:
            await asyncio.get_running_loop().run_in_executor(None, _join, threads, left, grace)


def _settle(future: asyncio.Future[Any], value: Any, error: BaseException | None) -> None:
    if future.done():
        return
    if error is None:
        future.set_result(value)
    else:
        future.set_exception(error)


def _join(threads: list[threading.Thread], left: list[threading.Thread], grace: float) -> None:
    for thread in threads:
        thread.join()
    ends = time.monotonic() + grace
    for thread in left:
        thread.join(max(0.0, ends - time.monotonic()))
