"""The garbage-collector helpers leave the collector as they found it."""

from __future__ import annotations

import gc
import threading

from nornir_bench._gc import collector_paused, frozen_heap


def test_frozen_heap_unfreezes_after_nested_and_concurrent_use() -> None:
    assert gc.get_freeze_count() == 0
    with frozen_heap():
        assert gc.get_freeze_count() > 0
        inner_done = threading.Event()

        def other_run() -> None:
            with frozen_heap():
                pass
            inner_done.set()

        thread = threading.Thread(target=other_run)
        thread.start()
        thread.join()
        assert inner_done.is_set()
        assert gc.get_freeze_count() > 0  # the other run's end did not unfreeze ours
    assert gc.get_freeze_count() == 0


def test_collector_paused_restores_the_previous_state() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()  # a user's own choice to disable stays
    finally:
        gc.enable()
