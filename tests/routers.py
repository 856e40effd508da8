"""Real FRR routers for tests, as root: fixtures over the package's router labs
(:mod:`nornir_bench.lab`), and helpers to drive and watch them.

Fixtures (registered for every test folder by tests/conftest.py), each a lab of the session's,
one per session (per xdist worker), made in the test's process by the first test that asks
for it (its guard process removes it if that process is killed) and removed at the session's
end; each yields a :class:`~nornir_bench.lab.RunningRouterLab`, put back to its baseline after
every test (:meth:`~nornir_bench.lab.RunningRouterLab.restore`: configurations, saved files,
stopped daemons, BGP). A test after which it cannot be put back fails at its teardown, naming
why, and the next test gets a new lab.

- ``frr_lab``: 3 FRR routers in a chain (r1 - r2 - r3, eBGP on each link), an inventory host on
  each (h1 on r1, h2 on r2, h3 on r3: each login costs CPU, and 2 cores are shared);
  ``restored``: their running configurations before the test;
- ``throttling_lab``: one router whose OpenSSH lets one login at a time through to
  authentication (``MaxStartups 1``), 30 inventory hosts on its port
  (:meth:`~nornir_bench.lab.RunningRouterLab.with_inventory` gives fewer);
- ``bastion_lab``: 2 routers reached only through a bastion on 127.0.0.1 (``--bastion``).

The command's own tests (its output, its signals, a lab killed) run ``nornir-bench lab
--routers`` in a subprocess: :func:`start_router_lab` / :func:`router_lab_process`, a
:class:`RouterLabProcess`. Helpers: :func:`skip_without_router_lab` (the one reason a test of
the lab is skipped), :func:`new_lab_name`, :func:`lab_leftovers` (what a lab left on the
machine), :func:`lab_pids` and :func:`guard_pid` (its processes), :func:`kill_lab` (SIGKILL),
:func:`wait_for` (a condition, a bounded number of times). A router stopped, killed or
interrupted mid-command: tests/router_faults.py.

Every lab a test starts is named by :func:`new_lab_name`: the session's end check
(tests/conftest.py) looks for what those names left, and for nothing of labs other sessions on
the same machine may be running.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest

from nornir_bench.lab import (
    LabError,
    LabNotRestored,
    RunningRouterLab,
    bastion_lab,
    lab_pids,
    router_lab,
    throttling_lab,
)
from nornir_bench.lab import new_lab_name as package_lab_name
from nornir_bench.lab._system import STATE_FOLDER
from nornir_bench.lab.running import live_processes
from tests.devices import LAB, Started, free_port_range, started, stopped
from tests.waiting import HANG_GUARD

__all__ = [
    "LAB_READY_TIMEOUT",
    "NEEDS_ROUTER_LAB",
    "STATE_FOLDER",
    "THROTTLING_HOSTS",
    "RouterLabProcess",
    "SessionLabs",
    "bastion_lab_fixture",
    "frr_lab",
    "guard_pid",
    "kill_lab",
    "lab_leftovers",
    "lab_pids",
    "new_lab_name",
    "restored",
    "router_lab_process",
    "router_lab_unavailable",
    "session_lab_leftovers",
    "session_lab_pids",
    "session_labs",
    "skip_without_router_lab",
    "start_router_lab",
    "throttling_lab_fixture",
    "wait_for",
]

NEEDS_ROUTER_LAB = "needs root and apt-get install -y frr openssh-server"
LAB_READY_TIMEOUT = 60.0  # seconds for `lab ready:` (FRR, sshd, logins and BGP on 2 busy cores)
THROTTLING_HOSTS = 30
_GUARD = "nornir_bench.lab._guard"
# The names this session gave its labs, for the end-of-session check: other sessions on the
# machine may be running labs of their own, which are not this session's to judge.
_SESSION_LABS: set[str] = set()
# The session's labs running now, by name (their processes are the session's, not a test's).
_RUNNING: dict[str, RunningRouterLab] = {}


def router_lab_unavailable() -> str | None:
    """Why this machine cannot run a router lab, or ``None`` when it can."""
    if os.geteuid() != 0:
        return NEEDS_ROUTER_LAB
    if not all(os.access(path, os.X_OK) for path in ("/usr/lib/frr/bgpd", "/usr/sbin/sshd")):
        return NEEDS_ROUTER_LAB
    return None


def skip_without_router_lab() -> None:
    """Skip the test where a router lab cannot run (not root, FRR or OpenSSH missing): the
    only reason a test of the router lab is skipped."""
    reason = router_lab_unavailable()
    if reason is not None:
        pytest.skip(reason)


def new_lab_name() -> str:
    """A lab name no other test uses: ``t`` and 6 lowercase letters or digits."""
    name = package_lab_name("t")
    _SESSION_LABS.add(name)
    return name


# -- the session's labs ----------------------------------------------------------------------

# How each kind of the session's labs is made, in a folder of its own (its inventory there).
_KINDS: dict[str, Callable[[Path], AbstractContextManager[RunningRouterLab]]] = {
    "frr": lambda folder: router_lab(3, name=new_lab_name(), write=folder, hosts=3,
                                     timeout=LAB_READY_TIMEOUT),
    "throttling": lambda folder: throttling_lab(THROTTLING_HOSTS, name=new_lab_name(),
                                                write=folder, timeout=LAB_READY_TIMEOUT),
    "bastion": lambda folder: bastion_lab(2, name=new_lab_name(), write=folder,
                                          timeout=LAB_READY_TIMEOUT),
}


class SessionLabs:
    """The session's router labs, one of each kind, made when first asked for."""

    def __init__(self, folders: pytest.TempPathFactory) -> None:
        self._folders = folders
        self._labs: dict[str, tuple[RunningRouterLab, ExitStack]] = {}
        self._failed: dict[str, str] = {}

    def lab(self, kind: str) -> RunningRouterLab:
        """The session's lab of ``kind`` (``frr``, ``throttling``, ``bastion``), made now if
        it is not yet; a lab that could not be made fails every test asking for it at once."""
        skip_without_router_lab()
        if kind in self._failed:
            pytest.fail(self._failed[kind])
        if kind not in self._labs:
            stack = ExitStack()
            try:
                lab = stack.enter_context(_KINDS[kind](self._folders.mktemp(f"{kind}-lab")))
            except LabError as exc:
                self._failed[kind] = f"the session's {kind} lab did not start: {exc}"
                pytest.fail(self._failed[kind])
            self._labs[kind] = (lab, stack)
            _RUNNING[lab.name] = lab
        return self._labs[kind][0]

    def restore(self, kind: str) -> None:
        """Put the session's lab of ``kind`` back to its baseline; one that cannot be is
        removed (the next test asking gets a new one) and fails the test, saying why."""
        lab, stack = self._labs[kind]
        try:
            lab.restore()
        except (LabNotRestored, OSError, subprocess.SubprocessError) as exc:
            del self._labs[kind], _RUNNING[lab.name]
            try:
                stack.close()
            finally:
                pytest.fail(f"the {kind} lab could not be put back after this test, so it "
                            f"was replaced: {exc}")

    def close(self) -> None:
        labs, self._labs = self._labs, {}
        for lab, stack in labs.values():
            _RUNNING.pop(lab.name, None)
            stack.close()


