"""A host's own copy of a run's task, as nornir's ``Task.copy`` makes it, at a fleet's scale.

Every host runs a copy of the run's task, holding its ``host`` and its ``results``. nornir's
``Task.copy`` passes everything through ``Task.__init__``'s keywords, and the copy's results,
nornir's ``MultiResult``, are a list with an instance ``__dict__`` for their ``name`` alone: a
dict per host, kept with the run's result. Here the copy is made attribute by attribute, in
``Task.__init__``'s order, and its results are a :class:`HostResults`: a ``MultiResult`` whose
name is in a slot. For a ``Task`` whose attributes are not those (another nornir version),
``Task.copy`` is used and its results are replaced.
"""

from __future__ import annotations

from typing import Any

from nornir.core.task import MultiResult, Task

__all__ = ["HostResults", "host_task"]


class HostResults(MultiResult):
    """nornir's ``MultiResult``, its ``name`` in a slot instead of an instance dict.

    It is a ``MultiResult`` (``isinstance``, ``failed``, ``changed``, ``result[0]``, its
    ``repr``) and pickles as one of this class.
    """

    __slots__ = ("name",)

    def __repr__(self) -> str:
        return f"MultiResult: {list.__repr__(self)}"

    def __setstate__(self, state: tuple[dict[str, Any] | None, dict[str, Any]]) -> None:
        # Found here, unpickling asks nornir's ``MultiResult.__getattr__`` for it, which
        # raises: an exception for every host whose results cross a process boundary.
        own, slots = state
        if own:  # attributes a task or processor set on the results
            vars(self).update(own)
        for name, value in slots.items():
            setattr(self, name, value)


_FIELDS = (
    "task",
    "nornir",
    "name",
    "global_dry_run",
    "parent_task",
    "params",
    "results",
    "severity_level",
    "processors",
)


def _probe(task: Task) -> None:
    """A task function for looking at what ``Task.__init__`` sets."""


def _fields_match() -> bool:
    probe: Any = None
    return tuple(vars(Task(_probe, probe, False, probe))) == _FIELDS


_new_task = Task.__new__


def _copy(template: Task) -> Task:
    task: Task = _new_task(Task)
    task.task = template.task
    task.nornir = template.nornir
    task.name = template.name
    task.global_dry_run = template.global_dry_run
    task.parent_task = template.parent_task
    task.params = template.params.copy()
    task.results = HostResults(template.name)
    task.severity_level = template.severity_level
    task.processors = template.processors
    return task


def _copy_by_nornir(template: Task) -> Task:
    task = template.copy()
    task.results = HostResults(template.name)
    return task


# host_task(template): template's copy for one host, as template.copy() makes it.
host_task = _copy if _fields_match() else _copy_by_nornir
