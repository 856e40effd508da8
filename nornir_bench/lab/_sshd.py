"""What every lab behind OpenSSH makes the same way (the router lab, the NETCONF lab): its
start and stop (:class:`SshLab`, each kind adding its own parts), its login user, its host
key, its SSH server started and waited for, its guard process started, and a child process
reaped."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypedDict, TypeVar

from nornir_bench.lab._errors import LabError
from nornir_bench.lab._preflight import PlannedLab, refuse_held_ports, remove_stale, user_exists
from nornir_bench.lab._system import LabState, command, labs_locked, process_started, teardown
from nornir_bench.lab.ports import listening_ports

if TYPE_CHECKING:
    from nornir_bench.lab._running import RunningSshLab

__all__ = ["HOST_KEY", "SSHD_START_TIMEOUT", "KindFields", "SshLab", "add_login_user",
           "make_host_key", "reap", "start_guard", "start_sshd"]

HOST_KEY = "ssh_host_ed25519_key"
"""The lab's SSH host key, in its work folder (``.pub`` beside it): its known-hosts entry."""

SSHD_START_TIMEOUT = 10.0

PlanT = TypeVar("PlanT", bound=PlannedLab)
RunningT = TypeVar("RunningT", bound="RunningSshLab[Any]")
LabT = TypeVar("LabT", bound="SshLab[Any, Any]")

# The labs of any kind this process made and has not stopped: another of the name made here is
# refused, as one of another process is (their state files name this process either way).
_RUNNING_HERE: set[str] = set()


class KindFields(TypedDict, total=False):
    """What a lab's state file records that its kind decides."""

    namespaces: list[str]
    ports: dict[str, int]
    topology: str
    kind: str
    bastion_port: int | None
    made_folders: list[str]


class SshLab(ABC, Generic[PlanT, RunningT]):
    """A lab behind OpenSSH: :meth:`start` makes it, :meth:`stop` removes it (also as a
    context manager, and through its guard if this process dies first). Its kind checks what
    it needs, says what its state file records of it, makes its parts and its SSH server
    (:meth:`_make`, :meth:`_serve_ssh`), and stops what teardown does not (:meth:`_stop_parts`).

    Args:
        plan: what it is made of.
    """

    _running_type: type[RunningT]
    """The kind's running lab."""
    _login_options: tuple[str, ...] = ()
    """``useradd``'s options for its login user (its groups)."""

    def __init__(self, plan: PlanT) -> None:
        self.plan = plan
        self.password = secrets.token_urlsafe(18)
        self.state: LabState | None = None
        self._sshd: subprocess.Popen[bytes] | None = None
        self._guard: subprocess.Popen[bytes] | None = None
        self.made = False
        """Whether :meth:`start` got past its refusals to making the lab."""

    @property
    def user(self) -> str:
        return self.plan.user

    def running(self, inventory: str | os.PathLike[str] | None = None) -> RunningT:
        """The lab as tests and benchmarks drive it, once started (``inventory``: the folder
        of an inventory written for it)."""
        if self.state is None:
            raise LabError(f"{self.plan.kind} {self.plan.name!r} is not started")
        return self._running_type(self.plan, self.password, self.state.workdir,
                                  sshd_pid=self.state.sshd_pid, owner=self.state.owner,
                                  inventory=inventory)

    def __enter__(self: LabT) -> LabT:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        """Make the lab; on any error part-way, remove what was made and raise.

        Raises:
            LabError: what the lab needs and lacks, a lab of that name already running, a
                port in use (naming what holds it), or the system command that failed.
        """
        self._check_needs()
        with labs_locked():  # taking turns with a killed lab's guard: it never removes this one
            remove_stale(self.plan, _RUNNING_HERE)
            refuse_held_ports(self.plan)
            self.made = True
            _RUNNING_HERE.add(self.plan.name)
            workdir = tempfile.mkdtemp(prefix=f"nornir-bench-lab-{self.plan.name}-")
            self.state = LabState(
                name=self.plan.name, owner=os.getpid(), user=self.user, password=self.password,
                workdir=workdir, owner_started=process_started(os.getpid()),
                **self._state_fields(),
            )
            self.state.save()  # before anything is made: whatever follows can be removed
        try:
            self._guard = start_guard(self.state)
            if user_exists(self.user):
                raise LabError(f"user {self.user} exists already and is not the lab's: remove it")
            add_login_user(self.state, self.password, *self._login_options)
            self._make(self.state)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Remove everything the lab made (what is gone already is skipped)."""
        if self.state is None:
            return
        self._stop_parts()
        if self._sshd is not None:
            self._sshd.terminate()
        teardown(self.state)
        for process in (self._sshd, self._guard):
            if process is not None:
                reap(process)
        self._sshd = self._guard = None
        self.state = None
        _RUNNING_HERE.discard(self.plan.name)

    @abstractmethod
    def wait_ready(self, timeout: float = 60.0) -> None:
        """Return once the lab answers as its kind does when ready."""

    @abstractmethod
    def _check_needs(self) -> None:
        """A LabError naming what this machine lacks for the kind."""

    @abstractmethod
    def _state_fields(self) -> KindFields:
        """What the state file records that the kind decides (at least its namespaces and
        ports)."""

    @abstractmethod
    def _make(self, state: LabState) -> None:
        """The kind's parts made (its login user is made), its SSH server among them
        (:meth:`_serve_ssh`)."""

    def _serve_ssh(self, config: Callable[[Path], str], ports: Sequence[int],
                   inside: Sequence[str] = ()) -> None:
        """Its SSH server started (:func:`start_sshd`; its configuration ``config(host key)``)
        and kept for :meth:`stop`."""
        assert self.state is not None
        key = make_host_key(self.state.workdir)
        self._sshd = start_sshd(self.plan, self.state, config(key), ports, inside)

    def _stop_parts(self) -> None:
        """What the kind stops itself before its SSH server and teardown (none by default)."""



def add_login_user(state: LabState, password: str, *options: str) -> None:
    """The lab's login user made (recorded first, so that teardown removes it), with
    ``password`` and ``useradd``'s ``options`` (its groups)."""
    state.user_made = True
    state.save()
    command(
        "useradd", "--system", "--no-create-home", "--home-dir", "/", "--shell", "/bin/sh",
        *options, "--comment", f"nornir-bench lab {state.name}", state.user,
    )
    command("chpasswd", stdin=f"{state.user}:{password}\n")


