"""What every runner does alike, one test per behaviour, nornir's ``threaded`` the reference.

Each test is parametrized over ``RUNNERS``: a new runner is covered by one more entry there.
Where a runner does not have a behaviour, its entry says so in ``lacks`` and the test leaves
it out (no case is generated to be skipped); a known bug is in ``bugs``, as a strict
``xfail``. What belongs to one runner alone (processpool's crashes, the asyncio runner's
loops and cancellation, threadpool's threads) is tested in that runner's own file.

Runners that run ``async def`` tasks run each behaviour with both kinds of task: the ``sync``
tasks of tests/tasksets.py and their ``async`` twins of tests/async_tasksets.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import pickle
import re
import signal
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from nornir.core import Nornir
from nornir.core.exceptions import NornirExecutionError, NornirSubTaskError
from nornir.core.plugins.runners import RunnersPluginRegister
from nornir.core.task import AggregatedResult, Task
from nornir.plugins.runners import ThreadedRunner

from nornir_bench import AsyncioRunner, ProcessPoolRunner, RunInterrupted, ThreadPoolRunner
from nornir_bench.runners.dask import DaskRunner
from tests import async_tasksets, tasksets
from tests.conftest import (
    PROCESS_WIDE_THREADS,
    Recorder,
    aggregated_view,
    descendant_pids,
    make_nornir,
)
from tests.dask_cluster import SharedClusterOptions
from tests.kept_runners import KEPT
from tests.runners.queue_runner import QueueThreadsRunner
from tests.waiting import HANG_GUARD, wait_until

pytestmark = pytest.mark.usefixtures("no_leaked_threads", "no_leaked_processes")

SYNC, ASYNC = "sync", "async"

# Behaviours: the keys of ``Runner.lacks`` and ``Runner.bugs``.
REFERENCE = "results compared with nornir's threaded runner"
BAD_OPTIONS = "bad options rejected when the runner is built"
CTRL_C = "Ctrl-C stops the run and keeps what finished"
SYSTEM_EXIT = "SystemExit or KeyboardInterrupt from a task re-raised by run() once it stopped"
ASYNC_TASKS = "async def tasks run"
IN_FLIGHT = "hosts in flight at the first Ctrl-C finish; the second abandons them"
COUNTED_IN_PROCESS = "hosts in flight counted in the test's process"
POLICIES = "run policies (tests/runners/test_policies.py)"
STALE = "kept connections a device closed are opened again (tests/runners/test_connections.py)"
BEHAVIOURS = {
    REFERENCE, BAD_OPTIONS, CTRL_C, IN_FLIGHT, SYSTEM_EXIT, ASYNC_TASKS, COUNTED_IN_PROCESS,
    POLICIES, STALE,
}


@dataclass(frozen=True)
class Runner:
    """What the conformance tests need to know of one runner plugin."""

    name: str
    """Its name in nornir's ``nornir.plugins.runners`` entry point group."""
    plugin: type
    """The class the entry point loads."""
    given: Mapping[str, Any]
    """Options given through ``InitNornir``; each is read back as the runner's attribute."""
    defaults: Mapping[str, Any]
    """The attributes of the runner built without options."""
    derived: Mapping[str, Any] = field(default_factory=dict)
    """Further attributes the runner has when built with ``given``."""
    bad_options: Sequence[tuple[Mapping[str, Any], str]] = ()
    """Options rejected when built, besides a bad ``num_workers``, and the message after
    ``"<name> runner: "``."""
    options: Mapping[str, Any] = field(default_factory=dict)
    """Options every run of these tests adds."""
    lacks: Mapping[str, str] = field(default_factory=dict)
    """Behaviour it does not have -> why; its tests are skipped with that reason."""
    bugs: Mapping[str, Any] = field(default_factory=dict)
    """Behaviour it has a known bug in -> a strict ``xfail`` mark saying which."""
    id: str = ""
    """The test id; default ``name``."""
    installed: bool = True
    """Registered through an entry point, so that a process a test starts (a job, a script)
    loads it by name; the runner written in the tests is registered in this process only."""
    marks: Sequence[Any] = ()
    kept: bool = False
    """Its runners are kept between the module's tests, one per set of options
    (tests/kept_runners.py): processpool's fork server and workers start once a module, as a
    user's runner keeps them between runs."""

    def __post_init__(self) -> None:
        assert set(self.lacks) | set(self.bugs) <= BEHAVIOURS, set(self.lacks) - BEHAVIOURS
        if not self.id:
            object.__setattr__(self, "id", self.name)

    @property
    def kinds(self) -> tuple[str, ...]:
        """The kinds of task it runs."""
        return (SYNC,) if ASYNC_TASKS in self.lacks else (SYNC, ASYNC)

    def nornir(self, hosts: int = 20, *, own: bool = False, **options: Any) -> Nornir:
        """A Nornir on ``hosts`` synthetic hosts with this runner: the module's kept one of
        these options where it is ``kept``, unless ``own`` (a test of the runner's start,
        stop or signals)."""
        nr = make_nornir(self.name, hosts=hosts, **{**self.options, **options})
        return nr if own else self.kept_in(nr, **options)

    def kept_in(self, nr: Nornir, **options: Any) -> Nornir:
        """``nr``, built with this runner and ``options``, on the module's kept runner of
        those options where this runner is ``kept``."""
        if not self.kept:
            return nr
        return nr.with_runner(KEPT.runner({**self.options, **options}))


