"""A router lab's routers made to fail under a command, and a command interrupted: for the
tests that stop, kill or interrupt them (the labs themselves: tests/routers.py).

:func:`interrupted_when` (a command sent SIGINT, once or twice, when a condition holds),
:func:`send_signal_to`, :func:`daemon_stopped` and :func:`waiting_on_a_daemon` (a command held
in flight on a router), :func:`cli_killed_mid_command` (a router's CLI killed under it),
:func:`file_opened` (the moment another process read a file).
"""

from __future__ import annotations

import ctypes
import os
import select
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from nornir_bench.lab import RunningRouterLab, lab_pids
from tests.routers import wait_for
from tests.waiting import HANG_GUARD

__all__ = [
    "cli_killed_mid_command",
    "daemon_stopped",
    "file_opened",
    "interrupted_when",
    "send_signal_to",
    "waiting_on_a_daemon",
]

_IN_OPEN = 0x20  # inotify's "a file was opened"


def interrupted_when(
    args: Sequence[str], folder: Path, ready: Callable[[], bool], *, pause: float = 0.1,
    timeout: float = 120, again: Callable[[], bool] | None = None,
) -> tuple[int, str, str]:
    """``args`` in a process (and session) of its own in ``folder``, sent SIGINT once
    ``ready()`` holds while it runs (checked every ``pause`` s); with ``again``, a second
    SIGINT once the command has said it is stopping (the first press taken: two signals at
    once are one press) and ``again()`` holds. Its exit status, standard output and error. It
    is killed if it outlives the test."""
    process = subprocess.Popen(args, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
    said: tuple[list[str], list[str]] = ([], [])
    readers = [threading.Thread(target=lambda lines=lines, pipe=pipe: lines.extend(pipe),
                                daemon=True)
               for lines, pipe in zip(said, (process.stdout, process.stderr), strict=True)]
    for reader in readers:
        reader.start()

    def running_until(condition: Callable[[], bool]) -> None:
        waiting = wait_for(lambda: process.poll() is None and not condition(), pause=pause)
        assert not waiting and process.poll() is None, said

    try:
        running_until(ready)
        process.send_signal(signal.SIGINT)
        if again is not None:
            running_until(lambda: any(x.startswith("stopping:") for x in said[1]) and again())
            process.send_signal(signal.SIGINT)
        process.wait(timeout)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for reader in readers:
            reader.join(timeout)
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()
    return process.returncode, "".join(said[0]), "".join(said[1])


def send_signal_to(pids: Sequence[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            continue


@contextmanager
def daemon_stopped(lab: RunningRouterLab, router: str, daemon: str) -> Iterator[None]:
    """``router``'s FRR ``daemon`` (``staticd`` ...) stopped inside (SIGSTOP), continued after:
    a vtysh command that needs it waits for its answer, as a CLI busy with a line does."""
    pids = lab_pids(lab.name, daemon, router)
    assert pids, f"no {daemon} on {router}"
    send_signal_to(pids, signal.SIGSTOP)
    try:
        yield
    finally:
        send_signal_to(pids, signal.SIGCONT)


def waiting_on_a_daemon(pid: int) -> bool:
    """Whether vtysh ``pid`` is blocked reading a daemon's answer (a Unix socket), not waiting
    for its terminal: the command it runs is in flight."""
    try:
        return Path(f"/proc/{pid}/wchan").read_text() == "unix_stream_read_generic"
    except OSError:
        return False


def cli_killed_mid_command(
    lab: RunningRouterLab, router: str, process: subprocess.Popen[str],
    before: Callable[[], None] = lambda: None,
) -> tuple[str, str]:
    """``router``'s vtysh killed (SIGKILL) while a command of ``process`` waits on its
    staticd (stopped meanwhile; ``before`` runs once it is): the process's output and error
    once it ends, the test failed at the hang guard if it does not."""
    with daemon_stopped(lab, router, "staticd"):
        before()
        assert not wait_for(lambda: not any(
            waiting_on_a_daemon(pid) for pid in lab_pids(lab.name, "vtysh", router)
        ), pause=0.05)
        send_signal_to(lab_pids(lab.name, "vtysh", router), signal.SIGKILL)
        try:
            return process.communicate(timeout=HANG_GUARD)
        except subprocess.TimeoutExpired:
            pytest.fail(f"hang guard: the run went on {HANG_GUARD:g} s after {router}'s CLI died")




@contextmanager
def file_opened(path: Path) -> Iterator[Callable[[], None]]:
    """Inside, a function that returns once some process has opened ``path`` since the block
    began (Linux's inotify): the moment another process read a file, an event, not a time."""
    libc = ctypes.CDLL(None, use_errno=True)
    watch = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
    assert watch >= 0, os.strerror(ctypes.get_errno())
    try:
        added = libc.inotify_add_watch(watch, os.fsencode(path), _IN_OPEN)
        assert added >= 0, f"{path}: {os.strerror(ctypes.get_errno())}"

        def opened() -> None:
            ready, _, _ = select.select([watch], [], [], HANG_GUARD)
            assert ready, f"nothing opened {path}"

        yield opened
    finally:
        os.close(watch)
