"""What the process has used so far: what ``time`` reported in the study, read from inside.

The study wrapped its script in ``time``; here the script reports the same figures itself, so
anyone re-running it sees them without a wrapper and the numbers include start-up and imports:

- **wall**: seconds since the interpreter started. No clock records that start: the kernel's
  process start time (``/proc``) is when the process was forked, which for a shell's ``exec``
  (``bash -c 'sleep 3; python3 script.py'``) is seconds earlier. So the wall is measured from
  when this module is imported, plus the CPU time the process had used by then: start-up and
  the first imports, which are CPU work.
- **user, sys**: the process's CPU time and that of the children it has waited for, as
  ``time`` counts them (the processpool runner's fork server and workers included). A process
  started by a shell's ``exec`` inherits the shell's children's figures (``pip install -e .
  && python3 script.py``: pip's CPU time); those, as they were when this module was imported,
  are left out.
- **max RSS**: the larger of the process's peak and its largest child's; a child's only once
  it is larger than the largest the process inherited (which may be pip's).
"""

from __future__ import annotations

import resource
import sys
import time
from dataclasses import dataclass

__all__ = ["ProcessUsage", "cpu_percent", "max_rss_mib", "process_usage"]


def _cpu_seconds(usage: resource.struct_rusage) -> float:
    return usage.ru_utime + usage.ru_stime


_IMPORTED_AT = time.monotonic()
_CPU_BEFORE_IMPORT = _cpu_seconds(resource.getrusage(resource.RUSAGE_SELF))
_INHERITED = resource.getrusage(resource.RUSAGE_CHILDREN)  # from a process exec replaced


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
    """Measure this process, and the children it has waited for, now (see the module)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    # A peak is not a sum: the children's counts only when one of ours outgrew the inherited.
    ours = children.ru_maxrss > _INHERITED.ru_maxrss
    return ProcessUsage(
        wall=time.monotonic() - _IMPORTED_AT + _CPU_BEFORE_IMPORT,
        user=own.ru_utime + children.ru_utime - _INHERITED.ru_utime,
        sys=own.ru_stime + children.ru_stime - _INHERITED.ru_stime,
        max_rss_mib=max(max_rss_mib(own), max_rss_mib(children) if ours else 0.0),
    )
