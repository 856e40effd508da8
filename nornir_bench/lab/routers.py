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

import re
import shutil
import subprocess
from pathlib import Path

from nornir_bench.lab._errors import LabError
from nornir_bench.lab._needs import check_router_lab_needs
from nornir_bench.lab._sshd import KindFields, SshLab
from nornir_bench.lab._system import (
    FRR_DAEMONS,
    FRR_ETC,
    FRR_RUN,
    LabState,
    command,
    password_logins_of,
)
from nornir_bench.lab.bastion import Bastion
from nornir_bench.lab.devices import LabDevice
from nornir_bench.lab.router_ready import wait_for_router_lab
from nornir_bench.lab.running import PLATFORM, RunningRouterLab, host_key_of
from nornir_bench.lab.topology import LabPlan

__all__ = ["DEFAULT_ROUTER_PORT", "PLATFORM", "RouterLab", "check_max_startups", "host_key_of"]

DEFAULT_ROUTER_PORT = 2201

_FRR_BIN = Path("/usr/lib/frr")


_MAX_STARTUPS = re.compile(r"(?P<start>[0-9]{1,6})(?::(?P<rate>[0-9]{1,3}):(?P<full>[0-9]{1,6}))?")


class RouterLab(SshLab[LabPlan, RunningRouterLab]):
    """One router lab: :meth:`start` makes it, :meth:`stop` removes it (also as a context
    manager, and through its guard if this process dies first).

    Args:
        plan: the routers and links (:func:`~nornir_bench.lab.topology.plan_lab`).
        max_startups: sshd's ``MaxStartups``; ``None`` keeps OpenSSH's default (10:30:100).
    """

    _running_type = RunningRouterLab
    # Group frr first: a configuration its vtysh saves is a new file of the user's, which
    # FRR's daemons (user frr) must be able to read.
    _login_options = ("--gid", "frr", "--groups", "frrvty")

    def __init__(self, plan: LabPlan, *, max_startups: str | None = None) -> None:
        super().__init__(plan)
        self.max_startups = check_max_startups(max_startups)
        self.bastion: Bastion | None = None

    def devices(self) -> list[LabDevice]:
        """A device per router, as an inventory reaches it (before :meth:`start`, without
        the routers' host key, which does not exist yet)."""
        if self.state is not None:
            return self.running().devices()
        return [LabDevice(r.name, "127.0.0.1", r.port, PLATFORM, self.user, self.password)
                for r in self.plan.routers]

    def _check_needs(self) -> None:
        check_router_lab_needs()

    def _state_fields(self) -> KindFields:
        return KindFields(
            namespaces=[r.namespace for r in self.plan.routers]
            + ([self.plan.management] if self.plan.management else []),
            ports={r.name: r.port for r in self.plan.routers},
            topology=self.plan.topology,
            bastion_port=self.plan.bastion_port,
        )

    def _make(self, state: LabState) -> None:
        self._make_namespaces()
        self._start_routers()
        inside = [] if self.plan.management is None else [
            "ip", "netns", "exec", self.plan.management]
        self._serve_ssh(self._sshd_config, [r.port for r in self.plan.routers], inside)
        if self.plan.management is not None:
            self.bastion = Bastion(self.plan.management, self.plan.bastion_port or 0,
                                   self.user, state.workdir)
            self.bastion.start()

    def _stop_parts(self) -> None:
        if self.bastion is not None:
            self.bastion.stop()
            self.bastion = None

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
