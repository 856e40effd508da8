"""Connections live from one ``nr.run`` to the next on every runner, as nornir keeps them, until
``nr.close_connections()``; and plugins registered at run time work in processpool workers.

Logins are counted where they land: a real TCP server on loopback (:func:`counting_server`)
that the test's connection plugin, registered at run time in the test, connects to. The plugin
is a class made inside the test, so a worker process can only know it from the parent.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from nornir import InitNornir
from nornir.core import Nornir
from nornir.core.configuration import Config
from nornir.core.plugins.connections import ConnectionPluginRegister
from nornir.core.plugins.inventory import InventoryPluginRegister, TransformFunctionRegister
from nornir.core.plugins.runners import RunnersPluginRegister
from nornir.core.task import Task

from nornir_bench.core.liveness import socket_open
from tests.conftest import descendant_pids
from tests.devices import counting_server, nornir_on
from tests.runners.test_conformance import ASYNC, STALE, Runner, each_kind, each_runner
from tests.waiting import process_ended, wait_until

pytestmark = pytest.mark.usefixtures("no_leaked_threads", "no_leaked_processes")

HOSTS = 8
PLUGIN = "counting"


def counting_plugin() -> type:
    """A blocking connection plugin, made here so that no other process can import it: one TCP
    connection per ``open``, which first says what it was opened with."""

    class Counting:
        def open(
            self,
            hostname: str | None,
            username: str | None,
            password: str | None,
            port: int | None,
            platform: str | None,
            extras: dict[str, Any] | None = None,
            configuration: Config | None = None,
        ) -> None:
            self.connection = socket.create_connection((hostname or "", port or 0), timeout=10)
            hello = {
                "username": username,
                "password": password,
                "platform": platform,
                "extras": extras,
                "user_defined": configuration.user_defined if configuration else None,
            }
            self.connection.sendall((json.dumps(hello) + "\n").encode())

        def close(self) -> None:
            self.connection.close()

    return Counting


@contextmanager
def registered(name: str, plugin: type) -> Iterator[None]:
    ConnectionPluginRegister.register(name, plugin)
    try:
        yield
    finally:
        ConnectionPluginRegister.deregister(name)


def inventory(folder: Path, port: int) -> Path:
    """``HOSTS`` hosts whose address, credentials, platform, port and connection options come
    from their group and the defaults, not from the hosts themselves."""
    folder.mkdir(exist_ok=True)
    (folder / "hosts.yaml").write_text(
        "".join(f"dev{i}:\n  groups: [edge]\n" for i in range(HOSTS))
    )
    (folder / "groups.yaml").write_text(textwrap.dedent(f"""\
        edge:
          platform: fakeos
          port: {port}
          connection_options:
            {PLUGIN}:
              extras: {{greeting: hi}}
        """))
    (folder / "defaults.yaml").write_text(
        "hostname: 127.0.0.1\nusername: admin\npassword: s3cret\n"
    )
    return folder


def nornir(folder: Path, runner: str, **options: Any) -> Nornir:
    return nornir_on(folder, runner, user_defined={"site": "lab"}, **options)


def opens(task: Task) -> int:
    """Uses the host's connection, opening it through nornir the first time."""
    task.host.get_connection(PLUGIN, task.nornir.config)
    return os.getpid()


