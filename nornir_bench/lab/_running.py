"""What a running lab behind OpenSSH offers whatever its kind (:class:`RunningSshLab`; the
router lab's :class:`~nornir_bench.lab.running.RunningRouterLab`, the NETCONF lab's
:class:`~nornir_bench.lab.netconf_running.RunningNetconfLab`): its login, its host key, a
device per member, the inventory written for it, a Nornir on that inventory, the logins its SSH
server accepted and its state file; attached by name when another process runs it."""

from __future__ import annotations

import copy
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar

from nornir_bench.lab._errors import LabError
from nornir_bench.lab._preflight import PlannedLab
from nornir_bench.lab._sshd import HOST_KEY
from nornir_bench.lab._system import LabState, owner_alive, read_state
from nornir_bench.lab.devices import LabDevice
from nornir_bench.lab.inventories import nornir_on, router_hosts
from nornir_bench.lab.inventory_files import write_inventory

if TYPE_CHECKING:
    from nornir.core import Nornir

__all__ = ["Member", "RunningSshLab", "host_key_of"]

_ACCEPTED = re.compile(r"\bAccepted \S+ for ")  # OpenSSH logs each login it took so

PlanT = TypeVar("PlanT", bound=PlannedLab)
LabT = TypeVar("LabT", bound="RunningSshLab[Any]")


def host_key_of(workdir: str | os.PathLike[str]) -> str:
    """The SSH host key of the lab whose work folder is ``workdir`` (its state file's
    ``workdir``), as OpenSSH writes a public key: its members' known-hosts entry."""
    public = Path(workdir) / f"{HOST_KEY}.pub"
    return " ".join(public.read_text(encoding="utf-8").split()[:2])


class Member(Protocol):
    """A router or server of a lab, as its SSH server's port reaches it."""

    @property
    def name(self) -> str: ...

    @property
    def port(self) -> int: ...


class RunningSshLab(ABC, Generic[PlanT]):
    """A lab behind OpenSSH that runs. Each kind names its members (:meth:`_members`), its
    inventory's platform, and how its plan is made again from its state file.

    Args:
        plan: what it is made of.
        password: its login user's password.
        workdir: its work folder (keys, configuration and logs of its SSH server).
        sshd_pid: its SSH server's process id.
        owner: the process that made it (which removes it).
        inventory: the folder of an inventory written for it, if any.
    """

    kind: ClassVar[str]
    """Its kind as its state file says it (``routers``, ``netconf``)."""
    kind_text: ClassVar[str]
    """Its kind as messages say it (``router lab``)."""
    platform: ClassVar[str]
    """Its inventory's platform."""
    config_platform: ClassVar[str | None] = None
    """Its inventory's platform for configuration tools, if it needs one of its own."""

    def __init__(self, plan: PlanT, password: str, workdir: str | os.PathLike[str], *,
                 sshd_pid: int | None, owner: int,
                 inventory: str | os.PathLike[str] | None = None) -> None:
        self.plan = plan
        self.password = password
        self.workdir = Path(workdir)
        self.sshd_pid = sshd_pid
        self.owner = owner
        self.inventory = None if inventory is None else Path(inventory)
        """The folder of the inventory written for it (``hosts.yaml``, ``groups.yaml``,
        ``defaults.yaml``, ``known_hosts``), if any."""

    @classmethod
    def _attached(cls: type[LabT], name: str,
                  inventory: str | os.PathLike[str] | None = None) -> LabT:
        """The lab of this kind named ``name`` that another process runs.

        Raises:
            LabError: no lab of this kind and name runs.
        """
        state = read_state(name)
        if (state is None or state.kind != cls.kind or state.sshd_pid is None
                or not owner_alive(state)):
            raise LabError(f"no {cls.kind_text} named {name!r} is running")
        return cls(cls._plan_of(state), state.password, state.workdir, sshd_pid=state.sshd_pid,
                   owner=state.owner, inventory=inventory)

    @classmethod
    @abstractmethod
    def _plan_of(cls, state: LabState) -> PlanT:
        """Its plan, made again from its state file."""

    @abstractmethod
    def _members(self) -> Sequence[Member]:
        """Its routers or servers, in order."""

    def _jump(self) -> tuple[Mapping[str, Any] | None, str]:
        """The jump host its inventory names, and that host's known-hosts line (none)."""
        return None, ""

    @property
    def name(self) -> str:
        return self.plan.name

    @property
    def user(self) -> str:
        """Its login user (``nbl-NAME``)."""
        return self.plan.user

    @property
    def host_key(self) -> str:
        """Its members' SSH host key (``ssh-ed25519 AAAA...``)."""
        return host_key_of(self.workdir)

    def devices(self) -> list[LabDevice]:
        """A device per member, as an inventory reaches it."""
        key = self.host_key
        return [
            LabDevice(m.name, "127.0.0.1", m.port, self.platform, self.user, self.password, key)
            for m in self._members()
        ]

    def write_inventory(self, folder: str | os.PathLike[str],
                        hosts: int | None = None) -> list[Path]:
        """A nornir SimpleInventory for it in ``folder``: a host per member (``r1``, ``nc1``
        ...), or ``hosts`` hosts spread over the members in turn (``h1`` on the first, ``h2``
        on the second ...); its members' host key in its ``known_hosts``, and through its
        bastion if it has one. The files written.

        Raises:
            LabError: the folder cannot be written.
        """
        devices = self.devices()
        jump, known = self._jump()
        return write_inventory(devices if hosts is None else router_hosts(devices, hosts),
                               folder, jump, known, config_platform=self.config_platform)

    def with_inventory(self: LabT, folder: str | os.PathLike[str],
                       hosts: int | None = None) -> LabT:
        """The same lab (what it holds shared) with an inventory of its own in ``folder``
        (:meth:`write_inventory`)."""
        self.write_inventory(folder, hosts)
        view = copy.copy(self)
        view.inventory = Path(folder)
        return view

    def nornir(self, runner: str = "threadpool", **options: Any) -> Nornir:
        """A Nornir on its inventory with the runner ``runner`` and its ``options``.

        Raises:
            LabError: no inventory was written for it.
        """
        if self.inventory is None:
            raise LabError(f"{self.kind_text} {self.name!r} has no inventory: write one first")
        return nornir_on(self.inventory, runner, **options)

    def logins(self) -> int:
        """The logins its SSH server accepted so far: its log's ``Accepted METHOD for USER``
        lines (the lab's servers take passwords only)."""
        log = self.workdir / "sshd.log"
        return len(_ACCEPTED.findall(log.read_text(errors="replace")))

    def state(self) -> dict[str, Any]:
        """Its state file (what it made, its owner, its SSH server), as a dict."""
        state = read_state(self.name)
        if state is None:
            raise LabError(f"{self.kind_text} {self.name!r} has no state file: it is not running")
        return asdict(state)

    def close(self) -> None:
        """Let go of what it holds (the lab itself is its owner's to stop)."""
