"""What comes back from a worker for each host, and how the parent makes it nornir's result.

A worker records its hosts' subtask hooks as they fire (:class:`HookRecorder`); for each host
that finishes it sends a :class:`FinishedHost`: the ``MultiResult`` (its results pointing at no
host: the parent has it), the host's ``data`` after the task, the hook events, the names of
the connections the worker keeps for the host, and the new SSH host keys the worker recorded.
What does not pickle is made :func:`portable`.

The parent settles each (:class:`ResultSettler`): the results are pointed at the parent's
``Host``, the data merged into the parent's inventory, failures and accepted keys logged where
the user's logging is, and the hooks fired on the parent's processors in the order the worker
fired them: ``task_instance_started`` as the host left, the subtask hooks and
``task_instance_completed`` as it comes back. So progress bars, result printers and every
processor see what they would see in process.
"""

from __future__ import annotations

import operator
import traceback
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from nornir.core.task import MultiResult, Result, Task

from nornir_bench.core._pickling import cloud_dumps, cloudpickles, dumps, round_trips
from nornir_bench.core.accepted_keys import AcceptedKey, note_accepted
from nornir_bench.core.attempts import FailedAttempt, record_attempts
from nornir_bench.core.exceptions import RemoteException
from nornir_bench.core.execution import child_task, fail_host, log_failure, start_host
from nornir_bench.core.failures import each_result
from nornir_bench.core.hooks import NoOpProcessor

if TYPE_CHECKING:
    from nornir.core.inventory import Host
    from nornir.core.task import AggregatedResult

__all__ = [
    "FinishedBatch",
    "FinishedHost",
    "HookEvent",
    "HookRecorder",
    "ResultSettler",
    "SubtaskCompleted",
    "SubtaskStarted",
    "exceptions_round_trip",
    "failed",
    "packed",
    "portable",
    "relink",
]


class SubtaskStarted(NamedTuple):
    """A subtask's ``subtask_instance_started`` fired in the worker."""

    name: str


class SubtaskCompleted(NamedTuple):
    """A subtask's ``subtask_instance_completed`` fired in the worker, with its results."""

    name: str
    result: MultiResult


HookEvent = SubtaskStarted | SubtaskCompleted


class FinishedHost(NamedTuple):
    """A host done in a worker."""

    position: int
    """Its place in the run's hosts."""
    result: MultiResult
    """Its ``MultiResult``, every ``Result.host`` ``None`` (see :func:`relink`)."""
    data: dict[str, Any]
    """The host's ``data`` after the task, merged into the parent's host."""
    events: list[HookEvent]
    """Its subtask hooks, in the order they fired, for the parent to fire again."""
    connections: tuple[str, ...]
    """The connections the worker keeps open for the host, by plugin name."""
    accepted: tuple[AcceptedKey, ...] = ()
    """The new SSH host keys the worker recorded since its last host finished (accept-new)."""


class FinishedBatch(NamedTuple):
    """Hosts done in a worker, field by field: one list per field of :class:`FinishedHost`, so
    that a batch pickles without an object per host; the keys they accepted, in one list
    (seldom any)."""

    positions: list[int]
    results: list[MultiResult]
    data: list[dict[str, Any]]
    events: list[list[HookEvent]]
    connections: list[tuple[str, ...]]
    accepted: list[AcceptedKey]

    @classmethod
    def of(cls, finished: Sequence[FinishedHost]) -> FinishedBatch:
        if not finished:
            return cls([], [], [], [], [], [])
        positions, results, data, events, connections, accepted = zip(*finished, strict=True)
        return cls(list(positions), list(results), list(data), list(events),
                   list(connections), [key for keys in accepted for key in keys])


