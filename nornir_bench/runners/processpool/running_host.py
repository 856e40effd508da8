"""Which host a processpool worker is running, in memory shared with its parent (rule 1 of
:mod:`~nornir_bench.runners.processpool.crashes`).

The worker writes a host's index there before each step of the coroutine running that host on
its event loop and clears it after (:class:`Marked`); each of its threads writes the host whose
blocking call it runs (:func:`counted`); and on a fatal signal (a segfault, an abort) Python's
``faulthandler`` writes there which thread it hit. The parent reads it after the worker died
(:meth:`RunningHost.host`).
"""

from __future__ import annotations

import faulthandler
import functools
import itertools
import mmap
import os
import re
import tempfile
import threading
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import Any

from nornir_bench.core.execution import Offload

__all__ = ["Marked", "RunningHost", "counted"]

_NONE = -1
# The shared memory, as 64-bit cells: a header, then one (thread id, host) slot per thread of
# the worker's pool, then (from a page boundary) faulthandler's dump of a fatal signal: every
# thread's stack, the one the signal hit marked "Current thread".
_HOST, _IN_THREADS, _LOOP_THREAD, _SLOTS = 0, 1, 2, 3  # header cells
_HEADER = 4
_CELL = 8
_PAGE = mmap.PAGESIZE
_SIGNED = (1 << 63) - 1  # thread ids are unsigned; the cells are signed
_CURRENT_THREAD = re.compile(rb"Current thread (0x[0-9a-fA-F]+)")


