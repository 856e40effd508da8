"""Real FRR routers for tests: ``nornir-bench lab --routers N`` in a subprocess, as root.

Fixtures (registered for every test folder by tests/conftest.py):

- ``frr_lab`` (module): 3 FRR routers in a chain (r1 - r2 - r3, eBGP on each link) on free
  consecutive loopback ports, a lab name of its own per module, and an inventory written with
  ``--hosts 3`` (h1 on r1, h2 on r2, h3 on r3: each login costs CPU, and 2 cores are shared by
  the whole suite); yields a :class:`RouterLabProcess`, stopped with SIGINT at the end of the
  module and checked to leave nothing.

Helpers: :func:`skip_without_router_lab` (the one reason a test of the lab is skipped),
:func:`new_lab_name`, :func:`router_lab_process` / :func:`start_router_lab` (a lab of chosen
size), :func:`lab_leftovers` (what a lab left on the machine), :func:`lab_pids` and
:func:`guard_pid` (its processes), :func:`kill_lab` (SIGKILL), :func:`wait_for` (a condition,
a bounded number of times), :func:`daemon_stopped` and :func:`waiting_on_a_daemon` (a command
held in flight on a router), :func:`file_opened` (the moment another process read a file).

Every lab a test starts is named by :func:`new_lab_name`: the session's end check
(tests/conftest.py) looks for what those names left, and for nothing of labs other sessions on
the same machine may be running.
"""

from __future__ import annotations

import ctypes
import json
import os
import random
import select
import signal
import string
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from nornir.core import Nornir
from ruamel.yaml import YAML

from nornir_bench.lab import LabDevice
from nornir_bench.lab.routers import host_key_of
from nornir_bench.lab.topology import LabPlan, plan_lab
from nornir_bench.lab.vtysh import vtysh
from tests.devices import LAB, Started, free_port_range, nornir_on, started, stopped
from tests.waiting import HANG_GUARD

__all__ = [
    "LAB_READY_TIMEOUT",
    "NEEDS_ROUTER_LAB",
    "STATE_FOLDER",
    "RouterLabProcess",
    "cli_killed_mid_command",
    "daemon_stopped",
    "file_opened",
    "frr_lab",
    "guard_pid",
    "interrupted_when",
    "kill_lab",
    "lab_leftovers",
    "lab_pids",
    "new_lab_name",
    "router_lab_process",
    "router_lab_unavailable",
    "send_signal_to",
    "session_lab_leftovers",
    "skip_without_router_lab",
    "start_router_lab",
    "wait_for",
    "waiting_on_a_daemon",
]

NEEDS_ROUTER_LAB = "needs root and apt-get install -y frr openssh-server"
LAB_READY_TIMEOUT = 60.0  # seconds for `lab ready:` (FRR, sshd, logins and BGP on 2 busy cores)
STATE_FOLDER = Path("/run/nornir-bench/labs")
_GUARD = "nornir_bench.lab._guard"
_IN_OPEN = 0x20  # inotify's "a file was opened"
# The names this session gave its labs, for the end-of-session check: other sessions on the
# machine may be running labs of their own, which are not this session's to judge.
_SESSION_LABS: set[str] = set()


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
    name = "t" + "".join(random.choices(string.ascii_lowercase + string.digits, k=6))
    _SESSION_LABS.add(name)
    return name


