"""Real routers for the lab: FRR in network namespaces, behind one OpenSSH server on loopback.

A lab (:class:`RouterLab`; ``nornir-bench lab --routers N``, :mod:`.router_command`) is,
for a plan of :mod:`~nornir_bench.lab.topology`:

- one network namespace per router, running FRR's ``zebra``, ``staticd`` and ``bgpd`` with a
  pathspace of its own (``-N``), linked to its neighbours by veth pairs, eBGP over each link;
- one login user with a generated password (written to the inventory only) in groups
  ``frr`` and ``frrvty``: its ``vtysh`` can ``write memory`` (each router's FRR folder is
  group ``frr``'s to write);
- one ``sshd`` on 127.0.0.1 with a port per router, whose login lands in that router's
  ``vtysh`` (prompt ``rK#``): OpenSSH as it ships, its login throttling (``MaxStartups``)
  included;
- a guard process that removes it all if the lab process dies without doing so.

The lab is ready (:meth:`RouterLab.wait_ready`, :mod:`.router_ready`) once every router
accepts a login and every BGP session is established; what is refused or cleared before it is
made is :mod:`._preflight`'s.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path

from nornir_bench.lab._errors import LabError
from nornir_bench.lab._preflight import refuse_held_ports, remove_stale, user_exists
from nornir_bench.lab._sshd import add_login_user, make_host_key, reap, start_guard, start_sshd
from nornir_bench.lab._system import (
    FRR_DAEMONS,
    FRR_ETC,
    FRR_RUN,
    LabState,
    check_router_lab_needs,
    command,
    labs_locked,
    password_logins_of,
    process_started,
    teardown,
)
from nornir_bench.lab.bastion import Bastion
from nornir_bench.lab.devices import LabDevice
from nornir_bench.lab.router_ready import wait_for_router_lab
from nornir_bench.lab.running import PLATFORM, RunningRouterLab, host_key_of
from nornir_bench.lab.topology import LabPlan

__all__ = ["DEFAULT_ROUTER_PORT", "PLATFORM", "RouterLab", "check_max_startups", "host_key_of"]

DEFAULT_ROUTER_PORT = 2201

_FRR_BIN = Path("/usr/lib/frr")
# The labs this process made and has not stopped: another of the name made here is refused,
# as one of another process is (their state files name this process either way).
_RUNNING_HERE: set[str] = set()


_MAX_STARTUPS = re.compile(r"(?P<start>[0-9]{1,6})(?::(?P<rate>[0-9]{1,3}):(?P<full>[0-9]{1,6}))?")


class RouterLab:
    """One router lab: :meth:`start` makes it, :meth:`stop` removes it (also as a context
    manager, and through its guard if this process dies first).

    Args:
        plan: the routers and links (:func:`~nornir_bench.lab.topology.plan_lab`).
        max_startups: sshd's ``MaxStartups``; ``None`` keeps OpenSSH's default (10:30:100).
    """

    def __init__(self, plan: LabPlan, *, max_startups: str | None = None) -> None:
        self.plan = plan
        self.max_startups = check_max_startups(max_startups)
        self.password = secrets.token_urlsafe(18)
        self.state: LabState | None = None
        self._sshd: subprocess.Popen[bytes] | None = None
        self._guard: subprocess.Popen[bytes] | None = None
        self.bastion: Bastion | None = None
        self.made = False
        """Whether :meth:`start` got past its refusals to making the lab."""

    @property
    def user(self) -> str:
        return self.plan.user

    def devices(self) -> list[LabDevice]:
        """A device per router, as an inventory reaches it (before :meth:`start`, without
        the routers' host key, which does not exist yet)."""
        if self.state is not None:
            return self.running().devices()
        return [LabDevice(r.name, "127.0.0.1", r.port, PLATFORM, self.user, self.password)
                for r in self.plan.routers]

    def running(self, inventory: str | os.PathLike[str] | None = None) -> RunningRouterLab:
        """The lab as tests and benchmarks drive it, once started (``inventory``: the folder
        of an inventory written for it)."""
        if self.state is None:
            raise LabError(f"router lab {self.plan.name!r} is not started")
        return RunningRouterLab(self.plan, self.password, self.state.workdir,
                                sshd_pid=self.state.sshd_pid, owner=self.state.owner,
                                inventory=inventory)

    def __enter__(self) -> RouterLab:
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
        check_router_lab_needs()
        with labs_locked():  # taking turns with a killed lab's guard: it never removes this one
            remove_stale(self.plan, _RUNNING_HERE)
            refuse_held_ports(self.plan)
            self.made = True
            _RUNNING_HERE.add(self.plan.name)
            workdir = tempfile.mkdtemp(prefix=f"nornir-bench-lab-{self.plan.name}-")
            self.state = LabState(
                name=self.plan.name,
                owner=os.getpid(),
                namespaces=[r.namespace for r in self.plan.routers]
                + ([self.plan.management] if self.plan.management else []),
                user=self.user,
                password=self.password,
                workdir=workdir,
                ports={r.name: r.port for r in self.plan.routers},
                topology=self.plan.topology,
                owner_started=process_started(os.getpid()),
                bastion_port=self.plan.bastion_port,
            )
            self.state.save()  # before anything is made: whatever follows can be removed
        try:
            self._guard = start_guard(self.state)
            self._make_user()
            self._make_namespaces()
            self._start_routers()
            self._start_sshd()
            if self.plan.management is not None:
                self.bastion = Bastion(self.plan.management, self.plan.bastion_port or 0,
                                       self.user, workdir)
                self.bastion.start()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Remove everything the lab made (what is gone already is skipped)."""
        if self.state is None:
            return
        if self.bastion is not None:
            self.bastion.stop()
            self.bastion = None
        if self._sshd is not None:
            self._sshd.terminate()
        teardown(self.state)
        for process in (self._sshd, self._guard):
            if process is not None:
                reap(process)
        self._sshd = self._guard = None
        self.state = None
        _RUNNING_HERE.discard(self.plan.name)

    def _make_user(self) -> None:
        assert self.state is not None
        if user_exists(self.user):
            raise LabError(f"user {self.user} exists already and is not the lab's: remove it")
        # Group frr first: a configuration its vtysh saves is a new file of the user's, which
        # FRR's daemons (user frr) must be able to read.
        add_login_user(self.state, self.password, "--gid", "frr", "--groups", "frrvty")

    def _make_namespaces(self) -> None:
        plan = self.plan
        if plan.management is not None:  # the routers' SSH server's, behind the bastion
            command("ip", "netns", "add", plan.management)
            command("ip", "-n", plan.management, "link", "set", "lo", "up")
        for router in plan.routers:
            command("ip", "netns", "add", router.namespace)
            command("ip", "-n", router.namespace, "link", "set", "lo", "up")
            command(
                "ip", "-n", router.namespace, "addr", "add", f"{router.router_id}/32", "dev", "lo"
            )
        for link in plan.links:
            a, b = plan.routers[link.a], plan.routers[link.b]
            a_end, b_end = plan.interface(link, link.a), plan.interface(link, link.b)
            command(
                "ip", "link", "add", a_end, "netns", a.namespace, "type", "veth",
                "peer", "name", b_end, "netns", b.namespace,
            )
            for router, end, address in ((a, a_end, link.a_address), (b, b_end, link.b_address)):
                command(
                    "ip", "-n", router.namespace, "addr", "add", f"{address}/{link.prefix}",
                    "dev", end,
                )
                command("ip", "-n", router.namespace, "link", "set", end, "up")

    def _start_routers(self) -> None:
        plan = self.plan
        for index, router in enumerate(plan.routers):
            etc, run = FRR_ETC / router.namespace, FRR_RUN / router.namespace
            for folder in (etc, run):
                folder.mkdir(parents=True, exist_ok=True)
                shutil.chown(folder, "frr", "frr")
            # vtysh's ``write memory`` (as the login user, of group frr) renames frr.conf to
            # frr.conf.sav and writes a new one: the folder is the group's to write.
            etc.chmod(0o770)
            _write(etc / "frr.conf", plan.frr_config(index), "frr", "frr")
            # vtysh runs as the login user (groups frr, for /etc/frr, and frrvty)
            _write(etc / "vtysh.conf", plan.vtysh_config(index), "frr", "frrvty")
        started = []
        assert self.state is not None
        logs = Path(self.state.workdir)
        for daemon in FRR_DAEMONS:  # zebra first: the others connect to it
            for router in plan.routers:
                etc, run = FRR_ETC / router.namespace, FRR_RUN / router.namespace
                with open(logs / f"{router.name}-{daemon}.log", "wb") as log:
                    started.append(subprocess.Popen(
                        [
                            "ip", "netns", "exec", router.namespace,
                            str(_FRR_BIN / daemon), "-d", "-N", router.namespace,
                            "-f", str(etc / "frr.conf"), "-i", str(run / f"{daemon}.pid"),
                            "-P", "0",  # no TCP vty: vtysh talks over the Unix sockets
                        ],
                        stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                    ))
            for process in started:  # each returns once its daemon has forked off
                if process.wait(30) != 0:
                    raise LabError(
                        f"FRR's {daemon} did not start (exit {process.returncode}); its log: "
                        f"{logs}"
                    )
            started.clear()

    def _start_sshd(self) -> None:
        assert self.state is not None
        key = make_host_key(self.state.workdir)
        inside = [] if self.plan.management is None else [
            "ip", "netns", "exec", self.plan.management]
        self._sshd = start_sshd(self.plan, self.state, self._sshd_config(key),
                                [r.port for r in self.plan.routers], inside)

    def _sshd_config(self, key: Path) -> str:
        assert self.state is not None
        lines = [f"Port {r.port}" for r in self.plan.routers]
        lines += [
            "ListenAddress 127.0.0.1",
            *password_logins_of(self.user, key),
            f"PidFile {self.state.workdir}/sshd.pid",
            "PrintMotd no",
            "PrintLastLog no",
            "AllowTcpForwarding no",
        ]
        if self.max_startups is not None:
            lines.append(f"MaxStartups {self.max_startups}")
        for router in self.plan.routers:
            lines += [
                f"Match LocalPort {router.port}",
                f"    ForceCommand /usr/bin/vtysh -N {router.namespace}",
            ]
        return "\n".join(lines) + "\n"

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Return once every router accepts a login and all its BGP sessions are up.

        Raises:
            RouterNotReady: naming what was still not ready at ``timeout``.
        """
        wait_for_router_lab(self.plan, self.password, timeout)


def check_max_startups(spec: str | None) -> str | None:
    """``spec`` if it is a ``MaxStartups`` OpenSSH takes (``N``, or ``START:RATE:FULL``, rate
    a percentage), else a LabError: it goes into the SSH server's configuration as it is."""
    found = None if spec is None else _MAX_STARTUPS.fullmatch(spec)
    if spec is not None and (
        found is None
        or int(found["start"]) < 1
        or (found["rate"] is not None and not (
            int(found["rate"]) <= 100 and int(found["start"]) <= int(found["full"])
        ))
    ):
        raise LabError(
            "--max-startups must be N or START:RATE:FULL (whole numbers, START at least 1 and "
            f"at most FULL, RATE a percentage), as OpenSSH's MaxStartups, got {spec!r}"
        )
    return spec


def _write(path: Path, text: str, user: str, group: str) -> None:
    path.write_text(text, encoding="utf-8")
    shutil.chown(path, user, group)
    path.chmod(0o640)
