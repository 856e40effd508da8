"""Time and CPU of a stretch of code: a wall clock (``perf_counter``) and the process's CPU."""

from __future__ import annotations

import asyncio
import os
import resource
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import ParamSpec, TypeVar

__all__ = ["Stopwatch", "cpu_seconds", "loop_floor", "timed"]

P = ParamSpec("P")
T = TypeVar("T")


class Stopwatch:
    """``with Stopwatch() as took:``; then ``took.wall``, ``took.user`` and ``took.sys`` (this
    process, every thread), ``took.children_user`` and ``took.children_sys`` (the children
    waited for meanwhile). Read inside the block, ``wall`` is the time so far."""

    def __init__(self) -> None:
        self.start()

    def __enter__(self) -> Stopwatch:
        return self.start()  # the clock starts at the block

    def start(self) -> Stopwatch:
        self._began = time.perf_counter()
        self._ended: float | None = None
        self._usage = resource.getrusage(resource.RUSAGE_SELF)
        self._child_usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.user = self.sys = self.children_user = self.children_sys = 0.0
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.stop()

    def stop(self) -> Stopwatch:
        self._ended = time.perf_counter()
        usage = resource.getrusage(resource.RUSAGE_SELF)
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.user = usage.ru_utime - self._usage.ru_utime
        self.sys = usage.ru_stime - self._usage.ru_stime
        self.children_user = children.ru_utime - self._child_usage.ru_utime
        self.children_sys = children.ru_stime - self._child_usage.ru_stime
        return self

    @property
    def wall(self) -> float:
        return (self._ended if self._ended is not None else time.perf_counter()) - self._began

    @property
    def cpu(self) -> float:
        """This process's user + sys."""
        return self.user + self.sys

    @property
    def children(self) -> float:
        """The user + sys of the children waited for meanwhile."""
        return self.children_user + self.children_sys


def timed(call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> tuple[T, float]:
    """``call``'s return value and the seconds it took (``perf_counter``)."""
    began = time.perf_counter()
    value = call(*args, **kwargs)
    return value, time.perf_counter() - began


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far, from /proc (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def loop_floor(loop_name: str, hosts: int, rtt: float) -> float:
    """Seconds for ``hosts`` bare ``asyncio.sleep(rtt)`` gathered on a new event loop of the
    kind ``loop_name`` (``asyncio``, ``uvloop``, ``auto``), created, run and closed: the floor
    an asyncio runner's run is measured against."""
    from nornir_bench.core.loops import new_event_loop

    start = time.perf_counter()
    loop = new_event_loop(loop_name)
    try:

        async def main() -> None:
            await asyncio.gather(*(asyncio.sleep(rtt) for _ in range(hosts)))

        loop.run_until_complete(main())
    finally:
        loop.close()
    return time.perf_counter() - start