class AsyncCounting:
    """An async connection, as asyncssh sessions are: it lives on the loop that opened it."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        self.loop = asyncio.get_running_loop()
        self.connection = writer.get_extra_info("socket")  # the session, as plugins keep it

    async def aclose(self) -> None:
        self.writer.close()
        await self.writer.wait_closed()

    def close(self) -> None:  # nornir's host.close_connections(), from any thread
        if self.loop.is_closed():
            return
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.writer.close)
        else:  # idle between runs (the asyncio runner keeps it): run it to close
            self.loop.run_until_complete(self.aclose())


async def aopens(task: Task) -> int:
    if "acounting" not in task.host.connections:
        params = task.host.get_connection_parameters(PLUGIN)
        _, writer = await asyncio.open_connection(params.hostname, params.port)
        hello = {
            "username": params.username,
            "password": params.password,
            "platform": params.platform,
            "extras": params.extras,
            "user_defined": task.nornir.config.user_defined,
        }
        writer.write((json.dumps(hello) + "\n").encode())
        await writer.drain()
        task.host.connections["acounting"] = AsyncCounting(writer)  # type: ignore[assignment]
    return os.getpid()


@pytest.mark.parametrize(("runner", "kind"), each_runner(cases=each_kind))
def test_connections_are_reused_across_runs_until_close_connections(
    runner: Runner, kind: str, tmp_path: Path
) -> None:
    with counting_server() as server, registered(PLUGIN, counting_plugin()):
        nr = nornir(inventory(tmp_path, server.port), runner.name, **runner.options)
        processes = descendant_pids()
        for _ in range(3):
            result = nr.run(task=aopens if kind == ASYNC else opens)
            assert not result.failed, {h: m.exception for h, m in result.failed_hosts.items()}
        assert server.wait_open(HOSTS) == HOSTS
        assert server.accepted == HOSTS  # one login per host, not one per run
        # What each connection was opened with: the host's, resolved through group and defaults,
        # and nornir's configuration, in whichever process the task ran.
        assert server.hellos == [
            {
                "username": "admin",
                "password": "s3cret",
                "platform": "fakeos",
                "extras": {"greeting": "hi"},
                "user_defined": {"site": "lab"},
            }
        ] * HOSTS
        nr.close_connections()
        assert server.wait_open(0) == 0
        assert all(not host.connections for host in nr.inventory.hosts.values())
        assert descendant_pids() == processes  # kept workers and loops stopped with them


@pytest.mark.parametrize(("runner", "kind"), each_runner(cases=each_kind))
def test_host_connections_show_what_the_run_keeps_and_close_as_nornirs_do(
    runner: Runner, kind: str, tmp_path: Path
) -> None:
    """nornir's own tests/core/test_connections.py::Test::test_context_manager, and its ``in``
    checks, on every runner: once, processpool's parent saw none of the connections its
    workers held, and ``host.close_connection`` could not close them."""
    name = "acounting" if kind == ASYNC else PLUGIN
    task = aopens if kind == ASYNC else opens
    with counting_server() as server, registered(PLUGIN, counting_plugin()):
        processes = descendant_pids()
        with nornir(inventory(tmp_path, server.port), runner.name, **runner.options) as nr:
            assert not nr.run(task=task).failed
            hosts = list(nr.inventory.hosts.values())
            assert all(name in host.connections for host in hosts)
            assert server.wait_open(HOSTS) == HOSTS
            hosts[0].close_connection(name)  # closed where it lives
            assert name not in hosts[0].connections
            assert server.wait_open(HOSTS - 1) == HOSTS - 1
            assert not nr.run(task=task).failed  # dev0 logs in again, the others reuse theirs
            assert all(name in host.connections for host in hosts)
            assert server.wait_open(HOSTS) == HOSTS  # the server has accepted it too
            assert server.accepted == HOSTS + 1
        assert server.wait_open(0) == 0  # `with nr:` closed them all
        assert all(not host.connections for host in hosts)
        assert descendant_pids() == processes  # and what kept them


def test_a_connection_held_in_a_worker_says_where_when_used_in_the_parent(
    tmp_path: Path,
) -> None:
    with counting_server() as server, registered(PLUGIN, counting_plugin()):
        nr = nornir(inventory(tmp_path, server.port), "processpool", num_procs=1)
        pid = nr.run(task=opens)["dev0"].result
        host = nr.inventory.hosts["dev0"]
        with pytest.raises(RuntimeError) as info:
            host.get_connection(PLUGIN, nr.config)
        assert str(info.value) == (
            f"host dev0's {PLUGIN!r} connection is held in processpool worker process {pid}: "
            "use it in a task the runner runs there"
        )
        nr.close_connections()
        assert server.wait_open(0) == 0


def talks(task: Task) -> int:
    """Uses the host's connection: a session the device closed fails here, as a device
    session's next read would."""
    session = task.host.get_connection(PLUGIN, task.nornir.config)
    if not socket_open(session):
        raise ConnectionResetError("the device closed the session")
    return os.getpid()


