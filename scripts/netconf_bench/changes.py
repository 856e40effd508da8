"""--change: the RPCs of a NETCONF change as ``netconf_edit_config`` sends them
(tasks/changes/_netconf_flow.py): lock the candidate, ``<get-config>`` of running,
``<edit-config>`` with ``rollback-on-error``, ``<get-config>`` of the candidate, ``<validate>``
of it inline, ``<commit>`` (confirmed: ``<commit><confirmed/><confirm-timeout>`` and the
confirming ``<commit>``), ``<get-config>`` of running, unlock; by each client, one host a
server (a server has one candidate and one lock), each host changing eth1's description
``rounds`` times in a row once logged in (every commit changes something).

- **ncclient, threads**, as the tasks use it: ``TICK`` 0.01 s, the login's first request
  answered (``_first_answer``); and with ``TICK`` 0.001 s (its session thread, back to waiting
  as soon as a reply is read, sends the next request a ``TICK`` later);
- **scrapli-netconf** over asyncssh on one event loop, the pause after ``open()``: its
  ``edit_config`` has no ``error-option`` and its ``validate`` takes a datastore's name only
  (no inline ``<config>``), so those two go as ``rpc()`` of the element the task sends; its
  ``commit(confirmed=True, timeout=S)`` sends the confirmed commit;
- **netconf_edit_config** on threadpool, **anetconf_edit_config** on asyncio (the package's).

Then :func:`idle_ticks`: what ncclient's open sessions cost while they wait, by ``TICK``.
"""

from __future__ import annotations

import itertools
import math
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

import harness
from netconf_bench.sides import (
    AT_ONCE,
    HELLO_PAUSE,
    Side,
    cycle,
    nornir_rounds,
    scrapli_rounds,
)
from nornir_bench.tasks.dialects.netconf_xml import NETCONF_NS, as_config, config_text, xml_diff

__all__ = ["KINDS", "change_sides", "idle_ticks"]

KINDS = ("plain", "confirmed")
WITHIN = 30  # confirm: {within: 30}, as scripts/bench_netconf_change.py
TIMEOUT = 30
TICK = 0.01  # the tasks' (tasks/sessions/netconf_session.py)
FAST_TICK = 0.001  # what the TICK costs: a request waits for it once a reply is read
EDIT = ("<interfaces xmlns='urn:ietf:params:xml:ns:yang:ietf-interfaces'><interface>"
        "<name>eth1</name><description>{tag}</description></interface></interfaces>")
_TAGS = itertools.count(1)  # every change's description differs from every other's


def change_sides(lab: Any, ports: list[int], rounds: int) -> list[Side]:
    """Each client's side, plain then confirmed."""
    sides = []
    for kind in KINDS:
        # the server's wait for the confirming commit, as the task asks it (window + an RPC)
        confirm = math.ceil(WITHIN + TIMEOUT) if kind == "confirmed" else None
        sides += [
            Side(f"ncclient (TICK {TICK:g} s), threads, {kind}",
                 partial(ncclient_changes, lab, ports, rounds, confirm, TICK)),
            Side(f"ncclient (TICK {FAST_TICK:g} s), threads, {kind}",
                 partial(ncclient_changes, lab, ports, rounds, confirm, FAST_TICK)),
            Side(f"netconf_edit_config, threadpool, {kind}",
                 partial(nornir_changes, lab, "threadpool", rounds, kind)),
            Side(f"anetconf_edit_config, asyncio, {kind}",
                 partial(nornir_changes, lab, "asyncio", rounds, kind)),
            Side(f"scrapli-netconf, asyncssh (+{HELLO_PAUSE:g} s after open), {kind}",
                 partial(scrapli_changes, lab, ports, rounds, confirm)),
        ]
    return sides


def _config(host: str) -> str:
    """The ``<config>`` of one change: eth1's description, new each time."""
    edit = EDIT.format(tag=f"{host} change {next(_TAGS)}")
    return f"<config xmlns='{NETCONF_NS}'>{edit}</config>"


def _changed(running: str, candidate: str, client: str) -> None:
    """The change's diff (as the task shows it): the bench stops if there is none."""
    if not xml_diff(config_text(running), config_text(candidate)):
        raise SystemExit(f"bench_netconf: {client}: the candidate is running's, nothing changed")


