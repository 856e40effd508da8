"""Open files for the hosts in flight: the soft limit raised to fit them, or the hosts in flight
capped to fit the hard limit, with one warning.

Each host in flight holds a few file descriptors (a socket to its device, a pipe of an SSH
library); 2,000 hosts in flight under the ``ulimit -n`` many shells and service managers still
default to (a soft limit of 1,024, or 256) fail with ``[Errno 24] Too many open files``.
At a run's start, :func:`open_files_for` asks for what the run needs: the descriptors open now,
plus the hosts in flight times what one host needs (:func:`descriptors_of`), plus a margin. It
raises the soft ``RLIMIT_NOFILE`` towards the hard limit when it must (and puts it back once
the last run that raised it ends); if the hard limit is still too low, the run keeps fewer
hosts in flight, saying so once. Every runner does it, and every worker process for its own.

A task says what one host needs with ``@needs(descriptors=N)``; one that does not is taken to
need one descriptor for each connection it declares, plus one, or two if it declares nothing.
An ``async def`` task's host counts twice (:data:`ON_A_LOOP`): a transport closes its socket
one turn of the loop after the task let it go, while the next host opens its own (a blocking
task closes its sockets itself, in its thread, even under an event-loop runner).
"""

from __future__ import annotations

import os
import resource
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from nornir_bench.core.execution import is_async_task
from nornir_bench.core.task_traits import traits_of

__all__ = ["ON_A_LOOP", "descriptors_of", "hosts_that_fit", "open_files_for"]

# Descriptors kept free for what is not a host's (log files, the records file, a worker's
# sockets to its parent, the interpreter's own): a run never plans to use the last of them.
_MARGIN = 64

_UNDECLARED = 2  # a task that says nothing: a connection's socket, and one more

ON_A_LOOP = 2
"""What the descriptors of an ``async def`` task's host count for (see the module)."""

_lock = threading.Lock()
_raised = 0  # runs in progress that raised the soft limit
_saved: int | None = None  # the soft limit before the first of them


def descriptors_of(func: Callable[..., Any]) -> int:
    """The file descriptors one host of ``func`` holds: what it declared with
    ``@needs(descriptors=N)``, else one per connection it declared plus one, else two; twice
    that for an ``async def`` task (:data:`ON_A_LOOP`)."""
    declared = traits_of(func).needs
    if declared is not None and declared.descriptors is not None and declared.descriptors >= 0:
        per_host = declared.descriptors
    elif declared is not None:
        per_host = len(declared.connections) + 1
    else:
        per_host = _UNDECLARED
    return ON_A_LOOP * per_host if is_async_task(func) else per_host


def _open_now() -> int:
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:  # not Linux: a guess that leaves room
        return _MARGIN


def hosts_that_fit(in_flight: int, per_host: int, *, what: str) -> int:
    """How many of ``in_flight`` hosts of ``per_host`` descriptors each fit under the hard
    limit (a process started from this one gets it too); fewer than ``in_flight`` is said in
    one warning naming ``what``, the runner."""
    needed = _open_now() + in_flight * per_host + _MARGIN
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if not per_host or hard == resource.RLIM_INFINITY or needed <= hard:
        return in_flight
    return _too_many(in_flight, per_host, needed, hard, "ulimit -Hn", what)


def _too_many(
    in_flight: int, per_host: int, needed: int, limit: int, which: str, what: str
) -> int:
    fits = max(1, (limit - (needed - in_flight * per_host)) // per_host)
    warnings.warn(
        f"{what}: {in_flight:,} hosts in flight need about {needed:,} open files, more than "
        f"the limit of {limit:,} ({which}): {fits:,} at once",
        RuntimeWarning,
        stacklevel=4,
    )
    return fits


@contextmanager
def open_files_for(in_flight: int, per_host: int, *, what: str) -> Iterator[int]:
    """For the block: enough open files for ``in_flight`` hosts of ``per_host`` descriptors
    each in this process; how many hosts may be in flight (``in_flight``, or fewer if the hard
    limit is too low, said in one warning naming ``what``, the runner)."""
    global _raised, _saved
    needed = _open_now() + in_flight * per_host + _MARGIN
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    fits = in_flight
    raised = False
    if per_host and needed > soft:
        target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        with _lock:
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            except (OSError, ValueError):  # not allowed here: fit what there is
                target = soft
            else:
                if _raised == 0:
                    _saved = soft
                _raised += 1
                raised = True
        if needed > target:
            which = "ulimit -Hn" if target == hard else "ulimit -n, which may not be raised here"
            fits = _too_many(in_flight, per_host, needed, target, which, what)
    try:
        yield fits
    finally:
        if raised:
            with _lock:
                _raised -= 1
                if _raised == 0 and _saved is not None:
                    # Connections kept for the next run stay open: never below what is open.
                    soft_now, hard_now = resource.getrlimit(resource.RLIMIT_NOFILE)
                    back = min(soft_now, max(_saved, _open_now() + _MARGIN))
                    resource.setrlimit(resource.RLIMIT_NOFILE, (back, hard_now))
                    _saved = None
