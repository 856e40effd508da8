"""A chunk of hosts sent to a worker elsewhere and its batch back, the same for every transport:
opened (packed, the hosts that cannot travel failed, the book and the settler told) and
settled (results made in the parent, the connections the worker keeps held for the hosts).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, NamedTuple, TypeVar

from nornir_bench.runners._remote.spec import pack_hosts

if TYPE_CHECKING:
    from nornir.core.inventory import Host

    from nornir_bench.runners._remote.book import DispatchBook
    from nornir_bench.runners._remote.connections import HeldInWorkers
    from nornir_bench.runners._remote.results import FinishedBatch, ResultSettler

__all__ = ["Shipment", "open_shipment", "settle_shipment"]

W = TypeVar("W", bound=Hashable)


class Shipment(NamedTuple):
    """Hosts on their way to a worker."""

    positions: list[int]
    """Their places in the run's hosts."""
    pickled: bytes
    """The hosts, packed."""
    sent_at: float
    """When the book noted them out (``time.monotonic``)."""


def open_shipment(
    hosts: Sequence[Host],
    indices: list[int],
    worker: W,
    book: DispatchBook[W],
    settle: ResultSettler,
    *,
    what: str,
) -> Shipment | None:
    """``indices`` (taken from ``book`` for ``worker``) packed for it: a host that cannot be
    pickled fails here; the rest are noted out to ``worker`` and leaving (their start hook
    fires). ``None`` when none is left to send.

    Args:
        what: the runner, as messages name it (``"processpool runner"``).
    """
    chunk, pickled, unsendable = pack_hosts(hosts, indices, what=what)
    for index, error in unsendable.items():
        settle.failed(index, error)
    if not chunk:
        return None
    now = time.monotonic()
    book.sent(worker, chunk, now)
    for index in chunk:
        settle.leaving(index)
    return Shipment(chunk, pickled, now)


def settle_shipment(
    batch: FinishedBatch,
    settle: ResultSettler,
    back: Callable[[int], object],
    held: HeldInWorkers[W],
    worker: W,
    where: str,
) -> None:
    """The hosts of ``batch``, finished on ``worker`` (``where``, in words), settled; the
    connections it keeps for them held there, as their ``host.connections`` shows."""
    finished = settle.finished(batch, back)
    if held.holders or any(batch.connections):  # most runs: nobody holds any
        for host, connections in zip(finished, batch.connections, strict=True):
            held.hold(host, worker, where, connections)