def ncclient_changes(lab: Any, ports: list[int], rounds: int, confirm: int | None,
                     tick: float) -> list[float]:
    """Each host's changes with ncclient as the tasks use it (but its ``tick``), 10 threads."""
    from lxml import etree
    from ncclient import manager
    from ncclient.transport import session

    from nornir_bench.tasks.sessions.netconf_session import _first_answer

    def change(connection: Any, port: int) -> None:
        connection.lock("candidate")
        running = connection.get_config("running").data_xml
        connection.edit_config(_config(str(port)), target="candidate",
                               error_option="rollback-on-error")
        candidate = connection.get_config("candidate").data_xml
        connection.validate(source=etree.fromstring(as_config(candidate).encode()))
        _changed(running, candidate, "ncclient")
        if confirm is None:
            connection.commit()
        else:
            connection.commit(confirmed=True, timeout=str(confirm))
            connection.commit()
        connection.get_config("running")
        connection.unlock("candidate")

    def host(port: int) -> list[float]:
        connection = manager.connect(
            host="127.0.0.1", port=port, username=lab.user, password=lab.password,
            hostkey_verify=False, allow_agent=False, look_for_keys=False, timeout=TIMEOUT,
            device_params={"name": "default"})
        took = []
        try:
            _first_answer(connection, TIMEOUT)
            connection.timeout = TIMEOUT
            for _ in range(rounds):
                began = time.perf_counter()
                change(connection, port)
                took.append(time.perf_counter() - began)
        finally:
            connection.close_session()
        return took

    shipped, session.TICK = session.TICK, tick
    try:
        with ThreadPoolExecutor(AT_ONCE) as pool:
            return [t for each in pool.map(host, ports) for t in each]
    finally:
        session.TICK = shipped


def idle_ticks(lab: Any, ports: list[int], seconds: float) -> dict[float, float]:
    """What an open ncclient session costs while it waits, by ``TICK``: this process's CPU
    (share of a core) over ``seconds``, ``AT_ONCE`` sessions open over the lab's servers."""
    from ncclient import manager
    from ncclient.transport import session

    connections = []
    shipped, shares = session.TICK, {}
    try:
        for port in itertools.islice(cycle(ports), AT_ONCE):
            connections.append(manager.connect(
                host="127.0.0.1", port=port, username=lab.user, password=lab.password,
                hostkey_verify=False, allow_agent=False, look_for_keys=False, timeout=TIMEOUT,
                device_params={"name": "default"}))
        for tick in (TICK, FAST_TICK):
            session.TICK = tick
            time.sleep(2 * TICK)  # each session thread's wait under the TICK before
            with harness.Stopwatch() as took:
                time.sleep(seconds)
            shares[tick] = took.cpu / took.wall
    finally:
        session.TICK = shipped
        for connection in connections:
            connection.close_session()
    return shares


def nornir_changes(lab: Any, runner: str, rounds: int, kind: str) -> list[float]:
    """The package's change on a runner: the first run logs in, the others are timed."""
    from nornir_bench.tasks import anetconf_edit_config, netconf_edit_config

    task = anetconf_edit_config if runner == "asyncio" else netconf_edit_config
    with tempfile.TemporaryDirectory(prefix="bench-netconf-change-") as folder:
        def params(round_: int) -> dict[str, Any]:
            confirm = {"confirm": {"within": WITHIN}} if kind == "confirmed" else {}
            return {"config": EDIT.format(tag=f"{runner} change {next(_TAGS)}"),
                    "backup_dir": f"{folder}/backups",
                    "journal_file": f"{folder}/{round_}.journal", "timeout": TIMEOUT, **confirm}

        return nornir_rounds(lab, runner, rounds, task, params)


def scrapli_changes(lab: Any, ports: list[int], rounds: int, confirm: int | None) -> list[float]:
    """Each host's changes with scrapli-netconf over asyncssh, 10 at once on one loop."""
    from lxml import etree

    def data(reply: Any) -> str:
        found = reply.xml_result.find(f"{{{NETCONF_NS}}}data")
        return "<data/>" if found is None else str(etree.tostring(found, encoding="unicode"))

    async def sent(call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        reply = await call(*args, **kwargs)
        if reply.failed:
            raise SystemExit(f"bench_netconf: scrapli-netconf {call.__name__}: {reply.result}")
        return reply

    async def change(driver: Any, port: int) -> None:
        await sent(driver.lock, "candidate")
        running = data(await sent(driver.get_config, "running"))
        await sent(driver.rpc, "<edit-config><target><candidate/></target><error-option>"
                               f"rollback-on-error</error-option>{_config(str(port))}"
                               "</edit-config>")
        candidate = data(await sent(driver.get_config, "candidate"))
        await sent(driver.rpc, f"<validate><source>{as_config(candidate)}</source></validate>")
        _changed(running, candidate, "scrapli-netconf")
        if confirm is None:
            await sent(driver.commit)
        else:
            await sent(driver.commit, confirmed=True, timeout=confirm)
            await sent(driver.commit)
        await sent(driver.get_config, "running")
        await sent(driver.unlock, "candidate")

    return scrapli_rounds(lab, ports, rounds, TIMEOUT, change)
