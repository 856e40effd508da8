"""What is threadpool's own: its threads. What it shares with every runner (nornir's semantics,
Ctrl-C, leaving nothing behind) is in test_conformance.py."""

from __future__ import annotations

import _thread
import sys
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


def _interval(task: Task) -> float:
    return sys.getswitchinterval()


@pytest.mark.parametrize(("workers", "during"), [(300, 0.05), (20, 0.005)])
def test_many_threads_switch_the_gil_less_often_for_the_run_only(
    workers: int, during: float
) -> None:
    """10,000 threads waking together convoyed on the GIL (each waiter asking for it every
    5 ms): runs took 15-21 s where 1 s was enough, and nornir's threaded once 64 s."""
    before = sys.getswitchinterval()
    assert before == pytest.approx(0.005)  # CPython's default: the suite does not change it
    result = make_nornir("threadpool", hosts=workers, num_workers=workers).run(task=_interval)
    assert [multi.result for multi in result.values()] == [pytest.approx(during)] * workers
    assert sys.getswitchinterval() == before


def test_a_longer_switch_interval_of_the_users_stays_and_concurrent_runs_restore_it() -> None:
    from nornir_bench.core._switching import fewer_gil_switches

    before = sys.getswitchinterval()
    try:
        sys.setswitchinterval(0.2)
        with fewer_gil_switches(1000):
            assert sys.getswitchinterval() == pytest.approx(0.2)
        assert sys.getswitchinterval() == pytest.approx(0.2)
        sys.setswitchinterval(before)
        with fewer_gil_switches(1000):
            with fewer_gil_switches(1000):
                assert sys.getswitchinterval() == pytest.approx(0.05)
            assert sys.getswitchinterval() == pytest.approx(0.05)  # the other run goes on
        assert sys.getswitchinterval() == before
    finally:
        sys.setswitchinterval(before)
