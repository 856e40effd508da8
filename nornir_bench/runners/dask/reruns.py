"""How many times a chunk runs again after its worker died: ``crash_reruns``, whatever the
scheduler's own setting.

Dask runs a task again on another worker when the worker running it dies, until it has seen
``distributed.scheduler.allowed-failures`` deaths (3 by default), and then fails it with
``KilledWorker``. That setting is the scheduler's, for every client. A chunk of hosts must run
again at most ``crash_reruns`` times (0 by default: a task that pushed configuration to some of
its devices must not run twice on them): its key says how many (:func:`chunk_key`), and a
scheduler plugin (:class:`CrashReruns`) raises the chunk's count of suspicious deaths as it
starts processing, so that the next death past its own allowance fails it. Reruns beyond the
scheduler's ``allowed-failures`` are not possible; the runner's embedded cluster sets it high
enough.

A chunk may run only on the worker it was sent to (:func:`~nornir_bench.runners.dask.sites.
where_it_may_run`), so Dask waits for that worker's room instead of stealing the chunk for an
idle one. Once that worker is gone (or paused), Dask would keep the chunk waiting for it
("no-worker") without end: the plugin lets it run on the workers serving the same sites as
that one (any, without sites), or, with none of them left, fails it at once with
:class:`NoWorkerLeft`.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from typing import TYPE_CHECKING, Any

from distributed.diagnostics.plugin import SchedulerPlugin

from nornir_bench.runners.dask.sites import worker_sites

if TYPE_CHECKING:
    from distributed import Scheduler

__all__ = ["PLUGIN_NAME", "PREFIX", "CrashReruns", "NoWorkerLeft", "chunk_key", "reruns_of"]

PLUGIN_NAME = "nornir-bench-crash-reruns"
PREFIX = "nornir-bench-chunk-"

_numbers = itertools.count()


def chunk_key(run_id: str, reruns: int) -> str:
    """A new chunk's key: unique, and saying how many times it may run again."""
    return f"{PREFIX}r{reruns}-{run_id}-{next(_numbers)}"


def reruns_of(key: object) -> int | None:
    """How many times the chunk ``key`` may run again; ``None`` for a key not a chunk's."""
    if not isinstance(key, str) or not key.startswith(PREFIX):
        return None
    count = key[len(PREFIX) + 1 :].split("-", 1)[0]
    return int(count) if count.isdigit() else None


class NoWorkerLeft(Exception):
    """A chunk's worker died, and none of the workers it may run on (those of its hosts'
    site) is left."""


class CrashReruns(SchedulerPlugin):
    """On the scheduler: each chunk fails with ``KilledWorker`` once more workers died running
    it than its key allows; a chunk whose worker is gone runs on another serving the same
    sites, if one is left."""

    idempotent = True  # one per scheduler, however many clients register it

    def __init__(self) -> None:
        self.scheduler: Scheduler | None = None
        # The sites each worker serves, by address, kept once it is gone: a chunk restricted
        # to a worker gone goes to the workers serving the same.
        self.sites: dict[str, frozenset[str]] = {}

    async def start(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler
        for address in scheduler.workers:
            self.add_worker(scheduler, address)

    def add_worker(self, scheduler: Scheduler, worker: str) -> None:
        state = scheduler.workers.get(worker)
        if state is not None:
            self.sites[worker] = worker_sites(state.resources)

    def transition(self, key: Any, start: str, finish: str, *args: Any, **kwargs: Any) -> None:
        if finish not in ("processing", "no-worker") or self.scheduler is None:
            return
        reruns = reruns_of(key)
        if reruns is None:
            return
        if finish == "no-worker":  # not in the midst of the scheduler's own transitions
            asyncio.get_running_loop().call_soon(self._elsewhere_or_failed, key)
            return
        task = self.scheduler.tasks.get(key)
        if task is not None:
            task.suspicious = max(task.suspicious, self.scheduler.allowed_failures - reruns)

    def _elsewhere_or_failed(self, key: Any) -> None:
        """A chunk waiting for workers that are gone: to the workers running now that serve
        the same sites as those, or failed with :class:`NoWorkerLeft` if none is left."""
        from distributed.protocol import pickle

        scheduler = self.scheduler
        task = None if scheduler is None else scheduler.tasks.get(key)
        if scheduler is None or task is None or task.state != "no-worker":
            return
        sites = {self.sites.get(address) for address in task.worker_restrictions or ()}
        others = sorted(
            state.address for state in scheduler.running if self.sites.get(state.address) in sites
        )
        stimulus = f"nornir-bench-no-worker-left-{time.time()}"
        if others:
            scheduler.set_restrictions({key: others})
            scheduler.transitions({key: "processing"}, stimulus_id=stimulus)
            return
        exception = pickle.dumps(NoWorkerLeft("no worker it may run on is left"))
        scheduler.transitions(
            scheduler.transition(key, "erred", stimulus, exception=exception, cause=key),
            stimulus_id=stimulus,
        )
