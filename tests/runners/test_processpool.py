"""What is processpool's own: crossing the process boundary, crash isolation, timeouts, its
workers' shutdown. What it shares with every runner (nornir's semantics, Ctrl-C, leaving
nothing behind) is in test_conformance.py."""

from __future__ import annotations

import logging
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import pytest
from nornir.core.task import Task

import nornir_bench
from nornir_bench import (
    HostTimer,
    ProcessPoolRunner,
    RemoteException,
    RunInterrupted,
    TaskTimeout,
    WorkerCrashed,
    WorkerUnavailable,
)
from nornir_bench.core.attempts import attempts_of
from nornir_bench.core.deadlines import bounded
from nornir_bench.core.hooks import NoOpProcessor
from nornir_bench.runners._remote.options import MAX_PROCS_PER_CPU
from nornir_bench.runners.dask import DaskRunner
from nornir_bench.runners.processpool.crashes import MAX_STORM_PROCS, storm_layout
from nornir_bench.tasks import asim_rtt
from tests import tasksets
from tests.conftest import Recorder, make_nornir
from tests.waiting import HANG_GUARD, LIVENESS_IN_TESTS, process_ended, wait_until

pytestmark = pytest.mark.usefixtures("no_leaked_processes")


def pool(hosts: int = 30, **options: Any) -> Any:
    options.setdefault("num_procs", 2)
    return make_nornir("processpool", hosts=hosts, **options)


def test_results_refer_to_the_parents_hosts() -> None:
    nr = pool()
    result = nr.run(task=tasksets.grouped)
    for name, multi in result.items():
        assert all(r.host is nr.inventory.hosts[name] for r in multi)


async def _loop_module(task: Task) -> str:
    import asyncio

    return type(asyncio.get_running_loop()).__module__


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_workers_run_the_loop_chosen(loop: str) -> None:
    """Workers once always ran plain asyncio, whatever uvloop choice the run made."""
    result = pool(hosts=4, num_procs=2, loop=loop).run(task=_loop_module)
    assert {r[0].result.split(".")[0] for r in result.values()} == {loop}


def test_a_host_timer_in_the_parent_measures_the_time_in_the_worker() -> None:
    timer = HostTimer()
    pool(hosts=6, num_workers=2).with_processors([timer]).run(task=asim_rtt, rtt=0.05)
    assert len(timer.elapsed) == 6
    # started as the host left for its worker, completed when its result came back
    assert min(timer.elapsed.values()) >= 0.049  # a loop may wake a timer a clock tick early


def test_a_crashed_hosts_hooks_fire_once_each() -> None:
    recorder = Recorder()
    pool(hosts=12, num_workers=3, chunk_size=1).with_processors([recorder]).run(
        task=_crash, how="exit"
    )
    per_host = recorder.per_host()
    per_host.pop(None)  # the run's own task_started / task_completed
    assert len(per_host) == 12
    for name, events in per_host.items():
        starts = [e for e in events if e[0] == "task_instance_started"]
        ends = [e for e in events if e[0] == "task_instance_completed"]
        assert (len(starts), len(ends)) == (1, 1), name


def _crash(task: Task, how: str) -> int:
    if task.host.name == "dev5":
        if how == "exit":
            os._exit(3)
        elif how == "segfault":
            import ctypes

            ctypes.string_at(0)  # reads address 0: SIGSEGV
        else:  # what the kernel's out-of-memory killer does
            os.kill(os.getpid(), signal.SIGKILL)
    # Long enough that the other worker cannot finish every host before the crashing one has
    # started: otherwise no work is left for a replacement, and none is started.
    time.sleep(0.05)
    return os.getpid()


@pytest.mark.parametrize(
    ("how", "says"),
    [
        ("exit", "exited with status 3"),
        ("segfault", "was killed by signal 11 (SIGSEGV)"),
        ("kill", "was killed by signal 9 (SIGKILL)"),
    ],
)
def test_a_crashing_worker_fails_only_the_host_that_crashes_it(how: str, says: str) -> None:
    """The hosts in flight beside dev5 run again (crash_reruns, 1 by default) and succeed:
    once, this test let them fail too."""
    result = pool(hosts=40, num_workers=3, chunk_size=1).run(task=_crash, how=how)
    assert len(result) == 40  # no host missing
    assert list(result.failed_hosts) == ["dev5"]
    exc = result["dev5"][0].exception
    assert isinstance(exc, WorkerCrashed)
    assert re.fullmatch(rf"worker process \d+ {re.escape(says)} while running this host", str(exc))
    # Its companions in flight ran again (dev5 too, alone, when the crash could not name it).
    again = {name for name, multi in result.items() if attempts_of(multi)[0] == 2}
    assert again - {"dev5"}
    for name in again:
        (earlier,) = attempts_of(result[name])[1]
        assert earlier.exception == "WorkerCrashed" and says in earlier.message
    ok_pids = {multi[0].result for name, multi in result.items() if name != "dev5"}
    assert len(ok_pids) >= 2  # the crashed worker was replaced and the run went on


