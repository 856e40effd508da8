"""What the process has used so far: what ``time`` reported in the study, read from inside.

The study wrapped its script in ``time``; here the script reports the same figures itself, so
anyone re-running it sees them without a wrapper and the numbers include start-up and imports.
"""

from __future__ import annotations

import os
import resource
import sys
import time
from dataclasses import dataclass

__all__ = ["ProcessUsage", "cpu_percent", "max_rss_mib", "process_usage"]

_IMPORTED_AT = time.time()


@dataclass(frozen=True)
class ProcessUsage:
    """Seconds of wall clock, user and system CPU since the process started; peak memory."""

    wall: float
    user: float
    sys: float
    max_rss_mib: float

    @property
    def cpu_percent(self) -> float:
        """CPU time as a percentage of wall time, as ``time`` prints it (200 % = 2 busy cores)."""
        return cpu_percent(self.user, self.sys, self.wall)


def cpu_percent(user: float, system: float, wall: float) -> float:
    """CPU time as a percentage of wall time, as ``time`` prints it (200 % = 2 busy cores)."""
    return 100 * (user + system) / wall if wall > 0 else 0.0


def max_rss_mib(usage: resource.struct_rusage) -> float:
    """Peak resident memory from ``getrusage``/``wait4``, in MiB."""
    # ru_maxrss is KiB on Linux, bytes on macOS.
    return usage.ru_maxrss / (1024 * 1024 if sys.platform == "darwin" else 1024)


def process_usage() -> ProcessUsage:
    """Measure this process now."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return ProcessUsage(_wall_since_start(), usage.ru_utime, usage.ru_stime, max_rss_mib(usage))


def _wall_since_start() -> float:
    """Wall seconds since the process started (Linux: from /proc, to the clock tick)."""
    try:
        with open(f"/proc/{os.getpid()}/stat", encoding="ascii") as f:
            # Field 22 (starttime) in clock ticks since boot; the name field may hold spaces,
            # so count from the closing parenthesis.
            fields = f.read().rsplit(")", 1)[1].split()
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")
        return time.clock_gettime(time.CLOCK_BOOTTIME) - started
    except (OSError, ValueError, IndexError, AttributeError):
        return time.time() - _IMPORTED_AT
