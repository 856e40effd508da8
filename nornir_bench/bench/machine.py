"""This machine's limits for ``advise``: its CPUs, open files and available memory; and which
of a job's devices are this machine itself."""

from __future__ import annotations

import ipaddress
import resource
import socket
from collections.abc import Iterable

from nornir_bench.bench.advise import Limits
from nornir_bench.core.cpus import usable_cpus

__all__ = ["machine_limits", "on_this_machine"]


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
        cpus=usable_cpus(),
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


def on_this_machine(addresses: Iterable[object]) -> list[str]:
    """Those of ``addresses`` (hosts' ``hostname``) that are this machine: ``localhost``, a
    loopback address, or an address of one of its interfaces. Names other than ``localhost``
    are not looked up: no DNS query, nothing to wait for."""
    return [
        address
        for address in dict.fromkeys(addresses)
        if isinstance(address, str) and _is_here(address)
    ]


def _is_here(address: str) -> bool:
    if address == "localhost":
        return True
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    if ip.is_loopback:
        return True
    family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
    try:  # only an address of this machine's own interfaces can be bound
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.bind((address, 0))
    except OSError:
        return False
    return True
