"""A child process timed from outside, as ``time`` times a command.

:mod:`nornir_bench.bench.usage` reads a process's figures from inside; the sweep needs them for a
child, start-up and imports included: wall clock from just before the child is spawned to the
moment it exits, and the child's own user and system CPU and peak RSS from ``wait4``. Those
come from the child alone (and the grandchildren it waited for, such as the process-pool
runner's workers: CPU adds up, peak RSS is the largest single process's, as with ``time``).
``getrusage(RUSAGE_CHILDREN)`` would not do: its peak RSS is the largest of every child so far.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO

from nornir_bench.bench.usage import max_rss_mib

__all__ = ["TimedProcess", "time_process"]

# How often to look for the child's exit where os.waitid is missing (macOS before Python 3.13).
_POLL_INTERVAL = 0.001


@dataclass(frozen=True)
class TimedProcess:
    """What a child process did and used.

    Attributes:
        status: its exit status; negative: killed by that signal; ``None``: it ran past the
            timeout and was killed.
        wall: seconds from spawning it to its exit.
        user, sys: CPU seconds, its own and its waited-for children's.
        max_rss_mib: its peak resident memory (MiB).
        stdout, stderr: what it wrote.
    """

    status: int | None
    wall: float
    user: float
    sys: float
    max_rss_mib: float
    stdout: str
    stderr: str


def time_process(
    argv: Sequence[str], *, timeout: float, max_output: int | None = None
) -> TimedProcess:
    """Run ``argv`` (``argv[0]`` a path to an executable) to its end and measure it.

    Standard input is empty; standard output and error go to temporary files, so a child that
    writes a lot never blocks on a pipe. The child never outlives this call: past ``timeout``
    seconds, or on any exception here (Ctrl-C), it is killed and reaped.

    ``max_output``: keep only the last that many bytes of each stream (``None``: all of it),
    so a child that writes gigabytes costs no memory here.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        actions = [
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_DUP2, out.fileno(), 1),
            (os.POSIX_SPAWN_DUP2, err.fileno(), 2),
        ]
        start = time.perf_counter()
        pid = os.posix_spawn(argv[0], list(argv), os.environ, file_actions=actions)
        if hasattr(os, "waitid"):
            ended, status, usage = _wait_watching(pid, timeout)
        else:
            ended, status, usage = _wait_polling(pid, timeout)
        stdout = _tail(out, max_output)
        stderr = _tail(err, max_output)
    return TimedProcess(
        status=None if ended is None else os.waitstatus_to_exitcode(status),
        wall=(time.perf_counter() if ended is None else ended) - start,
        user=usage.ru_utime,
        sys=usage.ru_stime,
        max_rss_mib=max_rss_mib(usage),
        stdout=stdout,
        stderr=stderr,
    )


def _tail(file: IO[bytes], limit: int | None) -> str:
    """The end of what was written to ``file``: its last ``limit`` bytes, or all of it."""
    size = file.seek(0, os.SEEK_END)
    file.seek(0 if limit is None else max(0, size - limit))
    return file.read().decode("utf-8", "replace")


# When the child exited (None: killed for overrunning), its wait status and its resource usage.
_Reaped = tuple[float | None, int, resource.struct_rusage]


def _wait_watching(pid: int, timeout: float) -> _Reaped:
    """Wait for ``pid`` in a thread that notes when it exits, without reaping it yet.

    While the child is unreaped its pid cannot be reused, so killing it on a timeout or Ctrl-C
    can never hit another process, however the exit and the kill race.
    """
    exited: list[float] = []

    def watch() -> None:
        with contextlib.suppress(ChildProcessError):
            os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
        exited.append(time.perf_counter())

    watcher = threading.Thread(target=watch, name=f"wait-{pid}")
    watcher.start()
    in_time = False
    try:
        watcher.join(timeout)
        in_time = not watcher.is_alive()
    finally:
        if watcher.is_alive():
            os.kill(pid, signal.SIGKILL)
            watcher.join()
        _, status, usage = os.wait4(pid, 0)
    return (exited[0] if in_time else None), status, usage


def _wait_polling(pid: int, timeout: float) -> _Reaped:
    """Reap ``pid``, looking every millisecond: where ``os.waitid`` is missing."""
    deadline = time.perf_counter() + timeout
    reaped = 0
    try:
        while time.perf_counter() < deadline:
            reaped, status, usage = os.wait4(pid, os.WNOHANG)
            if reaped:
                return time.perf_counter(), status, usage
            time.sleep(_POLL_INTERVAL)
    finally:
        if not reaped:  # overran, or Ctrl-C: the child does not outlive the call
            os.kill(pid, signal.SIGKILL)
            _, status, usage = os.wait4(pid, 0)
    return None, status, usage
