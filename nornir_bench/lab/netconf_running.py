"""A NETCONF lab that runs, as tests and benchmarks drive it: :class:`RunningNetconfLab`.

Whoever runs the lab (this process: :func:`~nornir_bench.lab.labs.netconf_lab`, or another
one, attached by its name: :meth:`RunningNetconfLab.attach`), it offers the same: its login,
the inventory written for it, a Nornir on that inventory, each server's configuration as the
server says it (``<get-config>``, as text), the logins its SSH server accepted, and each
server put back to the configuration it started from (:meth:`RunningNetconfLab.restore`).
"""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path

from nornir_bench.lab._errors import LabError
from nornir_bench.lab._running import RunningSshLab
from nornir_bench.lab._system import LabState
from nornir_bench.lab.netconf_plan import (
    NETCONF_PLATFORM,
    NetconfPlan,
    NetconfServer,
    plan_netconf_lab,
)
from nornir_bench.lab.netconf_ready import netconf_rpcs, wait_for_netconf_lab
from nornir_bench.lab.netconf_server import start_netconfd, stop_netconfd, wait_for_netconfd
from nornir_bench.lab.running import live_processes

__all__ = ["RunningNetconfLab"]

_DATASTORES = ("running", "candidate")
_DATA = re.compile(r"<data[ >].*</data>|<data/>", re.S)


class RunningNetconfLab(RunningSshLab[NetconfPlan]):
    """A NETCONF lab that runs (see the module).

    Made as :class:`~nornir_bench.lab._running.RunningSshLab` is (``plan``: its servers).
    """

    kind = "netconf"
    kind_text = "NETCONF lab"
    platform = NETCONF_PLATFORM
    _baseline: dict[str, str] | None = None

    @classmethod
    def attach(cls, name: str,
               inventory: str | os.PathLike[str] | None = None) -> RunningNetconfLab:
        """The NETCONF lab named ``name`` that another process runs.

        Raises:
            LabError: no NETCONF lab of that name runs.
        """
        return cls._attached(name, inventory)

    @classmethod
    def _plan_of(cls, state: LabState) -> NetconfPlan:
        return plan_netconf_lab(len(state.ports), port=min(state.ports.values()),
                                name=state.name)

    def _members(self) -> tuple[NetconfServer, ...]:
        return self.plan.servers

    def servers(self) -> list[str]:
        """Its servers' names (``nc1``, ``nc2`` ...)."""
        return [server.name for server in self.plan.servers]

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

    def pids(self, server: str | None = None) -> list[int]:
        """Its netconfd processes, of one server or all."""
        sockets = [os.fspath(s.socket(self.workdir)) for s in self.plan.servers
                   if server is None or s.name == server]
        return [
            pid for pid, words in live_processes()
            if Path(words[0]).name == "netconfd"
            and any(w == f"--ncxserver-sockname={sock}" for w in words for sock in sockets)
        ]

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Return once every server answers a NETCONF session over SSH.

        Raises:
            NetconfNotReady: naming the servers that did not at ``timeout``.
        """
        wait_for_netconf_lab(self.plan, self.password, timeout)
