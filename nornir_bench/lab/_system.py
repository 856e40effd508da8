"""What a router lab makes on this machine, written down before it is made, and removed.

Every namespace, user, folder and process of a lab is recorded in its state file
(``/run/nornir-bench/labs/NAME.json``, root only) *before* it is created, so that
:func:`teardown` removes all of it whoever calls it: the lab itself when it stops, its guard
process when the lab was killed (SIGKILL, the OOM killer), or the next lab of the same name
finding a stale one. Teardown is idempotent: what is already gone is skipped.

A state whose owner process is gone is stale: ``wait-lab`` ignores it, and the next lab of the
name replaces it. Replacing one and a guard's teardown hold :func:`labs_locked`, so a killed
lab's guard never removes what its successor made.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

from nornir_bench.lab._errors import LabError

__all__ = [
    "FRR_DAEMONS",
    "LabState",
    "STATE_FOLDER",
    "command",
    "lab_states",
    "password_logins_of",
    "kill_processes",
    "labs_locked",
    "namespaces_named",
    "owner_alive",
    "pid_alive",
    "process_started",
    "read_state",
    "teardown",
]

STATE_FOLDER = Path("/run/nornir-bench/labs")
FRR_ETC = Path("/etc/frr")
FRR_RUN = Path("/var/run/frr")
FRR_DAEMONS = ("zebra", "staticd", "bgpd")
_COMMAND_TIMEOUT = 30.0
_COMMANDS = frozenset({"ip", "useradd", "chpasswd", "ssh-keygen", "setsid"})  # run to finish
_KILL_ROUNDS = 3


@dataclass
class LabState:
    """What one lab made: enough to remove it all, and to log in for ``wait-lab``.

    ``password`` is the lab user's; the state file is readable by root only.
    """

    name: str
    owner: int
    namespaces: list[str]
    user: str
    password: str = field(repr=False)
    workdir: str
    ports: dict[str, int]
    topology: str = "chain"
    user_made: bool = False
    sshd_pid: int | None = None
    owner_started: int | None = None
    """When ``owner`` started (:func:`process_started`): a process given its id since is not it."""
    bastion_port: int | None = None
    """The lab's bastion on 127.0.0.1, the only way to its routers, if it has one."""
    kind: str = "routers"
    """``routers`` (FRR behind OpenSSH) or ``netconf`` (netconfd behind OpenSSH)."""
    made_folders: list[str] = field(default_factory=list)
    """Folders outside its work folder it made (netconfd's ``~/.yuma``): removed if empty."""

    @property
    def kind_text(self) -> str:
        """The lab's kind as messages name it."""
        return "NETCONF lab" if self.kind == "netconf" else "router lab"

    @property
    def path(self) -> Path:
        return STATE_FOLDER / f"{self.name}.json"

    def save(self) -> None:
        STATE_FOLDER.mkdir(parents=True, exist_ok=True, mode=0o700)
        temporary = self.path.with_suffix(".tmp")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            json.dump(asdict(self), file)
        temporary.replace(self.path)


def read_state(name: str) -> LabState | None:
    """The state of the lab named ``name``, if one was started and not removed."""
    path = STATE_FOLDER / f"{name}.json"
    try:
        return LabState(**json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError) as exc:
        raise LabError(f"the router lab's state file {path} cannot be read: {exc}") from exc


def lab_states() -> list[LabState]:
    """The state of every lab started and not removed (those that cannot be read left out)."""
    states = []
    for path in sorted(STATE_FOLDER.glob("*.json")):
        try:
            state = read_state(path.stem)
        except LabError:
            continue
        if state is not None:
            states.append(state)
    return states


def owner_alive(state: LabState) -> bool:
    """Whether the process that made ``state`` still runs: else the state is stale, what a
    killed lab left."""
    started = state.owner_started
    return pid_alive(state.owner) and (started is None or process_started(state.owner) == started)


def process_started(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot), ``None`` if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


