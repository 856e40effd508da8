"""Shared helpers: nornir objects on the synthetic inventory, result comparison, hook recording."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from nornir import InitNornir
from nornir.core import Nornir
from nornir.core.inventory import Host
from nornir.core.task import AggregatedResult, MultiResult, Task

from tests.waiting import HANG_GUARD

# Real device peers on loopback (FakeNOS lab, RTT server), shared by every test folder: one lab
# per session; real FRR routers (as root), one lab per module that uses them.
pytest_plugins = ["tests.devices", "tests.routers"]


def pytest_configure(config: pytest.Config) -> None:
    """Deliver Ctrl-C to the tests and the processes they start.

    A shell starts a background job (``bash .ci/run &``, ``nohup``) with SIGINT ignored, and an
    ignored signal stays ignored across ``exec``: the tests that press Ctrl-C would press it
    for nothing. A handler (unlike an ignored signal) is reset to the default at ``exec``.
    """
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def records_state_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test's default records folder is its own: a run without ``--output`` writes into
    ``$XDG_STATE_HOME`` (else the real home), which a test must never touch. Processes the
    test starts inherit it."""
    state = tmp_path / "xdg-state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    return state / "nornir-bench" / "records"


@pytest.fixture(scope="session", autouse=True)
def no_router_lab_left() -> Iterator[None]:
    """Fails the session if a router lab one of its tests started left anything on the
    machine (a namespace, an FRR daemon, its SSH server or a session, its user ...): those
    outlive the tests, and the next lab of the name would have to clean them up."""
    from tests.routers import session_lab_leftovers  # a plugin: imported once pytest has it

    yield
    left = session_lab_leftovers()
    assert not left, "router labs left:\n" + "\n".join(left)


# Separates what the code printed from the list of modules.
_MODULES_FOLLOW = "-- modules --"


def modules_after(code: str) -> set[str]:
    """Every module in a fresh interpreter's ``sys.modules`` once it has run ``code``."""
    done = subprocess.run(
        [sys.executable, "-c",
         f"{code}\nimport sys\nprint({_MODULES_FOLLOW!r}, *sorted(sys.modules))"],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split(_MODULES_FOLLOW)[-1].split())


def imported_by(code: str) -> list[str]:
    """The nornir_bench modules a fresh interpreter has imported after running ``code``."""
    return sorted(name for name in modules_after(code) if name.startswith("nornir_bench"))


def make_nornir(runner: str = "threadpool", hosts: int = 20, **options: Any) -> Nornir:
    """A Nornir on ``hosts`` synthetic hosts with the named runner plugin."""
    return InitNornir(
        inventory={"plugin": "synthetic", "options": {"hosts": hosts, "groups": 2}},
        runner={"plugin": runner, "options": options},
        logging={"enabled": False},
    )


def result_view(multi: MultiResult) -> list[tuple[Any, ...]]:
    """What a user can see of a host's results, comparable across runs and runners."""
    return [
        (
            r.name,
            r.host.name if r.host else None,
            r.result if r.exception is None else type(r.exception).__name__,
            r.failed,
            r.changed,
            r.diff,
            r.severity_level,
            type(r.exception).__name__ if r.exception else None,
        )
        for r in multi
    ]


def aggregated_view(result: AggregatedResult) -> tuple[str, list[tuple[str, Any]]]:
    return result.name, [(host, result_view(multi)) for host, multi in result.items()]


class Recorder:
    """A processor that records every hook call as (hook, task name, host name)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str | None]] = []
        self._lock = threading.Lock()

    def _add(self, hook: str, task: Task, host: Host | None) -> None:
        with self._lock:
            self.events.append((hook, task.name, host.name if host else None))

    def task_started(self, task: Task) -> None:
        self._add("task_started", task, None)

    def task_completed(self, task: Task, result: AggregatedResult) -> None:
        self._add("task_completed", task, None)

    def task_instance_started(self, task: Task, host: Host) -> None:
        self._add("task_instance_started", task, host)

    def task_instance_completed(self, task: Task, host: Host, result: MultiResult) -> None:
        self._add("task_instance_completed", task, host)

    def subtask_instance_started(self, task: Task, host: Host) -> None:
        self._add("subtask_instance_started", task, host)

    def subtask_instance_completed(self, task: Task, host: Host, result: MultiResult) -> None:
        self._add("subtask_instance_completed", task, host)

    def per_host(self) -> dict[str | None, list[tuple[str, str]]]:
        """Events grouped by host, each host's in the order they happened."""
        out: dict[str | None, list[tuple[str, str]]] = {}
        for hook, task, host in self.events:
            out.setdefault(host, []).append((hook, task))
        return out


@pytest.fixture
def no_leaked_threads() -> Iterator[None]:
    """Fails the test if it leaves threads running."""
    before = set(threading.enumerate())
    yield

    def left() -> list[threading.Thread]:
        return [
            t
            for t in threading.enumerate()
            if t not in before and t.is_alive() and not t.name.startswith(_PROCESS_WIDE_THREADS)
        ]

    if left():  # a runner the test no longer holds keeps them until it is collected
        gc.collect()  # collected runners' threads end as they see their close
        ends = time.monotonic() + HANG_GUARD
        while left() and time.monotonic() < ends:
            time.sleep(0.01)
    assert not left(), f"threads left running: {left()}"


# Threads a library keeps for the process's life, once started: Dask's client runs the
# callbacks of its futures in one thread of a process-wide pool.
_PROCESS_WIDE_THREADS = ("Dask-Callback-Thread",)


def descendant_pids() -> set[int]:
    """This process's children, theirs, and so on (read from /proc: no helper library needed).

    processpool's fork server is a child; its workers are the fork server's children.
    """
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(entry)] = int(fields[1])
    found, frontier = set(), {os.getpid()}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


@pytest.fixture
def no_leaked_processes() -> Iterator[None]:
    """Fails the test if it leaves processes running (a runner's workers, say).

    A processpool runner keeps its workers between runs, until it is closed or garbage-collected:
    the collection here stops those of the runners the test no longer holds.
    """
    before = descendant_pids()
    yield
    if descendant_pids() - before:  # only then: a full collection costs tens of ms
        gc.collect()
    assert descendant_pids() - before == set(), "worker processes left running"
