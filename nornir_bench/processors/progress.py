"""``ProgressBar``: a nornir processor drawing a tqdm bar of hosts done and failed.

A processor, so it works with every runner, nornir's own included: the process-pool runner
fires the host hooks in the parent, and the thread runners' hooks are serialised by a lock.
"""

from __future__ import annotations

import sys
import threading
from typing import IO, TYPE_CHECKING

from tqdm import tqdm

from nornir_bench.core.hooks import NoOpProcessor

if TYPE_CHECKING:
    from nornir.core.inventory import Host
    from nornir.core.task import AggregatedResult, MultiResult, Task

__all__ = ["ProgressBar", "is_terminal", "progress_bar"]


class _Bar(tqdm):  # type: ignore[type-arg]  # tqdm is generic in its items: hosts, runs
    # tqdm's monitor is a thread that outlives the bar; a run must not leave threads behind.
    monitor_interval = 0


def progress_bar(
    *, total: int, desc: str, unit: str, file: IO[str], enabled: bool | None = None
) -> tqdm:  # type: ignore[type-arg]
    """A tqdm bar that leaves no thread behind, for any count (hosts of a run, runs of a sweep).

    ``enabled=None`` draws only when ``file`` is a terminal, so logs and pipes stay clean.
    """
    shown = is_terminal(file) if enabled is None else enabled
    return _Bar(total=total, desc=desc, unit=unit, file=file, dynamic_ncols=True,
                disable=not shown)


class ProgressBar(NoOpProcessor):
    """Shows ``hosts done/total [elapsed<ETA, rate] failed=N`` while a task runs.

    Args:
        file: where to draw; standard error by default.
        enabled: ``None`` (the default) draws only when ``file`` is a terminal, so logs and
            pipes stay clean; ``True``/``False`` force it on or off.
    """

    def __init__(self, *, file: IO[str] | None = None, enabled: bool | None = None) -> None:
        self.file = file if file is not None else sys.stderr
        self.enabled = is_terminal(self.file) if enabled is None else enabled
        self.failed = 0
        self._bar: tqdm | None = None  # type: ignore[type-arg]
        self._lock = threading.Lock()

    def task_started(self, task: Task) -> None:
        if not self.enabled:
            return
        # nr.run's default selection: the hosts not failed in an earlier run.
        hosts = task.nornir.inventory.hosts
        total = len(hosts) - len(task.nornir.data.failed_hosts.intersection(hosts))
        self.failed = 0
        self._bar = progress_bar(
            total=total, desc=task.name, unit="host", file=self.file, enabled=True
        )

    def task_instance_completed(self, task: Task, host: Host, result: MultiResult) -> None:
        if self._bar is None:
            return
        with self._lock:
            if result.failed:
                self.failed += 1
                self._bar.set_postfix(failed=self.failed, refresh=False)
            self._bar.update()

    def task_completed(self, task: Task, result: AggregatedResult) -> None:
        self.close()

    def close(self) -> None:
        """Finish the bar; for a run that ended without ``task_completed`` (Ctrl-C)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def is_terminal(file: IO[str]) -> bool:
    """Whether ``file`` is a terminal (a closed or odd file is not)."""
    try:
        return file.isatty()
    except (AttributeError, ValueError):  # no isatty, or closed
        return False
