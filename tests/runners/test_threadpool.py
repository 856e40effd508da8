"""What is threadpool's own: its threads. What it shares with every runner (nornir's semantics,
Ctrl-C, leaving nothing behind) is in test_conformance.py."""

from __future__ import annotations

import _thread
import threading
import time

import pytest
from nornir.core.task import Task

from nornir_bench import RunInterrupted
from tests.conftest import make_nornir

pytestmark = pytest.mark.usefixtures("no_leaked_threads")


def test_starts_no_more_threads_than_hosts() -> None:
    names: set[str] = set()

    def where(task: Task) -> None:
        names.add(threading.current_thread().name)

    make_nornir("threadpool", hosts=3, num_workers=100).run(task=where)
    assert 1 <= len(names) <= 3


def test_ctrl_c_another_thread_took_stops_the_run_too() -> None:
    """A SIGINT the kernel hands to a worker thread only sets a flag for the main thread, which
    a join without a timeout would not look at until that thread ended. (The conformance
    suite's Ctrl-C reaches the main thread itself.)"""
    finished_before_interrupt = threading.Event()

    def slow(task: Task) -> str:
        if task.host.name == "dev4":
            finished_before_interrupt.wait(5)
            _thread.interrupt_main()  # the flag alone, as when another thread took the signal
        time.sleep(0.01)
        if task.host.name == "dev1":
            finished_before_interrupt.set()
        return task.host.name

    nr = make_nornir("threadpool", hosts=200, num_workers=2)
    with pytest.raises(RunInterrupted) as info:
        nr.run(task=slow)
    partial = info.value.result
    assert isinstance(info.value, KeyboardInterrupt)
    assert "dev1" in partial and "dev199" not in partial
    assert all(multi[0].result == name for name, multi in partial.items())
    assert info.value.pending == 200 - len(partial)
    assert list(partial) == sorted(partial, key=lambda n: int(n[3:]))  # host order kept
