"""Keep garbage collection from dominating runs and inventory loads.

``tuned_for_run`` is for runs. A run allocates several container objects per host (task copy,
results, coroutines), which triggers a collection every 700 allocations; the frequent gen-1
and gen-2 collections walk the run's own objects and the whole pre-run heap (the inventory)
while holding the GIL. For the run's duration it therefore (1) freezes the pre-run heap, which
no collection then walks, and (2) raises the gen-0 threshold to 20,000, so collections still
happen, just less often (measured: docs/benchmarks.md, "The costs behind the code's
choices"). Garbage made during the run is still collected; both settings are restored when
the last run ends.

Freezing must not change what is eventually collected. Frozen objects are skipped by every
collection, and unfreezing them does not count them towards the next full collection, which
CPython starts when the objects in the oldest generation have grown by a quarter since the last
one. A process running job after job, whose old results become garbage cycles (a failed
host's exception, traceback and frames), would then freeze that garbage at each run's start and
never collect it, and grow by every run. So each run's start applies CPython's own rule to
the heap it is about to freeze: grown by a quarter since the last full collection (or since
the first run), collect it first (once every few runs at most). The heap is measured by the
memory blocks Python has allocated (``sys.getallocatedblocks``, a constant-time read), not by
the objects the collector tracks (``gc.get_freeze_count`` walks them all, a cost per host).

``collector_paused`` is for building large object graphs that are all kept (an inventory): the
allocations trigger the collector again and again, and each time it walks a growing heap and
finds nothing to free.
"""

from __future__ import annotations

import gc
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["FULL_COLLECTION_GROWTH", "RUN_GEN0_THRESHOLD", "collector_paused", "tuned_for_run"]

RUN_GEN0_THRESHOLD = 20_000

FULL_COLLECTION_GROWTH = 1.25
"""A run's start collects the heap first once it has grown by this much (CPython's own rule)."""

# The collector's settings are process-wide, so runs in several threads at once share them: the
# first run to start tunes the collector, the last to end restores it.
_lock = threading.Lock()
_active_runs = 0
_saved_threshold: tuple[int, int, int] | None = None
_heap_after_full_collection: int | None = None  # allocated blocks after the last collection
_frozen_by_us = False  # the runs in progress froze the heap (else the user had frozen some)


@contextmanager
def tuned_for_run() -> Iterator[None]:
    """Freeze the pre-run heap and collect less often for the block (no-op when gc is off);
    the collector is as it was after it: its thresholds, and what the user had frozen."""
    global _active_runs, _saved_threshold, _frozen_by_us
    with _lock:
        _active_runs += 1
        if _active_runs == 1 and gc.isenabled():
            # Objects the user froze stay frozen after the run: only a heap nobody froze is
            # frozen here (and unfrozen after). A count of 0 costs nothing to ask.
            _frozen_by_us = gc.get_freeze_count() == 0
            if _frozen_by_us:
                _freeze_collected()
            _saved_threshold = gc.get_threshold()
            if _saved_threshold[0] < RUN_GEN0_THRESHOLD:  # a user's higher setting stays
                gc.set_threshold(RUN_GEN0_THRESHOLD, *_saved_threshold[1:])
    try:
        yield
    finally:
        with _lock:
            _active_runs -= 1
            if _active_runs == 0:
                if _frozen_by_us:
                    gc.unfreeze()
                    _frozen_by_us = False
                if _saved_threshold is not None:
                    gc.set_threshold(*_saved_threshold)
                    _saved_threshold = None


def _freeze_collected() -> None:
    """Freeze the heap, first collecting it if it has grown enough since the last full
    collection that CPython would have run one (see the module's docstring)."""
    global _heap_after_full_collection
    heap = sys.getallocatedblocks()
    if _heap_after_full_collection is None:
        _heap_after_full_collection = heap
    elif heap > FULL_COLLECTION_GROWTH * _heap_after_full_collection:
        gc.collect()
        _heap_after_full_collection = sys.getallocatedblocks()
    gc.freeze()


@contextmanager
def collector_paused() -> Iterator[None]:
    """Disable automatic collection for the block; use only where the block frees nothing."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
