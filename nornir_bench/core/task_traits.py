"""What a task says about itself, beyond its signature: one record, :class:`TaskTraits`.

A task is a plain function nornir calls; what the runners and jobs need to know of it (does it
only read, does it honour ``dry_run``, what it needs, how its parameters are checked) is one
frozen record under one attribute, set with :func:`with_traits` (which the decorators
``read_only``, ``needs`` and ``check_params_with`` call) and read with :func:`traits_of`, and
nowhere else.

``functools.wraps`` copies the record to a wrapper (it copies the function's ``__dict__``); a
``functools.partial`` has the traits of the function it wraps unless given its own. A task of
a user's may still say ``task.supports_dry_run = True`` or ``task.read_only = True``, as the
docs said before the record: :func:`traits_of` honours both.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from nornir.core.inventory import Host

__all__ = ["Needs", "ParamsCheck", "TaskTraits", "traits_of", "with_traits"]

ParamsCheck = Callable[[Mapping[str, Any]], None]
"""Called with a task's keyword arguments (not nornir's ``Task``); raises ``ValueError`` or
``TypeError`` saying what is wrong and what is allowed."""

_Task = TypeVar("_Task", bound=Callable[..., Any])

_ATTRIBUTE = "nornir_bench_traits"


@dataclass(frozen=True)
class Needs:
    """What a task uses beyond nornir and nornir-bench.

    Attributes:
        libraries: top-level modules it imports (``nornir_netmiko``) that may not be installed.
        connections: nornir connection plugins it opens (``netmiko``), by entry point name.
        install: how to install the libraries, as an error says it; ``None``: ``pip install``
            and their names.
        descriptors: file descriptors one host holds while the task runs (sockets, pipes);
            ``None``: one a connection plus one (see ``core.open_files``).
    """

    libraries: tuple[str, ...] = ()
    connections: tuple[str, ...] = ()
    install: str | None = None
    descriptors: int | None = None


@dataclass(frozen=True)
class TaskTraits:
    """A task's traits; the defaults are a task that says nothing (a user's own).

    Attributes:
        read_only: it changes nothing on a device: always (``True``), or when this function
            of its parameters says so (``core.read_only``).
        honours_dry_run: it honours nornir's ``dry_run``, so ``run --check`` may run it.
        needs: the libraries, connection plugins and descriptors it uses (``tasks.needs``);
            ``None``: not known, so any.
        check_params: its own check of a whole set of parameters, run when a job is loaded.
        prepare: called with each host and the parameters before a job's step touches any
            device; a ``ValueError`` fails that host there (a change's template error).
        abandoned_failure: the error of a host Ctrl-C stopped in flight, from its name, the
            parameters and the step's start (``time.time()``): what it may have done.
    """

    read_only: bool | Callable[[Mapping[str, Any]], bool] = False
    honours_dry_run: bool = False
    needs: Needs | None = None
    check_params: ParamsCheck | None = None
    prepare: Callable[[Host, Mapping[str, Any]], None] | None = None
    abandoned_failure: Callable[[str, Mapping[str, Any], float], Exception] | None = None


_FIELDS = frozenset(f.name for f in dataclasses.fields(TaskTraits))


def traits_of(task: object) -> TaskTraits:
    """``task``'s traits: its own record, else (a partial) its function's, else none said;
    with the plain ``supports_dry_run`` and ``read_only`` attributes honoured (see the
    module)."""
    own = getattr(task, _ATTRIBUTE, None)
    if isinstance(own, TaskTraits):
        traits = own
    elif isinstance(task, functools.partial):
        traits = traits_of(task.func)
    else:
        traits = TaskTraits()
    if not traits.honours_dry_run and getattr(task, "supports_dry_run", False) is True:
        traits = dataclasses.replace(traits, honours_dry_run=True)
    plain = getattr(task, "read_only", False)
    if traits.read_only is False and (plain is True or callable(plain)):
        traits = dataclasses.replace(traits, read_only=plain)
    return traits


def with_traits(**changes: Any) -> Callable[[_Task], _Task]:
    """Decorator: the task itself, its traits (:func:`traits_of`) changed as ``changes`` say,
    by the names of :class:`TaskTraits`' fields (``@with_traits(honours_dry_run=True)``).

    Raises:
        TypeError: a name that is not a trait.
    """
    unknown = sorted(set(changes) - _FIELDS)
    if unknown:
        raise TypeError(
            f"with_traits: no trait named {', '.join(unknown)}; the traits are "
            f"{', '.join(sorted(_FIELDS))}"
        )

    def change(task: _Task) -> _Task:
        setattr(task, _ATTRIBUTE, dataclasses.replace(traits_of(task), **changes))
        return task

    return change
