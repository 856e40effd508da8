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
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest
from nornir import InitNornir
from nornir.core import Nornir
from nornir.core.inventory import Host
from nornir.core.task import AggregatedResult, MultiResult, Task

from nornir_bench.core.library_warnings import filterwarnings_lines
from tests.waiting import HANG_GUARD

# Real device peers on loopback (FakeNOS lab, RTT server), real FRR routers and NETCONF servers
# (as root), shared
# by every test folder: one lab of each kind per session (per xdist worker), made when a test
# first asks for it.
pytest_plugins = ["tests.devices", "tests.routers", "tests.netconf_lab"]


# The modules of the ``test`` extra the tests import, by the extra's names for them: a missing
# one fails the run at once, where tests would otherwise skip or drop cases and pass.
TEST_DEPENDENCIES = {
    "uvloop": "uvloop",
    "nornir_netmiko": "nornir-netmiko",
    "scrapli": "scrapli",
    "matplotlib": "matplotlib",
    "distributed": "dask[distributed]",
    "fakenos": "fakenos",
    "textfsm": "textfsm",
    "ntc_templates": "ntc-templates",
    "ncclient": "ncclient",
    "scrapli_netconf": "scrapli-netconf",
    "xmltodict": "xmltodict",
    "mypy": "mypy",
    "importlinter": "import-linter",
    "xdist": "pytest-xdist",
}


def missing_test_dependencies() -> list[str]:
    """The ``test`` extra's packages this interpreter cannot import."""
    return [name for module, name in TEST_DEPENDENCIES.items() if find_spec(module) is None]


def pytest_configure(config: pytest.Config) -> None:
    """Refuse to run without the ``test`` extra; deliver Ctrl-C to the tests and the processes
    they start.

    A shell starts a background job (``bash .ci/run &``, ``nohup``) with SIGINT ignored, and an
    ignored signal stays ignored across ``exec``: the tests that press Ctrl-C would press it
    for nothing. A handler (unlike an ignored signal) is reset to the default at ``exec``.
    """
    missing = missing_test_dependencies()
    if missing:
        pytest.exit(
            f"missing test dependencies: {', '.join(missing)}; install them with "
            'python3 -m pip install -e ".[test]"',
            returncode=pytest.ExitCode.USAGE_ERROR,
        )
    # A library's deprecation of its own code is not a failure of ours (docs/testing.md).
    for line in filterwarnings_lines():
        config.addinivalue_line("filterwarnings", line)
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if hasattr(config, "workerinput") and os.getpgrp() != os.getpid():
        # Each of pytest-xdist's processes a process group of its own: a test that looks for
        # its processes by group (tests/runners/test_processpool.py) sees no other's. (Its
        # environment names a worker in a pytest a test started too: not that.)
        os.setpgrp()


# Libraries a release of which can break the suite, beyond the package's own requirements:
# the SSH stack under the device libraries.
SSH_STACK = ("cryptography", "paramiko", "asyncssh")


def dependency_versions() -> str:
    """The installed version of each requirement of the package and its ``test`` extra, and
    of the SSH stack: a suite that a new release broke names the release."""
    from importlib.metadata import PackageNotFoundError, requires, version

    from packaging.requirements import Requirement

    requirements = [Requirement(text) for text in requires("nornir-bench") or ()]

    def wanted(requirement: Requirement, extras: set[str]) -> bool:
        marker = requirement.marker
        return marker is None or any(marker.evaluate({"extra": e}) for e in extras)

    extras = {"test"}  # and the extras it names (nornir-bench[devices])
    for requirement in requirements:
        if requirement.name == "nornir-bench" and wanted(requirement, extras):
            extras |= requirement.extras
    names = dict.fromkeys(
        r.name for r in requirements if r.name != "nornir-bench" and wanted(r, extras)
    )
    names.update(dict.fromkeys(SSH_STACK))
    found = []
    for name in names:
        try:
            found.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            found.append(f"{name} (not installed)")
    return "dependencies: " + ", ".join(found)


def pytest_report_header(config: pytest.Config) -> str:
    return dependency_versions()


def pytest_terminal_summary(
    terminalreporter: Any, exitstatus: int, config: pytest.Config
) -> None:
    """The versions again below a failed suite's failures, where they are read."""
    if exitstatus != pytest.ExitCode.OK:
        terminalreporter.write_line(dependency_versions())


# What marks a test ``slow`` (``pytest -m "not slow"`` leaves it out of the inner loop): it
# needs processes, clusters, labs or signals of its own. A module whose tests all do:
SLOW_MODULES = {
    "tests/bench/test_sweep.py",  # a benchmark process per point
    "tests/cli/test_advise_routers.py",  # a router lab
    "tests/cli/test_devices.py",  # a FakeNOS lab, jobs in processes
    "tests/cli/test_script.py",  # script.py in processes, Ctrl-C to process groups
    "tests/core/test_gc.py",  # many runs, measured in processes
    "tests/core/test_open_files.py",  # processes under a lowered open-files limit
    "tests/core/test_stopping.py",  # signals to commands
    "tests/lab/test_emulator.py",  # FakeNOS labs
    "tests/lab/test_labs.py",  # labs of its own, their owners killed
    "tests/lab/test_routers.py",  # router labs
    "tests/report/test_page.py",  # a headless browser
    "tests/runners/test_config_routers.py",  # router labs
    "tests/runners/test_connections.py",  # worker processes killed between runs
    "tests/runners/test_dask.py",  # Dask clusters of its own
    "tests/runners/test_dask_lifetime.py",  # Dask clusters of its own, killed
    "tests/runners/test_processpool.py",  # worker processes, crashed on purpose
    "tests/runners/test_routers.py",  # router labs
    "tests/tasks/checks/test_commands.py",  # FakeNOS devices restarted
    "tests/tasks/sessions/test_scrapli_session.py",  # FakeNOS devices restarted
    "tests/test_examples.py",  # the README's lab, in processes
    "tests/test_scripts.py",  # the benchmark scripts
    "tests/test_typing.py",  # mypy over the package
}
# Runners whose hosts run in processes of their own, in any test parametrized with them; and
# the asyncio runner on uvloop, which doubles its cases (tests/runners/test_conformance.py ids).
SLOW_RUNNERS = {"processpool", "dask", "asyncio-uvloop"}
# Fixtures that start labs or clusters.
SLOW_FIXTURES = {
    "fakenos_lab", "frr_lab", "throttling_lab", "bastion_lab", "session_labs", "corpus_lab",
    "sites_cluster", "netconf_lab",
}