async def _dev2_crashes_at_once(task: Task) -> str:
    """dev0 waits (in flight beside the others), dev1 ends without waiting (its whole run one
    step of the coroutine running it), dev2 kills its worker in its first step."""
    import asyncio

    if task.host.name == "dev0":
        await asyncio.sleep(0.5)
    if task.host.name == "dev2":
        os._exit(3)
    return task.host.name


def test_a_crash_blames_the_host_a_coroutine_took_in_the_step_the_one_before_it_ended() -> None:
    """A worker's coroutine takes its next host in the step where its last one ended (dev1,
    then dev2): the crash in that step is dev2's. Not known, dev0 and dev2 would both be
    suspects, each run again alone."""
    result = pool(hosts=3, num_workers=3, num_procs=1, chunk_size=3).run(
        task=_dev2_crashes_at_once
    )
    assert list(result.failed_hosts) == ["dev2"]
    exc = result["dev2"][0].exception
    assert isinstance(exc, WorkerCrashed)
    assert str(exc).endswith("exited with status 3 while running this host"), exc
    assert attempts_of(result["dev2"])[0] == 1  # known at once: not a suspect run alone
    assert [multi.result for multi in result.values() if not multi.failed] == ["dev0", "dev1"]


def _exits_on_dev2(task: Task) -> int:
    if task.host.name == "dev2":
        raise SystemExit(3)
    time.sleep(0.05)  # the other worker must not run every host before dev2's worker is gone
    return os.getpid()


def test_a_system_exit_in_a_task_is_raised_by_run_and_its_worker_lives_on() -> None:
    # It ended the worker: the host failed with WorkerCrashed, ran again as a suspect, and the
    # worker's traceback reached the terminal twice; the other runners raise it from run().
    nr = pool(hosts=12, num_workers=2, chunk_size=1, keep_workers=True)
    try:
        with pytest.raises(SystemExit) as info:
            nr.run(task=_exits_on_dev2)
        assert info.value.code == 3
        kept = set(nr.runner.worker_pids)
        assert len(kept) == 2  # neither worker ended
        again = nr.filter(filter_func=lambda host: host.name != "dev2").run(task=_exits_on_dev2)
        assert not again.failed
        assert {multi.result for multi in again.values()} <= kept
    finally:
        nr.runner.close()


def test_task_timeout_for_async_tasks() -> None:
    async def slow_on_dev2(task: Task) -> str:
        import asyncio

        await asyncio.sleep(30 if task.host.name == "dev2" else 0)
        return "done"

    result = pool(hosts=6, task_timeout=0.3).run(task=slow_on_dev2)
    assert sorted(result.failed_hosts) == ["dev2"]
    assert isinstance(result["dev2"][0].exception, TaskTimeout)


def test_task_timeout_for_a_blocking_task_replaces_its_worker(tmp_path: Path) -> None:
    stuck_in = tmp_path / "stuck.pid"

    def stuck_on_dev1(task: Task) -> int:
        if task.host.name == "dev1":
            stuck_in.write_text(str(os.getpid()))
            time.sleep(3600)  # cannot be interrupted in its thread: only a kill ends it
        return os.getpid()

    def pid_of(task: Task) -> int:
        return os.getpid()

    nr = pool(hosts=12, num_workers=2, chunk_size=1, task_timeout=0.3)
    try:
        # A pool that waited for the stuck thread would hang: the per-test timeout stops it.
        result = nr.run(task=stuck_on_dev1)
        assert sorted(result.failed_hosts) == ["dev1"]
        assert isinstance(result["dev1"][0].exception, TaskTimeout)
        assert len(result) == 12
        stuck = int(stuck_in.read_text())

        def retired() -> bool:
            # The worker says it is stuck a second after the deadline; a run's start then
            # kills it (nothing else ends the call) and starts another in its place.
            again = nr.run(task=pid_of)
            return process_ended(stuck) and stuck not in {m.result for m in again.values()}

        wait_until(retired, "the stuck thread's worker killed", every=0.1)
        assert stuck not in nr.runner.worker_pids and len(nr.runner.worker_pids) == 2
    finally:
        nr.runner.close()


def _sleeps_to_its_deadline(task: Task, stuck: bool = False) -> int:
    # Past it by a little, not to it: a call returning at the very deadline may win the race
    # and succeed (seen in CI). 0.2 s past is still well within the worker's look, a second
    # after giving the call up, that decides whether it returned by itself.
    time.sleep(30 if stuck else bounded(task, 30) + 0.2)
    return os.getpid()


@pytest.mark.parametrize("stuck", [False, True], ids=["returns-by-itself", "stuck"])
def test_a_worker_is_retired_only_if_a_call_given_up_stays_in_its_thread(stuck: bool) -> None:
    """Once, every blocking call given up at its deadline retired its worker (and the
    connections it kept), although the package's own tasks return by themselves there."""
    runner = ProcessPoolRunner(num_workers=2, num_procs=1, task_timeout=0.3)
    nr = make_nornir("processpool", hosts=2).with_runner(runner)
    try:
        timed_out = nr.run(task=_sleeps_to_its_deadline, stuck=stuck)
        assert {type(m[0].exception).__name__ for m in timed_out.values()} == {"TaskTimeout"}
        before = runner.worker_pids
        time.sleep(1.5)  # the worker looks again a second after giving the calls up
        after = nr.run(task=_pid_after, seconds=0, on_failed=True)
        assert not after.failed
        pids = {multi.result for multi in after.values()}
        assert (pids == set(before)) is not stuck
    finally:
        runner.close()


