"""The garbage-collector helpers leave the collector as they found it."""

from __future__ import annotations

import gc
import threading

from nornir_bench._gc import RUN_GEN0_THRESHOLD, collector_paused, tuned_for_run


def test_run_tuning_is_undone_after_nested_and_concurrent_use() -> None:
    assert gc.get_freeze_count() == 0
    before = gc.get_threshold()
    with tuned_for_run():
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold()[0] == max(before[0], RUN_GEN0_THRESHOLD)
        inner_done = threading.Event()

        def other_run() -> None:
            with tuned_for_run():
                pass
            inner_done.set()

        thread = threading.Thread(target=other_run)
        thread.start()
        thread.join()
        assert inner_done.is_set()
        assert gc.get_freeze_count() > 0  # the other run's end did not unfreeze ours
        assert gc.get_threshold()[0] == max(before[0], RUN_GEN0_THRESHOLD)
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == before


def test_a_users_higher_threshold_is_kept() -> None:
    before = gc.get_threshold()
    gc.set_threshold(RUN_GEN0_THRESHOLD * 5, 10, 10)
    try:
        with tuned_for_run():
            assert gc.get_threshold()[0] == RUN_GEN0_THRESHOLD * 5
        assert gc.get_threshold() == (RUN_GEN0_THRESHOLD * 5, 10, 10)
    finally:
        gc.set_threshold(*before)


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
