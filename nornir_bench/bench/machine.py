"""This machine's limits for ``advise``: its CPUs, open files and available memory."""

from __future__ import annotations

import os
import resource

from nornir_bench.bench.advise import Limits

__all__ = ["machine_limits"]


def machine_limits(
    *,
    max_starts_per_second: float | None = None,
    max_start_burst: int | None = None,
    max_in_flight: int | None = None,
    batches: tuple[int | float, ...] = (),
) -> Limits:
    """This machine's :class:`Limits`, with the job's policies given."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    unlimited = resource.RLIM_INFINITY
    return Limits(
        cpus=os.cpu_count() or 1,
        open_files_soft=soft if soft != unlimited else 2**31,
        open_files_hard=hard if hard != unlimited else 2**31,
        memory_available=_memory_available(),
        max_starts_per_second=max_starts_per_second,
        max_start_burst=max_start_burst,
        max_in_flight=max_in_flight,
        batches=batches,
    )


def _memory_available() -> int | None:
    """``MemAvailable`` of /proc/meminfo, bytes; ``None`` where there is none."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None
