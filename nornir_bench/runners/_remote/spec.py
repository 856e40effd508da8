"""What goes to a worker elsewhere: the run, once per run (and per worker); hosts, in chunks."""

from __future__ import annotations

import pickle
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nornir_bench.core._pickling import HostList, cloud_dumps, dumps
from nornir_bench.core.known_hosts import KnownHostsError, install, run_files, snapshot
from nornir_bench.core.plugins import registered_plugins
from nornir_bench.core.secrets import terminal_secrets

if TYPE_CHECKING:
    from nornir.core.configuration import Config
    from nornir.core.inventory import Host
    from nornir.core.task import Task

    from nornir_bench.core.policies.options import RunPolicy

__all__ = ["RunSpec", "pack_hosts", "pack_run", "unpack_run"]


@dataclass
class RunSpec:
    """What a worker needs to run a task: pickled with cloudpickle (a task defined in
    ``__main__`` or a closure travels by value).

    Attributes:
        seconds_left: seconds to the run's deadline when the spec was made, if it has one:
            a deadline on the sender's clock would mean nothing on another machine.
        deadline: that deadline on the receiver's ``time.monotonic`` clock, set by
            :func:`unpack_run` as the spec arrives.
    """

    func: Any
    params: dict[str, Any]
    name: str
    severity_level: int
    global_dry_run: bool
    config: Config | None
    num_workers: int
    policy: RunPolicy
    seconds_left: float | None
    loop: str = "auto"
    plugins: dict[str, dict[str, Any]] = field(default_factory=dict)  # by kind, then name
    keep_connections: bool = False  # hosts' connections outlive the run, in their worker
    secrets: tuple[str, ...] = ()  # what the worker's own output masks, as the terminal here
    known_hosts: tuple[str, dict[str, str]] | None = None  # the client's (core/known_hosts.py)
    deadline: float | None = field(default=None, compare=False)


def pack_run(
    task: Task,
    *,
    what: str,
    num_workers: int,
    policy: RunPolicy,
    deadline: float | None,
    loop: str,
    keep_connections: bool,
) -> bytes:
    """``task`` (the run's template, as ``Nornir.run`` built it) as a worker receives it.

    Args:
        what: the runner, as messages name it (``"processpool runner"``).
        deadline: the run's deadline on this process's ``time.monotonic`` clock, if any.

    Raises:
        ValueError: the task or its arguments cannot be pickled, in one line.
    """
    spec = RunSpec(
        func=task.task,
        params=task.params,
        name=task.name,
        severity_level=task.severity_level,
        global_dry_run=task.global_dry_run,
        config=getattr(task.nornir, "config", None),
        num_workers=num_workers,
        policy=policy,
        seconds_left=None if deadline is None else max(0.0, deadline - time.monotonic()),
        loop=loop,
        plugins=registered_plugins(),
        keep_connections=keep_connections,
        secrets=terminal_secrets(),
        known_hosts=_known_hosts(task),
    )
    try:
        return cloud_dumps(spec)
    except Exception as exc:
        raise ValueError(
            f"{what}: the task {task.name!r} or its arguments cannot be sent to worker "
            f"processes: {type(exc).__name__}: {exc}"
        ) from exc


def _known_hosts(task: Task) -> tuple[str, dict[str, str]] | None:
    """The known-hosts files the run's hosts may read, as this process knows them: a worker
    checks host keys against these, not against files of its own machine."""
    inventory = getattr(task.nornir, "inventory", None)
    if inventory is None:
        return None
    try:
        return snapshot(
            run_files(inventory.defaults, inventory.groups.values(), inventory.hosts.values())
        )
    except KnownHostsError:  # each host's login says it, as it would here
        return None


def unpack_run(payload: bytes) -> RunSpec:
    """The spec :func:`pack_run` made, its deadline set on this machine's clock.

    Raises:
        Exception: whatever unpickling raises (a module the task needs does not import here).
    """
    spec: RunSpec = pickle.loads(payload)
    if spec.known_hosts is not None:
        install(spec.known_hosts)
    if spec.seconds_left is not None:
        spec.deadline = time.monotonic() + spec.seconds_left
    return spec


def pack_hosts(
    hosts: Sequence[Host], chunk: list[int], *, what: str
) -> tuple[list[int], bytes, dict[int, Exception]]:
    """The hosts of ``chunk`` (indices into ``hosts``) that can be sent, pickled for the worker
    that runs them (cloudpickle if their data needs it), and those that cannot (an open
    socket in ``data``), each with why: such a host fails alone.

    Args:
        what: the runner, as messages name it (``"processpool runner"``).
    """
    try:
        return chunk, dumps(HostList([hosts[index] for index in chunk])), {}
    except Exception:  # noqa: BLE001 - a function or a class of __main__ in the data
        pass
    sendable: list[int] = []
    unsendable: dict[int, Exception] = {}
    for index in chunk:
        try:
            cloud_dumps(hosts[index])
        except Exception as exc:  # noqa: BLE001 - any of it: the host cannot run there
            unsendable[index] = ValueError(
                f"{what}: host {hosts[index].name}'s inventory cannot be sent to its worker: "
                f"{type(exc).__name__}: {exc}"
            )
        else:
            sendable.append(index)
    return sendable, cloud_dumps(HostList([hosts[index] for index in sendable])), unsendable
