"""The chunk size a ``dask`` run chooses when its runner is given none."""

from __future__ import annotations

import math

__all__ = ["default_chunk_size"]

# Chunks per worker a run aims at when it chooses the chunk size: enough that a worker finishing
# early gets more and results stream back, few enough that the scheduler's cost per task stays
# small next to the hosts' (see docs/benchmarks.md, the scale plan).
_CHUNKS_PER_WORKER = 4


def default_chunk_size(hosts: int, workers: int, num_workers: int) -> int:
    """Hosts per chunk when the runner is given none: a quarter of a worker's share of the
    run, at most what a worker runs at once (``num_workers``), at least 1."""
    share = math.ceil(hosts / (max(1, workers) * _CHUNKS_PER_WORKER))
    return max(1, min(num_workers, share))