THREADED = Runner(
    "threaded",
    ThreadedRunner,
    given={"num_workers": 7},
    defaults={"num_workers": 20},
    lacks={
        REFERENCE: "the reference: the other runners' results are compared with its own",
        BAD_OPTIONS: "nornir's threaded runner takes any num_workers when built; "
        "ThreadPoolExecutor rejects a bad one only when a run starts",
        CTRL_C: "nornir's threaded runner lets Ctrl-C through as a bare KeyboardInterrupt: the "
        "finished hosts' results are lost and its threads go on to run every remaining host "
        "(nornir-bench run stops it from outside: tests/core/test_stopping.py)",
        ASYNC_TASKS: "nornir's threaded runner does not await an async def task",
        POLICIES: "nornir's threaded runner has no run policies (no timeout, no retries): "
        "the reason nornir-bench's runners have them",
        STALE: "nornir's threaded runner gives a task the kept connection as it is, dead or "
        "alive",
    },
)

ASYNCIO = Runner(
    "asyncio",
    AsyncioRunner,
    options={"loop": "asyncio"},
    given={"num_workers": 321, "loop": "asyncio", "task_timeout": 2.5},
    derived={"max_threads": 321},
    defaults={"num_workers": 100, "loop": "auto", "task_timeout": None, "max_threads": 100},
    bad_options=[
        ({"loop": "trio"}, "loop must be one of auto, asyncio, uvloop; got 'trio'"),
        ({"task_timeout": 0}, "task_timeout must be a number of seconds > 0, or None"),
        ({"task_timeout": -1.0}, "task_timeout must be a number of seconds > 0, or None"),
        ({"task_timeout": "5"}, "task_timeout must be a number of seconds > 0, or None"),
        ({"task_timeout": float("inf")}, "task_timeout must be a number of seconds > 0, or None"),
        ({"max_threads": 0}, "max_threads must be a whole number >= 1, got 0"),
    ],
)

# A runner written in the tests from the runner core alone (tests/runners/queue_runner.py):
# that it passes every suite here shows the core holds all but a runner's transport.
RunnersPluginRegister.register("queue-threads", QueueThreadsRunner)
QUEUE_THREADS = Runner(
    "queue-threads",
    QueueThreadsRunner,
    given={"num_workers": 7},
    defaults={"num_workers": 20},
    lacks={
        ASYNC_TASKS: "it runs plain def tasks only, on its threads",
    },
    installed=False,
)

