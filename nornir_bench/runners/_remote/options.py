"""What a run whose hosts run elsewhere takes from its runner: one set of options for
processpool and dask, the cap on the worker processes either starts on this machine, and the
run packed for the workers from them.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nornir_bench.core.checks import whole_number
from nornir_bench.core.cpus import usable_cpus
from nornir_bench.runners._remote.spec import pack_run

if TYPE_CHECKING:
    from nornir.core.task import Task

    from nornir_bench.core.policies.options import RunPolicy

__all__ = ["MAX_PROCS_PER_CPU", "RemoteOptions", "worker_processes"]

MAX_PROCS_PER_CPU = 4
"""``num_procs`` is capped at this many worker processes per CPU: past the CPU count, processes
add no computing power, only memory (about 30 MiB each) and start-up time; a few per CPU still
narrow what one crash takes down."""


def worker_processes(what: str, num_procs: int | None) -> int:
    """The worker processes a runner starts on this machine: ``num_procs`` checked, default
    the CPUs this process may use, capped at :data:`MAX_PROCS_PER_CPU` per CPU with a
    ``RuntimeWarning`` pointing at the runner's caller.

    Raises:
        ValueError: not a whole number of at least 1.
    """
    cpus = usable_cpus()
    if num_procs is None:
        return cpus
    procs = whole_number(f"{what}: num_procs", num_procs, minimum=1)
    ceiling = MAX_PROCS_PER_CPU * cpus
    if procs <= ceiling:
        return procs
    warnings.warn(
        f"{what}: num_procs {procs} capped at {ceiling} ({MAX_PROCS_PER_CPU} per CPU): more "
        "worker processes add no computing power, only memory",
        RuntimeWarning,
        stacklevel=3,  # this function, the runner's __init__, its caller
    )
    return ceiling


@dataclass(frozen=True)
class RemoteOptions:
    """The runner's options one run needs, whatever carries its hosts elsewhere.

    Attributes:
        num_workers: hosts in flight at once on each worker.
        num_procs: the worker processes this machine starts (processpool's, the embedded
            Dask cluster's).
        chunk_size: hosts sent to a worker at once; ``None``: the run chooses.
        crash_reruns: how many times the hosts of a worker that died run again.
        loop: each worker's event loop implementation (resolved: ``"asyncio"``, ``"uvloop"``).
        policy: the run policies.
        reruns_given: ``crash_reruns`` was given by the user (else dask chose it from the
            task's ``read_only``), as a crashed host's failure says.
    """

    num_workers: int
    num_procs: int
    chunk_size: int | None
    crash_reruns: int
    loop: str
    policy: RunPolicy
    reruns_given: bool = True

    def pack(
        self, task: Task, deadline: float | None, *, what: str, keep_connections: bool
    ) -> bytes:
        """The run as its workers receive it (:func:`~nornir_bench.runners._remote.spec.
        pack_run`), ``deadline`` on this process's monotonic clock.

        Raises:
            ValueError: the task or its arguments cannot be pickled, in one line.
        """
        return pack_run(
            task,
            what=what,
            num_workers=self.num_workers,
            policy=self.policy,
            deadline=deadline,
            loop=self.loop,
            keep_connections=keep_connections,
        )