def test_unpicklable_exception_comes_back_as_text() -> None:
    class DeviceError(Exception):
        def __init__(self, message: str) -> None:
            super().__init__(message)
            self.session = threading.Lock()  # a live object: cannot be pickled

    def fails(task: Task) -> None:
        raise DeviceError(f"session to {task.host.name} dropped")

    result = pool(hosts=4).run(task=fails)
    exc = result["dev2"][0].exception
    assert isinstance(exc, RemoteException)
    assert (exc.type_name, exc.message) == ("DeviceError", "session to dev2 dropped")
    assert "Traceback" in exc.traceback_text and "DeviceError" in exc.traceback_text
    assert "DeviceError: session to dev2 dropped" in result["dev2"][0].result


class RefusedLine(Exception):
    """Pickles (as its ``args``), but is not rebuilt: ``__init__`` takes a keyword only."""

    def __init__(self, message: str, *, line: int) -> None:
        super().__init__(message)
        self.line = line


def refuses_on_dev2(task: Task) -> str:
    if task.host.name == "dev2":
        raise RefusedLine("line 3 refused", line=3)
    return task.host.name


def test_an_exception_not_rebuilt_when_unpickled_comes_back_as_text() -> None:
    """It crashed the run in the parent (TypeError: missing keyword-only argument), losing
    every host's result."""
    result = pool(hosts=4).run(task=refuses_on_dev2)
    assert sorted(result.failed_hosts) == ["dev2"]
    exc = result["dev2"][0].exception
    assert isinstance(exc, RemoteException)
    assert (exc.type_name, exc.message) == ("RefusedLine", "line 3 refused")
    assert [result[h][0].result for h in ("dev0", "dev1", "dev3")] == ["dev0", "dev1", "dev3"]


def test_closures_travel() -> None:
    prefix = "seen by"

    def closure(task: Task) -> str:
        return f"{prefix} {task.host.name}"

    result = pool(hosts=3).run(task=closure)
    assert result["dev1"][0].result == "seen by dev1"


def test_task_defined_in_main_of_a_script(tmp_path: Path) -> None:
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent("""
        import os
        from nornir import InitNornir

        print("top level of the script runs once")  # not again in every worker

        def where(task, word):
            return f"{word} {task.host.name} in {os.getpid() != PARENT}"

        PARENT = os.getpid()
        nr = InitNornir(
            inventory={"plugin": "synthetic", "options": {"hosts": 6}},
            runner={"plugin": "processpool", "options": {"num_procs": 2}},
            logging={"enabled": False},
        )
        result = nr.run(task=where, word="hello")
        print(sorted(r[0].result for r in result.values())[0])
    """))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("top level of the script runs once") == 1
    assert "hello dev0 in True" in done.stdout


def test_unsendable_task_arguments_rejected_clearly() -> None:
    import socket

    with socket.socket() as sock:
        with pytest.raises(ValueError, match="cannot be sent to worker processes"):
            pool(hosts=2).run(task=tasksets.sets_data, key=sock)


def test_a_second_ctrl_c_kills_the_workers_at_once(tmp_path: Path) -> None:
    def stuck(task: Task) -> str:
        (tmp_path / f"{os.getpid()}.pid").touch()  # this worker runs a host
        time.sleep(3600)  # only a kill ends it
        return task.host.name

    def running() -> list[int]:
        return [int(path.stem) for path in tmp_path.glob("*.pid")]

    main = threading.main_thread().ident
    assert main is not None

    def press_twice_once_both_workers_run_hosts() -> None:
        wait_until(lambda: len(running()) == 2, "both workers running hosts")
        signal.pthread_kill(main, signal.SIGINT)
        time.sleep(0.3)  # two presses, not one: the first is handled before the second comes
        signal.pthread_kill(main, signal.SIGINT)

    presser = threading.Thread(target=press_twice_once_both_workers_run_hosts)
    presser.start()
    try:
        # A pool that waited for its hosts in flight would hang: the per-test timeout stops it.
        with pytest.raises(RunInterrupted) as info:
            pool(hosts=8, num_workers=2).run(task=stuck)
    finally:
        presser.join()
    assert info.value.abandoned and len(info.value.result) == 0
    wait_until(lambda: all(map(process_ended, running())), "the workers killed")


def _stops_its_worker(task: Task) -> str:
    """dev0 stops its worker process (SIGSTOP): alive, and silent, with no deadline set."""
    if task.host.name == "dev0":
        os.kill(os.getpid(), signal.SIGSTOP)
    time.sleep(0.05)
    return str(os.getpid())


