"""A pytest plugin: nornir's own tests, unedited, on the runner ``NORNIR_SUITE_RUNNER`` names.

Loaded by run.py (``-p runner_swap``) into one pytest session per runner. ``nornir`` leaves
nornir's tests as they are (the control). Any other runner is swapped in at the two places
nornir's tests choose one: the runner of the session's ``nornir`` fixture, and each
``SerialRunner()`` or ``ThreadedRunner(num_workers=N)`` a test module builds. A test whose
``Nornir.run`` ran on any other runner fails, and so does one that leaves threads running;
the session, if processes of its runner are left once it is closed. With
``NORNIR_SUITE_REPORT`` set, each test's outcome is written there as JSON, by its id in
nornir's ``tests`` folder.
"""

from __future__ import annotations

import gc
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from nornir.core import Nornir
from nornir.core.plugins.runners import RunnerPlugin, RunnersPluginRegister
from nornir.plugins import runners as nornir_runners

ENV = "NORNIR_SUITE_RUNNER"
CONTROL = "nornir"
"""The name under which nornir's tests run as nornir runs them, nothing swapped."""
PROCESSES = 2
"""processpool's ``num_procs``, and the workers of dask's cluster: more than one process."""

PROCESS_WIDE_THREADS = ("Dask-Callback-Thread",)
"""Threads a library keeps for the process's life once started: Dask's client runs its
futures' callbacks in one thread of a process-wide pool."""

WARNINGS = {
    # Its cleanup takes the handlers InitNornir gave nornir's logger off without closing them.
    "core/test_InitNornir.py::TestLogging::": "ignore:unclosed file:ResourceWarning",
}
"""Start of a test's id -> a warning filter for those tests (every other warning is an error)."""



def _runner_named() -> str:
    name = os.environ.get(ENV)
    if name is None:
        raise pytest.UsageError(f"runner_swap: set {ENV} to the runner to swap in, or {CONTROL}")
    return name


RUNNER = _runner_named()


def test_id(item: pytest.Item) -> str:
    """The test's id from nornir's ``tests`` folder: ``core/test_tasks.py::Test::test_task``."""
    path = item.path.relative_to(item.config.rootpath / "tests").as_posix()
    cls = getattr(item, "cls", None)
    name = getattr(item, "originalname", item.name)
    return "::".join([path, *([cls.__name__] if cls else []), name])


IDS: dict[str, str] = {}
"""pytest's node id -> :func:`test_id`, of every test collected."""
OUTCOMES: dict[str, dict[str, str]] = {}
"""What :func:`pytest_sessionfinish` writes: test id -> its outcome, and a failure's message."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        IDS[item.nodeid] = test_id(item)
        for start, rule in WARNINGS.items():
            if IDS[item.nodeid].startswith(start):
                item.add_marker(pytest.mark.filterwarnings(rule))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """A test failed if any of its phases did; else it passed if it ran, or was skipped."""
    seen = OUTCOMES.setdefault(IDS.get(report.nodeid, report.nodeid), {"outcome": "skipped"})
    if seen["outcome"] == "failed":
        return
    if report.failed:
        crash = getattr(report.longrepr, "reprcrash", None)
        message = crash.message if crash is not None else str(report.longrepr)
        seen.update(outcome="failed", message=f"{report.when}: {message}")
    elif report.when == "call":
        seen["outcome"] = "skipped" if report.skipped else "passed"


def pytest_collectreport(report: pytest.CollectReport) -> None:
    """A module that cannot be collected counts as one failed test."""
    if report.failed:
        OUTCOMES[report.nodeid] = {"outcome": "failed", "message": str(report.longrepr)}


def pytest_sessionfinish() -> None:
    path = os.environ.get("NORNIR_SUITE_REPORT")
    if path:
        Path(path).write_text(json.dumps(OUTCOMES, indent=1), encoding="utf-8")


def build(name: str, in_flight: int | None = None) -> RunnerPlugin:
    """The runner plugin ``name`` with ``in_flight`` hosts at once (``None``: its default),
    loaded by name as ``InitNornir`` loads it."""
    RunnersPluginRegister.auto_register()
    plugin = RunnersPluginRegister.get_plugin(name)
    options: dict[str, Any] = {}
    if name == "dask":
        # A cluster of the session's, by address, as a fleet's runner reaches one: an embedded
        # cluster per runner would add its start to each of nornir's timed tests. Its
        # num_workers is per worker: one worker for one host at a time.
        workers = PROCESSES if in_flight is None else min(PROCESSES, in_flight)
        options["address"] = _dask_address(workers)
        if in_flight is not None:
            options["num_workers"] = math.ceil(in_flight / workers)
        return plugin(**options)
    if name == "processpool":
        # Its num_workers is per process: as many hosts in flight in all, over up to 2 processes.
        procs = PROCESSES if in_flight is None else min(PROCESSES, in_flight)
        options["num_procs"] = procs
        if in_flight is not None:
            options["num_workers"] = math.ceil(in_flight / procs)
    elif in_flight is not None:
        options["num_workers"] = in_flight
    return plugin(**options)


_DASK: dict[int, tuple[str, list[subprocess.Popen[bytes]]]] = {}
"""The session's Dask clusters by their number of workers (one for the serial stand-in):
each a scheduler and its workers started with Dask's command-line tools on loopback."""


