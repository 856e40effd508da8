"""threadpool keeps nornir's ThreadedRunner semantics and leaves nothing behind."""

from __future__ import annotations

import _thread
import pickle
import threading
import time

import pytest
from nornir.core.exceptions import NornirExecutionError
from nornir.core.task import AggregatedResult, Task

from nornir_bench import RunInterrupted, ThreadPoolRunner
from tests.conftest import Recorder, aggregated_view, make_nornir
from tests.tasksets import TASK_SET, fails_on_odd, grouped, hello, sets_data

pytestmark = pytest.mark.usefixtures("no_leaked_threads")


@pytest.mark.parametrize("task_fn", TASK_SET, ids=lambda f: f.__name__)
@pytest.mark.parametrize("workers", [1, 3, 50])
def test_results_equal_nornirs_threaded(task_fn: object, workers: int) -> None:
    ours = make_nornir("threadpool", hosts=30, num_workers=workers).run(task=task_fn)
    theirs = make_nornir("threaded", hosts=30, num_workers=workers).run(task=task_fn)
    assert isinstance(ours, AggregatedResult)
    assert aggregated_view(ours) == aggregated_view(theirs)  # same content, same host order
    assert ours.failed_hosts.keys() == theirs.failed_hosts.keys()


def test_loaded_through_nornirs_entry_point() -> None:
    nr = make_nornir("threadpool", num_workers=7)
    assert isinstance(nr.runner, ThreadPoolRunner)
    assert nr.runner.num_workers == 7
    assert make_nornir("threadpool").runner.num_workers == 20  # nornir's default


@pytest.mark.parametrize("bad", [0, -1, 2.5, "4", True, None])
def test_bad_num_workers_rejected_when_built(bad: object) -> None:
    with pytest.raises(ValueError, match=r"threadpool runner: num_workers must be a whole number >= 1"):
        ThreadPoolRunner(num_workers=bad)  # type: ignore[arg-type]


def test_failed_hosts_on_good_on_failed_like_nornir() -> None:
    def run_sequence(runner: str) -> list[object]:
        nr = make_nornir(runner, hosts=10, num_workers=4)
        first = nr.run(task=fails_on_odd)
        after_first = sorted(nr.data.failed_hosts)
        good_only = sorted(nr.run(task=hello))
        failed_only = sorted(nr.run(task=hello, on_good=False, on_failed=True))
        both = sorted(nr.run(task=hello, on_failed=True))
        return [sorted(first.failed_hosts), after_first, good_only, failed_only, both]

    assert run_sequence("threadpool") == run_sequence("threaded")
    assert run_sequence("threadpool")[0] == ["dev1", "dev3", "dev5", "dev7", "dev9"]


def test_raise_on_error_like_nornir() -> None:
    nr = make_nornir("threadpool", hosts=6, num_workers=3)
    with pytest.raises(NornirExecutionError) as info:
        nr.run(task=fails_on_odd, raise_on_error=True)
    assert sorted(info.value.failed_hosts) == ["dev1", "dev3", "dev5"]
    assert not nr.data.failed_hosts  # nornir raises instead of recording
    assert not nr.run(task=hello, raise_on_error=True).failed


def test_processor_hooks_per_host_in_nornirs_order() -> None:
    ours, theirs = Recorder(), Recorder()
    make_nornir("threadpool", hosts=9, num_workers=4).with_processors([ours]).run(task=grouped)
    make_nornir("serial", hosts=9).with_processors([theirs]).run(task=grouped)
    assert ours.per_host() == theirs.per_host()
    assert ours.events[0] == ("task_started", "grouped", None)
    assert ours.events[-1] == ("task_completed", "grouped", None)


def test_host_data_changes_visible_after_run() -> None:
    nr = make_nornir("threadpool", hosts=25, num_workers=6)
    nr.run(task=sets_data, key="seen")
    assert {h.name: h.data["seen"] for h in nr.inventory.hosts.values()} == {
        f"dev{i}": f"DEV{i}" for i in range(25)
    }


def test_results_pickle() -> None:
    result = make_nornir("threadpool", hosts=12, num_workers=4).run(task=grouped)
    restored = pickle.loads(pickle.dumps(result))
    assert aggregated_view(restored) == aggregated_view(result)


def test_no_hosts_gives_empty_result() -> None:
    nr = make_nornir("threadpool", hosts=5).filter(name="nobody")
    result = nr.run(task=hello)
    assert isinstance(result, AggregatedResult) and len(result) == 0


def test_runs_num_workers_hosts_at_once_and_never_more() -> None:
    workers = 8
    barrier = threading.Barrier(workers, timeout=10)
    lock = threading.Lock()
    in_flight, most = 0, 0

    def crowded(task: Task) -> None:
        nonlocal in_flight, most
        with lock:
            in_flight += 1
            most = max(most, in_flight)
        if task.host.name in {f"dev{i}" for i in range(workers)}:
            barrier.wait()  # the first `workers` hosts can only pass together
        time.sleep(0.001)
        with lock:
            in_flight -= 1

    result = make_nornir("threadpool", hosts=64, num_workers=workers).run(task=crowded)
    assert not result.failed, result.failed_hosts
    assert most == workers


def test_starts_no_more_threads_than_hosts() -> None:
    names: set[str] = set()

    def where(task: Task) -> None:
        names.add(threading.current_thread().name)

    make_nornir("threadpool", hosts=3, num_workers=100).run(task=where)
    assert 1 <= len(names) <= 3


def test_many_runs_leak_no_threads() -> None:
    nr = make_nornir("threadpool", hosts=50, num_workers=16)
    baseline = threading.active_count()
    for _ in range(30):
        assert not nr.run(task=hello).failed
        assert threading.active_count() == baseline


def test_system_exit_from_a_task_propagates_after_threads_stop() -> None:
    def exits(task: Task) -> None:
        if task.host.name == "dev2":
            raise SystemExit(3)

    nr = make_nornir("threadpool", hosts=10, num_workers=3)
    with pytest.raises(SystemExit):
        nr.run(task=exits)


def test_ctrl_c_keeps_finished_hosts_and_stops_the_rest() -> None:
    finished_before_interrupt = threading.Event()

    def slow(task: Task) -> str:
        if task.host.name == "dev4":
            finished_before_interrupt.wait(5)
            _thread.interrupt_main()  # what Ctrl-C does to the main thread
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