def test_a_worker_alive_but_silent_past_the_liveness_bound_is_given_up_naming_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Once, a parent whose worker stopped answering waited for ever when no deadline was set:
    now a worker with hosts out that says nothing (not even its heartbeat) for the bound is
    killed, its hosts fail naming it, and the others run on."""
    from nornir_bench.runners._remote import watchdog

    monkeypatch.setattr(watchdog, "LIVENESS_SECONDS", LIVENESS_IN_TESTS)
    nr = pool(hosts=8, num_procs=2, num_workers=2)
    try:
        result = nr.run(task=_stops_its_worker)
    finally:
        nr.runner.close()
    silent = {name: multi[0].exception for name, multi in result.items() if multi.failed}
    assert "dev0" in silent and len(silent) <= 2  # dev0, and the host beside it there
    stopped = {str(error).split("processpool worker process ")[1].split()[0]
               for error in silent.values()}
    assert all(isinstance(error, WorkerUnavailable) for error in silent.values()), silent
    assert len(stopped) == 1 and "sent nothing for" in str(silent["dev0"])
    assert stopped.isdisjoint(multi.result for multi in result.values() if not multi.failed)
    assert len(result) == 8


def test_results_a_frozen_worker_sent_before_it_was_killed_count() -> None:
    """Once, a worker that answered just as the watchdog took it for frozen had its host
    counted twice, its good result overwritten, and the run ended with a ValueError."""
    from nornir_bench.core.execution import run_host
    from nornir_bench.runners._core.lifecycle import Lifecycle
    from nornir_bench.runners._remote.results import FinishedBatch, FinishedHost
    from nornir_bench.runners.processpool.messages import Done, send
    from nornir_bench.runners.processpool.pool import Pool
    from nornir_bench.runners.processpool.running_host import RunningHost
    from nornir_bench.runners.processpool.workers import Worker, WorkerSet

    class ForkServerGone:
        """Not the subject here: the fork server of a worker the pool kills."""

        class process:
            @staticmethod
            def poll() -> None:
                return None

        def exit_status(self, pid: int) -> None:
            return None

        def kill(self, pid: int) -> None:
            pass

        def forget(self, pid: int) -> None:
            pass

    nr = pool(hosts=2, task_timeout=1)
    task = Task(tasksets.hello, nr, global_dry_run=False, processors=nr.processors)
    hosts = list(nr.inventory.hosts.values())
    run = Lifecycle(task, hosts, nr.runner.policy, planned=True)
    result = run.result
    runner = Pool(nr.runner._options, run, WorkerSet([]), keep_workers=False,
                  give_back=lambda keep: None)
    pool_end, worker_end = socket.socketpair()
    worker = Worker(4242, Connection(pool_end.detach()), RunningHost(threads=1), ForkServerGone())  # type: ignore[arg-type]
    worker.loaded = True
    runner.book.add(worker.pid)
    runner.book.sent(worker.pid, runner.book.take(worker.pid, 2), 0.0)  # both out on it
    runner.workers.append(worker)
    # dev0's result was on its way when the watchdog fired; dev1 never finished
    done = run_host(task, hosts[0])
    with Connection(worker_end.detach()) as sent:
        send(sent, Done(FinishedBatch.of([FinishedHost(0, done, hosts[0].data, [], ())])))
        overdue: dict[int, Exception] = {i: TaskTimeout("hello", hosts[i].name, 1) for i in (0, 1)}
        runner._lost(worker, overdue)
    assert runner.settle.remaining == 0
    assert not result["dev0"].failed and result["dev0"].result == "hello from dev0"
    assert isinstance(result["dev1"][0].exception, TaskTimeout)


def test_what_tasks_print_in_workers_reaches_the_output(tmp_path: Path) -> None:
    """Workers end with os._exit: once, their buffered output was lost in a pipe."""
    script = tmp_path / "prints.py"
    script.write_text(textwrap.dedent("""
        import sys

        from nornir import InitNornir

        def say(task):
            # one write: print() writes the text and the newline apart, which threads printing
            # at once interleave when output is unbuffered (PYTHONUNBUFFERED)
            sys.stdout.write(f"said by {task.host.name}\\n")

        nr = InitNornir(
            inventory={"plugin": "synthetic", "options": {"hosts": 6}},
            runner={"plugin": "processpool", "options": {"num_procs": 2}},
            logging={"enabled": False},
        )
        nr.run(task=say)
    """))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 0, done.stderr
    assert sorted(done.stdout.splitlines()) == [f"said by dev{i}" for i in range(6)]


RUNS_HELLO = textwrap.dedent("""
    from nornir import InitNornir

    nr = InitNornir(
        inventory={"plugin": "synthetic", "options": {"hosts": 4}},
        runner={"plugin": "processpool", "options": {"num_procs": 1}},
        logging={"enabled": False},
    )
    result = nr.run(task=hello)
    print(sorted(result.failed_hosts), sorted(multi.result for multi in result.values()))