RUNNERS = [
    THREADED,
    Runner(
        "threadpool",
        ThreadPoolRunner,
        given={"num_workers": 7},
        defaults={"num_workers": 20},
        lacks={
            ASYNC_TASKS: "it runs plain def tasks only: an async def task fails its hosts with "
            "a TypeError saying so (tests/core/test_execution.py)",
        },
    ),
    ASYNCIO,
    replace(
        ASYNCIO,
        id="asyncio-uvloop",
        options={"loop": "uvloop"},
        given={**ASYNCIO.given, "loop": "uvloop"},
    ),
    QUEUE_THREADS,
    Runner(
        "processpool",
        ProcessPoolRunner,
        options={"num_procs": 2},
        kept=True,
        given={"num_workers": 9, "num_procs": 3, "task_timeout": 4},
        defaults={
            "num_workers": 100,
            "num_procs": os.cpu_count() or 1,
            "task_timeout": None,
            "crash_reruns": 1,
            "loop": "auto",
        },
        bad_options=[
            ({"num_procs": 0}, "num_procs must be a whole number >= 1, got 0"),
            ({"num_procs": "2"}, "num_procs must be a whole number >= 1, got '2'"),
            ({"chunk_size": 0}, "chunk_size must be a whole number >= 1, got 0"),
            ({"crash_reruns": -1}, "crash_reruns must be a whole number >= 0, got -1"),
            ({"task_timeout": -3}, "task_timeout must be a number of seconds > 0, or None"),
            ({"loop": "trio"}, "loop must be one of auto, asyncio, uvloop; got 'trio'"),
        ],
        lacks={
            COUNTED_IN_PROCESS: "its hosts run in worker processes, where a counter in the "
            "test's process cannot see them",
        },
    ),
    Runner(
        "dask",
        DaskRunner,
        options=SharedClusterOptions(),
        given={"num_workers": 9, "crash_reruns": 2, "task_timeout": 4, "chunk_size": 3},
        defaults={
            "num_workers": 100,
            "address": None,
            "num_procs": os.cpu_count() or 1,
            "chunk_size": None,
            "crash_reruns": None,
            "task_timeout": None,
            "loop": "auto",
        },
        bad_options=[
            ({"address": ""}, "address must be a scheduler's address such as 'tls://host:8786', "
             "or None for a cluster of its own, got ''"),
            ({"num_procs": 0}, "num_procs must be a whole number >= 1, got 0"),
            ({"chunk_size": 0}, "chunk_size must be a whole number >= 1, got 0"),
            ({"crash_reruns": -1}, "crash_reruns must be a whole number from 0 to 100, got -1"),
            ({"connect_timeout": 0}, "connect_timeout must be a number of seconds > 0 and "
             "<= 3600, got 0"),
            ({"security": "yes"}, "security must be a distributed.security.Security, or a "
             "mapping of tls_ca_file, tls_client_cert, tls_client_key to PEM files, got 'yes'"),
            ({"loop": "trio"}, "loop must be one of auto, asyncio, uvloop; got 'trio'"),
        ],
        lacks={
            COUNTED_IN_PROCESS: "its hosts run in Dask worker processes, where a counter in "
            "the test's process cannot see them",
        },
    ),
]


def each_runner(
    *behaviours: str,
    cases: Callable[[Runner], Iterable[tuple[str, tuple[Any, ...]]]] = lambda runner: [("", ())],
) -> list[Any]:
    """``RUNNERS`` that have every one of ``behaviours``, as parameters, each with its
    ``cases`` (an id and more values each), marked where it has a known bug in one. A runner
    that lacks one is left out (``Runner.lacks`` says why), not generated to be skipped."""
    params = []
    for runner in RUNNERS:
        if any(b in runner.lacks for b in behaviours):
            continue
        marks = list(runner.marks)
        marks += [runner.bugs[b] for b in behaviours if b in runner.bugs]
        for case, values in cases(runner):
            case_id = f"{runner.id}-{case}" if case else runner.id
            params.append(pytest.param(runner, *values, id=case_id, marks=marks))
    return params


def each_kind(runner: Runner) -> list[tuple[str, tuple[str]]]:
    return [(kind, (kind,)) for kind in runner.kinds]


def twin(kind: str, name: str) -> Callable[..., Any]:
    """The task ``name`` of tests/tasksets.py, or its async twin."""
    task: Callable[..., Any] = getattr(async_tasksets if kind == ASYNC else tasksets, name)
    return task


def test_every_runner_of_the_package_is_here() -> None:
    from nornir_bench import runners

    assert {r.plugin for r in RUNNERS} - {ThreadedRunner, QueueThreadsRunner} == {
        getattr(runners, name) for name in runners.__all__ if name.endswith("Runner")
    }