def make_host_key(workdir: str) -> Path:
    """The lab's SSH host key, made in its work folder."""
    key = Path(workdir) / HOST_KEY
    command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key))
    return key


def start_sshd(
    plan: PlannedLab, state: LabState, config: str, ports: Sequence[int],
    inside: Sequence[str] = (),
) -> subprocess.Popen[bytes]:
    """The lab's ``sshd`` (configuration ``config``, log ``sshd.log`` in its work folder),
    started (``inside``: the command that runs it in a namespace) and returned once it listens
    on all ``ports``; its process id recorded in ``state``.

    Raises:
        LabError: it ended, or did not listen within its time, saying why (a port another
            process took since the lab's ports were checked, named).
    """
    work = Path(state.workdir)
    path = work / "sshd_config"
    path.write_text(config, encoding="utf-8")
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # OpenSSH's privilege separation
    with open(work / "sshd.log", "wb") as log:
        sshd = subprocess.Popen(
            [*inside, "/usr/sbin/sshd", "-D", "-e", "-f", str(path)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
        )
    state.sshd_pid = sshd.pid
    state.save()
    ends = time.monotonic() + SSHD_START_TIMEOUT
    while not set(ports) <= listening_ports(sshd.pid):  # its own, not another's
        if sshd.poll() is not None or time.monotonic() > ends:
            refuse_held_ports(plan, sshd.pid)  # taken since they were checked
            said = (work / "sshd.log").read_text(errors="replace").strip().splitlines()
            raise LabError(
                "the lab's SSH server did not start: "
                + (said[-1] if said else f"exit {sshd.returncode}")
            )
        time.sleep(0.02)
    return sshd


def start_guard(state: LabState) -> subprocess.Popen[bytes]:
    """The process that removes the lab if this one dies without doing so: it waits for its
    standard input (a pipe only this process holds) to close."""
    return subprocess.Popen(
        [sys.executable, "-m", "nornir_bench.lab._guard", state.name, str(state.owner)],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,  # a Ctrl-C in the terminal is the lab's to handle, not its
    )


def reap(process: subprocess.Popen[bytes]) -> None:
    """A child of the lab waited for (its standard input closed first: the guard's signal)."""
    if process.stdin is not None:
        process.stdin.close()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