""")
"""The end of a script: runs its ``hello`` on 4 hosts in one worker process, and prints the
failed hosts and the results."""


def test_the_fork_server_imports_the_package_this_process_runs(tmp_path: Path) -> None:
    """Once, the fork server imported whatever ``nornir_bench`` folder the current directory
    held (``python -m`` puts it first): a run from a checkout of another version mixed the
    two, and hung."""
    decoy = tmp_path / "nornir_bench"
    decoy.mkdir()
    (decoy / "__init__.py").write_text("raise ImportError('a nornir_bench folder of the cwd')\n")
    script = tmp_path / "job" / "run.py"
    script.parent.mkdir()
    script.write_text(textwrap.dedent("""
        def hello(task):
            return task.host.name
    """) + RUNS_HELLO)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[] ['dev0', 'dev1', 'dev2', 'dev3']"


def test_the_workers_import_the_modules_this_process_imported(tmp_path: Path) -> None:
    """A job's own ``tasks`` module, beside its script, while an installed distribution put a
    ``tasks`` package beside nornir_bench (as stray top-level packages in site-packages are):
    the workers must run the job's, as this process does."""
    site = tmp_path / "site"
    shutil.copytree(Path(nornir_bench.__file__).parent, site / "nornir_bench",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (site / "tasks").mkdir()
    (site / "tasks" / "__init__.py").write_text("# another distribution's package\n")
    job = tmp_path / "job"
    job.mkdir()
    (job / "tasks.py").write_text("def hello(task):\n    return task.host.name\n")
    (job / "run.py").write_text(textwrap.dedent("""
        import sys

        import nornir_bench
        from tasks import hello

        assert nornir_bench.__file__.startswith(sys.argv[1]), nornir_bench.__file__
    """) + RUNS_HELLO)
    paths = [str(site), *(p for p in sys.path if p)]
    done = subprocess.run(
        [sys.executable, str(job / "run.py"), str(site)], cwd=tmp_path, capture_output=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(paths)}, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[] ['dev0', 'dev1', 'dev2', 'dev3']", done.stdout


def _starts_a_program_then_crashes(task: Task, pid_file: str) -> str:
    if task.host.name == "dev1":
        child = subprocess.Popen(["sleep", "30"], close_fds=False)  # inherits what it may
        Path(pid_file).write_text(str(child.pid))
        os._exit(1)
    return task.host.name


@pytest.mark.timeout(HANG_GUARD)
def test_a_program_a_task_started_does_not_hide_its_workers_death(tmp_path: Path) -> None:
    """Once, a program started by a task held the worker's socket: when the worker died, the
    pool never saw it, and waited for ever."""
    pid_file = tmp_path / "child.pid"
    try:
        result = pool(hosts=4, num_workers=4).run(
            task=_starts_a_program_then_crashes, pid_file=str(pid_file)
        )
    finally:
        if pid_file.exists():
            try:
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
            except ProcessLookupError:
                pass
    assert isinstance(result["dev1"][0].exception, WorkerCrashed)
    assert sorted(result) == ["dev0", "dev1", "dev2", "dev3"]


def test_workers_that_cannot_start_fail_the_hosts_instead_of_respawning_forever(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from nornir_bench.runners.processpool import workers

    # an interpreter that exits at once, as in an environment where it cannot import
    monkeypatch.setattr(workers, "FORK_SERVER_COMMAND", ["-c", "import sys; sys.exit(7)"])
    with caplog.at_level(logging.ERROR, logger="nornir_bench.runners.processpool.pool"):
        result = pool(hosts=40, num_workers=2, chunk_size=1).run(task=tasksets.hello)
    assert [r.getMessage() for r in caplog.records if "giving up" in r.getMessage()] == [
        "processpool: giving up: the fork server exited with status 7 (3 in a row)"
    ]
    assert len(result) == 40 and sorted(result.failed_hosts) == sorted(result)
    exc = result["dev39"][0].exception
    assert isinstance(exc, WorkerUnavailable)
    assert str(exc) == (
        "no worker process could run this host: the fork server exited with status 7 (3 in a row)"
    )


def test_a_fork_server_that_dies_at_once_fails_a_big_run_with_the_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Once: sending the payload of thousands of hosts to a fork server that had already
    exited raised BrokenPipeError out of run()."""
    from nornir_bench.runners.processpool import workers

    monkeypatch.setattr(workers, "FORK_SERVER_COMMAND", ["-c", "import sys; sys.exit(7)"])
    monkeypatch.setattr(logging.getLogger("nornir.core.task"), "disabled", True)
    result = pool(hosts=5000, num_workers=50).run(task=tasksets.hello)
    assert len(result) == 5000 and len(result.failed_hosts) == 5000
    assert isinstance(result["dev4999"][0].exception, WorkerUnavailable)


def test_workers_a_dead_fork_server_took_along_are_not_blamed() -> None:
    from nornir_bench.runners.processpool.crashes import CrashLedger

    verdict = CrashLedger().verdict(
        [7], pid=1, exitcode=None, running=7, name=lambda i: f"dev{i}", cause_known=False
    )
    assert verdict.failed == {} and verdict.rerun == [7] and verdict.alone == []


def test_a_task_the_workers_cannot_load_fails_every_host_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "parent_only.py").write_text("def task(task):\n    return 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import parent_only  # type: ignore[import-not-found]

    # The workers take their import path from this process's: without the folder, they
    # cannot import the module the task is pickled by reference to.
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(tmp_path)])
    result = pool(hosts=12, num_workers=2).run(task=parent_only.task)
    assert len(result) == 12 and len(result.failed_hosts) == 12
    exc = result["dev3"][0].exception
    assert isinstance(exc, WorkerUnavailable)
    assert "could not load the run: ModuleNotFoundError: No module named 'parent_only'" in str(exc)


CRASH_EVERY = 30


async def crashes_its_worker(task: Task, rtt: float = 0.02) -> str:
    """Every CRASH_EVERY-th host kills its worker at once; the others take ``rtt``."""
    import asyncio

    if int(task.host.name[3:]) % CRASH_EVERY == 7:
        os._exit(1)
    await asyncio.sleep(rtt)
    return task.host.name


@pytest.mark.timeout(HANG_GUARD)
def test_a_crash_storm_ends_and_fails_only_the_hosts_that_crash() -> None:
    """Once: 10,000 hosts with 1 % crashing ran for 10 minutes without ending, each failed
    host's result carrying the same exception, its traceback grown with every raise."""
    hosts = 600
    result = pool(hosts=hosts, num_workers=CRASH_EVERY).run(task=crashes_its_worker)
    assert len(result) == hosts
    crashers = sorted(f"dev{i}" for i in range(hosts) if i % CRASH_EVERY == 7)
    assert sorted(result.failed_hosts) == crashers
    errors = [result[name][0].exception for name in crashers]
    assert len({id(e) for e in errors}) == len(errors)  # each host its own small exception
    for name in crashers:
        exc = result[name][0].exception
        assert isinstance(exc, WorkerCrashed) and str(exc).endswith(
            "exited with status 1 while running this host"
        )
        assert len(result[name][0].result) < 1000  # no traceback chain
    # The hosts in flight with a crasher ran again, and say so.
    again = [multi for multi in result.values() if attempts_of(multi)[0] == 2]
    assert again and all(not multi.failed for multi in again)
    attempts, failed = attempts_of(again[0])
    assert failed[0].exception == "WorkerCrashed"
    assert "while running host 'dev" in failed[0].message
    assert failed[0].message.endswith("; run again on another worker")


_IN_FLIGHT = [0]  # in each worker process: its hosts in flight now


async def _dev0_crashes_then_hosts_count(task: Task) -> tuple[int, int]:
    """dev0 kills its worker at once; every other host says its worker and how many hosts
    that worker had in flight while it ran."""
    import asyncio

    if task.host.name == "dev0":
        os._exit(1)
    _IN_FLIGHT[0] += 1
    try:
        await asyncio.sleep(0.05)
        return os.getpid(), _IN_FLIGHT[0]
    finally:
        _IN_FLIGHT[0] -= 1


def test_after_a_crash_fewer_hosts_share_a_workers_fate_on_more_workers() -> None:
    """Rule 6: once, 40 hosts stayed in flight per worker after crashes, so the hosts run again
    often met another crasher and failed with it (a crash storm failed a quarter of the
    innocent hosts)."""
    runner = ProcessPoolRunner(num_workers=40, num_procs=1, chunk_size=10)
    nr = make_nornir("processpool", hosts=200).with_runner(runner)
    try:
        result = nr.run(task=_dev0_crashes_then_hosts_count)
        assert result.failed_hosts.keys() == {"dev0"}
        procs, per_worker = storm_layout(1, 40)
        assert (procs, per_worker) == (5, 8)
        # dev0 crashed before any other host finished: every other host ran after it.
        ran = [multi.result for name, multi in result.items() if name != "dev0"]
        assert max(in_flight for _, in_flight in ran) <= per_worker
        assert 1 < len({pid for pid, _ in ran}) <= procs + 1  # the crashed one replaced
        # The workers past num_procs stopped at the end of the run.
        assert len(runner.worker_pids) == 1
    finally:
        runner.close()


def test_the_storm_layout_keeps_the_hosts_in_flight_on_more_workers() -> None:
    assert storm_layout(2, 100) == (25, 8)  # the default, on two CPUs
    assert storm_layout(1, 3) == (1, 3)  # few hosts a worker already: unchanged
    assert storm_layout(4, 10) == (5, 8)
    # Past MAX_STORM_PROCS workers, more hosts each; never fewer workers than num_procs.
    assert storm_layout(16, 100) == (MAX_STORM_PROCS, 25)
    assert storm_layout(100, 100) == (100, 100)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("blocking", [False, True], ids=["async", "blocking"])
def test_a_crash_storm_spares_the_innocent(blocking: bool) -> None:
    """1 % of 2,000 hosts, drawn at random, kill their worker (exit, kill, segfault in turn).
    Once, a quarter of the innocent hosts failed beside them."""
    hosts = 2000
    drawn = sorted(random.Random(7).sample(range(hosts), hosts // 100))
    ways = {index: ("exit", "kill", "segfault")[n % 3] for n, index in enumerate(drawn)}
    task = _storm_blocking if blocking else _storm_async
    result = pool(hosts=hosts).run(task=task, ways=ways)
    assert len(result) == hosts
    crashers = {f"dev{index}" for index in ways}
    assert crashers <= result.failed_hosts.keys()
    innocent_failed = result.failed_hosts.keys() - crashers
    assert len(innocent_failed) <= 0.02 * (hosts - len(crashers)), sorted(innocent_failed)
    assert max(attempts_of(multi)[0] for multi in result.values()) <= 1 + 1  # crash_reruns


def _die(way: str) -> None:
    if way == "exit":
        os._exit(1)
    if way == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    import ctypes

    ctypes.string_at(0)


async def _storm_async(task: Task, ways: dict[int, str]) -> None:
    import asyncio

    way = ways.get(int(task.host.name[3:]))
    if way:
        _die(way)
    await asyncio.sleep(0.02)


def _storm_blocking(task: Task, ways: dict[int, str]) -> None:
    way = ways.get(int(task.host.name[3:]))
    if way:
        _die(way)
    time.sleep(0.02)


def _crash_in_a_thread(task: Task) -> int:
    """A blocking task: it runs in a worker's thread, where the running host is not known."""
    if task.host.name == "dev5":
        os._exit(3)
    time.sleep(0.2)
    return os.getpid()


def test_when_the_crashing_host_is_not_known_its_suspects_run_again_alone() -> None:
    recorder = Recorder()
    nr = pool(hosts=12, num_workers=3, chunk_size=1, num_procs=1).with_processors([recorder])
    result = nr.run(task=_crash_in_a_thread)
    assert len(result) == 12
    # Run again alone, dev5 crashed its worker again: named, and failed.
    assert sorted(result.failed_hosts) == ["dev5"]
    exc = result["dev5"][0].exception
    assert isinstance(exc, WorkerCrashed) and str(exc).endswith(
        "exited with status 3 while running this host"
    )
    assert attempts_of(result["dev5"])[0] == 2
    # The hosts in flight beside it at the first crash ran again alone, and succeeded.
    again = {n: attempts_of(m)[1] for n, m in result.items() if attempts_of(m)[0] == 2}
    assert sorted(again) == ["dev3", "dev4", "dev5"]
    assert again["dev3"][0].message.endswith(
        "while running its hosts in flight, this one among them; run again alone on another worker"
    )
    # Hooks fired once per host, not once per run.
    per_host = recorder.per_host()
    per_host.pop(None)
    assert all(
        [e[0] for e in events].count("task_instance_started") == 1 for events in per_host.values()
    )


def _segfault_in_a_thread(task: Task) -> int:
    if task.host.name == "dev5":
        import ctypes

        ctypes.string_at(0)
    time.sleep(0.2)
    return os.getpid()


def test_a_segfault_in_a_worker_thread_names_its_host() -> None:
    """faulthandler's dump names the thread a fatal signal hit; the worker notes which host
    each of its threads runs."""
    result = pool(hosts=12, num_workers=3, chunk_size=1, num_procs=1).run(
        task=_segfault_in_a_thread
    )
    assert sorted(result.failed_hosts) == ["dev5"]
    assert str(result["dev5"][0].exception).endswith(
        "was killed by signal 11 (SIGSEGV) while running this host"
    )
    assert attempts_of(result["dev5"])[0] == 1  # named at its first crash
    again = {n: attempts_of(m)[1] for n, m in result.items() if attempts_of(m)[0] == 2}
    assert again and all(
        failed[0].message.endswith("while running host 'dev5'; run again on another worker")
        for failed in again.values()
    )


def test_crash_reruns_0_never_runs_a_host_twice() -> None:
    result = pool(hosts=12, num_workers=3, chunk_size=1, num_procs=1, crash_reruns=0).run(
        task=_crash_in_a_thread
    )
    assert sorted(result.failed_hosts) == ["dev3", "dev4", "dev5"]
    assert all(attempts_of(m)[0] == 1 for m in result.values())
    assert str(result["dev3"][0].exception).endswith(
        "; a host in flight runs again at most 0 times (crash_reruns)"
    )


@pytest.mark.parametrize("runner_class", [ProcessPoolRunner, DaskRunner])
def test_num_procs_is_capped_with_a_warning(runner_class: type) -> None:
    """One cap for both runners that start worker processes here, said at the user's line."""
    ceiling = MAX_PROCS_PER_CPU * (os.cpu_count() or 1)
    with pytest.warns(RuntimeWarning, match=rf"num_procs 1000000 capped at {ceiling} ") as said:
        runner = runner_class(num_procs=1_000_000)
    assert runner.num_procs == ceiling
    assert [warning.filename for warning in said] == [__file__]


def test_a_run_starts_no_more_workers_than_the_cap(recwarn: pytest.WarningsRecorder) -> None:
    result = pool(hosts=64, num_workers=1, num_procs=1_000_000).run(
        task=_pid_after, seconds=0.05
    )
    assert not result.failed
    assert len({multi.result for multi in result.values()}) <= MAX_PROCS_PER_CPU * (
        os.cpu_count() or 1
    )
    assert [str(w.message).split(":")[0] for w in recwarn] == ["processpool runner"]


def _pid_after(task: Task, seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


def _stuck_on_dev3(task: Task) -> str:
    time.sleep(30 if task.host.name == "dev3" else 0.2)  # dev3: a device that hangs
    return task.host.name


def _fork_server_processes() -> set[int]:
    """Every process running the fork server's command in this process group: the fork servers
    and their workers (orphaned ones too), not those of other test runs on the machine."""
    found = set()
    group = os.getpgrp()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if b"nornir_bench.runners.processpool.forkserver" in f.read():
                        if os.getpgid(int(entry)) == group:
                            found.add(int(entry))
            except (OSError, ProcessLookupError):
                continue
    return found


def _parent_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except OSError:
        return None


def _kill_the_fork_server_once_it_has_workers(parent: int) -> None:
    """SIGKILL this process's fork server, as the OOM killer might, once it has forked."""
    deadline = time.monotonic() + HANG_GUARD
    while time.monotonic() < deadline:
        running = _fork_server_processes()
        servers = {pid for pid in running if _parent_of(pid) == parent}
        if any(_parent_of(pid) in servers for pid in running):
            time.sleep(0.3)  # the workers are running hosts, dev3 among them
            for pid in servers:
                os.kill(pid, signal.SIGKILL)
            return
        time.sleep(0.01)


def test_a_dead_fork_server_takes_its_workers_along_and_the_run_goes_on() -> None:
    """Once, workers outlived a fork server that was killed: the pool could no longer kill
    them, and one stuck in a blocking call was left running after the run."""
    before = _fork_server_processes()
    timer = threading.Thread(
        target=_kill_the_fork_server_once_it_has_workers, args=(os.getpid(),), daemon=True
    )
    timer.start()
    try:
        result = pool(hosts=24, num_workers=4, chunk_size=1, task_timeout=1).run(
            task=_stuck_on_dev3
        )
        left = _fork_server_processes() - before
    finally:
        timer.join(HANG_GUARD)
        for pid in _fork_server_processes() - before:
            os.kill(pid, signal.SIGKILL)
    assert left == set(), "processes of the pool left running after the run"
    assert len(result) == 24
    assert sorted(result.failed_hosts) == ["dev3"]
    assert isinstance(result["dev3"][0].exception, TaskTimeout)


class _CtrlCAtFirstCompletion(NoOpProcessor):
    """Presses Ctrl-C (SIGINT to this process) from the first host's completion hook: in the
    middle of the pool storing a batch of results."""

    def __init__(self) -> None:
        self.completed: list[str] = []

    def task_instance_completed(self, task: Task, host: Any, result: Any) -> None:
        self.completed.append(host.name)
        if len(self.completed) == 1:
            os.kill(os.getpid(), signal.SIGINT)


def test_ctrl_c_while_results_are_stored_keeps_every_host_it_reported() -> None:
    """Ctrl-C landing while the pool stored a batch of results could drop the host being
    stored, and the rest of its batch: the user's processors had seen it finish, the result
    had not."""
    hooks = _CtrlCAtFirstCompletion()
    nr = pool(hosts=40, num_procs=1, num_workers=40).with_processors([hooks])
    with pytest.raises(RunInterrupted) as caught:
        nr.run(task=tasksets.hello)
    assert hooks.completed, "no host completed"
    assert set(hooks.completed) <= set(caught.value.result), "a completed host was dropped"


def naps_and_says_where(task: Task, seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


def test_runs_from_two_threads_at_once_each_get_workers(tmp_path: Path) -> None:
    """The kept workers serve one run at a time: a run started meanwhile, from another thread,
    gets workers of its own, stopped when it ends."""
    nr = pool(hosts=8, num_procs=1)
    nr.run(task=tasksets.hello)
    kept = nr.runner.worker_pids
    results: dict[str, Any] = {}

    def run(name: str) -> None:
        results[name] = nr.run(task=naps_and_says_where, seconds=0.3)

    threads = [threading.Thread(target=run, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert all(not result.failed for result in results.values())
    used = {frozenset(multi.result for multi in result.values()) for result in results.values()}
    assert frozenset(kept) in used and len(used) == 2  # one run on the kept worker, one not
    assert nr.runner.worker_pids == kept
    nr.runner.close()
    assert nr.runner.worker_pids == []


def test_a_host_whose_data_cannot_be_sent_fails_alone() -> None:
    nr = pool(hosts=6)
    with socket.socket() as sock:
        nr.inventory.hosts["dev3"].data["session"] = sock
        result = nr.run(task=tasksets.hello)
    nr.runner.close()
    assert sorted(result.failed_hosts) == ["dev3"]
    exc = result["dev3"][0].exception
    assert isinstance(exc, ValueError)
    assert str(exc).startswith(
        "processpool runner: host dev3's inventory cannot be sent to its worker: TypeError"
    )
    assert result["dev2"].result == "hello from dev2"


def _sleeps(task: Task) -> int:
    time.sleep(0.05)
    return threading.active_count()


def test_a_kept_worker_stops_the_runs_threads_when_the_run_ends() -> None:
    """Once, a kept worker held the run's thread pool (a thread per host in flight of a
    blocking task) until the next run, in a long-lived process for as long as it lived."""
    import psutil

    nr = pool(hosts=40, num_workers=40, num_procs=1)
    try:
        result = nr.run(task=_sleeps)
        assert not result.failed and max(m.result for m in result.values()) > 20
        (pid,) = nr.runner.worker_pids
        wait_until(lambda: psutil.Process(pid).num_threads() <= 5, "the run's threads ending")
        assert not nr.run(task=_sleeps).failed  # the next run loads the run again
    finally:
        nr.runner.close()
