"""Pickling nornir's hosts and results across process boundaries, with picklers of our own.

The reducers below belong to the picklers that send hosts to worker processes and results back
(:func:`dumps`, :func:`cloud_dumps`): nothing is registered for the process, so a ``Host`` or a
result that the user pickles themselves behaves exactly as nornir's does.

**Hosts.** Pickling a ``Host`` reads each slot through nornir's ``__getattribute__``, which
resolves inheritance from groups and defaults: slow (15 µs a host, 0.15 s for 10,000) and it
copies inherited values into the host, so the copy no longer inherits. And a host with an open
connection (a netmiko session) cannot be pickled at all. The reducer copies the host's own slots
as they are and leaves live connections behind: a copy in another process opens its own.

**Results.** nornir's ``NornirSubTaskError(task, result)`` pickles but does not unpickle
(``Exception`` pickles its empty ``args`` and ``__init__`` then misses both arguments), so a
result holding a failed subtask could not come back from a worker. The rebuilt exception keeps
the subtask's ``result`` and, in place of the ``Task`` (which holds the whole ``Nornir``
object), the task's name, so ``str()`` reads as before. Unpickling needs nothing registered:
the pickle names the function that rebuilds it.

A ``Result`` goes as the values of its attributes, their names once a batch (a shape shared by
the batch's results), and a :class:`~nornir_bench.core.host_task.HostResults` as its name
and items, not as the dict pickle would write key by key for each: every host's results cross
on every run. Both are rebuilt as the same objects, shared references and cycles included.
"""

from __future__ import annotations

import collections
import copyreg
import functools
import io
import itertools
import pickle
from typing import Any

from nornir.core.exceptions import NornirSubTaskError
from nornir.core.inventory import Group, Host
from nornir.core.task import Result

from nornir_bench.core.host_task import HostResults

__all__ = ["HostList", "cloud_dumps", "cloudpickles", "dumps", "round_trips"]


def _rebuild_subtask_error(task_name: str, result: Any) -> NornirSubTaskError:
    return NornirSubTaskError(task=task_name, result=result)


def _reduce_subtask_error(exc: NornirSubTaskError) -> tuple[Any, ...]:
    return (_rebuild_subtask_error, (str(getattr(exc.task, "name", exc.task)), exc.result))


def _host_slots(cls: type) -> tuple[str, ...]:
    names: list[str] = []
    for klass in cls.__mro__:
        names += [n for n in getattr(klass, "__slots__", ()) if n not in names]
    return tuple(n for n in names if n != "connections")


_SLOTS = {cls: _host_slots(cls) for cls in (Host, Group)}


def _slot_values(host: Host) -> tuple[Any, ...]:
    # The slots' values alone, in the class's order (no names to pickle for every host), read
    # by a C loop past nornir's __getattribute__.
    names = _SLOTS[type(host)]
    return tuple(map(object.__getattribute__, itertools.repeat(host, len(names)), names))


def _rebuild_host(cls: type[Host], values: tuple[Any, ...]) -> Host:
    host = object.__new__(cls)
    collections.deque(map(object.__setattr__, itertools.repeat(host), _SLOTS[cls], values), 0)
    object.__setattr__(host, "connections", {})
    return host


def _reduce_host(host: Host) -> tuple[Any, ...]:
    return (_rebuild_host, (type(host), _slot_values(host)))


def _rebuild_hosts(cls: type[Host], rows: list[tuple[Any, ...]]) -> list[Host]:
    return [_rebuild_host(cls, values) for values in rows]


class HostList:
    """Hosts to send, pickled as one list of their slots' values (unpickled: a ``list`` of
    ``Host``): no reducer call for each host."""

    __slots__ = ("hosts",)

    def __init__(self, hosts: list[Host]) -> None:
        self.hosts = hosts

    def __reduce__(self) -> tuple[Any, ...]:
        if any(type(host) is not Host for host in self.hosts):  # a subclass: one at a time
            return (list, (self.hosts,))
        return (_rebuild_hosts, (Host, [_slot_values(host) for host in self.hosts]))


