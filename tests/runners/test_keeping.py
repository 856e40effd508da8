"""What a runner keeps between runs (the asyncio runner's event loop, processpool's workers,
dask's cluster) under one rule (runners/_keeper.py): one run at a time has it, a run from
another thread at once gets a private one, closed as it ends; ``close()`` while a run has it
closes it as that run ends; and ``with runner:`` closes it.

Two runs are shown to be in flight at once by a meeting: each host of one run waits (bounded)
until a host of the other has started, wherever they run (files in the test's folder).
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from nornir.core import Nornir
from nornir.core.task import AggregatedResult, Task

from tests.conftest import descendant_pids, make_nornir
from tests.dask_cluster import SharedClusterOptions
from tests.waiting import HANG_GUARD, wait_until

pytestmark = pytest.mark.usefixtures("no_leaked_threads", "no_leaked_processes")

HOSTS = 4

# The runners that keep something between runs, and what they run on here.
KEEPING: dict[str, Callable[[], dict[str, Any]]] = {
    "asyncio": dict,
    "processpool": lambda: {"num_procs": 1},
    "dask": lambda: dict(SharedClusterOptions()),
}


def nornir(name: str) -> Nornir:
    return make_nornir(name, hosts=HOSTS, num_workers=HOSTS, **KEEPING[name]())


def keeps(name: str, runner: Any) -> bool:
    """Whether ``runner`` keeps something now (private: read to decide, nothing else)."""
    kept = runner._keeper.kept
    if name == "asyncio":
        return kept.loop is not None
    if name == "processpool":
        return kept.forks is not None or bool(kept.workers)
    return kept.client is not None


class Held:
    """An async connection (as an asyncssh session): the asyncio runner keeps its loop while a
    host holds one; a worker keeps it for the host."""

    def __init__(self) -> None:
        self.connection = object()

    async def aclose(self) -> None:
        pass

    def close(self) -> None:
        pass


async def meets(task: Task, folder: str, run: str, waits_for: str, keep: bool = False) -> str:
    """Says this host started (``folder/RUN-HOST``), then waits until a file matching
    ``waits_for`` is there; says which run, which process and which loop it ran on."""
    if keep:
        task.host.connections["held"] = Held()  # type: ignore[assignment]
    here = Path(folder)
    (here / f"{run}-{task.host.name}").touch()
    for _ in range(int(HANG_GUARD / 0.01)):
        if any(here.glob(waits_for)):
            return f"{run} {os.getpid()} {id(asyncio.get_running_loop())}"
        await asyncio.sleep(0.01)
    raise TimeoutError(f"{task.host.name} of run {run}: nothing matched {waits_for}")


def in_thread(call: Callable[[], AggregatedResult]) -> tuple[threading.Thread, list[Any]]:
    """``call`` started in a thread of its own; what it returned (or raised), once joined."""
    out: list[Any] = []

    def target() -> None:
        try:
            out.append(call())
        except BaseException as exc:  # noqa: BLE001 - said by the test's assert
            out.append(exc)

    thread = threading.Thread(target=target, name="test-run")
    thread.start()
    return thread, out


def whole(result: Any, run: str) -> set[tuple[str, str]]:
    """Each host's (process, loop) in ``result``, once checked whole: every host, none failed,
    each ran in ``run``."""
    assert isinstance(result, AggregatedResult), result
    assert sorted(result) == [f"dev{i}" for i in range(HOSTS)]
    assert not result.failed, {n: m[0].exception for n, m in result.failed_hosts.items()}
    said = [multi.result.split() for multi in result.values()]
    assert {words[0] for words in said} == {run}
    return {(pid, loop) for _, pid, loop in said}


@pytest.mark.parametrize("name", list(KEEPING))
def test_two_threads_running_one_runner_at_once_both_finish_whole_and_leave_nothing(
    name: str, tmp_path: Path
) -> None:
    """The rule for two threads at once: the kept one for one run, a private one for the
    other, both in flight together (neither waits for the other: once, dask's second run
    waited for the first), each result whole, the private one closed as its run ends."""
    nr = nornir(name)
    try:
        assert not nr.run(task=meets, folder=str(tmp_path), run="w", waits_for="w-*").failed
        processes, threads = descendant_pids(), set(threading.enumerate())
        runs = {
            run: in_thread(lambda run=run, other=other: nr.run(  # type: ignore[misc]
                task=meets, folder=str(tmp_path), run=run, waits_for=f"{other}-*"))
            for run, other in (("a", "b"), ("b", "a"))
        }
        for thread, _ in runs.values():
            thread.join(HANG_GUARD * 2)
        (a,), (b,) = (out for _, out in runs.values())
        on_a, on_b = whole(a, "a"), whole(b, "b")
        if name == "asyncio":  # each run on a loop: two loops
            assert {loop for _, loop in on_a}.isdisjoint(loop for _, loop in on_b)
        if name == "processpool":  # each run on workers: two sets of processes
            assert {pid for pid, _ in on_a}.isdisjoint(pid for pid, _ in on_b)
        # the private one closed: only what the runner kept is left
        wait_until(lambda: descendant_pids() == processes, "the private workers ending")
        wait_until(lambda: set(threading.enumerate()) <= threads, "the private one's threads")
    finally:
        nr.runner.close()
    assert not keeps(name, nr.runner)


@pytest.mark.parametrize("name", list(KEEPING))
def test_a_close_while_a_run_uses_what_is_kept_closes_it_as_the_run_ends(
    name: str, tmp_path: Path
) -> None:
    """Once, processpool's close() stopped the workers under another thread's run, the asyncio
    runner's did nothing (the loop and its connections stayed), and dask's waited for the run
    to end."""
    nr = nornir(name)
    release = tmp_path / "release"
    thread, out = in_thread(lambda: nr.run(
        task=meets, folder=str(tmp_path), run="a", waits_for=release.name, keep=True))
    try:
        wait_until(lambda: len(list(tmp_path.glob("a-*"))) == HOSTS, "every host started")
        closer = threading.Thread(target=nr.runner.close, name="test-closer")
        closer.start()
        closer.join(HANG_GUARD)
        closed_at_once = not closer.is_alive()
    finally:
        release.touch()
        thread.join(HANG_GUARD)
    (result,) = out
    whole(result, "a")
    assert closed_at_once
    assert not keeps(name, nr.runner)  # closed as the run gave it back, connections and all
    assert not any(host.connections for host in nr.inventory.hosts.values())


@pytest.mark.parametrize("name", list(KEEPING))
def test_a_runner_that_keeps_something_is_a_context_manager(name: str, tmp_path: Path) -> None:
    nr = nornir(name)
    processes = descendant_pids()
    with nr.runner as runner:
        assert runner is nr.runner
        result = nr.run(task=meets, folder=str(tmp_path), run="a", waits_for="a-*", keep=True)
        whole(result, "a")
        assert keeps(name, runner)
    assert not keeps(name, runner)
    assert not any(host.connections for host in nr.inventory.hosts.values())
    assert descendant_pids() == processes
