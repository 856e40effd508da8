"""Processes a benchmark keeps running beside it (a lab, a server, a worker it talks to), read
line by line; and the machine's processes, as /proc says them."""

from __future__ import annotations

import contextlib
import functools
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

__all__ = [
    "Started",
    "children_of",
    "command_line",
    "on_cpus",
    "proc_stat",
    "started",
    "stop",
]

STOP_SECONDS = 15.0  # for a process sent SIGINT (or whose input closed) to end, then killed


class Started:
    """A process and the lines it prints, read by a thread of their own (a pipe's reader
    buffers ahead: waiting on its descriptor would miss lines already read). Each line comes
    with when it was read (``perf_counter``)."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.said: list[str] = []
        self._lines: queue.Queue[tuple[float, str | None]] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        return self.process.pid

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            line = line.rstrip("\n")
            self.said.append(line)
            self._lines.put((time.perf_counter(), line))
        self._lines.put((time.perf_counter(), None))

    def told(self) -> str:
        """Its last lines, for an error message."""
        return " | ".join(self.said[-5:]) or "nothing"

    def wait_line(self, wanted: Callable[[str], bool], timeout: float) -> tuple[float, str]:
        """The first line ``wanted`` takes, and when it was read.

        Raises:
            SystemExit: it ended first, or said nothing wanted within ``timeout`` seconds.
        """
        deadline = time.monotonic() + timeout
        while True:
            try:
                when, line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise SystemExit(f"{self._name()}: not ready within {timeout:g} s; it said: "
                                 f"{self.told()}") from None
            if line is None:
                raise SystemExit(f"{self._name()} ended (exit {self.process.wait()}): "
                                 f"{self.told()}")
            if wanted(line):
                return when, line

    def ask(self, line: str, timeout: float) -> str:
        """Write ``line`` to its input; the next line it prints."""
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        return self.wait_line(lambda _: True, timeout)[1]

    def _name(self) -> str:
        args = self.process.args
        words = [str(a) for a in args] if isinstance(args, Sequence) else [str(args)]
        return " ".join(words[:5])


@contextmanager
def started(command: Sequence[str], *, ready: Callable[[str], bool] | None = None,
            timeout: float = 60.0, env: Mapping[str, str] | None = None,
            cwd: Path | None = None, stdin: bool = False,
            cpus: set[int] | None = None) -> Iterator[Started]:
    """``command`` in a session of its own (a terminal's Ctrl-C is the script's to handle),
    on ``cpus`` alone if given, its output read line by line, once it printed a line ``ready``
    takes; stopped on leaving (its input closed, SIGINT, then killed: :func:`stop`)."""
    process = subprocess.Popen(
        list(command), stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=cwd,
        start_new_session=True, preexec_fn=on_cpus(cpus),
    )
    running = Started(process)
    try:
        if ready is not None:
            running.wait_line(ready, timeout)
        yield running
    finally:
        stop(process)
        running._reader.join(STOP_SECONDS)
        if process.stdout is not None:
            process.stdout.close()


def stop(process: subprocess.Popen[str] | subprocess.Popen[bytes],
         seconds: float = STOP_SECONDS) -> float:
    """End ``process``: its input closed (what ends a process reading it), then SIGINT, then
    SIGKILL of its session after ``seconds``; the seconds it took (0 if it had ended)."""
    began = time.perf_counter()
    if process.stdin is not None:
        with contextlib.suppress(OSError):
            process.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(1.0)
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGINT)
        try:
            process.wait(seconds)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return time.perf_counter() - began


def on_cpus(cpus: set[int] | None) -> Callable[[], None] | None:
    """A child's start on ``cpus`` alone (as ``taskset -c``); ``None``: on every CPU."""
    return None if cpus is None else functools.partial(os.sched_setaffinity, 0, cpus)


def proc_stat(pid: int) -> list[str]:
    """/proc/PID/stat's fields after the command name: index 0 is the state, 1 the parent, 3
    the session, 11-14 user, sys and the children's user and sys (clock ticks)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def command_line(pid: int) -> list[str]:
    """Process ``pid``'s arguments (empty if it is gone, or a kernel thread)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [word.decode(errors="replace") for word in raw.split(b"\0") if word]


def children_of(pid: int) -> list[int]:
    """Every live descendant of ``pid`` (zombies included: not reaped is not gone)."""
    parents: dict[int, list[int]] = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError, IndexError):
            parents.setdefault(int(proc_stat(int(entry))[1]), []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found
