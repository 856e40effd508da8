"""A Dask scheduler at an address, as the ``dask`` runner reaches it: connected within a
bounded time, its workers read, and the address judged from its text (is it on loopback, is it
encrypted) before the runner sends anything there; security from a job file's paths.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
from typing import TYPE_CHECKING, Any

from nornir_bench.core.exceptions import NornirBenchError
from nornir_bench.core.threads import in_a_daemon_thread

if TYPE_CHECKING:
    from distributed import Client
    from distributed.security import Security

__all__ = [
    "DaskClusterError",
    "connect",
    "described_workers",
    "is_loopback",
    "scheme_and_host",
    "security_from",
    "workers_and_threads",
]


class DaskClusterError(NornirBenchError, RuntimeError):
    """The Dask cluster cannot be used: not reachable, not started, not the same versions, or
    not safe for the run's credentials. One line, saying what and where."""


def connect(address: str, security: Security | None, timeout: float) -> Client:
    """A client of the scheduler at ``address``, connected within ``timeout`` seconds.

    Raises:
        DaskClusterError: it cannot be reached in time, or refuses the connection.
    """
    from distributed import Client

    try:
        _greet(address, security, timeout)
        return Client(address, security=security, timeout=timeout, set_as_default=False)
    except Exception as exc:  # noqa: BLE001 - any of it: the scheduler is not usable
        reason = " ".join(str(exc).split()) or "no answer"
        raise DaskClusterError(
            f"dask runner: cannot reach the scheduler at {address} within {timeout:g} s "
            f"({type(exc).__name__}: {reason[:300]})"
        ) from None


def workers_and_threads(address: str, security: Security | None, timeout: float) -> tuple[int, int]:
    """The workers of the scheduler at ``address`` and their threads in all, as it reports
    them; nothing is run or registered there.

    Raises:
        DaskClusterError: it cannot be reached in time, or refuses the connection.
    """
    client = connect(address, security, timeout)
    try:
        workers = described_workers(client)
    finally:
        client.close()
    return len(workers), sum(int(worker["nthreads"]) for worker in workers.values())


def described_workers(client: Client) -> dict[str, Any]:
    """The scheduler's description of each of its workers (``resources``, ``nthreads`` ...),
    by address, asked of it now.

    Not ``client.scheduler_info(n_workers=-1)``: it updates the client's copy and returns the
    copy, which the client's periodic update (every 2 s, without the workers) may have
    replaced in between: no workers at all, under load.
    """
    scheduler = client.scheduler
    if scheduler is None:  # the client was closed
        raise DaskClusterError("the Dask client is closed: no scheduler to ask for its workers")
    identity: dict[str, Any] = client.sync(scheduler.identity, n_workers=-1)
    return dict(identity["workers"])


def _greet(address: str, security: Security | None, timeout: float) -> None:
    """Connect to ``address`` and exchange Dask's handshake, within ``timeout`` seconds in all,
    on a loop and thread of its own that end with it.

    Before a ``Client``: it bounds the TCP connection but not the handshake after it (a peer
    that accepts and never answers, a stopped scheduler or another service, holds it for ever),
    and a client whose connection failed keeps its I/O thread for ever.
    """
    from distributed.comm.core import connect as dask_connect

    arguments = security.get_connection_args("client") if security is not None else {}

    async def greet() -> None:
        comm = await asyncio.wait_for(dask_connect(address, timeout, **arguments), timeout)
        await comm.close()

    in_a_daemon_thread(lambda: asyncio.run(greet()), "nornir-bench-dask-connect")


def scheme_and_host(address: str) -> tuple[str, str]:
    """The protocol (``tcp``, ``tls`` ...) and host of a scheduler address, read from the text
    alone (no name is looked up): ``tls://10.0.0.5:8786`` -> ``("tls", "10.0.0.5")``."""
    scheme, _, rest = address.partition("://")
    if not rest:
        scheme, rest = "tcp", address  # Dask's default protocol
    host = rest.rsplit(":", 1)[0] if not rest.startswith("[") else rest[1:].split("]", 1)[0]
    return scheme.lower(), host


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address, judged from its text alone: an IP literal of
    127.0.0.0/8 or ::1, or ``localhost``; any other name counts as remote (knowing better
    would mean looking it up)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def security_from(given: Any) -> Security | None:
    """The runner's ``security`` option as a ``Security``: one given, ``None``, or paths (a job
    file's ``{tls_ca_file, tls_client_cert, tls_client_key}``).

    Raises:
        ValueError: anything else, or a path that is not a readable file.
    """
    if given is None:
        return None
    from distributed.security import Security

    if isinstance(given, Security):
        return given
    keys = ("tls_ca_file", "tls_client_cert", "tls_client_key")
    if not isinstance(given, dict) or set(given) != set(keys):
        raise ValueError(
            "dask runner: security must be a distributed.security.Security, or a mapping of "
            f"{', '.join(keys)} to PEM files, got {given!r:.200}"
        )
    for key in keys:
        path = given[key]
        if not isinstance(path, str) or not os.path.isfile(path):
            raise ValueError(f"dask runner: security.{key} must be a readable file, got {path!r}")
    return Security(**{key: given[key] for key in keys}, require_encryption=True)