@dataclass
class RouterLabProcess:
    """A router lab run by ``nornir-bench lab --routers`` in a subprocess."""

    name: str
    plan: LabPlan
    inventory: Path
    """The folder of the inventory it wrote (hosts.yaml, groups.yaml, defaults.yaml)."""
    handle: Started
    bgp_at_ready: dict[str, dict[str, str]] = field(default_factory=dict)
    """Each router's BGP peers and their state, as FRR said them right after ``lab ready:``."""

    @property
    def password(self) -> str:
        """The lab user's generated password, as the inventory has it."""
        defaults = YAML(typ="safe").load(self.inventory / "defaults.yaml")
        return str(defaults["password"])

    @property
    def user(self) -> str:
        return self.plan.user

    def devices(self) -> list[LabDevice]:
        """A device per router (r1, r2 ...), reached as the inventory reaches it."""
        return [
            LabDevice(r.name, "127.0.0.1", r.port, "cisco_ios", self.user, self.password,
                      host_key_of(self.state()["workdir"]))
            for r in self.plan.routers
        ]

    def hosts(self) -> dict[str, str]:
        """Each inventory host's router (by the port it reaches)."""
        routers = {r.port: r.name for r in self.plan.routers}
        hosts = YAML(typ="safe").load(self.inventory / "hosts.yaml")
        return {name: routers[host["port"]] for name, host in hosts.items()}

    def asn(self, router: str) -> int:
        (found,) = [r.asn for r in self.plan.routers if r.name == router]
        return found

    def nornir(self, runner: str = "threadpool", **options: Any) -> Nornir:
        return nornir_on(self.inventory, runner, **options)

    def state(self) -> dict[str, Any]:
        """Its state file, as the lab wrote it."""
        state: dict[str, Any] = json.loads((STATE_FOLDER / f"{self.name}.json").read_text())
        return state

    def logins(self) -> int:
        """The logins its SSH server accepted so far (its log's ``Accepted password`` lines)."""
        log = Path(self.state()["workdir"]) / "sshd.log"
        return log.read_text(errors="replace").count("Accepted password for ")

    def vtysh(self, router: str, command: str) -> str:
        """``command`` on ``router``'s FRR as root (not through SSH): what it printed."""
        return vtysh(self.name, router, command)

    def bgp_peers(self, router: str) -> dict[str, str]:
        """``router``'s BGP peers (address -> state), as its FRR says them."""
        said = json.loads(self.vtysh(router, "show bgp ipv4 unicast summary json") or "{}")
        return {address: peer["state"] for address, peer in said.get("peers", {}).items()}

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
    state = json.loads((STATE_FOLDER / f"{name}.json").read_text())
    plan = plan_lab(routers, port=port, name=name, bastion_port=state.get("bastion_port"))
    lab = RouterLabProcess(name, plan, inventory, handle)
    if ready == "lab ready:":
        lab.bgp_at_ready = {r.name: lab.bgp_peers(r.name) for r in lab.plan.routers}
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


@pytest.fixture(scope="module")
def frr_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RouterLabProcess]:
    """3 FRR routers in a chain, an inventory host on each, for the tests of one module."""
    skip_without_router_lab()
    with router_lab_process(tmp_path_factory.mktemp("frr-lab"), 3, hosts=3) as lab:
        yield lab


def wait_for(check: Callable[[], Any], pause: float = 0.1) -> Any:
    """Call ``check`` every ``pause`` seconds until it returns something falsy, or until the
    hang guard; what it returned last (falsy once the condition holds)."""
    deadline = time.monotonic() + HANG_GUARD
    while (found := check()) and time.monotonic() < deadline:
        time.sleep(pause)
    return found


