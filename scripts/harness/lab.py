"""The router lab a benchmark runs on: one started here through the package's lab API, or a
running one attached by its name (``--lab NAME``: the test suite's, or ``nornir-bench lab
--routers N --name NAME`` in another terminal).

The one place the scripts meet the lab: a script asks :func:`router_lab` for a :class:`Lab` and
uses only what it offers (the plan, the login, inventories written for it, its routers driven
as root), so that another lab API is a change of this module alone. A lab started here is
stopped when the block ends (an error and Ctrl-C too; its guard removes it if the script is
killed); an attached one is left running, and only read or restored.
"""

from __future__ import annotations

import argparse
import os
import pwd
import random
import string
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from harness.entry import Parser
from harness.processes import children_of, command_line
from nornir_bench.lab import LabDevice, write_inventory
from nornir_bench.lab.topology import LabPlan

__all__ = ["Lab", "add_lab_option", "frr_pids", "lab_name", "router_lab"]

SHOW = "show running-config"
READY_SECONDS = 60.0


def add_lab_option(parser: Parser) -> None:
    """``--lab NAME``: run on that running router lab instead of starting one."""
    parser.add_argument(
        "--lab", metavar="NAME", type=_started_lab,
        help="run on the router lab NAME, already running (nornir-bench lab --routers N --name "
        "NAME), instead of starting one; its routers are put back as they were")


def _started_lab(name: str) -> str:
    """``--lab``'s type: the name of a lab started and not removed, or one line at once (a lab
    still starting is waited for by :func:`router_lab`)."""
    from nornir_bench.lab import LabError
    from nornir_bench.lab._system import owner_alive, read_state

    try:
        state = read_state(name)
    except LabError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if state is None or not owner_alive(state):  # a killed lab's state: it never gets ready
        raise argparse.ArgumentTypeError(
            f"no router lab named {name!r} is running (nornir-bench lab --routers N --name "
            f"{name} starts one)")
    return name


def lab_name(prefix: str) -> str:
    """A lab name of ``prefix`` and six random letters or digits: one no other run uses."""
    return prefix + "".join(random.choices(string.ascii_lowercase + string.digits, k=6))


@dataclass
class Lab:
    """A running router lab, as a benchmark uses it."""

    name: str
    plan: LabPlan
    password: str
    workdir: Path
    sshd_pid: int
    ready_after: float
    """Seconds its start took here (0 when attached)."""
    attached: bool

    @property
    def routers(self) -> list[str]:
        return [router.name for router in self.plan.routers]

    @property
    def ports(self) -> list[int]:
        return [router.port for router in self.plan.routers]

    @property
    def base(self) -> int:
        """The first router's port."""
        return self.plan.routers[0].port

    @property
    def user(self) -> str:
        return self.plan.user

    @property
    def uid(self) -> int:
        return pwd.getpwnam(self.user).pw_uid

    @property
    def host_key(self) -> str:
        """Its routers' SSH host key (the inventories written here check it)."""
        from nornir_bench.lab.routers import host_key_of

        return host_key_of(str(self.workdir))

    def describe(self) -> str:
        where = f"127.0.0.1:{self.base}-{self.base + len(self.ports) - 1}"
        how = "attached" if self.attached else f"ready in {self.ready_after:.1f} s"
        return f"lab {self.name}: {len(self.ports)} routers on {where}, {how}"

    def devices(self) -> list[LabDevice]:
        """A device per router (r1, r2 ...), as an inventory reaches it."""
        from nornir_bench.lab.routers import PLATFORM

        key = self.host_key
        return [LabDevice(r.name, "127.0.0.1", r.port, PLATFORM, self.user, self.password, key)
                for r in self.plan.routers]

    def write_inventory(self, folder: Path, hosts: int | None = None) -> Path:
        """An inventory in ``folder``: a host per router (r1 ...), or ``hosts`` hosts spread
        over the routers in turn (h001 on r1, h002 on r2 ...); ``folder``."""
        from nornir_bench.lab.router_command import router_hosts

        devices = self.devices()
        write_inventory(devices if hosts is None else router_hosts(devices, hosts), folder,
                        config_platform="frr")
        return folder

    def vtysh(self, router: str, command: str) -> str:
        """``command`` on ``router``'s FRR, as root (not through SSH): what it printed."""
        from nornir_bench.lab.vtysh import vtysh

        return vtysh(self.name, router, command)

    def configs(self, routers: list[str] | None = None) -> dict[str, str]:
        """Each router's running configuration."""
        return {router: self.vtysh(router, SHOW) for router in routers or self.routers}

    def put_back(self, before: dict[str, str]) -> bool:
        """Each router of ``before`` back to its running configuration there; whether all are."""
        from nornir_bench.lab.vtysh import restore_config

        return all([restore_config(self.name, router, text) for router, text in before.items()])

    def logins(self) -> int:
        """The logins its SSH server accepted so far."""
        log = self.workdir / "sshd.log"
        return log.read_text(errors="replace").count("Accepted password for ")

    def sessions_gone(self, timeout: float = 10.0) -> None:
        """Wait until its SSH server has no session left (their CPU then in its total)."""
        ends = time.monotonic() + timeout
        while children_of(self.sshd_pid) and time.monotonic() < ends:
            time.sleep(0.1)

    def session_clis(self, router: str | None = None) -> list[int]:
        """The vtysh processes of its sessions (on ``router``, or any)."""
        prefix = f"nb-{self.name}-{router}" if router else f"nb-{self.name}-"
        pids = []
        for pid in children_of(self.sshd_pid):
            words = command_line(pid)
            if words and words[0].endswith("vtysh") and any(
                    w == prefix if router else w.startswith(prefix) for w in words):
                pids.append(pid)
        return pids

    def frr_pids(self) -> list[int]:
        """Its FRR daemons."""
        return frr_pids(self.name)


