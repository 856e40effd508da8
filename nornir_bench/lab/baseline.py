"""A router lab's baseline, and the lab put back to it: what a test or a benchmark changed,
undone before the next one runs on the same lab.

The baseline is taken once the lab is ready: each router's running configuration and saved
``frr.conf``, its established BGP sessions and its FRR daemons, and the lab's SSH server.
:meth:`Baseline.restore` puts back what changed since: a daemon or the SSH server stopped
(SIGSTOP) is continued, a running configuration is put back through vtysh as root, a saved
one rewritten, and BGP is waited for until every session of the baseline is established
again. Only the routers a vtysh ran on since the last look (a login's or root's:
:mod:`._opened`) or whose daemons were stopped are read; the others cannot have changed. What
cannot be put back (a daemon or the SSH server gone, a configuration that does not come back,
BGP still down at the timeout) raises :class:`LabNotRestored`, naming it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from nornir_bench.lab._errors import LabError
from nornir_bench.lab._opened import OpenedFiles
from nornir_bench.lab._system import FRR_DAEMONS, FRR_ETC, FRR_RUN
from nornir_bench.lab.topology import LabPlan
from nornir_bench.lab.vtysh import SHOW_RUNNING, put_back, same_config, vtysh

__all__ = ["BGP_TIMEOUT", "Baseline", "LabNotRestored"]

BGP_TIMEOUT = 30.0
"""Seconds BGP has to come back once a configuration is put back (the lab's sessions retry
their connection every second)."""

_SHOW_BGP = "show bgp ipv4 unicast summary json"
_POLL = 0.2
_SAVED = "frr.conf"


class LabNotRestored(LabError):
    """A router lab could not be put back to its baseline: what is wrong, named. The lab is
    not fit for the next test or benchmark; stop it (and start another)."""


@dataclass
class _Router:
    """One router as the baseline holds it."""

    name: str
    namespace: str
    baseline: str
    """Its running configuration at the baseline."""
    config: str
    """Its running configuration as last read (or put back)."""
    saved: str
    """Its ``frr.conf`` at the baseline."""
    folder: frozenset[str]
    """The files of its FRR folder at the baseline (``write memory`` adds ``frr.conf.sav``)."""
    peers: frozenset[str]
    """Its BGP peers (the plan's: its neighbours), each to be established."""
    said: dict[str, str]
    """Its BGP peers and their state, as its FRR said them at the baseline."""
    daemons: dict[str, int]
    """Its FRR daemons' process ids."""


class Baseline:
    """Lab ``name``'s routers as they are now, to be put back to.

    Args:
        name: the lab's name.
        plan: its plan (routers and links).
        sshd_pid: its SSH server's process id.
        timeout: seconds BGP has to come back at :meth:`restore`.

    Raises:
        LabNotRestored: a router's BGP sessions are not all established now.
    """

    def __init__(self, name: str, plan: LabPlan, sshd_pid: int | None, *,
                 timeout: float = BGP_TIMEOUT) -> None:
        self.name = name
        self.sshd_pid = sshd_pid
        self.timeout = timeout
        self.routers: dict[str, _Router] = {}
        for index, router in enumerate(plan.routers):
            config, said = self._read(router.name)
            etc = FRR_ETC / router.namespace
            self.routers[router.name] = _Router(
                router.name, router.namespace, config, config, (etc / _SAVED).read_text(),
                frozenset(os.listdir(etc)),
                frozenset(address for _, address in plan.neighbours(index)), said,
                _daemons(router.namespace),
            )
        self._opened = OpenedFiles({
            r.name: os.fspath(FRR_ETC / r.namespace / "vtysh.conf") for r in plan.routers
        })

    def configs(self) -> dict[str, str]:
        """Each router's running configuration (read again only where a vtysh ran since)."""
        for name in self._opened.opened():
            self.routers[name].config = vtysh(self.name, name, SHOW_RUNNING)
        return {name: router.config for name, router in self.routers.items()}

    def restore(self) -> None:
        """Put every router back to the baseline (see the module); what was put back is the
        new last look.

        Raises:
            LabNotRestored: what could not be put back, every router's problem named.
        """
        continued, gone = self._continue_stopped()
        if gone:
            raise LabNotRestored("; ".join(gone))
        problems = []
        waiting = False
        for name in sorted(self._opened.opened() | continued):
            router = self.routers[name]
            config, said = self._read(name)
            if not same_config(config, router.baseline):
                config = put_back(self.name, name, router.baseline, config)
                waiting = True
                if not same_config(config, router.baseline):
                    problems.append(f"{name}: its running configuration did not come back")
            router.config = config
            problems += self._saved_back(router)
            waiting = waiting or not router.peers <= _established(said)
        if waiting:
            problems += self._bgp_back()
        self._opened.clear()  # this look's own vtysh runs
        if problems:
            raise LabNotRestored("; ".join(problems))

    def close(self) -> None:
        self._opened.close()

    def _read(self, name: str) -> tuple[str, dict[str, str]]:
        """``name``'s running configuration and its BGP peers' states, in one vtysh."""
        try:
            said = vtysh(self.name, name, f"{SHOW_RUNNING}\n{_SHOW_BGP}")
        except subprocess.TimeoutExpired as exc:
            raise LabNotRestored(
                f"{name}: its vtysh did not answer within {exc.timeout:g} s") from None
        config, _, bgp = said.partition("\nend\n")
        try:
            peers = json.loads(bgp).get("peers", {})
        except ValueError:
            peers = {}
        states = {address: str(peer.get("state")) for address, peer in peers.items()}
        return config + "\nend\n", states

    def _continue_stopped(self) -> tuple[set[str], list[str]]:
        """SIGCONT each stopped daemon, and the SSH server if stopped: the routers whose
        daemons were stopped, and what is gone."""
        continued, gone = set(), []
        for router in self.routers.values():
            for daemon, pid in router.daemons.items():
                state = _process_state(pid)
                if state is None:
                    gone.append(f"{router.name}: its {daemon} (process {pid}) is gone")
                elif state in "Tt":
                    os.kill(pid, signal.SIGCONT)
                    continued.add(router.name)
        if self.sshd_pid is not None:
            state = _process_state(self.sshd_pid)
            if state is None:
                gone.append(f"the lab's SSH server (process {self.sshd_pid}) is gone")
            elif state in "Tt":
                os.kill(self.sshd_pid, signal.SIGCONT)
        return continued, gone

    def _saved_back(self, router: _Router) -> list[str]:
        """``router``'s ``frr.conf`` as it was, and what ``write memory`` added removed."""
        etc = FRR_ETC / router.namespace
        try:
            for extra in set(os.listdir(etc)) - router.folder:
                (etc / extra).unlink()
            path = etc / _SAVED
            if path.read_text() != router.saved:
                path.write_text(router.saved)
                shutil.chown(path, "frr", "frr")
                path.chmod(0o640)
        except OSError as exc:
            return [f"{router.name}: its saved configuration: {exc}"]
        return []

    def _bgp_back(self) -> list[str]:
        """Wait until every router's BGP sessions of the baseline are established; the
        routers whose are not at the timeout."""
        deadline = time.monotonic() + self.timeout
        waiting = set(self.routers)
        while True:
            waiting = {n for n in waiting
                       if not self.routers[n].peers <= _established(self._read(n)[1])}
            if not waiting or time.monotonic() >= deadline:
                break
            time.sleep(_POLL)
        return [f"{name}: BGP sessions not established again within {self.timeout:g} s"
                for name in sorted(waiting)]


def _established(said: dict[str, str]) -> set[str]:
    return {address for address, state in said.items() if state == "Established"}


def _daemons(namespace: str) -> dict[str, int]:
    """The process id of each FRR daemon of a router (from its pid files)."""
    found = {}
    for daemon in FRR_DAEMONS:
        try:
            found[daemon] = int((FRR_RUN / namespace / f"{daemon}.pid").read_text().strip())
        except (OSError, ValueError) as exc:
            raise LabNotRestored(f"{namespace}: no {daemon} process id: {exc}") from exc
    return found


def _process_state(pid: int) -> str | None:
    """Process ``pid``'s state letter (``R``, ``S``, ``T`` ...), ``None`` if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    state = stat.rsplit(")", 1)[1].split()[0]
    return None if state in "ZX" else state
