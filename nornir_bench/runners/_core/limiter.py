"""The hosts a run has in flight at once: one limit, sized once, the open files fitted inside.

As anyio's ``CapacityLimiter``, the limit is an object (:class:`InFlight`): its size and how
many places are taken. Every runner sizes it the same way: ``num_workers``, no more than the
run's hosts, no more than the open files of the process they run in allow (the soft limit
raised for the run, or fewer places, said once): :func:`in_flight_here` for hosts run in this
process, :func:`per_worker_elsewhere` for each worker process of a runner whose hosts run
elsewhere (each raises its own soft limit).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from nornir_bench.core.open_files import descriptors_of, hosts_that_fit, open_files_for

__all__ = ["InFlight", "in_flight_here", "per_worker_elsewhere"]


class InFlight:
    """Places for hosts in flight: ``limit`` of them, ``taken`` taken.

    Not locked: one thread owns it (a run's main thread, an event loop), as each runner's
    scheduling is single-threaded.
    """

    __slots__ = ("limit", "taken")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.taken = 0

    @property
    def room(self) -> int:
        """Places free now."""
        return self.limit - self.taken

    def take(self, count: int = 1) -> None:
        self.taken += count

    def give(self, count: int = 1) -> None:
        self.taken -= count

    def __repr__(self) -> str:
        return f"InFlight({self.taken}/{self.limit})"


@contextmanager
def in_flight_here(
    num_workers: int, hosts: int, func: Callable[..., Any], *, what: str
) -> Iterator[InFlight]:
    """For the block (a run in this process): the places for ``func``'s hosts, ``num_workers``
    at most, no more than ``hosts``, and no more than the open files allow."""
    wanted = min(num_workers, hosts)
    with open_files_for(wanted, descriptors_of(func), what=what) as fits:
        yield InFlight(max(1, min(wanted, fits)))


def per_worker_elsewhere(num_workers: int, func: Callable[..., Any], *, what: str) -> int:
    """The places of each worker process elsewhere for ``func``'s hosts: ``num_workers``, or
    fewer where a process started from this one (same hard limit) cannot open the files they
    need, said once, here."""
    return hosts_that_fit(num_workers, descriptors_of(func), what=what)