async def atalks(task: Task) -> int:
    if "acounting" not in task.host.connections:
        await aopens(task)
    if not socket_open(task.host.connections["acounting"].connection):
        raise ConnectionResetError("the device closed the session")
    return os.getpid()


@pytest.mark.parametrize(("runner", "kind"), each_runner(STALE, cases=each_kind))
def test_a_session_the_device_closed_between_runs_is_opened_again(
    runner: Runner, kind: str, tmp_path: Path
) -> None:
    """Once, the run after the devices restarted failed on every host (OSError: Socket is
    closed on threadpool, ConnectionLost on asyncio, BrokenPipeError on processpool): the
    kept sessions were dead. They are now checked before the task gets them."""
    task = atalks if kind == ASYNC else talks
    with counting_server() as server, registered(PLUGIN, counting_plugin()):
        nr = nornir(inventory(tmp_path, server.port), runner.name, **runner.options)
        assert not nr.run(task=task).failed
        assert server.wait_open(HOSTS) == HOSTS
        server.restart()  # every device closes its session
        assert server.wait_open(0) == 0
        result = nr.run(task=task)
        assert not result.failed, {h: m.exception for h, m in result.failed_hosts.items()}
        assert server.wait_open(HOSTS) == HOSTS
        assert server.accepted == 2 * HOSTS  # one new login a host
        nr.close_connections()
        assert server.wait_open(0) == 0


def test_a_worker_killed_between_runs_takes_only_its_own_connections(tmp_path: Path) -> None:
    with counting_server() as server, registered(PLUGIN, counting_plugin()):
        nr = nornir(inventory(tmp_path, server.port), "processpool", num_procs=2, num_workers=4)
        first = nr.run(task=opens)
        on = Counter(multi.result for multi in first.values())
        assert sorted(on) == sorted(nr.runner.worker_pids) and len(on) == 2
        victim = min(on)
        os.kill(victim, signal.SIGKILL)
        _wait_gone(victim)
        second = nr.run(task=opens)
        assert not second.failed
        assert server.wait_open(HOSTS) == HOSTS
        assert server.accepted == HOSTS + on[victim]  # only the victim's hosts log in again
        for name, multi in first.items():
            if multi.result != victim:  # the others went back to the worker holding theirs
                assert second[name].result == multi.result
        nr.close_connections()
        assert server.wait_open(0) == 0


def test_a_dask_worker_killed_between_runs_takes_only_its_own_connections(
    tmp_path: Path,
) -> None:
    from nornir_bench.runners.dask.address import described_workers

    with counting_server() as server, registered(PLUGIN, counting_plugin()):
        nr = nornir(inventory(tmp_path, server.port), "dask", num_procs=2, num_workers=4)
        try:
            first = nr.run(task=opens)
            on = Counter(multi.result for multi in first.values())
            client = nr.runner._cluster.client
            workers = {pid: address for address, pid in client.run(os.getpid).items()}
            assert sorted(on) == sorted(workers) and len(on) == 2
            victim = min(on)
            os.kill(victim, signal.SIGKILL)
            _wait_gone(victim)
            wait_until(  # its nanny starts another
                lambda: workers[victim] not in described_workers(client),
                "the scheduler seeing the worker go",
            )
            second = nr.run(task=opens)
            assert not second.failed, {h: m.exception for h, m in second.failed_hosts.items()}
            assert server.wait_open(HOSTS) == HOSTS
            assert server.accepted == HOSTS + on[victim]  # only the victim's hosts log in again
            for name, multi in first.items():
                if multi.result != victim:  # the others went back to the worker holding theirs
                    assert second[name].result == multi.result
            nr.close_connections()
            assert server.wait_open(0) == 0
        finally:
            nr.runner.close()