def session_lab_pids() -> set[int]:
    """The processes of the session's labs running now that are this process's children: each
    one's SSH server and guard (their sessions are the SSH server's children)."""
    if not _RUNNING:
        return set()
    names = {lab.name for lab in _RUNNING.values()}
    pids = {lab.sshd_pid for lab in _RUNNING.values() if lab.sshd_pid is not None}
    return pids | {pid for pid, argv in live_processes() for name in names if _is_guard(argv, name)}


@pytest.fixture(scope="session")
def session_labs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SessionLabs]:
    """The session's router labs (:class:`SessionLabs`), removed at its end."""
    labs = SessionLabs(tmp_path_factory)
    try:
        yield labs
    finally:
        labs.close()


def _session_lab(labs: SessionLabs, kind: str) -> Iterator[RunningRouterLab]:
    yield labs.lab(kind)
    labs.restore(kind)


@pytest.fixture
def frr_lab(session_labs: SessionLabs) -> Iterator[RunningRouterLab]:
    """The session's 3 FRR routers in a chain, an inventory host on each, put back after the
    test."""
    yield from _session_lab(session_labs, "frr")


@pytest.fixture
def restored(frr_lab: RunningRouterLab) -> dict[str, str]:
    """Every router's running configuration before the test, by router (``frr_lab`` puts
    them back after it, and checks)."""
    return frr_lab.configs()


@pytest.fixture(name="throttling_lab")
def throttling_lab_fixture(session_labs: SessionLabs) -> Iterator[RunningRouterLab]:
    """The session's router that lets one login at a time through to authentication, 30
    inventory hosts on its port, put back after the test."""
    yield from _session_lab(session_labs, "throttling")


@pytest.fixture(name="bastion_lab")
def bastion_lab_fixture(session_labs: SessionLabs) -> Iterator[RunningRouterLab]:
    """The session's 2 routers behind a bastion, a host each, put back after the test."""
    yield from _session_lab(session_labs, "bastion")


# -- the command in a subprocess -------------------------------------------------------------


class RouterLabProcess(RunningRouterLab):
    """A router lab run by ``nornir-bench lab --routers`` in a subprocess: the command's own
    tests (its output, its signals, its process killed)."""

    handle: Started

    def output(self) -> str:
        """Everything it printed so far, stdout and stderr."""
        return "\n".join(self.handle.stdout) + "\n" + self.handle.stderr()


