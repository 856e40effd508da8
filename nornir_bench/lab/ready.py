"""Waiting for a lab started elsewhere: ``nornir-bench wait-lab``.

``nornir-bench lab inventory/lab &`` returns to the shell at once, while the lab takes seconds
to start (imports, host keys); a job started on the next line would find its ports refused.
:func:`wait_for_lab` returns once every device accepts a TCP connection, so a pasted block of
commands runs in order.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Sequence

from nornir_bench.core.checks import number
from nornir_bench.lab._errors import LabError
from nornir_bench.lab.devices import LabDevice

__all__ = ["DEFAULT_WAIT_TIMEOUT", "LabNotReady", "wait_for_lab"]

DEFAULT_WAIT_TIMEOUT = 60.0
"""Seconds ``wait-lab`` waits by default: a lab of hundreds of devices on a slow machine."""

_RETRY_SECONDS = 0.1


class LabNotReady(LabError):
    """Some device still refused connections when the wait ran out."""

_CONNECT_TIMEOUT = 2.0


def wait_for_lab(devices: Sequence[LabDevice], timeout: float = DEFAULT_WAIT_TIMEOUT) -> None:
    """Return once every device accepts a TCP connection.

    Each device is probed by a connection that is closed at once (the lab counts it as a
    connection that did not speak SSH); a device that accepted is not probed again.

    Raises:
        LabError: when ``timeout`` is not a number of seconds > 0.
        LabNotReady: when some device still refuses after ``timeout``, naming those devices
            and the last error.
    """
    number("timeout", timeout, above=0, unit="a number of seconds", error=LabError)
    deadline = time.monotonic() + timeout
    waiting = list(devices)
    last: dict[str, str] = {}
    while True:
        for device in list(waiting):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            error = _refusal(device, min(_CONNECT_TIMEOUT, left))
            if error is None:
                waiting.remove(device)
            else:
                last[device.name] = error
        if not waiting:
            return
        if time.monotonic() >= deadline:
            late = ", ".join(
                f"{d.name} ({d.address}:{d.port}: {last.get(d.name, 'not tried')})"
                for d in waiting[:5]
            )
            more = f" and {len(waiting) - 5} more" if len(waiting) > 5 else ""
            raise LabNotReady(
                f"the lab is not ready after {timeout:g} s: {late}{more}; "
                "is `nornir-bench lab` running with this inventory?"
            )
        time.sleep(_RETRY_SECONDS)


def _refusal(device: LabDevice, timeout: float) -> str | None:
    """``None`` if the device accepts a connection, else why not, in a few words."""
    try:
        socket.create_connection((device.address, device.port), timeout=timeout).close()
    except ConnectionRefusedError:
        return "connection refused"
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    return None
