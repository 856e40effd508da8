"""How many worker processes one processpool run keeps: ``num_procs``, no more than the run
can keep busy, more once a worker crashed (rule 6 of the crash rule,
:func:`~nornir_bench.runners.processpool.crashes.storm_layout`); those past ``num_procs`` stop
when the run ends."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING

from nornir_bench.runners.processpool.crashes import storm_layout

if TYPE_CHECKING:
    from nornir_bench.runners.processpool.workers import Worker

__all__ = ["PoolSize", "default_chunk_size"]


def default_chunk_size(num_workers: int) -> int:
    """Hosts sent to a worker at once when the runner is given no ``chunk_size``: a quarter
    of its places, 1 to 64."""
    return max(1, min(64, num_workers // 4))


class PoolSize:
    """The workers one run keeps busy.

    Args:
        num_procs: the runner's worker processes.
        num_workers: hosts in flight on each.
        chunk_size: hosts sent to a worker at once.
    """

    def __init__(self, num_procs: int, num_workers: int, chunk_size: int) -> None:
        self.num_procs = num_procs
        self.num_workers = num_workers
        self.chunk_size = chunk_size
        self.most = num_procs  # more after a crash

    def fit(self, hosts: int) -> None:
        """No more workers than a run of ``hosts`` can keep busy."""
        self.most = min(self.most, math.ceil(hosts / self.chunk_size))

    def spread(self) -> int:
        """A worker crashed: from now on fewer hosts share a worker's fate, on more workers;
        the hosts in flight per worker from now on."""
        self.most, per_worker = storm_layout(self.num_procs, self.num_workers)
        return per_worker

    def extra(
        self, workers: list[Worker], busy: Mapping[int, object], holders: Mapping[str, int]
    ) -> list[Worker]:
        """After a run that spread: the workers past ``num_procs`` to stop, the idle ones
        (no host out, by pid in ``busy``) and those keeping the fewest connections (as
        ``holders`` says) first."""
        extra = len(workers) - self.num_procs
        if extra <= 0:
            return []
        keeping = Counter(holders.values())
        idle = sorted(workers, key=lambda w: (bool(busy.get(w.pid)), keeping[w.pid]))
        return idle[:extra]