def test_without_kept_workers_every_run_stops_its_workers(tmp_path: Path) -> None:
    with counting_server() as server, registered(PLUGIN, counting_plugin()):
        nr = nornir(inventory(tmp_path, server.port), "processpool", keep_workers=False)
        processes = descendant_pids()
        for _ in range(2):
            assert not nr.run(task=opens).failed
            assert descendant_pids() == processes
            assert server.wait_open(0) == 0  # closed as the workers stopped
        assert server.accepted == 2 * HOSTS


REGISTERS = {
    "connection": ConnectionPluginRegister,
    "inventory": InventoryPluginRegister,
    "runner": RunnersPluginRegister,
    "transform": TransformFunctionRegister,
}


def plugins_known(task: Task, names: dict[str, str]) -> dict[str, bool]:
    return {kind: names[kind] in REGISTERS[kind].available for kind in names}


def test_every_kind_of_plugin_registered_at_run_time_reaches_the_workers() -> None:
    names = {kind: f"nb-test-{kind}" for kind in REGISTERS}
    plugin = counting_plugin()
    for kind, register in REGISTERS.items():
        register.register(names[kind], plugin)
    try:
        nr = InitNornir(
            inventory={"plugin": "synthetic", "options": {"hosts": 4}},
            runner={"plugin": "processpool", "options": {"num_procs": 1}},
            logging={"enabled": False},
        )
        result = nr.run(task=plugins_known, names=names)
        nr.runner.close()
    finally:
        for kind, register in REGISTERS.items():
            register.available.pop(names[kind], None)
    assert not result.failed
    assert {h: m.result for h, m in result.items()} == {
        f"dev{i}": dict.fromkeys(names, True) for i in range(4)
    }


EXITS_WITHOUT_CLOSING = """
import json, os, sys
from nornir import InitNornir
from nornir.core.plugins.connections import ConnectionPluginRegister
from tests.runners import test_connections as t

folder, port = t.Path(sys.argv[1]), int(sys.argv[2])
ConnectionPluginRegister.register(t.PLUGIN, t.counting_plugin())
pids = []
for runner, task in (("asyncio", t.aopens), ("processpool", t.opens), ("processpool", t.aopens)):
    nr = t.nornir(folder, runner)
    for _ in range(2):
        assert not nr.run(task=task).failed
    if runner == "processpool":
        pids += [*nr.runner.worker_pids, nr.runner._procs.forks.process.pid]
    keep = nr  # nothing closed: the interpreter's exit must do it
print(json.dumps(pids), flush=True)
"""


def test_kept_loops_workers_and_connections_end_with_the_interpreter(tmp_path: Path) -> None:
    with counting_server() as server:
        folder = inventory(tmp_path / "inventory", server.port)
        done = subprocess.run(
            [sys.executable, "-X", "dev", "-c", EXITS_WITHOUT_CLOSING,
             str(folder), str(server.port)],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=Path(__file__).resolve().parents[2],
        )
        assert done.returncode == 0, done.stderr
        assert done.stderr == ""  # no warning, no "Exception ignored"
        assert server.accepted == 3 * HOSTS
        assert server.wait_open(0) == 0  # every connection closed, not dropped by a crash
        for pid in json.loads(done.stdout):
            _wait_gone(pid)


def _wait_gone(pid: int) -> None:
    """Until process ``pid`` is gone (reaped, or a zombie of a parent that is gone too)."""
    wait_until(lambda: process_ended(pid), f"process {pid} ending")