def _runs_on_a_slow_runner(item: pytest.Item) -> bool:
    params = getattr(item, "callspec", None)
    values = params.params.values() if params is not None else ()
    names = (getattr(value, "id", getattr(value, "name", value)) for value in values)
    return any(isinstance(name, str) and name in SLOW_RUNNERS for name in names)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = Path(__file__).resolve().parents[1]
    for item in items:
        module = Path(str(item.fspath)).resolve().relative_to(root).as_posix()
        if (
            module in SLOW_MODULES
            or SLOW_FIXTURES & set(getattr(item, "fixturenames", ()))
            or _runs_on_a_slow_runner(item)
            or item.get_closest_marker("slow") is not None
        ):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def records_state_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test's default records folder is its own: a run without ``--output`` writes into
    ``$XDG_STATE_HOME`` (else the real home), which a test must never touch. Processes the
    test starts inherit it."""
    state = tmp_path / "xdg-state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    return state / "nornir-bench" / "records"


@pytest.fixture(scope="session", autouse=True)
def home_of_its_own(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The session's ``$HOME`` is a folder of its own: SSH logins read ``~/.ssh/known_hosts``
    (tasks/sessions/host_keys.py), and ``accept-new`` writes there, which a test must never do
    to the real one. Processes the tests start inherit it."""
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(home))
        yield home


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
            if t not in before
            and t.is_alive()
            and not t.name.startswith(PROCESS_WIDE_THREADS)
            and not _paramikos_handshake_timer(t)
        ]

    if left():  # a runner the test no longer holds keeps them until it is collected
        gc.collect()  # collected runners' threads end as they see their close
        ends = time.monotonic() + HANG_GUARD
        while left() and time.monotonic() < ends:
            time.sleep(0.01)
    assert not left(), f"threads left running: {left()}"


# Threads a library keeps for the process's life, once started: Dask's client runs the
# callbacks of its futures in one thread of a process-wide pool.
PROCESS_WIDE_THREADS = ("Dask-Callback-Thread",)


def _paramikos_handshake_timer(thread: threading.Thread) -> bool:
    """paramiko's handshake timer (``Packetizer.start_handshake``, 15 s), left by a login the
    server dropped: a bounded daemon timer of the library's, which netmiko gives no handle to
    cancel (its constructor raises before returning the connection)."""
    owner = getattr(getattr(thread, "function", None), "__self__", None)
    return isinstance(thread, threading.Timer) and type(owner).__module__ == "paramiko.packet"


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
    from tests.dask_cluster import shared_pids
    from tests.routers import session_lab_pids

    # the shared Dask cluster's and the session's router labs', and their children
    session_wide = shared_pids() | session_lab_pids()
    found, frontier = set(), {os.getpid()}
    while frontier:
        frontier = {p for p, parent in parents.items() if parent in frontier} - found
        frontier -= session_wide
        found |= frontier
    return found


@pytest.fixture(scope="session", autouse=True)
def shared_dask_cluster(request: pytest.FixtureRequest) -> Iterator[None]:
    """The session's shared Dask cluster (tests/dask_cluster.py): started before the first test
    when a test of the session may use it (one named for dask), so that what its first use
    starts in this process (Dask's I/O thread) is not a test's leak; stopped at the end."""
    from tests.dask_cluster import shared_address, stop_shared

    if any("dask" in item.nodeid for item in request.session.items):
        shared_address()
    yield
    gc.collect()  # runners not closed by their tests let go of the cluster first
    stop_shared()


@pytest.fixture
def no_leaked_processes() -> Iterator[None]:
    """Fails the test if it leaves processes running (a runner's workers, say).

    A processpool runner keeps its workers between runs, until it is closed or garbage-collected:
    the collection here stops those of the runners the test no longer holds. The module's kept
    runners (tests/kept_runners.py) keep theirs: their fork servers and the workers they hold
    now, no other process, and ``kept_runners_closed`` checks they are gone with the module.
    """
    from tests.kept_runners import KEPT

    before = descendant_pids()
    yield
    if descendant_pids() - before - KEPT.pids():  # only then: a full collection costs tens of ms
        gc.collect()
    assert descendant_pids() - before - KEPT.pids() == set(), "worker processes left running"


@pytest.fixture(autouse=True)
def kept_runners_hold_nothing_between_tests() -> Iterator[None]:
    """No connection a test's hosts opened in a kept runner's workers reaches the next test."""
    from tests.kept_runners import KEPT

    yield
    KEPT.between_tests()


@pytest.fixture(scope="module", autouse=True)
def kept_runners_closed() -> Iterator[None]:
    """The module's kept processpool runners (tests/kept_runners.py) closed as it ends, and
    every process they had gone: what ``no_leaked_processes`` let them keep, nothing kept."""
    from tests.kept_runners import KEPT

    yield
    had = KEPT.close()
    assert not had & descendant_pids(), "kept runners' processes left running"
