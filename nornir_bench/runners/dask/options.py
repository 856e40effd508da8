"""What a ``dask`` run takes from its runner: the options it needs, and the chunk size it
chooses when given none."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nornir_bench.core.policies.options import RunPolicy

__all__ = ["RunOptions", "default_chunk_size"]

# Chunks per worker a run aims at when it chooses the chunk size: enough that a worker finishing
# early gets more and results stream back, few enough that the scheduler's cost per task stays
# small next to the hosts' (see docs/benchmarks.md, the scale plan).
_CHUNKS_PER_WORKER = 4


def default_chunk_size(hosts: int, workers: int, num_workers: int) -> int:
    """Hosts per chunk when the runner is given none: a quarter of a worker's share of the
    run, at most what a worker runs at once (``num_workers``), at least 1."""
    share = math.ceil(hosts / (max(1, workers) * _CHUNKS_PER_WORKER))
    return max(1, min(num_workers, share))


@dataclass(frozen=True)
class RunOptions:
    """The runner's options a run needs."""

    num_workers: int
    chunk_size: int | None
    crash_reruns: int
    reruns_given: bool  # crash_reruns given by the user (else: from the task's read_only)
    loop: str
    policy: RunPolicy