@pytest.mark.parametrize("runner", each_runner())
def test_loaded_through_nornirs_entry_point(runner: Runner) -> None:
    nr = make_nornir(runner.name, **runner.given)
    assert type(nr.runner) is runner.plugin
    for option, value in {**runner.given, **runner.derived}.items():
        assert getattr(nr.runner, option) == value, option
    built_plain = make_nornir(runner.name).runner
    for option, value in runner.defaults.items():
        assert getattr(built_plain, option) == value, option
    # what nornir-bench's own code reads of a runner agrees with what this suite expects
    assert getattr(runner.plugin, "prefers_async_tasks", False) is (ASYNC in runner.kinds)
    assert getattr(runner.plugin, "stops_on_ctrl_c", False) is (CTRL_C not in runner.lacks)


BAD_NUM_WORKERS = [0, -1, 2.5, "4", True, None]


def bad_options(runner: Runner) -> list[tuple[str, tuple[Mapping[str, Any], str]]]:
    rejected = [
        ({"num_workers": bad}, f"num_workers must be a whole number >= 1, got {bad!r}")
        for bad in BAD_NUM_WORKERS
    ]
    return [
        (",".join(f"{k}={v!r}" for k, v in options.items()), (options, message))
        for options, message in [*rejected, *runner.bad_options]
    ]


