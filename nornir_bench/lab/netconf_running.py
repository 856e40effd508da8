"""A NETCONF lab that runs, as tests and benchmarks drive it: :class:`RunningNetconfLab`.

Whoever runs the lab (this process: :func:`~nornir_bench.lab.labs.netconf_lab`, or another
one, attached by its name: :meth:`RunningNetconfLab.attach`), it offers the same: its login,
the inventory written for it, a Nornir on that inventory, each server's configuration as the
server says it (``<get-config>``, as text), the logins its SSH server accepted, and each
server put back to the configuration it started from (:meth:`RunningNetconfLab.restore`).
"""

from __future__ import annotations

import asyncio
import copy
import os
import re
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nornir_bench.lab._errors import LabError
from nornir_bench.lab._system import owner_alive, read_state
from nornir_bench.lab.devices import LabDevice
from nornir_bench.lab.inventories import nornir_on, router_hosts
from nornir_bench.lab.inventory_files import write_inventory
from nornir_bench.lab.netconf_plan import NETCONF_PLATFORM, NetconfPlan, plan_netconf_lab
from nornir_bench.lab.netconf_ready import netconf_rpcs, wait_for_netconf_lab
from nornir_bench.lab.netconf_server import start_netconfd, stop_netconfd, wait_for_netconfd
from nornir_bench.lab.running import host_key_of, live_processes

if TYPE_CHECKING:
    from nornir.core import Nornir

__all__ = ["RunningNetconfLab"]

_ACCEPTED = re.compile(r"\bAccepted \S+ for ")
_DATASTORES = ("running", "candidate")
_DATA = re.compile(r"<data[ >].*</data>|<data/>", re.S)


