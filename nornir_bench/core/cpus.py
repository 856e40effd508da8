"""The CPUs this process may run on: what the process runners size their pools by, and what
``advise`` takes as the machine's."""

from __future__ import annotations

import os

__all__ = ["usable_cpus"]


def usable_cpus() -> int:
    """The CPUs this process may run on: its affinity (``taskset``, a container's cpuset), not
    every CPU of the machine, which ``os.cpu_count`` counts."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # no affinity here (macOS)
        return os.cpu_count() or 1
