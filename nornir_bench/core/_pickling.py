"""Make nornir's results and hosts cross process boundaries.

**Hosts.** Pickling a ``Host`` reads each slot through nornir's ``__getattribute__``, which
resolves inheritance from groups and defaults: slow (15 µs a host, 0.15 s for 10,000) and it
copies inherited values into the host, so the copy no longer inherits. And a host with an open
connection (a netmiko session) cannot be pickled at all. The reducer below copies the host's
own slots as they are and leaves live connections behind: a copy in another process opens its
own.

**Results.**
nornir's ``NornirSubTaskError(task, result)`` pickles but does not unpickle (``Exception``
pickles its empty ``args`` and ``__init__`` then misses both arguments), so any result holding a
failed subtask, nornir's own runners' included, cannot be saved or sent to another process.
Registering a reducer fixes that for every pickler in the process. The rebuilt exception keeps
the subtask's ``result`` and, in place of the ``Task`` (which holds the whole ``Nornir`` object),
the task's name, so ``str()`` reads as before.
"""

from __future__ import annotations

import copyreg
from typing import Any

from nornir.core.exceptions import NornirSubTaskError
from nornir.core.inventory import Group, Host

__all__ = ["cloudpickles", "register_reducers"]


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


def _rebuild_host(cls: type[Host], values: tuple[Any, ...] | dict[str, Any]) -> Host:
    host = object.__new__(cls)
    # A dict: pickled by an earlier version, which named each slot.
    pairs = values.items() if isinstance(values, dict) else zip(_SLOTS[cls], values, strict=True)
    for name, value in pairs:
        object.__setattr__(host, name, value)
    object.__setattr__(host, "connections", {})
    return host


def _reduce_host(host: Host) -> tuple[Any, ...]:
    # The slots' values alone, in the class's order: no names to pickle for every host.
    cls = type(host)
    get = object.__getattribute__
    return (_rebuild_host, (cls, tuple([get(host, name) for name in _SLOTS[cls]])))


def cloudpickles(value: object) -> bool:
    """Whether ``value`` can cross a process boundary (cloudpickle: functions and classes of
    ``__main__`` too); an open socket, a live session cannot."""
    import cloudpickle  # the process pool's: only for the runs that cross processes

    try:
        cloudpickle.dumps(value)
    except Exception:  # noqa: BLE001 - any failure means it cannot be sent
        return False
    return True


def register_reducers() -> None:
    """Register these reducers for every pickler in the process (again: harmless)."""
    copyreg.pickle(NornirSubTaskError, _reduce_subtask_error)
    copyreg.pickle(Host, _reduce_host)
    copyreg.pickle(Group, _reduce_host)