class HookRecorder(NoOpProcessor):
    """The worker's processor: each host's subtask hooks, kept for the parent to replay."""

    def __init__(self) -> None:
        self.by_host: dict[str, list[HookEvent]] = {}

    def subtask_instance_started(self, task: Task, host: Host) -> None:
        self.by_host.setdefault(host.name, []).append(SubtaskStarted(task.name))

    def subtask_instance_completed(self, task: Task, host: Host, result: MultiResult) -> None:
        self.by_host.setdefault(host.name, []).append(SubtaskCompleted(task.name, result))

    def finished(
        self, index: int, host: Host, multi: MultiResult, held: Sequence[str],
        accepted: tuple[AcceptedKey, ...] = (),
    ) -> FinishedHost:
        """``host``'s results, ready to send: its events taken, its results unlinked; with the
        keys ``accepted`` since the last host finished."""
        events = self.by_host.pop(host.name, []) if self.by_host else []
        relink(multi, None)
        for event in events:
            if isinstance(event, SubtaskCompleted):
                relink(event.result, None)
        # The host's own data (nornir's __getattribute__ would only hand it over, a call later).
        data = object.__getattribute__(host, "data")
        return FinishedHost(index, multi, data, events, tuple(held), accepted)


def relink(multi: MultiResult, host: Host | None) -> None:
    """Point every result at ``host``: the parent's, as results arrive; ``None`` in a worker,
    before they are sent (a copy of the host in every result would be pickled for nothing)."""
    for item in multi:  # each_result's walk without its generator: every host, on both sides
        if isinstance(item, list):
            relink(item, host)  # type: ignore[arg-type]
        else:
            item.host = host


def failed(multi: MultiResult) -> bool:
    """``multi.failed``, as nornir's ``MultiResult`` computes it, in a C loop."""
    return any(map(_failed, multi))


_failed = operator.attrgetter("failed")


def packed(
    finished: list[FinishedHost], wrap: Callable[[FinishedBatch], object] = lambda batch: batch
) -> bytes:
    """``finished`` (wrapped by ``wrap``) pickled for the parent: as it is when everything in
    it pickles and every exception is rebuilt when unpickled, else made :func:`portable`
    first, so that the parent never fails to read a worker's results."""
    try:
        if exceptions_round_trip(finished):
            return dumps(wrap(FinishedBatch.of(finished)))
    except Exception:  # noqa: BLE001 - something in a result does not pickle: portable
        pass
    return cloud_dumps(wrap(FinishedBatch.of(portable(finished))))


def exceptions_round_trip(finished: list[FinishedHost]) -> bool:
    """Whether every exception in ``finished``'s results is rebuilt where it is unpickled (see
    :func:`~nornir_bench.core._pickling.round_trips`); only failed hosts have one to check."""
    return all(
        round_trips(item.exception)
        for done in finished
        if failed(done.result)
        for item in each_result(done.result)
        if item.exception is not None
    )


def portable(finished: list[FinishedHost]) -> list[FinishedHost]:
    """``finished`` with every result value, exception and data value that cannot be pickled
    made into text (in place).

    Exceptions become :class:`RemoteException` (type name, message and traceback kept); other
    values become their ``repr``. Values that pickle (with cloudpickle) are left alone.
    """
    for done in finished:
        _portable_results(done.result)
        for event in done.events:
            if isinstance(event, SubtaskCompleted):
                _portable_results(event.result)
        for key, value in list(done.data.items()):
            if not cloudpickles(value):
                done.data[key] = repr(value)
    return finished


def _portable_results(multi: MultiResult) -> None:
    for item in each_result(multi):
        _portable_result(item)


def _portable_result(result: Result) -> None:
    exc = result.exception
    if exc is not None and not round_trips(exc):
        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        result.exception = RemoteException(type(exc).__name__, str(exc), text)
    if not cloudpickles(result.result):
        result.result = repr(result.result)
    for key, value in list(vars(result).items()):
        if key not in ("exception", "result", "host") and not cloudpickles(value):
            setattr(result, key, repr(value))


def _remote(task: Task) -> None:
    """Stands for a subtask that ran in a worker, in the hooks replayed in the parent."""


