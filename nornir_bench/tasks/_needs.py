"""What a task needs beyond nornir-bench itself: device libraries and connection plugins.

The device libraries (netmiko with nornir-netmiko, asyncssh, ntc-templates) are the optional
extra ``devices`` (:data:`DEVICES_EXTRA`), as nornir keeps its connection plugins out of
nornir: the benchmark and the simulated tasks need none of them. A task declares what it
uses with :func:`needs`, so that:

- a job naming it fails before anything runs, in one line naming the extra, when a library
  is missing (:func:`require_libraries`), rather than on every device;
- a job registers only the connection plugins its task opens (:func:`connections_of`): with
  nornir-netmiko installed, ``InitNornir`` registers it for every run, importing netmiko and
  paramiko (0.2 s) even for a task that never opens an SSH session.

A task that declares nothing (a user's own ``module:function``) may open any connection: it
gets every plugin installed, as with ``InitNornir``.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from nornir_bench.core.exceptions import NornirBenchError
from nornir_bench.core.task_traits import Needs, traits_of, with_traits

__all__ = [
    "DEVICES_EXTRA",
    "MissingLibrary",
    "Needs",
    "connections_of",
    "needs",
    "needs_of",
    "require_libraries",
]

DEVICES_EXTRA = "pip install 'nornir-bench[devices]'"
"""How to install the device libraries, as error messages say it."""

_Task = TypeVar("_Task", bound=Callable[..., Any])


class MissingLibrary(NornirBenchError, ImportError):
    """A task needs a library that is not installed; the message says how to install it."""


def needs(
    *,
    libraries: Sequence[str] = (),
    connections: Sequence[str] = (),
    install: str | None = None,
    descriptors: int | None = None,
) -> Callable[[_Task], _Task]:
    """Declare what the decorated task uses (:class:`Needs`): ``@needs()`` for nothing more.

    The task is returned as it is, its ``needs`` trait set (``core.task_traits``).

    Raises:
        TypeError: ``libraries`` or ``connections`` is a string, not a list of names.
    """
    for name, value in (("libraries", libraries), ("connections", connections)):
        if isinstance(value, str):
            raise TypeError(f"needs: {name} must be a list of names, got the string {value!r}")

    def declare(task: _Task) -> _Task:
        declared = Needs(tuple(libraries), tuple(connections), install, descriptors)
        return with_traits(needs=declared)(task)

    return declare


def needs_of(task: Callable[..., Any]) -> Needs | None:
    """What ``task`` declared with :func:`needs`; ``None`` if it declared nothing."""
    return traits_of(task).needs


def connections_of(task: Callable[..., Any]) -> frozenset[str] | None:
    """The connection plugins ``task`` opens; ``None``: not known, so any installed."""
    declared = needs_of(task)
    return None if declared is None else frozenset(declared.connections)


def require_libraries(task: Callable[..., Any]) -> None:
    """Check that every library ``task`` declared can be imported (without importing it).

    Raises:
        MissingLibrary: naming the missing libraries and how to install them.
    """
    declared = needs_of(task)
    if declared is None:
        return
    missing = [name for name in declared.libraries if importlib.util.find_spec(name) is None]
    if missing:
        packages = [name.replace("_", "-") for name in missing]  # as pip names them, mostly
        verb = "is" if len(missing) == 1 else "are"
        raise MissingLibrary(
            f"task {getattr(task, '__name__', task)} needs {' and '.join(packages)}, which "
            f"{verb} not installed: {declared.install or 'pip install ' + ' '.join(packages)}"
        )