class RunningNetconfLab:
    """A NETCONF lab that runs (see the module).

    Args:
        plan: its servers.
        password: its login user's password.
        workdir: its work folder (the servers' folders, the SSH server's key and log).
        sshd_pid: its SSH server's process id.
        owner: the process that made it (which removes it).
        inventory: the folder of an inventory written for it, if any.
    """

    def __init__(self, plan: NetconfPlan, password: str, workdir: str | os.PathLike[str], *,
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
        self._baseline: dict[str, str] = {}

    @classmethod
    def attach(cls, name: str,
               inventory: str | os.PathLike[str] | None = None) -> RunningNetconfLab:
        """The NETCONF lab named ``name`` that another process runs.

        Raises:
            LabError: no NETCONF lab of that name runs.
        """
        state = read_state(name)
        if (state is None or state.kind != "netconf" or state.sshd_pid is None
                or not owner_alive(state)):
            raise LabError(f"no NETCONF lab named {name!r} is running")
        plan = plan_netconf_lab(len(state.ports), port=min(state.ports.values()), name=name)
        return cls(plan, state.password, state.workdir, sshd_pid=state.sshd_pid,
                   owner=state.owner, inventory=inventory)

    @property
    def name(self) -> str:
        return self.plan.name

    @property
    def user(self) -> str:
        """Its login user (``nbl-NAME``)."""
        return self.plan.user

    @property
    def host_key(self) -> str:
        """Its servers' SSH host key (``ssh-ed25519 AAAA...``)."""
        return host_key_of(self.workdir)

    def servers(self) -> list[str]:
        """Its servers' names (``nc1``, ``nc2`` ...)."""
        return [server.name for server in self.plan.servers]

    def devices(self) -> list[LabDevice]:
        """A device per server, as an inventory reaches it."""
        key = self.host_key
        return [
            LabDevice(s.name, "127.0.0.1", s.port, NETCONF_PLATFORM, self.user, self.password,
                      key)
            for s in self.plan.servers
        ]

    def write_inventory(self, folder: str | os.PathLike[str],
                        hosts: int | None = None) -> list[Path]:
        """A nornir SimpleInventory for it in ``folder``: a host per server (``nc1`` ...), or
        ``hosts`` hosts spread over the servers in turn; platform ``netconf``, the servers'
        host key in its ``known_hosts``. The files written.

        Raises:
            LabError: the folder cannot be written.
        """
        devices = self.devices()
        return write_inventory(devices if hosts is None else router_hosts(devices, hosts),
                               folder)

    def with_inventory(self, folder: str | os.PathLike[str],
                       hosts: int | None = None) -> RunningNetconfLab:
        """The same lab with an inventory of its own in ``folder`` (:meth:`write_inventory`)."""
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
            raise LabError(f"NETCONF lab {self.name!r} has no inventory: write one first")
        return nornir_on(self.inventory, runner, **options)

    def config(self, server: str, source: str = "running") -> str:
        """``server``'s configuration in datastore ``source`` (``running`` or ``candidate``),
        as its ``<get-config>`` reply says it (an ``<rpc-reply>``, text): compared as it is,
        a change that was reverted shows none.

        Raises:
            LabError: an unknown server or datastore, or a server that did not answer.
        """
        if source not in _DATASTORES:
            raise LabError(f"source must be one of {', '.join(_DATASTORES)}, got {source!r}")
        port = self.plan.server(server).port
        operation = f"<get-config><source><{source}/></source></get-config>"
        try:
            (reply,) = asyncio.run(asyncio.wait_for(
                netconf_rpcs(self.user, self.password, port, [operation]), 30))
        except Exception as exc:
            raise LabError(f"NETCONF server {server} did not answer <get-config>: "
                           f"{type(exc).__name__}: {exc}") from exc
        return reply

    def configs(self, source: str = "running") -> dict[str, str]:
        """Each server's configuration (:meth:`config`), by server."""
        return {server: self.config(server, source) for server in self.servers()}

    def data(self, server: str, source: str = "running") -> str:
        """``server``'s configuration in ``source``: the ``<data>`` of its ``<get-config>``
        reply, as text (the reply's message id and time of last change left out)."""
        reply = self.config(server, source)
        found = _DATA.search(reply)
        return "" if found is None else found.group(0)

    def take_baseline(self) -> None:
        """Each server's running configuration now is what :meth:`changed` compares with
        (taken by :func:`~nornir_bench.lab.labs.netconf_lab` once the lab is ready)."""
        self._baseline = {server: self.data(server) for server in self.servers()}

    def changed(self) -> list[str]:
        """The servers whose running or candidate configuration is not their baseline's
        (:meth:`take_baseline`; :meth:`restore` puts them back).

        Raises:
            LabError: no baseline was taken.
        """
        if not self._baseline:
            raise LabError(f"NETCONF lab {self.name!r} has no baseline: take one first")
        return [
            server for server in self.servers()
            if any(self.data(server, source) != self._baseline[server] for source in _DATASTORES)
        ]

    def restore(self, servers: list[str] | None = None, timeout: float = 30.0) -> None:
        """The servers (all by default) started again from the configuration they started
        from: what was committed, left in a candidate, locked or pending confirmation is
        gone.

        Raises:
            LabError: a server that did not start again; NetconfNotReady: one that did not
                answer within ``timeout``.
        """
        chosen = [self.plan.server(name) for name in (servers or self.servers())]
        stop_netconfd(chosen)
        for server in chosen:
            start_netconfd(server, self.workdir, self.user)
        for server in chosen:
            wait_for_netconfd(server, self.workdir)
        wait_for_netconf_lab(self.plan, self.password, timeout)

    def logins(self) -> int:
        """The logins its SSH server accepted so far (its log's ``Accepted`` lines)."""
        log = self.workdir / "sshd.log"
        return len(_ACCEPTED.findall(log.read_text(errors="replace")))

    def pids(self, server: str | None = None) -> list[int]:
        """Its netconfd processes, of one server or all."""
        sockets = [os.fspath(s.socket(self.workdir)) for s in self.plan.servers
                   if server is None or s.name == server]
        return [
            pid for pid, words in live_processes()
            if Path(words[0]).name == "netconfd"
            and any(w == f"--ncxserver-sockname={sock}" for w in words for sock in sockets)
        ]

    def state(self) -> dict[str, Any]:
        """Its state file (what it made, its owner, its SSH server), as a dict."""
        state = read_state(self.name)
        if state is None:
            raise LabError(f"NETCONF lab {self.name!r} has no state file: it is not running")
        return asdict(state)

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Return once every server answers a NETCONF session over SSH.

        Raises:
            NetconfNotReady: naming the servers that did not at ``timeout``.
        """
        wait_for_netconf_lab(self.plan, self.password, timeout)

    def close(self) -> None:
        """Nothing held (the lab itself is its owner's to stop): as the router lab's."""