def replay_hooks(top: Task, multi: MultiResult, events: Sequence[HookEvent]) -> None:
    """Fire, in the parent, the hooks the host's run fired in its worker, in the same order.

    ``top`` is the host's task, whose ``task_instance_started`` fired when the host was sent.
    """
    host = top.host
    processors = top.processors
    stack = [top]
    for event in events:
        if isinstance(event, SubtaskStarted):
            sub = child_task(stack[-1], _remote, name=event.name)
            processors.subtask_instance_started(sub, host)
            stack.append(sub)
        else:
            sub = stack.pop() if len(stack) > 1 else top
            relink(event.result, host)
            sub.results = event.result
            processors.subtask_instance_completed(sub, host, event.result)
    top.results = multi
    processors.task_instance_completed(top, host, multi)


class ResultSettler:
    """The parent's side of a run's hosts: each host's hooks, result and data, as nornir would
    have them had the host run in process.

    Args:
        task: the run's task template.
        hosts: the run's hosts, by index.
        result: the run's ``AggregatedResult``, filled in as hosts settle.
        earlier_runs: the runs of a host that did not count (a crash re-ran it).
        settled: told each host that settled, and whether it failed (the run's plan).
    """

    def __init__(
        self,
        task: Task,
        hosts: Sequence[Host],
        result: AggregatedResult,
        *,
        earlier_runs: Callable[[int], list[FailedAttempt]],
        settled: Callable[[int, bool], None],
    ) -> None:
        self.task = task
        self.hosts = hosts
        self.result = result
        self.earlier_runs = earlier_runs
        self.settled = settled
        self.remaining = len(hosts)
        self.started: dict[int, Task] = {}  # host index -> its task, started, not completed
        self._hooks = bool(task.processors)

    def leaving(self, index: int) -> None:
        """Host ``index`` leaves for a worker: its ``task_instance_started`` fires now, so
        that processors see it start when it does (a timer measures its whole time in the
        worker, a progress bar counts it in flight); once, however often it is sent."""
        if self._hooks and index not in self.started:
            self.started[index] = start_host(self.task, self.hosts[index])

    def finished(self, batch: FinishedBatch, back: Callable[[int], object]) -> list[Host]:
        """Settle the hosts of ``batch``, which finished in a worker, each given ``back`` to
        the dispatch book first; the hosts, in the batch's order.

        One loop for the batch: this is the parent's work for every host of a run.
        """
        hosts, store, earlier_runs = self.hosts, self._store, self.earlier_runs
        get = object.__getattribute__  # a Host's own slots, not nornir's inheritance lookup
        settled = []
        for position, multi, data, events in zip(
            batch.positions, batch.results, batch.data, batch.events, strict=True
        ):
            back(position)
            host = hosts[position]
            relink(multi, host)
            record_attempts(multi, earlier_runs(position))
            own = get(host, "data")
            if data != own:
                own.clear()
                own.update(data)
            for item in multi:
                if item.exception is not None and isinstance(item.result, str):
                    # Logged here, as the core logs it in process: workers have no handlers.
                    log_failure(get(host, "name"), str(item.name), item.result)
            if self._hooks:
                replay_hooks(self.started.pop(position), multi, events)
            store(position, multi)
            settled.append(host)
        for key in batch.accepted:  # logged here, as in process: workers have no handlers
            note_accepted(key)
        return settled

    def failed(self, index: int, error: Exception) -> None:
        """A host that could not run (to its end) elsewhere: a failed result made by the core,
        with its hooks; ``error`` is this host's own."""
        multi = fail_host(
            self.task,
            self.hosts[index],
            error,
            started=self.started.pop(index, None),
            attempts=self.earlier_runs(index),
        )
        self._store(index, multi)

    def _store(self, index: int, multi: MultiResult) -> None:
        self.result[object.__getattribute__(self.hosts[index], "name")] = multi
        self.remaining -= 1
        self.settled(index, failed(multi))
