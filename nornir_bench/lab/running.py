"""A router lab that runs, as tests and benchmarks drive it: :class:`RunningRouterLab`.

What it offers is the same whoever runs the lab: this process
(:func:`~nornir_bench.lab.labs.router_lab`), or another one, attached by the lab's name
(:meth:`RunningRouterLab.attach`: ``nornir-bench lab --routers N --name NAME``, a test
session's lab). Its login, the inventory written for it (any number of hosts spread over the
routers), a Nornir on that inventory, its routers driven as root through vtysh, its BGP
peers, the logins its SSH server accepted, the processes of its routers, and its baseline
(:mod:`~nornir_bench.lab.baseline`): the state it was ready in, to put it back to after a test
or a benchmark changed it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from nornir_bench.lab._errors import LabError
from nornir_bench.lab._running import RunningSshLab, host_key_of
from nornir_bench.lab._system import LabState, lab_states, owner_alive
from nornir_bench.lab.baseline import Baseline
from nornir_bench.lab.bastion import Bastion
from nornir_bench.lab.router_ready import wait_for_router_lab
from nornir_bench.lab.topology import LabPlan, Router, plan_lab
from nornir_bench.lab.vtysh import vtysh

__all__ = [
    "PLATFORM",
    "RunningRouterLab",
    "host_key_of",
    "lab_pids",
    "live_lab_namespaces",
    "live_processes",
]

PLATFORM = "cisco_ios"
"""The inventory's platform: netmiko's ``cisco_ios`` and scrapli's IOS-XE driver both drive
vtysh's Cisco-like CLI."""

_SHOW_BGP = "show bgp ipv4 unicast summary json"


class RunningRouterLab(RunningSshLab[LabPlan]):
    """A router lab that runs (see the module).

    Made as :class:`~nornir_bench.lab._running.RunningSshLab` is (``plan``: its routers and links).
    """

    kind = "routers"
    kind_text = "router lab"
    platform = PLATFORM
    config_platform = "frr"
    baseline: Baseline | None = None
    """What :meth:`restore` puts it back to: taken by :meth:`wait_ready` (or
    :meth:`take_baseline`)."""

    @classmethod
    def attach(cls, name: str, inventory: str | os.PathLike[str] | None = None, *,
               baseline: bool = True) -> RunningRouterLab:
        """The lab named ``name`` that another process runs (it must be ready); with
        ``baseline``, its state now is what :meth:`restore` puts it back to.

        Raises:
            LabError: no lab of that name runs.
        """
        lab = cls._attached(name, inventory)
        if baseline:
            lab.take_baseline()
        return lab

    @classmethod
    def _plan_of(cls, state: LabState) -> LabPlan:
        return plan_lab(len(state.ports), topology=state.topology,
                        port=min(state.ports.values()), name=state.name,
                        bastion_port=state.bastion_port)

    def _members(self) -> tuple[Router, ...]:
        return self.plan.routers

    def _jump(self) -> tuple[dict[str, Any] | None, str]:
        """Its bastion, if it has one: the inventory's way in."""
        if self.plan.management is None or self.plan.bastion_port is None:
            return None, ""
        bastion = Bastion(self.plan.management, self.plan.bastion_port, self.user,
                          os.fspath(self.workdir))
        return bastion.jump_host(self.password), bastion.known_hosts_line()

    def routers(self) -> list[str]:
        """Its routers' names (``r1``, ``r2`` ...)."""
        return [router.name for router in self.plan.routers]

    def hosts(self) -> dict[str, str]:
        """Each host of its inventory, and the router it reaches (by port)."""
        from ruamel.yaml import YAML

        if self.inventory is None:
            return {name: name for name in self.routers()}
        routers = {r.port: r.name for r in self.plan.routers}
        hosts = YAML(typ="safe").load(self.inventory / "hosts.yaml")
        return {name: routers[host["port"]] for name, host in hosts.items()}

    def asn(self, router: str) -> int:
        """``router``'s AS number."""
        (found,) = [r.asn for r in self.plan.routers if r.name == router]
        return found

    def vtysh(self, router: str, command: str) -> str:
        """``command`` on ``router``'s FRR as root (not through SSH): what it printed."""
        return vtysh(self.name, router, command)

    def configs(self) -> dict[str, str]:
        """Each router's running configuration, by router."""
        if self.baseline is not None:
            return self.baseline.configs()
        return {router: self.vtysh(router, "show running-config") for router in self.routers()}

    def bgp_peers(self, router: str) -> dict[str, str]:
        """``router``'s BGP peers (address -> state), as its FRR says them."""
        said = json.loads(self.vtysh(router, _SHOW_BGP) or "{}")
        return {address: peer["state"] for address, peer in said.get("peers", {}).items()}

    def pids(self, program: str, router: str | None = None) -> list[int]:
        """Its processes running ``program`` (``bgpd``, ``vtysh`` ...), of one router or all."""
        return lab_pids(self.name, program, router)

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Return once every router accepts a login and all its BGP sessions are up; its
        baseline is then taken.

        Raises:
            RouterNotReady: naming what was still not ready at ``timeout``.
        """
        wait_for_router_lab(self.plan, self.password, timeout)
        self.take_baseline()

    def take_baseline(self) -> None:
        """Its state now is what :meth:`restore` puts it back to."""
        if self.baseline is not None:
            self.baseline.close()
        self.baseline = Baseline(self.name, self.plan, self.sshd_pid)

    @property
    def bgp_at_ready(self) -> dict[str, dict[str, str]]:
        """Each router's BGP peers and their state, as its FRR said them at the baseline
        (right after the lab was ready)."""
        if self.baseline is None:
            return {}
        return {name: dict(router.said) for name, router in self.baseline.routers.items()}

    def restore(self) -> None:
        """Put it back to its baseline (:meth:`~nornir_bench.lab.baseline.Baseline.restore`).

        Raises:
            LabNotRestored: what could not be put back.
        """
        if self.baseline is None:
            raise LabError(f"router lab {self.name!r} has no baseline: take one first")
        self.baseline.restore()

    def close(self) -> None:
        """Let go of its baseline's watch (the lab itself is its owner's to stop)."""
        if self.baseline is not None:
            self.baseline.close()


def lab_pids(name: str, program: str, router: str | None = None) -> list[int]:
    """The processes of lab ``name`` running ``program`` (``zebra``, ``vtysh`` ...), of one
    router or all: those started with ``-N nb-NAME-rK``."""
    prefix = f"nb-{name}-"
    return [
        pid
        for pid, words in live_processes()
        if Path(words[0]).name == program
        and any(a == f"{prefix}{router}" if router else a.startswith(prefix)
                for a, before in zip(words[1:], words[:-1], strict=True) if before == "-N")
    ]


def live_processes() -> Iterator[tuple[int, list[str]]]:
    """Every live process (zombies left out: they are dead, waiting for their parent) and
    the words of its command line."""
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


def live_lab_namespaces() -> set[str]:
    """The network namespaces of every lab (routers, NETCONF) whose owner still runs (none
    for a user who cannot read the labs' states): another session's lab, not anyone's
    leftover."""
    return {name for state in lab_states() if owner_alive(state) for name in state.namespaces}