@contextmanager
def labs_locked() -> Iterator[None]:
    """Hold the labs' lock (on their state folder) inside: the next lab of a name replacing a
    stale state, and the guard of the lab that left it tearing it down, take turns."""
    STATE_FOLDER.mkdir(parents=True, exist_ok=True, mode=0o700)
    descriptor = os.open(STATE_FOLDER, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # releases the lock


def password_logins_of(user: str, key: Path | str) -> list[str]:
    """The ``sshd_config`` lines of a lab's OpenSSH servers (the routers', the bastion's):
    host key ``key``, password logins of ``user`` only, nothing else forwarded."""
    return [
        f"HostKey {key}",
        "UsePAM no",
        "PasswordAuthentication yes",
        "KbdInteractiveAuthentication no",
        "PubkeyAuthentication no",
        "PermitRootLogin no",
        f"AllowUsers {user}",
        "X11Forwarding no",
        "AllowAgentForwarding no",
        "PermitTunnel no",
        "LogLevel INFO",
    ]


def command(*args: str, stdin: str | None = None) -> str:
    """Run a system command; its output, or :class:`LabError` with what it said."""
    try:
        done = subprocess.run(
            args, input=stdin, capture_output=True, text=True, timeout=_COMMAND_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LabError(f"the router lab could not run {args[0]}: {exc}") from exc
    if done.returncode != 0:
        said = " ".join((done.stderr or done.stdout).split())[:300]
        raise LabError(f"the router lab's {' '.join(args[:4])} failed: {said}")
    return done.stdout


def namespaces_named(prefix: str) -> list[str]:
    """The network namespaces whose name starts with ``prefix``."""
    try:
        return sorted(n for n in os.listdir("/run/netns") if n.startswith(prefix))
    except FileNotFoundError:
        return []


def pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is dead: its parent has not reaped it yet
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def teardown(state: LabState) -> None:
    """Remove everything ``state`` records: processes, namespaces (and their links), the
    user, FRR's folders, the work folder (sockets, netconfd's files), the folders it made
    elsewhere if empty, then the state file. Safe to call again.

    A lab stopped by a signal (or killed) part-way through its start may leave a command
    running whose process handle it lost (``useradd``, ``ip netns add``, a daemon's launch):
    those finish first, or what they make would outlive this teardown.
    """
    _wait_for_commands(state)
    for _ in range(_KILL_ROUNDS):  # a daemon forking off as it was listed is listed next round
        victims = set(_namespace_pids(state.namespaces)) | set(_user_pids(state.user))
        victims |= set(_sshd_pids(state))
        if not victims:
            break
        kill_processes(victims)
    for namespace in state.namespaces:
        if namespace in namespaces_named(namespace):
            subprocess.run(["ip", "netns", "del", namespace], capture_output=True, check=False)
        for folder in (FRR_ETC / namespace, FRR_RUN / namespace):
            shutil.rmtree(folder, ignore_errors=True)
    if state.user_made:
        subprocess.run(["userdel", state.user], capture_output=True, check=False)
    shutil.rmtree(state.workdir, ignore_errors=True)
    for made in state.made_folders:  # another lab's server may have written there since
        try:
            os.rmdir(made)
        except OSError:
            pass
    state.path.with_suffix(".tmp").unlink(missing_ok=True)  # a save cut short
    state.path.unlink(missing_ok=True)


def _command_lines() -> list[tuple[int, str]]:
    """Every live process's id and command line (arguments joined by spaces)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if cmdline and pid_alive(int(entry)):
                found.append((int(entry), cmdline.replace(b"\0", b" ").decode(errors="replace")))
    return found


def _wait_for_commands(state: LabState) -> None:
    """Wait (at most a command's timeout) for the system commands the lab ran that are still
    running: those naming its user, namespaces or work folder."""
    marks = [f"nbl-{state.name}", f"nb-{state.name}-", *([state.workdir] if state.workdir else [])]
    ends = time.monotonic() + _COMMAND_TIMEOUT
    while time.monotonic() < ends:
        running = [
            pid for pid, line in _command_lines()
            if os.path.basename(line.split(" ", 1)[0]) in _COMMANDS
            and any(mark in line for mark in marks)
        ]
        if not running:
            return
        time.sleep(0.02)


def _sshd_pids(state: LabState) -> list[int]:
    """The lab's SSH server: started with the configuration in its work folder (also one
    started as the lab was stopped, before its process id was recorded)."""
    if not state.workdir:
        return []
    config = f"{state.workdir}/sshd_config"
    return [pid for pid, line in _command_lines() if "sshd" in line and config in line]


def _namespace_pids(namespaces: Sequence[str]) -> list[int]:
    pids = []
    for namespace in namespaces_named("nb-"):
        if namespace in namespaces:
            listed = subprocess.run(
                ["ip", "netns", "pids", namespace], capture_output=True, text=True, check=False
            )
            pids += [int(p) for p in listed.stdout.split() if p.isdigit()]
    return pids


def _user_pids(user: str) -> list[int]:
    """Processes running as ``user`` (the lab's logins: sshd session children and vtysh)."""
    try:
        import pwd

        uid = pwd.getpwnam(user).pw_uid
    except KeyError:
        return []
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    found.append(int(entry))
            except OSError:
                continue
    return found


def kill_processes(pids: set[int]) -> None:
    """SIGTERM, a moment to exit, then SIGKILL: FRR's daemons remove their sockets on TERM."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                continue
        ends = time.monotonic() + 2.0
        while any(pid_alive(pid) for pid in pids) and time.monotonic() < ends:
            time.sleep(0.02)
        pids = {pid for pid in pids if pid_alive(pid)}
        if not pids:
            return
