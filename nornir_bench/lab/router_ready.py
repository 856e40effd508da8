"""A router lab ready: every router accepts a login and every BGP session is established.

:func:`wait_for_router_lab` waits for a lab this process knows the plan of;
:func:`wait_for_named_lab` (``nornir-bench wait-lab --routers``) for one another process
started, read from its state file.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import time
from collections.abc import Callable

from nornir_bench.lab._needs import check_router_lab_needs
from nornir_bench.lab._system import owner_alive, read_state
from nornir_bench.lab.ready import LabNotReady
from nornir_bench.lab.topology import LabPlan, plan_lab

__all__ = ["LOGIN_TIMEOUT", "RouterNotReady", "wait_for_named_lab", "wait_for_router_lab"]

LOGIN_TIMEOUT = 10.0
_POLL = 0.2


class RouterNotReady(LabNotReady):
    """Some router did not accept a login, or a BGP session did not come up, in time."""



def wait_for_named_lab(name: str, timeout: float = 60.0) -> LabPlan:
    """``nornir-bench wait-lab --routers``: wait for the lab named ``name``, started by another
    process (its state file appears as it starts), to be ready; its plan.

    The state is read again at each look: the state a killed lab left (its process gone) is
    not this lab's, and a lab started again under the name has another password.

    Raises:
        RouterNotReady: no such lab, or not ready, at ``timeout``.
    """
    check_router_lab_needs()

    def running() -> tuple[LabPlan, str] | None:
        state = read_state(name)
        if (state is None or state.kind != "routers" or state.sshd_pid is None
                or not owner_alive(state)):
            return None
        plan = plan_lab(
            len(state.ports), topology=state.topology, port=min(state.ports.values()), name=name,
            bastion_port=state.bastion_port,
        )
        return plan, state.password

    return _wait_ready(
        running, timeout, f"no router lab named {name!r} started within {timeout:g} s"
    )


def wait_for_router_lab(plan: LabPlan, password: str, timeout: float = 60.0) -> None:
    """Return once every router of ``plan`` accepts a login (as ``password``) and every BGP
    session is established; :class:`RouterNotReady` saying what was not at ``timeout``."""
    _wait_ready(lambda: (plan, password), timeout, "")


def _wait_ready(
    running: Callable[[], tuple[LabPlan, str] | None], timeout: float, absent: str
) -> LabPlan:
    """Wait for the lab ``running()`` gives at each look (its plan and password; ``None``
    while none runs, :class:`RouterNotReady` saying ``absent`` at ``timeout``); a lab given
    anew (started again under its name) is waited for from the start."""
    deadline = time.monotonic() + timeout
    lab: tuple[LabPlan, str] | None = None
    waiting_bgp: list[int] = []
    waiting_login: list[int] = []
    problem = ""
    while True:
        found = running()
        if found is not None and found != lab:
            lab = found
            waiting_bgp = list(range(len(lab[0].routers)))
            waiting_login = list(range(len(lab[0].routers)))
        if found is not None:
            plan, password = found
            waiting_bgp = [k for k in waiting_bgp if not _bgp_established(plan, k)]
            if waiting_login:
                failures = asyncio.run(_logins(plan, password, waiting_login))
                waiting_login = [k for k in waiting_login if k in failures]
                if failures:
                    problem = next(iter(failures.values()))
            if not waiting_bgp and not waiting_login:
                return plan
        if time.monotonic() >= deadline:
            if found is None:
                raise RouterNotReady(absent)
            names = ", ".join(plan.routers[k].name for k in sorted({*waiting_bgp, *waiting_login}))
            what = []
            if waiting_login:
                what.append(f"no login ({problem})")
            if waiting_bgp:
                what.append("BGP sessions not all established")
            raise RouterNotReady(f"router lab not ready after {timeout:g} s: {names}: "
                                 + "; ".join(what))
        time.sleep(_POLL)


def _bgp_established(plan: LabPlan, index: int) -> bool:
    expected = {address for _, address in plan.neighbours(index)}
    if not expected:
        return True
    done = subprocess.run(
        ["vtysh", "-N", plan.routers[index].namespace, "-c", "show bgp ipv4 unicast summary json"],
        capture_output=True, text=True, timeout=10, check=False,
    )
    try:
        peers = json.loads(done.stdout).get("peers", {})
    except ValueError:
        return False
    up = {address for address, peer in peers.items() if peer.get("state") == "Established"}
    return expected <= up


async def _logins(plan: LabPlan, password: str, indexes: list[int]) -> dict[int, str]:
    """Log in to each router in ``indexes``; what went wrong, for those that failed."""
    results = await asyncio.gather(*(_login(plan, password, k) for k in indexes))
    return {k: problem for k, problem in zip(indexes, results, strict=True) if problem}


async def _login(plan: LabPlan, password: str, index: int) -> str:
    import asyncssh

    router = plan.routers[index]
    prompt = re.compile(rf"^{re.escape(router.name)}[#>]\s*$", re.M)

    async def login() -> str:
        tunnel = None
        if plan.bastion_port is not None:  # the only way in
            tunnel = await asyncssh.connect(
                "127.0.0.1", plan.bastion_port, username=plan.user, password=password,
                known_hosts=None, client_keys=None, agent_path=None,
            )
        try:
            async with asyncssh.connect(
                "127.0.0.1", router.port, username=plan.user, password=password,
                known_hosts=None, client_keys=None, tunnel=tunnel or (),
            ) as conn:
                process = await conn.create_process(term_type="vt100")
                seen = ""
                while not prompt.search(seen):
                    chunk = await process.stdout.read(4096)
                    if not chunk:
                        return f"the session of {router.name} ended before its prompt"
                    seen += chunk
                process.close()
            return ""
        finally:
            if tunnel is not None:
                tunnel.close()

    try:
        return await asyncio.wait_for(login(), LOGIN_TIMEOUT)
    except (OSError, asyncssh.Error, asyncio.TimeoutError) as exc:
        return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


