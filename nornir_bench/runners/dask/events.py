"""What a ``dask`` run hears while it waits: the workers' word about its hosts, and the
scheduler's that a worker left, each put on the queue of the run it concerns.

Both come on one Dask event topic,
:data:`~nornir_bench.runners.dask.worker.EVENTS_TOPIC`, through the client's own thread: the
workers' words name their run; the scheduler's (:class:`WorkerRemovals`, a scheduler plugin
the runner registers) is for every run. The scheduler removes a worker as soon as it knows it
is gone (its connection closed, or Dask's ``worker-ttl`` passed): the run then sends it
nothing more and asks it nothing more, as a question to a worker gone waits for Dask's connect
timeout. (Dask's own topic ``"all"`` says it too, but its word on a broadcast scatter, which
sends the run, holds the scheduler's ``WorkerState`` objects: they cannot be serialized, and
the client's connection closes.)
"""

from __future__ import annotations

import queue
from typing import TYPE_CHECKING, Any, NamedTuple

from distributed.diagnostics.plugin import SchedulerPlugin

from nornir_bench.runners.dask.worker import EVENTS_TOPIC

if TYPE_CHECKING:
    from distributed import Client, Scheduler

__all__ = [
    "LEFT",
    "REMOVALS_PLUGIN",
    "RunEvent",
    "WorkerRemovals",
    "listen",
    "stop_listening",
]

LEFT = "left"
"""A :class:`RunEvent`'s kind when the scheduler removed the worker (it died, or retired)."""

REMOVALS_PLUGIN = "nornir-bench-worker-removals"

_EVERY_RUN = ""  # the run id of the scheduler's words


class RunEvent(NamedTuple):
    """A worker's word about a run's hosts (``worker.ENDED``, ``worker.STARTED``, anything
    else: it is alive), or the scheduler's that the worker left (:data:`LEFT`)."""

    address: str
    kind: str
    indices: list[int]


class WorkerRemovals(SchedulerPlugin):
    """On the scheduler: each worker it removes, said on the runs' topic."""

    idempotent = True  # one per scheduler, however many clients register it

    def remove_worker(self, scheduler: Scheduler, worker: str, **kwargs: Any) -> None:
        scheduler.log_event(EVENTS_TOPIC, [_EVERY_RUN, worker, LEFT, []])


# The queue of each run in progress, by run id.
_RUNS: dict[str, queue.SimpleQueue[Any]] = {}


def listen(client: Client, run_id: str, to: queue.SimpleQueue[Any]) -> None:
    """Put what is heard of run ``run_id``, and of the workers leaving, on ``to`` (as
    :class:`RunEvent`), until :func:`stop_listening`."""
    _RUNS[run_id] = to
    client.subscribe_topic(EVENTS_TOPIC, _route)


def stop_listening(run_id: str) -> None:
    _RUNS.pop(run_id, None)


def _route(event: tuple[float, Any]) -> None:
    run_id, address, kind, indices = event[1]
    said = RunEvent(str(address), str(kind), list(indices))  # msgpack may give tuples
    # The scheduler's word goes to every run: a worker not among a run's is nothing to it.
    for to in list(_RUNS.values()) if run_id == _EVERY_RUN else [_RUNS.get(run_id)]:
        if to is not None:
            to.put(said)
