"""Before a lab (routers, NETCONF servers) is made: a stale lab of its name removed (its
namespaces, its user), one still running or a port another process holds refused, naming what
holds it."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Collection
from pathlib import Path
from typing import Protocol

from nornir_bench.lab._errors import LabError
from nornir_bench.lab._system import (
    LabState,
    lab_states,
    namespaces_named,
    owner_alive,
    read_state,
    teardown,
)
from nornir_bench.lab.ports import port_free, port_holder

__all__ = ["PlannedLab", "refuse_held_ports", "remove_stale", "user_exists"]


class PlannedLab(Protocol):
    """What the checks before a lab is made read of its plan, whatever the lab's kind."""

    @property
    def name(self) -> str: ...

    @property
    def user(self) -> str: ...

    @property
    def kind(self) -> str:
        """How the lab is called in messages (``router lab``, ``NETCONF lab``)."""
        ...

    def exposed_ports(self) -> list[tuple[int, str]]:
        """Its ports on this machine's 127.0.0.1, each with what listens there
        (``router r1``)."""
        ...


def remove_stale(plan: PlannedLab, running_here: Collection[str] = ()) -> None:
    """A lab of the same name whose process is gone is removed; one still running is an error.
    Namespaces of the name that no state records (a start killed early) go too, and so does
    every other lab whose owner and guard were both killed (no one else would remove it).

    Args:
        plan: the lab about to be made.
        running_here: the labs this process runs: one of its own recorded under the name
            and not among them is what an earlier lab of this process left.
    """
    state = read_state(plan.name)
    if state is not None:
        mine = state.owner == os.getpid()
        if plan.name in running_here if mine else owner_alive(state):
            raise LabError(
                f"a {state.kind_text} named {plan.name!r} is running (process {state.owner}): "
                "stop it, "
                "or give this one another --name"
            )
        teardown(state)
    for other in lab_states():
        if other.name != plan.name and other.owner != os.getpid() and not owner_alive(other):
            teardown(other)
    stale = namespaces_named(f"nb-{plan.name}-")
    if stale:
        teardown(LabState(plan.name, 0, stale, plan.user, "", "", {}, user_made=False))
    if user_exists(plan.user) and read_state(plan.name) is None:
        # made by a lab killed before it recorded anything more: its name is the lab's own
        subprocess.run(["userdel", plan.user], capture_output=True, check=False)


def refuse_held_ports(plan: PlannedLab, ours: int | None = None) -> None:
    """A LabError naming the first of the lab's ports that another process (not ``ours``)
    listens on, and that process: another lab's SSH server is named by its lab."""
    for port, what in plan.exposed_ports():
        holder = port_holder(port)
        if (holder is not None and holder == ours) or (holder is None and port_free(port)):
            continue
        lab = next((s for s in lab_states() if holder and s.sshd_pid == holder), None)
        if lab is not None:
            who = f"{lab.kind_text} {lab.name!r} (process {lab.owner})"
        elif holder is not None:
            who = f"process {holder} ({_program(holder)})"
        else:
            who = "a process this one cannot see"
        raise LabError(
            f"port {port} ({what}) is held by {who}: stop it, or give this lab free ports "
            "(--port)"
        )


def _program(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text(errors="replace").strip()
    except OSError:
        return "gone"


def user_exists(user: str) -> bool:
    import pwd

    try:
        pwd.getpwnam(user)
    except KeyError:
        return False
    return True