@pytest.mark.parametrize(
    ("runner", "options", "message"), each_runner(BAD_OPTIONS, cases=bad_options)
)
def test_bad_options_rejected_when_built(
    runner: Runner, options: Mapping[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match="^" + re.escape(f"{runner.name} runner: {message}")):
        runner.plugin(**options)


WORKERS = [1, 3, 50]


@pytest.mark.parametrize("workers", WORKERS)
@pytest.mark.parametrize("task_fn", tasksets.TASK_SET, ids=lambda f: f.__name__)
@pytest.mark.parametrize("runner", each_runner(REFERENCE))
def test_results_equal_nornirs_threaded(runner: Runner, task_fn: Any, workers: int) -> None:
    ours = runner.nornir(hosts=30, num_workers=workers).run(task=task_fn)
    theirs = THREADED.nornir(hosts=30, num_workers=workers).run(task=task_fn)
    assert isinstance(ours, AggregatedResult)
    assert aggregated_view(ours) == aggregated_view(theirs)  # same content, same host order
    assert ours.failed_hosts.keys() == theirs.failed_hosts.keys()


# Policies configured on 30 hosts in 2 groups that never act on the runs below: whichever
# path a host takes through the policy layer, the results must be nornir's.
NEVER_ACTING = {
    # limits that cannot act on the run, left out when its plan is built: no plan at all
    "idle-limits": {
        "max_failures": 30, "max_fail_percentage": 100, "max_starts_per_second": 10,
        "max_start_burst": 30, "group_limits": {"group": 15}, "group_max_failures": {"group": 15},
    },
    # limits that could act, and never do (the last failure leaves no host to stop): the plan
    # hands every host out
    "kept-limits": {
        "max_failures": 29, "max_starts_per_second": 1_000_000, "max_start_burst": 29,
        "group_limits": {"group": 14}, "group_max_failures": {"group": 14},
    },
    # retries that nothing here is worth (ValueError, RuntimeError): one attempt, then the
    # failure's path through the host's attempts
    "retries": {"retries": 2, "retry_delay": 0, "retry_jitter": 0},
    # deadlines that no host reaches
    "deadlines": {"task_timeout": 60, "run_timeout": 600},
}


@pytest.mark.parametrize("policies", NEVER_ACTING.values(), ids=NEVER_ACTING)
@pytest.mark.parametrize("workers", [1, 50])
@pytest.mark.parametrize(("runner", "kind"), each_runner(REFERENCE, POLICIES, cases=each_kind))
def test_policies_that_never_act_change_no_result(
    runner: Runner, kind: str, workers: int, policies: Mapping[str, Any]
) -> None:
    nr = runner.nornir(hosts=30, num_workers=workers, **policies)
    reference = THREADED.nornir(hosts=30, num_workers=workers)
    tasks = async_tasksets.ASYNC_TASK_SET if kind == ASYNC else tasksets.TASK_SET
    for ours_task, their_task in zip(tasks, tasksets.TASK_SET, strict=True):
        ours, theirs = nr.run(task=ours_task), reference.run(task=their_task)
        assert aggregated_view(ours) == aggregated_view(theirs), ours_task.__name__
        assert ours.failed_hosts.keys() == theirs.failed_hosts.keys()
        nr.data.reset_failed_hosts()
        reference.data.reset_failed_hosts()


@pytest.mark.parametrize(
    "index", range(len(tasksets.TASK_SET)), ids=lambda i: tasksets.TASK_SET[i].__name__
)
@pytest.mark.parametrize("runner", each_runner(ASYNC_TASKS))
def test_async_tasks_give_what_threaded_gives_for_their_sync_twins(
    runner: Runner, index: int
) -> None:
    ours = runner.nornir(hosts=30, num_workers=4).run(task=async_tasksets.ASYNC_TASK_SET[index])
    theirs = THREADED.nornir(hosts=30, num_workers=4).run(task=tasksets.TASK_SET[index])
    assert isinstance(ours, AggregatedResult)
    assert aggregated_view(ours) == aggregated_view(theirs)


@pytest.mark.parametrize(("runner", "kind"), each_runner(REFERENCE, cases=each_kind))
def test_failed_hosts_on_good_on_failed_like_nornir(runner: Runner, kind: str) -> None:
    def run_sequence(nr: Nornir, kind: str) -> list[object]:
        first = nr.run(task=twin(kind, "fails_on_odd"))
        after_first = sorted(nr.data.failed_hosts)
        hello = twin(kind, "hello")
        good_only = sorted(nr.run(task=hello))
        failed_only = sorted(nr.run(task=hello, on_good=False, on_failed=True))
        both = sorted(nr.run(task=hello, on_failed=True))
        return [sorted(first.failed_hosts), after_first, good_only, failed_only, both]

    ours = run_sequence(runner.nornir(hosts=10, num_workers=4), kind)
    assert ours == run_sequence(THREADED.nornir(hosts=10, num_workers=4), SYNC)
    assert ours[0] == ["dev1", "dev3", "dev5", "dev7", "dev9"]


@pytest.mark.parametrize(("runner", "kind"), each_runner(cases=each_kind))
def test_raise_on_error_like_nornir(runner: Runner, kind: str) -> None:
    nr = runner.nornir(hosts=6, num_workers=3)
    with pytest.raises(NornirExecutionError) as info:
        nr.run(task=twin(kind, "fails_on_odd"), raise_on_error=True)
    assert sorted(info.value.failed_hosts) == ["dev1", "dev3", "dev5"]
    assert not nr.data.failed_hosts  # nornir raises instead of recording
    assert not nr.run(task=twin(kind, "hello"), raise_on_error=True).failed


@pytest.mark.parametrize(("runner", "kind"), each_runner(cases=each_kind))
def test_dry_run_passes_through_as_nornir_passes_it(runner: Runner, kind: str) -> None:
    """nornir's own tests/core/test_tasks.py::Test::test_dry_run, on every runner: once,
    processpool failed every host given ``dry_run`` (it reached the worker's task template
    twice)."""

    def seen(nr: Nornir, kind: str) -> list[dict[str, object]]:
        task = twin(kind, "sees_dry_run")
        runs = [nr.run(task=task), nr.run(task=task, dry_run=True)]
        runs += [nr.run(task=task, dry_run=False)]
        nr.data.dry_run = True
        runs += [nr.run(task=task), nr.run(task=task, dry_run=False)]
        return [{name: (multi.failed, multi[0].result) for name, multi in r.items()} for r in runs]

    ours = seen(runner.nornir(hosts=3, num_workers=2), kind)
    assert ours == seen(THREADED.nornir(hosts=3, num_workers=2), SYNC)
    assert [run["dev1"] for run in ours] == [
        (False, False), (False, True), (False, False), (False, True), (False, False)
    ]


@pytest.mark.parametrize(("runner", "kind"), each_runner(cases=each_kind))
def test_processor_hooks_per_host_in_nornirs_order(runner: Runner, kind: str) -> None:
    ours, theirs = Recorder(), Recorder()
    result = runner.nornir(hosts=9, num_workers=3).with_processors([ours]).run(
        task=twin(kind, "grouped")
    )
    make_nornir("serial", hosts=9).with_processors([theirs]).run(task=tasksets.grouped)
    assert ours.per_host() == theirs.per_host()
    assert ours.events[0] == ("task_started", "grouped", None)
    assert ours.events[-1] == ("task_completed", "grouped", None)
    assert isinstance(result["dev3"][0].exception, NornirSubTaskError)
    assert [r.name for r in result["dev3"]] == ["grouped", "hello", "maybe_fail"]


@pytest.mark.parametrize(("runner", "kind"), each_runner(cases=each_kind))
def test_host_data_changes_visible_after_run(runner: Runner, kind: str) -> None:
    nr = runner.nornir(hosts=25, num_workers=6)
    nr.run(task=twin(kind, "sets_data"), key="seen")
    assert {h.name: h.data.get("seen") for h in nr.inventory.hosts.values()} == {
        f"dev{i}": f"DEV{i}" for i in range(25)
    }


@pytest.mark.parametrize(("runner", "kind"), each_runner(cases=each_kind))
def test_results_pickle_as_nornirs_do(runner: Runner, kind: str) -> None:
    result = runner.nornir(hosts=12, num_workers=4).run(task=twin(kind, "fails_on_odd"))
    restored = pickle.loads(pickle.dumps(result))
    assert aggregated_view(restored) == aggregated_view(result)
    # (a failed subtask's NornirSubTaskError: nornir's to pickle, or not: core/test_pickling)


@pytest.mark.parametrize(("runner", "kind"), each_runner(cases=each_kind))
def test_the_collector_is_as_the_user_left_it_after_a_run(runner: Runner, kind: str) -> None:
    """A run may tune the garbage collector for itself, never for the user's process: its
    thresholds, whether it is on, and the objects the user froze are as they were."""
    before = gc.get_threshold()
    nr = runner.nornir(hosts=12, num_workers=4)
    try:
        gc.set_threshold(1234, 11, 12)
        gc.freeze()  # the user's own: say, a web application's pre-fork heap
        frozen = gc.get_freeze_count()
        nr.run(task=twin(kind, "hello"))
        assert (gc.get_threshold(), gc.isenabled()) == ((1234, 11, 12), True)
        # still frozen (a few frozen objects may have been freed meanwhile): not unfrozen
        assert frozen >= gc.get_freeze_count() > frozen * 0.9
        gc.unfreeze()
        nr.run(task=twin(kind, "hello"))
        assert (gc.get_threshold(), gc.isenabled(), gc.get_freeze_count()) == (
            (1234, 11, 12), True, 0
        )
        gc.disable()
        nr.run(task=twin(kind, "hello"))
        assert (gc.get_threshold(), gc.isenabled(), gc.get_freeze_count()) == (
            (1234, 11, 12), False, 0
        )
    finally:
        gc.enable()
        gc.unfreeze()
        gc.set_threshold(*before)


@pytest.mark.parametrize(("runner", "kind"), each_runner(cases=each_kind))
def test_no_hosts_gives_empty_result(runner: Runner, kind: str) -> None:
    nr = runner.nornir(hosts=5).filter(name="nobody")
    result = nr.run(task=twin(kind, "hello"))
    assert isinstance(result, AggregatedResult) and len(result) == 0


@pytest.mark.parametrize(("runner", "kind"), each_runner(COUNTED_IN_PROCESS, cases=each_kind))
def test_runs_num_workers_hosts_at_once_and_never_more(runner: Runner, kind: str) -> None:
    workers = 8
    barrier = threading.Barrier(workers, timeout=HANG_GUARD)
    lock = threading.Lock()
    in_flight, most = 0, 0

    def crowded(task: Task) -> None:
        nonlocal in_flight, most
        with lock:
            in_flight += 1
            most = max(most, in_flight)
        if int(task.host.name[3:]) < workers:
            barrier.wait()  # the first `workers` hosts can only pass together
        time.sleep(0.001)
        with lock:
            in_flight -= 1

    async def acrowded(task: Task) -> None:
        # Every worker takes its first host before any host's sleep ends: no barrier needed.
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        await asyncio.sleep(0.001)
        in_flight -= 1

    nr = runner.nornir(hosts=64, num_workers=workers)
    result = nr.run(task=acrowded if kind == ASYNC else crowded)
    assert not result.failed, result.failed_hosts
    assert most == workers


@pytest.mark.parametrize(("runner", "kind"), each_runner(cases=each_kind))
def test_many_runs_leave_nothing_running(runner: Runner, kind: str) -> None:
    nr = runner.nornir(hosts=50, num_workers=16, own=True)
    threads, processes = set(threading.enumerate()), descendant_pids()
    assert not nr.run(task=twin(kind, "hello")).failed
    # processpool keeps its workers for the next run, dask its client (its I/O loop thread)
    kept_threads, kept = set(threading.enumerate()), descendant_pids()
    for _ in range(30):
        assert not nr.run(task=twin(kind, "hello")).failed
        assert set(threading.enumerate()) == kept_threads
        assert descendant_pids() == kept
    nr.close_connections()
    getattr(nr.runner, "close", lambda: None)()
    assert _threads_end(threads)
    assert descendant_pids() == processes


def _threads_end(threads: set[threading.Thread]) -> bool:
    """Whether every thread but ``threads`` ends under the hang guard (a closed runner's I/O
    loop thread ends as it sees the close; Dask's process-wide callback thread stays)."""

    def ended() -> bool:
        left = set(threading.enumerate()) - threads  # enumerated, alive or not (gh-90882)
        return all(t.name.startswith(PROCESS_WIDE_THREADS) for t in left)

    with contextlib.suppress(AssertionError):
        wait_until(ended, "the run's threads ending")
    return ended()


def exits_on_dev2(task: Task, exit: type[BaseException]) -> str:
    if task.host.name == "dev2":
        raise exit(3)
    return "stayed"


async def aexits_on_dev2(task: Task, exit: type[BaseException]) -> str:
    await asyncio.sleep(0)
    return exits_on_dev2(task, exit)


def each_kind_and_exit(runner: Runner) -> list[tuple[str, tuple[str, type[BaseException]]]]:
    return [
        (f"{kind}-{exit.__name__}", (kind, exit))
        for kind in runner.kinds
        for exit in (SystemExit, KeyboardInterrupt)
    ]


@pytest.mark.parametrize(
    ("runner", "kind", "exit"), each_runner(SYSTEM_EXIT, cases=each_kind_and_exit)
)
def test_system_exit_from_a_task_propagates_once_the_run_has_stopped(
    runner: Runner, kind: str, exit: type[BaseException]
) -> None:
    """A task's ``SystemExit`` or ``KeyboardInterrupt`` (not an error: nornir's ``Task.start``
    does not catch it) leaves ``run()`` as it was raised, on every runner: not as a Ctrl-C's
    ``RunInterrupted``, not as a failed host."""
    nr = runner.nornir(hosts=10, num_workers=3, own=True)
    with pytest.raises(exit) as info:
        nr.run(task=aexits_on_dev2 if kind == ASYNC else exits_on_dev2, exit=exit)
    assert type(info.value) is exit and info.value.args == (3,)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    # no_leaked_threads, no_leaked_processes: what the run started had stopped


HOSTS_TO_STOP = 100
PRESSER = 10
NAP = 0.05


def naps(task: Task, press: Callable[[], None]) -> str:
    """Naps; dev10 presses Ctrl-C half-way through its nap, while other hosts are in flight."""
    if task.host.name == f"dev{PRESSER}":
        time.sleep(NAP / 2)
        press()
        time.sleep(NAP / 2)
    else:
        time.sleep(NAP)
    return task.host.name


async def anaps(task: Task, press: Callable[[], None]) -> str:
    if task.host.name == f"dev{PRESSER}":
        await asyncio.sleep(NAP / 2)
        press()
        await asyncio.sleep(NAP / 2)
    else:
        await asyncio.sleep(NAP)
    return task.host.name


def interrupted_run(runner: Runner, kind: str, workers: int) -> tuple[RunInterrupted, set[str]]:
    """A run on 100 napping hosts that dev10 stops with Ctrl-C; what it raised, and the hosts
    that started."""
    recorder = Recorder()
    nr = runner.nornir(hosts=HOSTS_TO_STOP, num_workers=workers, own=True).with_processors(
        [recorder]
    )
    # What Ctrl-C does: SIGINT to the process (the test's own, whichever process the task runs
    # in); its main thread takes it.
    press = partial(os.kill, os.getpid(), signal.SIGINT)
    with pytest.raises(KeyboardInterrupt) as info:  # a bare one fails this test, not the session
        nr.run(task=anaps if kind == ASYNC else naps, press=press)
    getattr(nr.runner, "close", lambda: None)()  # what the run keeps for the next one
    assert isinstance(info.value, RunInterrupted), repr(info.value)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    started = {
        host for hook, _, host in recorder.events if hook == "task_instance_started" and host
    }
    return info.value, started


@pytest.mark.parametrize(("runner", "kind"), each_runner(CTRL_C, cases=each_kind))
def test_ctrl_c_keeps_finished_hosts_and_starts_no_more(runner: Runner, kind: str) -> None:
    stop, started = interrupted_run(runner, kind, workers=2)
    assert not stop.abandoned
    finished = list(stop.result)
    assert stop.pending == HOSTS_TO_STOP - len(finished)
    assert all(multi[0].result == name and not multi.failed for name, multi in stop.result.items())
    assert finished == sorted(finished, key=lambda n: int(n[3:]))  # host order kept
    assert set(finished) <= started and len(started) < HOSTS_TO_STOP  # the rest never started
    # every host but the one in flight beside the presser had finished when it pressed
    assert len({f"dev{i}" for i in range(PRESSER)} & set(finished)) >= PRESSER - 1


@pytest.mark.parametrize(("runner", "kind"), each_runner(CTRL_C, IN_FLIGHT, cases=each_kind))
def test_hosts_in_flight_at_the_first_ctrl_c_finish(runner: Runner, kind: str) -> None:
    """One meaning on every runner: once, processpool's first Ctrl-C killed its workers, and the
    asyncio runner cancelled its hosts in flight, while the command said they finish."""
    threads = set(threading.enumerate())
    # One worker: dev10 is the only host in flight (in each worker process, for processpool).
    stop, started = interrupted_run(runner, kind, workers=1)
    finished = set(stop.result)
    assert {f"dev{i}" for i in range(PRESSER)} <= finished
    assert finished == started  # every host that started finished: none cut off
    assert f"dev{PRESSER}" in finished
    # not is_alive(): a thread that CPython wrongly marked dead is still enumerated (gh-90882)
    assert _threads_end(threads), "threads of the run still running"


def held_until(task: Task, release: str) -> str:
    """Runs until the file ``release`` exists (the test makes it once the run has returned)."""
    ends = time.monotonic() + HANG_GUARD
    while not os.path.exists(release) and time.monotonic() < ends:
        time.sleep(0.01)
    return "released"


async def aheld_until(task: Task, release: str) -> str:
    ends = time.monotonic() + HANG_GUARD
    while not os.path.exists(release) and time.monotonic() < ends:
        await asyncio.sleep(0.01)
    return "released"


@pytest.mark.parametrize(("runner", "kind"), each_runner(CTRL_C, IN_FLIGHT, cases=each_kind))
def test_a_second_ctrl_c_abandons_the_hosts_in_flight(
    runner: Runner, kind: str, tmp_path: Path
) -> None:
    """The first press lets the hosts in flight finish; the second stops waiting for them: the
    run returns while they are still held, with what had finished."""
    from nornir_bench.core.stoppable import stoppable

    release = tmp_path / "release"
    recorder = Recorder()
    nr = runner.nornir(hosts=12, num_workers=2, own=True).with_processors([recorder])
    heard = threading.Event()

    def press_twice() -> None:
        wait_until(
            lambda: any(hook == "task_instance_started" for hook, _, _ in recorder.events),
            "a host in flight",
        )
        os.kill(os.getpid(), signal.SIGINT)
        heard.wait(HANG_GUARD)  # the first press taken, so the second is another signal
        os.kill(os.getpid(), signal.SIGINT)

    presser = threading.Thread(target=press_twice, name="test-presser")
    presser.start()
    try:
        with stoppable(nr.runner, held_until, on_first_press=heard.set), pytest.raises(
            KeyboardInterrupt
        ) as info:
            nr.run(task=aheld_until if kind == ASYNC else held_until, release=str(release))
        released_after = release.exists()
    finally:
        release.touch()
        presser.join()
        getattr(nr.runner, "close", lambda: None)()
    assert isinstance(info.value, RunInterrupted), repr(info.value)
    assert info.value.abandoned and heard.is_set()
    assert not released_after  # returned with its hosts still held
    assert list(info.value.result) == []  # none finished: none is in the result
    assert info.value.pending == 12
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