class RunningHost:
    """Memory shared with one worker: which host runs where, and what a fatal signal hit.

    The parent creates it (``threads``: how many threads the worker's pool may run) and passes
    its file descriptor to the worker (``fileno``), which opens the same memory with
    ``RunningHost(fd)``. It outlives the worker, so the parent reads it after the worker died.
    """

    def __init__(self, fd: int | None = None, *, threads: int = 0) -> None:
        if fd is None:
            fd = _anonymous_file()
            used = _CELL * (_HEADER + 2 * threads)
            os.ftruncate(fd, -(-used // _PAGE) * _PAGE + _PAGE)  # cells, then the dump page
            self._map = mmap.mmap(fd, used)
            self.cell = memoryview(self._map).cast("q")
            self.cell[_HOST] = _NONE  # fresh memory reads 0, which is a host index
            self.cell[_SLOTS] = threads
        else:
            header = mmap.mmap(fd, _CELL * _HEADER)
            threads = memoryview(header).cast("q")[_SLOTS]
            header.close()
            self._map = mmap.mmap(fd, _CELL * (_HEADER + 2 * threads))
            self.cell = memoryview(self._map).cast("q")
        self._fd = fd
        self._dump_at = -(-len(self._map) // _PAGE) * _PAGE
        self._slot_of_thread = threading.local()
        self._next_slot = itertools.count()

    def fileno(self) -> int:
        return self._fd

    # -- the worker's side ----------------------------------------------------------------

    def start_watching(self) -> None:
        """In the worker: name the loop's thread, and have a fatal signal dump its thread."""
        self.cell[_LOOP_THREAD] = threading.get_ident() & _SIGNED
        dump = os.dup(self._fd)  # its own offset: the dump's place; kept open for faulthandler
        os.lseek(dump, self._dump_at, os.SEEK_SET)
        faulthandler.enable(file=dump, all_threads=True)

    def thread_runs(self, host: int) -> int | None:
        """In a worker thread: note it runs ``host``; the slot to clear after, if any."""
        slot = getattr(self._slot_of_thread, "slot", None)
        if slot is None:
            slot = self._slot_of_thread.slot = next(self._next_slot)
        if slot >= self.cell[_SLOTS]:
            return None  # more threads than slots: a crash in this one stays unknown
        base = _HEADER + 2 * slot
        self.cell[base] = threading.get_ident() & _SIGNED
        self.cell[base + 1] = host
        return base + 1

    # -- the parent's side ----------------------------------------------------------------

    def host(self) -> int | None:
        """The index of the host whose code the worker was running when it died, or ``None``.

        A fatal signal's dump names the thread it hit: the host that thread ran. Otherwise
        (``os._exit``, a kill) the host running on the loop, but only if no blocking call was
        running in a thread, where the end may have come from.
        """
        dumped = os.fstat(self._fd).st_size - self._dump_at  # the file grows as it is written
        hit = _CURRENT_THREAD.search(os.pread(self._fd, max(0, dumped), self._dump_at))
        if hit is not None:
            thread = int(hit.group(1), 16) & _SIGNED
            if thread == self.cell[_LOOP_THREAD]:
                return self._known(self.cell[_HOST])
            for slot in range(self.cell[_SLOTS]):
                if self.cell[_HEADER + 2 * slot] == thread:
                    return self._known(self.cell[_HEADER + 2 * slot + 1])
            return None
        if self.cell[_IN_THREADS] > 0:
            return None
        return self._known(self.cell[_HOST])

    @staticmethod
    def _known(value: int) -> int | None:
        return None if value == _NONE else int(value)

    def close(self) -> None:
        self.cell.release()
        self._map.close()
        os.close(self._fd)


def _anonymous_file() -> int:
    """A file in memory, with no name: ``memfd_create`` on Linux, an unlinked file elsewhere."""
    memfd_create = getattr(os, "memfd_create", None)
    if memfd_create is not None:
        # Close-on-exec (the default): a program a task starts must not hold it.
        fd: int = memfd_create("nornir-bench-running-host")
        return fd
    fd, path = tempfile.mkstemp(prefix="nornir-bench-")
    os.unlink(path)
    return fd


class Marked(Coroutine[Any, Any, None]):
    """A coroutine draining a run's hosts (a :class:`~nornir_bench.runners._remote.hosts.
    Marking`), that writes the index of the host it runs into ``cell`` while each step runs.

    Cheap (two stores per step, one per host it takes) and invisible to the task: ``send``,
    ``throw`` and ``close`` go to the wrapped coroutine, so cancellation and timeouts work as
    before. One per coroutine, not per host: the coroutine says which host it runs
    (:meth:`runs`) as it takes it, inside the step that starts it.
    """

    __slots__ = ("_coro", "_host", "_cell")

    def __init__(self, cell: memoryview) -> None:
        self._coro: Coroutine[Any, Any, None] | None = None
        self._host = _NONE
        self._cell = cell

    def around(self, coroutine: Coroutine[Any, Any, None]) -> Marked:
        self._coro = coroutine
        return self

    def runs(self, index: int) -> None:
        self._host = index
        self._cell[_HOST] = index

    def send(self, value: Any) -> Any:
        self._cell[_HOST] = self._host
        try:
            return self._coro.send(value)  # type: ignore[union-attr]
        finally:
            self._cell[_HOST] = _NONE

    def throw(self, exc: Any, *args: Any) -> Any:
        self._cell[_HOST] = self._host
        try:
            return self._coro.throw(exc, *args)  # type: ignore[union-attr]
        finally:
            self._cell[_HOST] = _NONE

    def close(self) -> None:
        if self._coro is not None:
            self._coro.close()

    def __await__(self) -> Generator[Any, None, None]:
        return self._coro.__await__()  # type: ignore[union-attr]


def counted(offload: Offload, running: RunningHost) -> Offload:
    """``offload``, noting in ``running`` which host each thread runs (see rule 1).

    Called on the loop, inside a host's step: the host on the loop is the one offloading.
    """
    cell = running.cell
    lock = threading.Lock()

    def run(call: Callable[[], Any], host: int) -> Any:
        slot = running.thread_runs(host)
        with lock:
            cell[_IN_THREADS] += 1
        try:
            return call()
        finally:
            if slot is not None:
                cell[slot] = _NONE
            with lock:
                cell[_IN_THREADS] -= 1

    def offload_counted(call: Callable[[], Any]) -> Awaitable[Any]:
        return offload(functools.partial(run, call, int(cell[_HOST])))

    return offload_counted