def frr_pids(name: str) -> list[int]:
    """The FRR daemons of lab ``name`` (not vtysh, which takes -N too)."""
    prefix = f"nb-{name}-"
    pids = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        words = command_line(int(entry))
        pairs = zip(words, words[1:], strict=False)
        if words and words[0].startswith("/usr/lib/frr/") and any(
                w == "-N" and after.startswith(prefix) for w, after in pairs):
            pids.append(int(entry))
    return pids


@contextmanager
def router_lab(routers: int, *, attach: str | None = None, prefix: str = "b",
               max_startups: str | None = None) -> Iterator[Lab]:
    """A lab of ``routers`` FRR routers in a chain, started here (named ``prefix`` and six
    random characters, on free loopback ports) and stopped when the block ends; or, with
    ``attach``, the running lab of that name (whatever its size), left running.

    Raises:
        SystemExit: the lab could not start, or ``attach`` names no running lab, in one line.
    """
    from nornir_bench.lab import LabError

    try:
        if attach is not None:
            yield _attached(attach)
            return
        with _started(routers, lab_name(prefix), max_startups) as lab:
            yield lab
    except LabError as exc:
        raise SystemExit(f"the router lab: {exc}") from None


@contextmanager
def _started(routers: int, name: str, max_startups: str | None) -> Iterator[Lab]:
    from nornir_bench.lab.ports import free_port_range
    from nornir_bench.lab.routers import RouterLab
    from nornir_bench.lab.topology import plan_lab

    plan = plan_lab(routers, port=free_port_range(routers), name=name)
    began = time.perf_counter()
    with RouterLab(plan, max_startups=max_startups) as lab:
        lab.wait_ready(READY_SECONDS)
        assert lab.state is not None and lab.state.sshd_pid is not None
        yield Lab(name, plan, lab.password, Path(lab.state.workdir), lab.state.sshd_pid,
                  time.perf_counter() - began, attached=False)


def _attached(name: str) -> Lab:
    from nornir_bench.lab._system import read_state
    from nornir_bench.lab.router_ready import wait_for_named_lab

    plan = wait_for_named_lab(name, READY_SECONDS)
    state = read_state(name)
    if state is None or state.sshd_pid is None:
        raise SystemExit(f"--lab: no router lab named {name!r} is running")
    if plan.bastion_port is not None:
        raise SystemExit(f"--lab: lab {name!r} is reached through a bastion: run on a lab "
                         "whose routers listen on 127.0.0.1")
    return Lab(name, plan, state.password, Path(state.workdir), state.sshd_pid, 0.0,
               attached=True)
