"""What a runner plugin says of itself, for ``advise`` and ``calibrate`` to read.

A runner declares its traits as class attributes and one method (:class:`RunnerTraits`); the
readers here give every trait a runner leaves out its default, so that a runner that declares
none (nornir's ``threaded``, a user's own) reads as one running its hosts in this process.
``advise`` and ``calibrate`` decide from these, never from a runner's name.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import ClassVar, Protocol, runtime_checkable

from nornir_bench.core.cpus import usable_cpus

__all__ = [
    "IN_PROCESS",
    "Placement",
    "RunnerTraits",
    "declares_traits",
    "is_installed",
    "placement",
    "prefers_async_tasks",
    "runs_elsewhere",
    "takes_address",
]


@dataclass(frozen=True)
class Placement:
    """Where a runner, built with its options, runs its hosts.

    Attributes:
        processes: processes running hosts, ``num_workers`` hosts in flight in each.
        cores: cores the hosts' own CPU can use at once (1 under one GIL).
        this_machine: those processes are this machine's: their memory and descriptors
            count here.
    """

    processes: int = 1
    cores: int = 1
    this_machine: bool = True

    @classmethod
    def worker_processes(cls, processes: int) -> Placement:
        """``processes`` worker processes on this machine, on the cores it lets us use."""
        return cls(processes, min(processes, usable_cpus()))


IN_PROCESS = Placement()
"""One process, one core, here: a runner that declares no placement."""


@runtime_checkable
class RunnerTraits(Protocol):
    """The traits a runner plugin declares (each optional: see the module).

    Attributes:
        prefers_async_tasks: it runs ``async def`` tasks natively (default false: blocking
            tasks, as nornir's runners).
        runs_elsewhere: its hosts run in processes of its own, which a run starts or warms;
            the parent only sends hosts and gathers results (default false).
        takes_address: it takes an ``address`` option, a cluster its hosts run on.
        requires_modules: modules it needs installed to run (an extra's); it is advised only
            when they are.
    """

    prefers_async_tasks: ClassVar[bool]
    runs_elsewhere: ClassVar[bool]
    takes_address: ClassVar[bool]
    requires_modules: ClassVar[tuple[str, ...]]

    def placement(self) -> Placement:
        """Where this runner's hosts run, from its options; it starts nothing (it may ask a
        cluster at its ``address`` what workers it has)."""


def declares_traits(runner: object) -> bool:
    """Whether a runner (class or instance) declares its traits: it has a ``placement``."""
    return callable(getattr(runner, "placement", None))


def prefers_async_tasks(runner: object) -> bool:
    """Whether a runner (class or instance) runs ``async def`` tasks natively."""
    return bool(getattr(runner, "prefers_async_tasks", False))


def runs_elsewhere(runner: object) -> bool:
    """Whether a runner (class or instance) runs its hosts in processes of its own."""
    return bool(getattr(runner, "runs_elsewhere", False))


def takes_address(runner: object) -> bool:
    """Whether a runner (class or instance) takes a cluster's ``address`` option."""
    return bool(getattr(runner, "takes_address", False))


def is_installed(runner: object) -> bool:
    """Whether the modules a runner (class or instance) requires are installed."""
    needed: tuple[str, ...] = getattr(runner, "requires_modules", ())
    return all(importlib.util.find_spec(name) is not None for name in needed)


def placement(runner: object) -> Placement:
    """Where a runner instance runs its hosts: its own word, else :data:`IN_PROCESS`."""
    declared = getattr(runner, "placement", None)
    where = declared() if callable(declared) else IN_PROCESS
    if not isinstance(where, Placement):
        raise TypeError(f"{type(runner).__name__}.placement() returned {where!r:.100}, not a "
                        "Placement")
    return where
