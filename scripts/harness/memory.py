"""Memory of a process tree: its resident memory now, and its peak while a block runs."""

from __future__ import annotations

import os
import threading
from types import TracebackType

__all__ = ["PeakMemory", "tree_rss_kib"]


def tree_rss_kib(pid: int) -> int:
    """Resident memory of ``pid`` and all its descendants (KiB), read from ``/proc``."""
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        try:
            with open(f"/proc/{current}/status") as status:
                total += next(
                    (int(line.split()[1]) for line in status if line.startswith("VmRSS:")), 0
                )
            for tid in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{tid}/children") as children:
                    todo.extend(int(child) for child in children.read().split())
        except (FileNotFoundError, ProcessLookupError):
            continue  # it ended while being read
    return total


class PeakMemory:
    """The largest resident memory of ``pid``'s process tree (default this process's) while
    the block runs, sampled every ``every`` seconds by a thread of its own."""

    def __init__(self, pid: int | None = None, every: float = 0.2) -> None:
        self.pid = os.getpid() if pid is None else pid
        self.every = every
        self.kib = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    @property
    def mib(self) -> float:
        return self.kib / 1024

    def _sample(self) -> None:
        while not self._stop.wait(self.every):
            self.kib = max(self.kib, tree_rss_kib(self.pid))

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()
