"""The error the lab raises for input it cannot use."""

from __future__ import annotations

from nornir_bench.core.exceptions import NornirBenchError

__all__ = ["LabError"]


class LabError(NornirBenchError, ValueError):
    """Bad input for the device lab or the RTT server, told in one line.

    The message says what was wrong and what is allowed, and never contains a password; the
    command line prints it as it is and exits with status 2.
    """
