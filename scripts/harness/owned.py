"""Processes owned until nothing of them is left: a command with everything it started, and
busy processes loading the cores.

A :class:`Child` is a command in a session of its own, its output in files, waited for within a
bound; when its block ends (done, timed out, or the script interrupted) everything it started
is killed: its session, and the sessions of the Dask cluster it embedded (Dask's processes
start sessions of their own, named by the cluster's folder ``nornir-bench-dask-PID-...``).
:class:`Busy` processes spin on the cores, and end by themselves if the script is killed
outright (:mod:`harness.children.busy`).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping
from contextlib import suppress
from pathlib import Path
from types import TracebackType

from harness.child import child_command, child_env

__all__ = ["Busy", "Child", "started_by"]

KILL_WAIT = 10.0  # seconds for processes sent SIGKILL to be gone (unless stuck in the kernel)
DASK_FOLDER = "nornir-bench-dask-"  # nornir_bench.runners.dask.cluster's, then the pid


def _sessions() -> dict[int, tuple[int, str]]:
    """Every live process (zombies left out): its session and command line."""
    table = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        with suppress(OSError):  # ended since listed
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            line = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
            if fields[0] != "Z":
                table[int(entry)] = (int(fields[3]), line.decode(errors="replace"))
    return table


def started_by(pid: int) -> list[int]:
    """The live processes of session ``pid`` and of the Dask cluster process ``pid`` embedded."""
    table = _sessions()
    mark = f"{DASK_FOLDER}{pid}-"
    sessions = {pid} | {session for session, line in table.values() if mark in line}
    return sorted(p for p, (session, _) in table.items() if session in sessions)


class Child:
    """``command`` in ``folder``, a session of its own, its output in ``folder``/NAME.out and
    .err; on leaving the block, what it left is killed and counted (:attr:`left`)."""

    def __init__(self, command: list[str], folder: Path, name: str,
                 env: Mapping[str, str] | None = None) -> None:
        self.folder, self.name = folder, name
        self.tmp = folder / f"{name}.tmp"  # its TMPDIR: an embedded Dask cluster's folder
        self.tmp.mkdir()
        with open(folder / f"{name}.out", "wb") as out, open(folder / f"{name}.err", "wb") as err:
            self.process = subprocess.Popen(
                command, cwd=folder, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                env={**(env or os.environ), "TMPDIR": str(self.tmp)}, start_new_session=True,
            )
        self.began = time.perf_counter()
        self.left = 0  # processes still alive once it had exited by itself

    def __enter__(self) -> Child:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.end()

    @property
    def pid(self) -> int:
        return self.process.pid

    def wait(self, timeout: float) -> int | None:
        """Its exit status, or ``None`` if it is still running after ``timeout`` seconds."""
        try:
            return self.process.wait(max(0.0, timeout))
        except subprocess.TimeoutExpired:
            return None

    def output(self, stream: str = "err") -> str:
        return (self.folder / f"{self.name}.{stream}").read_text(errors="replace")

    def end(self) -> None:
        exited = self.process.poll() is not None
        pids = started_by(self.pid)
        for pid in pids:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with suppress(subprocess.TimeoutExpired):
            self.process.wait(KILL_WAIT)
        ends = time.monotonic() + KILL_WAIT
        while set(started_by(self.pid)) & set(pids) and time.monotonic() < ends:
            time.sleep(0.05)
        self.left = len(pids) if exited else 0
        shutil.rmtree(self.tmp, ignore_errors=True)


class Busy:
    """``count`` processes spinning on the CPU while the block runs."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.processes: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> Busy:
        self.processes = [
            subprocess.Popen(child_command("harness.children.busy"), env=child_env(),
                             stdin=subprocess.DEVNULL, start_new_session=True)
            for _ in range(self.count)
        ]
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        for process in self.processes:
            with suppress(ProcessLookupError):
                process.kill()
        for process in self.processes:
            with suppress(subprocess.TimeoutExpired):
                process.wait(KILL_WAIT)