def _dask_address(workers: int) -> str:
    if workers not in _DASK:
        folder = Path(tempfile.mkdtemp(prefix="nornir-suite-dask-"))
        file = folder / "scheduler.json"
        started = [subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
             "--port", "0", "--no-dashboard", "--scheduler-file", str(file)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
        started.append(subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_worker", "--scheduler-file",
             str(file), "--nworkers", str(workers), "--nthreads", "1", "--host", "127.0.0.1",
             "--no-dashboard"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        _DASK[workers] = ("", started)
        ends = time.monotonic() + 60
        while not file.exists() and time.monotonic() < ends:
            time.sleep(0.05)
        address = json.loads(file.read_text())["address"]
        from distributed import Client

        with Client(address, timeout=60, set_as_default=False) as client:
            client.wait_for_workers(workers, timeout=60)
        _DASK[workers] = (address, started)
        shutil.rmtree(folder, ignore_errors=True)
    return _DASK[workers][0]


def _stop_dask() -> None:
    for _, started in _DASK.values():
        for process in reversed(started):
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    _DASK.clear()


def close(runner: object) -> None:
    closer = getattr(runner, "close", None)  # ours keep workers or a loop; nornir's keep nothing
    if closer is not None:
        closer()


def descendants() -> set[int]:
    """This process's children, theirs, and so on (processpool's fork server and workers)."""
    found: set[int] = set()
    parents = [os.getpid()]
    while parents:
        parent = parents.pop()
        for children in Path(f"/proc/{parent}/task").glob("*/children"):
            try:
                pids = {int(pid) for pid in children.read_text().split()} - found
            except OSError:  # the thread ended
                continue
            found |= pids
            parents += pids
    return found


def _warm_up(runner: RunnerPlugin) -> None:
    """One run of one host: what the runner keeps for the session (dask's client and its
    threads) is there before the first test counts its threads."""
    from nornir.core.inventory import Defaults, Groups, Host, Hosts, Inventory

    hosts = Hosts({"warm-up": Host("warm-up")})
    inventory = Inventory(hosts=hosts, groups=Groups(), defaults=Defaults())
    Nornir(inventory=inventory, runner=runner).run(task=_nothing)


def _nothing(task: Any) -> None:
    pass


@pytest.fixture(scope="session")
def session_runner() -> Iterator[RunnerPlugin | None]:
    """The runner swapped into the session's ``nornir`` fixture (``None`` for the control),
    closed at the end, when nothing it started may be left."""
    if RUNNER == CONTROL:
        yield None
        return
    processes = descendants()
    runner = build(RUNNER)
    _warm_up(runner)
    if RUNNER == "dask":
        _dask_address(1)  # the serial stand-in's, started before any test times a run
    yield runner
    close(runner)
    del runner
    _stop_dask()
    gc.collect()
    assert descendants() - processes == set(), f"{RUNNER}: processes left running"


class Swap:
    """One test's swap: stand-ins for the runner classes its module builds, and the runs seen."""

    def __init__(self, name: str, kind: type) -> None:
        self.name = name
        self.kind = kind
        self.made: list[RunnerPlugin] = []
        self.ran_on: list[type] = []

    def make(self, in_flight: int) -> RunnerPlugin:
        runner = build(self.name, in_flight)
        self.made.append(runner)
        return runner

    def serial_runner(self) -> RunnerPlugin:
        """Stands in for ``nornir.plugins.runners.SerialRunner()``: one host at a time."""
        return self.make(1)

    def threaded_runner(self, num_workers: int = 20) -> RunnerPlugin:
        """Stands in for ``nornir.plugins.runners.ThreadedRunner(num_workers)``."""
        return self.make(num_workers)

    def recording(self, run: Callable[..., Any]) -> Callable[..., Any]:
        def recorded(nr: Nornir, *args: Any, **kwargs: Any) -> Any:
            self.ran_on.append(type(nr.runner))
            return run(nr, *args, **kwargs)

        return recorded


@pytest.fixture(autouse=True)
def runner_swapped_in(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    runner = request.getfixturevalue("session_runner")
    threads = set(threading.enumerate())
    if runner is None:
        yield
    else:
        swap = Swap(RUNNER, type(runner))
        # The session's Nornir, built by nornir's conftest on a runner of its own; ``_runner``
        # is what ``with_runner`` sets (``runner`` is a read-only property).
        monkeypatch.setattr(request.getfixturevalue("nornir"), "_runner", runner)
        stand_ins = {
            "SerialRunner": (nornir_runners.SerialRunner, swap.serial_runner),
            "ThreadedRunner": (nornir_runners.ThreadedRunner, swap.threaded_runner),
        }
        for name, (original, stand_in) in stand_ins.items():
            if getattr(request.module, name, None) is original:
                monkeypatch.setattr(request.module, name, stand_in)
        monkeypatch.setattr(Nornir, "run", swap.recording(Nornir.run))
        try:
            yield
        finally:
            for made in swap.made:
                close(made)
        others = sorted({kind.__qualname__ for kind in swap.ran_on if kind is not swap.kind})
        assert not others, f"nr.run ran on {others}, not on the swapped-in {RUNNER} runner"
    # not is_alive(): a thread that CPython wrongly marked dead is still enumerated (gh-90882)
    left = {t for t in set(threading.enumerate()) - threads
            if not t.name.startswith(PROCESS_WIDE_THREADS)}
    assert not left, f"threads left running: {left}"