# The attribute names of results, as tuples shared by every result of that shape: pickled once
# a pickle, then referred to. Results have a handful of shapes (nornir's own attributes, and
# the few a runner or a task adds); a cache this size never fills but for a hostile task.
_SHAPES: dict[tuple[str, ...], tuple[str, ...]] = {}
_MOST_SHAPES = 64
_NEWOBJ = copyreg.__newobj__  # type: ignore[attr-defined]  # pickled as NEWOBJ: cls.__new__(cls)


def _set_result_state(result: Result, state: tuple[tuple[str, ...], tuple[Any, ...]]) -> None:
    names, values = state
    result.__dict__.update(zip(names, values, strict=True))


def _reduce_result(result: Result) -> tuple[Any, ...]:
    # Created first and its attributes set after (``state_setter``): a value that refers back
    # to its result unpickles as it does with pickle's own reduction.
    attributes = result.__dict__
    names = tuple(attributes)
    shared = _SHAPES.get(names)
    if shared is None:
        shared = names
        if len(_SHAPES) < _MOST_SHAPES:
            _SHAPES[names] = names
    return (_NEWOBJ, (Result,), (shared, tuple(attributes.values())), None, None,
            _set_result_state)


def _set_host_results_state(
    results: HostResults, state: tuple[dict[str, Any] | None, str]
) -> None:
    own, results.name = state
    if own:  # attributes a task or processor set on the results
        vars(results).update(own)


def _reduce_host_results(results: HostResults) -> tuple[Any, ...]:
    try:
        name = results.name
    except AttributeError:  # never set: as pickle's own reduction has it
        return results.__reduce_ex__(pickle.HIGHEST_PROTOCOL)  # type: ignore[return-value]
    return (_NEWOBJ, (HostResults,), (results.__dict__ or None, name),
            iter(results), None, _set_host_results_state)


_REDUCERS: dict[type, Any] = {
    NornirSubTaskError: _reduce_subtask_error,
    Host: _reduce_host,
    Group: _reduce_host,
    Result: _reduce_result,
    HostResults: _reduce_host_results,
}


class _Pickler(pickle.Pickler):
    # A dict, not a ChainMap: the pickler looks up the type of every object it meets here.
    dispatch_table = {**copyreg.dispatch_table, **_REDUCERS}


def dumps(value: object) -> bytes:
    """``value`` pickled (highest protocol) with the reducers above: what crosses to and from
    worker processes."""
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(value)
    return buffer.getvalue()


def cloud_dumps(value: object) -> bytes:
    """``value`` pickled with cloudpickle (functions and classes of ``__main__`` by value) and
    the reducers above: for what plain pickling refuses."""
    buffer = io.BytesIO()
    _cloud_pickler()(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(value)
    return buffer.getvalue()


@functools.cache
def _cloud_pickler() -> type[pickle.Pickler]:
    import cloudpickle  # the process pool's: only for the runs that cross processes

    class CloudPickler(cloudpickle.CloudPickler):  # type: ignore[misc]
        dispatch_table = {**cloudpickle.CloudPickler.dispatch_table, **_REDUCERS}

    return CloudPickler


def round_trips(value: object) -> bool:
    """Whether ``value`` crosses a process boundary and is rebuilt on the other side: an
    exception whose ``__init__`` takes other arguments than its ``args`` pickles, and fails
    only where it is unpickled (in the parent, which must not)."""
    try:
        pickle.loads(cloud_dumps(value))
    except Exception:  # noqa: BLE001 - any failure means it cannot be sent
        return False
    return True


def cloudpickles(value: object) -> bool:
    """Whether ``value`` can cross a process boundary (cloudpickle: functions and classes of
    ``__main__`` too); an open socket, a live session cannot."""
    try:
        cloud_dumps(value)
    except Exception:  # noqa: BLE001 - any failure means it cannot be sent
        return False
    return True