def start_router_lab(
    folder: Path,
    routers: int = 1,
    *,
    name: str | None = None,
    port: int | None = None,
    hosts: int | None = None,
    max_startups: str | None = None,
    bastion: bool = False,
    ready: str = "lab ready:",
) -> RouterLabProcess:
    """``nornir-bench lab --routers`` (chain) in a subprocess, once it printed a line starting
    ``ready``; its inventory in ``folder``/inventory."""
    name = name or new_lab_name()
    port = port or free_port_range(routers)
    folder.mkdir(parents=True, exist_ok=True)
    inventory = folder / "inventory"
    args = [*LAB, "lab", "--routers", str(routers), "--name", name, "--port", str(port),
            "--write", str(inventory)]
    if hosts is not None:
        args += ["--hosts", str(hosts)]
    if max_startups is not None:
        args += ["--max-startups", max_startups]
    if bastion:
        args.append("--bastion")
    handle = started(args, ready, folder, timeout=LAB_READY_TIMEOUT)
    try:
        lab = RouterLabProcess.attach(name, inventory, baseline=False)
    except BaseException:
        stopped(handle, signal.SIGKILL)
        raise
    assert isinstance(lab, RouterLabProcess)
    lab.handle = handle
    return lab


@contextmanager
def router_lab_process(
    folder: Path, routers: int = 1, **options: Any
) -> Iterator[RouterLabProcess]:
    """:func:`start_router_lab`, stopped with SIGINT when the block ends; it must exit 0,
    never print the password, and leave nothing behind."""
    lab = start_router_lab(folder, routers, **options)
    password = lab.password
    try:
        yield lab
    finally:
        status = stopped(lab.handle)
    assert status == 0, lab.output()
    assert lab.handle.stdout[-1].startswith("lab stopped: everything removed in "), lab.output()
    assert password not in lab.output()
    left = wait_for(lambda: lab_leftovers(lab.name))
    assert not left, f"lab {lab.name} left: {left}"


def wait_for(check: Callable[[], Any], pause: float = 0.1) -> Any:
    """Call ``check`` every ``pause`` seconds until it returns something falsy, or until the
    hang guard; what it returned last (falsy once the condition holds)."""
    deadline = time.monotonic() + HANG_GUARD
    while (found := check()) and time.monotonic() < deadline:
        time.sleep(pause)
    return found


def lab_leftovers(name: str) -> list[str]:
    """What lab ``name`` left on this machine: namespaces, FRR, vtysh and netconfd processes,
    its SSH server and sessions, its guard, its user and group (and memberships), FRR's
    folders, its work folder, its state file."""
    prefix = f"nb-{name}-"
    left: list[str] = []
    try:
        left += [f"namespace {n}" for n in os.listdir("/run/netns") if n.startswith(prefix)]
    except FileNotFoundError:
        pass
    for pid, argv in live_processes():
        line = " ".join(argv)
        if (
            (f"-N {prefix}" in line and ("/usr/lib/frr/" in line or "vtysh" in argv[0]))
            or ("sshd" in argv[0] and f"nornir-bench-lab-{name}-" in line)
            or (Path(argv[0]).name in ("netconfd", "netconf-subsystem")
                and f"nornir-bench-lab-{name}-" in line)
            or line.startswith(f"sshd: nbl-{name} ")
            or line.startswith(f"sshd: nbl-{name}@")
            or _is_guard(argv, name)
        ):
            left.append(f"process {pid}: {line}")
    user = f"nbl-{name}"
    for path in ("/etc/passwd", "/etc/group"):
        for entry in Path(path).read_text().splitlines():
            fields = entry.split(":")
            if fields[0] == user or user in fields[-1].split(","):
                left.append(f"{path}: {entry}")
    for folder in ("/etc/frr", "/var/run/frr"):
        left += [f"{folder}/{n}" for n in os.listdir(folder) if n.startswith(prefix)]
    work = Path(tempfile.gettempdir()).glob(f"nornir-bench-lab-{name}-*")
    left += [f"work folder {folder}" for folder in work]
    for suffix in (".json", ".tmp"):  # .tmp: a save cut short
        if (STATE_FOLDER / f"{name}{suffix}").exists():
            left.append(f"state file {STATE_FOLDER / name}{suffix}")
    return left


def session_lab_leftovers() -> list[str]:
    """What the labs this session started left (nothing, when every lab was removed)."""
    if not _SESSION_LABS:
        return []
    return [f"{name}: {thing}" for name in sorted(_SESSION_LABS) for thing in lab_leftovers(name)]


def guard_pid(name: str) -> int:
    """The guard process of lab ``name``."""
    (pid,) = [p for p, argv in live_processes() if _is_guard(argv, name)]
    return pid


def _is_guard(argv: list[str], name: str) -> bool:
    """Whether ``argv`` is the guard of lab ``name`` (``-m nornir_bench.lab._guard NAME ...``)."""
    return _GUARD in argv[:-1] and argv[argv.index(_GUARD) + 1] == name


def kill_lab(lab: RouterLabProcess) -> None:
    """SIGKILL the lab's process, as the OOM killer would: it removes nothing itself."""
    stopped(lab.handle, signal.SIGKILL)