def _processes() -> Iterator[tuple[int, list[str]]]:
    """Every live process (zombies left out: they are dead, waiting for their parent) and
    its command line."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text(errors="replace")
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if stat.rsplit(")", 1)[1].split()[0] == "Z" or not argv:
            continue
        yield int(entry), argv.rstrip("\0").split("\0")


def lab_pids(name: str, program: str, router: str | None = None) -> list[int]:
    """The processes of lab ``name`` running ``program`` (``zebra``, ``vtysh`` ...), of one
    router or all: those started with ``-N nb-NAME-rK``."""
    namespace = f"nb-{name}-{router}" if router else f"nb-{name}-"
    return [
        pid
        for pid, argv in _processes()
        if Path(argv[0]).name == program
        and any(
            a.startswith(namespace) for a, before in zip(argv[1:], argv[:-1], strict=True)
            if before == "-N"
        )
    ]


def lab_leftovers(name: str) -> list[str]:
    """What lab ``name`` left on this machine: namespaces, FRR and vtysh processes, its SSH
    server and sessions, its guard, its user and group (and memberships), FRR's folders, its
    state file."""
    prefix = f"nb-{name}-"
    left: list[str] = []
    try:
        left += [f"namespace {n}" for n in os.listdir("/run/netns") if n.startswith(prefix)]
    except FileNotFoundError:
        pass
    for pid, argv in _processes():
        line = " ".join(argv)
        if (
            (f"-N {prefix}" in line and ("/usr/lib/frr/" in line or "vtysh" in argv[0]))
            or ("sshd" in argv[0] and f"nornir-bench-lab-{name}-" in line)
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
    for suffix in (".json", ".tmp"):  # .tmp: a save cut short
        if (STATE_FOLDER / f"{name}{suffix}").exists():
            left.append(f"state file {STATE_FOLDER / name}{suffix}")
    return left


def session_lab_leftovers() -> list[str]:
    """What the labs this session started left (nothing, when every lab was removed)."""
    if not _SESSION_LABS:
        return []
    return [f"{name}: {thing}" for name in sorted(_SESSION_LABS) for thing in lab_leftovers(name)]


def interrupted_when(
    args: Sequence[str], folder: Path, ready: Callable[[], bool], *, pause: float = 0.1,
    timeout: float = 120, again: Callable[[], bool] | None = None,
) -> tuple[int, str, str]:
    """``args`` in a process (and session) of its own in ``folder``, sent SIGINT once
    ``ready()`` holds while it runs (checked every ``pause`` s); with ``again``, a second
    SIGINT once the command has said it is stopping (the first press taken: two signals at
    once are one press) and ``again()`` holds. Its exit status, standard output and error. It
    is killed if it outlives the test."""
    process = subprocess.Popen(args, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
    said: tuple[list[str], list[str]] = ([], [])
    readers = [threading.Thread(target=lambda lines=lines, pipe=pipe: lines.extend(pipe),
                                daemon=True)
               for lines, pipe in zip(said, (process.stdout, process.stderr), strict=True)]
    for reader in readers:
        reader.start()

    def running_until(condition: Callable[[], bool]) -> None:
        waiting = wait_for(lambda: process.poll() is None and not condition(), pause=pause)
        assert not waiting and process.poll() is None, said

    try:
        running_until(ready)
        process.send_signal(signal.SIGINT)
        if again is not None:
            running_until(lambda: any(x.startswith("stopping:") for x in said[1]) and again())
            process.send_signal(signal.SIGINT)
        process.wait(timeout)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for reader in readers:
            reader.join(timeout)
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()
    return process.returncode, "".join(said[0]), "".join(said[1])


def send_signal_to(pids: Sequence[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            continue


@contextmanager
def daemon_stopped(lab: RouterLabProcess, router: str, daemon: str) -> Iterator[None]:
    """``router``'s FRR ``daemon`` (``staticd`` ...) stopped inside (SIGSTOP), continued after:
    a vtysh command that needs it waits for its answer, as a CLI busy with a line does."""
    pids = lab_pids(lab.name, daemon, router)
    assert pids, f"no {daemon} on {router}"
    send_signal_to(pids, signal.SIGSTOP)
    try:
        yield
    finally:
        send_signal_to(pids, signal.SIGCONT)


def waiting_on_a_daemon(pid: int) -> bool:
    """Whether vtysh ``pid`` is blocked reading a daemon's answer (a Unix socket), not waiting
    for its terminal: the command it runs is in flight."""
    try:
        return Path(f"/proc/{pid}/wchan").read_text() == "unix_stream_read_generic"
    except OSError:
        return False


def cli_killed_mid_command(
    lab: RouterLabProcess, router: str, process: subprocess.Popen[str],
    before: Callable[[], None] = lambda: None,
) -> tuple[str, str]:
    """``router``'s vtysh killed (SIGKILL) while a command of ``process`` waits on its
    staticd (stopped meanwhile; ``before`` runs once it is): the process's output and error
    once it ends, the test failed at the hang guard if it does not."""
    with daemon_stopped(lab, router, "staticd"):
        before()
        assert not wait_for(lambda: not any(
            waiting_on_a_daemon(pid) for pid in lab_pids(lab.name, "vtysh", router)
        ), pause=0.05)
        send_signal_to(lab_pids(lab.name, "vtysh", router), signal.SIGKILL)
        try:
            return process.communicate(timeout=HANG_GUARD)
        except subprocess.TimeoutExpired:
            pytest.fail(f"hang guard: the run went on {HANG_GUARD:g} s after {router}'s CLI died")


def guard_pid(name: str) -> int:
    """The guard process of lab ``name``."""
    (pid,) = [p for p, argv in _processes() if _is_guard(argv, name)]
    return pid


def _is_guard(argv: list[str], name: str) -> bool:
    """Whether ``argv`` is the guard of lab ``name`` (``-m nornir_bench.lab._guard NAME ...``)."""
    return _GUARD in argv[:-1] and argv[argv.index(_GUARD) + 1] == name


@contextmanager
def file_opened(path: Path) -> Iterator[Callable[[], None]]:
    """Inside, a function that returns once some process has opened ``path`` since the block
    began (Linux's inotify): the moment another process read a file, an event, not a time."""
    libc = ctypes.CDLL(None, use_errno=True)
    watch = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
    assert watch >= 0, os.strerror(ctypes.get_errno())
    try:
        added = libc.inotify_add_watch(watch, os.fsencode(path), _IN_OPEN)
        assert added >= 0, f"{path}: {os.strerror(ctypes.get_errno())}"

        def opened() -> None:
            ready, _, _ = select.select([watch], [], [], HANG_GUARD)
            assert ready, f"nothing opened {path}"

        yield opened
    finally:
        os.close(watch)


def kill_lab(lab: RouterLabProcess) -> None:
    """SIGKILL the lab's process, as the OOM killer would: it removes nothing itself."""
    stopped(lab.handle, signal.SIGKILL)
