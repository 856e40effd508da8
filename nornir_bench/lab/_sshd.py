"""What every lab behind OpenSSH makes the same way (the router lab, the NETCONF lab): its
login user, its host key, its SSH server started and waited for, its guard process started,
and a child process reaped."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from nornir_bench.lab._errors import LabError
from nornir_bench.lab._preflight import PlannedLab, refuse_held_ports
from nornir_bench.lab._system import LabState, command
from nornir_bench.lab.ports import listening_ports

__all__ = ["HOST_KEY", "SSHD_START_TIMEOUT", "add_login_user", "make_host_key", "reap",
           "start_guard", "start_sshd"]

HOST_KEY = "ssh_host_ed25519_key"
"""The lab's SSH host key, in its work folder (``.pub`` beside it): its known-hosts entry."""

SSHD_START_TIMEOUT = 10.0


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
