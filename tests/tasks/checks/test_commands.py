"""send_command (netmiko) and asend_command (scrapli) on FakeNOS devices, on each runner."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from nornir.core.inventory import ConnectionOptions
from nornir.core.task import Task
from scrapli.exceptions import ScrapliAuthenticationFailed, ScrapliCommandFailure

from nornir_bench import arun_subtask
from nornir_bench.lab import LabDevice, write_inventory
from nornir_bench.tasks import ScrapliSession, asend_command, params_check_of, send_command
from tests.devices import LabProcess, closed_port, lab_process, nornir_on, silent_port
from tests.waiting import wait_until

# What each platform's "show version" says, as FakeNOS emulates it.
VERSION = {"cisco_ios": "Cisco IOS XE Software", "arista_eos": "cEOSLab"}
WRONG = "Wr0ng-Pa55word-7e1"


def one_host(tmp_path: Path, port: int, password: str = "fakenos-lab") -> Path:
    write_inventory([LabDevice("r1", "127.0.0.1", port, "cisco_ios", "user", password)], tmp_path)
    return tmp_path


def test_send_command_through_netmiko_on_two_platforms(fakenos_lab: LabProcess) -> None:
    nr = fakenos_lab.nornir("threadpool", num_workers=4)
    try:
        result = nr.run(task=send_command, command="show version", enable=True)
    finally:
        nr.close_connections()
    assert not result.failed, result.failed_hosts
    for device in fakenos_lab.devices:
        assert VERSION[device.platform] in result[device.name].result
        assert not result[device.name].result.startswith("show version")


def netmiko_session(task: Task) -> tuple[int, int]:
    """Which process this host's netmiko session lives in, and which session it is."""
    return os.getpid(), id(task.host.connections["netmiko"].connection)


@pytest.mark.parametrize("command", [send_command, asend_command])
def test_device_commands_in_processpool_workers_reuse_their_sessions_across_runs(
    fakenos_lab: LabProcess, command: Any
) -> None:
    """Once, send_command failed in workers: netmiko's connection plugin, registered in the
    parent, was not registered there."""
    nr = fakenos_lab.nornir("processpool", num_procs=2)
    try:
        first = nr.run(task=command, command="show version", enable=True)
        assert not first.failed, first.failed_hosts
        again = nr.run(task=command, command="show clock")
        assert not again.failed, again.failed_hosts
        if command is send_command:
            sessions = nr.run(task=netmiko_session)
            assert not sessions.failed, sessions.failed_hosts
            assert nr.run(task=netmiko_session)["rtr1"].result == sessions["rtr1"].result
    finally:
        nr.close_connections()
    for device in fakenos_lab.devices:
        assert VERSION[device.platform] in first[device.name].result


def test_asend_command_gives_what_send_command_gives(fakenos_lab: LabProcess) -> None:
    sync = fakenos_lab.nornir("threadpool", num_workers=4)
    try:
        expected = sync.run(task=send_command, command="show version", enable=True)
    finally:
        sync.close_connections()
    nr = fakenos_lab.nornir("asyncio")
    result = nr.run(task=asend_command, command="show version", enable=True)
    assert not result.failed, result.failed_hosts
    # the same lines, but for spaces at their ends and blank lines around them (scrapli
    # strips those)
    assert {h: m.result for h, m in result.items()} == {
        h: "\n".join(line.rstrip() for line in m.result.strip().splitlines())
        for h, m in expected.items()
    }
    assert all(VERSION[d.platform] in result[d.name].result for d in fakenos_lab.devices)
    # The sessions stay open for the next run, as nornir keeps connections, until closed.
    sessions = [host.connections["scrapli_async"] for host in nr.inventory.hosts.values()]
    assert all(session.connection is not None for session in sessions)
    again = nr.run(task=asend_command, command="show clock")
    assert not again.failed, again.failed_hosts
    assert [host.connections["scrapli_async"] for host in nr.inventory.hosts.values()] == sessions
    nr.close_connections()
    assert all(host.connections == {} for host in nr.inventory.hosts.values())
    assert all(session.connection is None for session in sessions)


async def two_commands(task: Task) -> dict[str, Any]:
    await arun_subtask(task, asend_command, command="show clock")
    session = task.host.connections["scrapli_async"]
    assert isinstance(session, ScrapliSession) and session.connection is not None
    first = session.connection
    await arun_subtask(task, asend_command, command="show version", enable=True)
    await arun_subtask(task, asend_command, command="show clock")  # stays privileged
    return {
        "same": session.connection is first,
        "prompt": await first.get_prompt(),
    }


def test_commands_in_one_task_share_one_session(fakenos_lab: LabProcess) -> None:
    nr = fakenos_lab.nornir("asyncio")
    result = nr.run(task=two_commands)
    assert not result.failed, result.failed_hosts
    for device in fakenos_lab.devices:
        own, clock, version, _ = result[device.name]
        assert own.result == {"same": True, "prompt": f"{device.name}#"}
        assert clock.result and VERSION[device.platform] not in clock.result
        assert VERSION[device.platform] in version.result
    nr.close_connections()
    assert all(host.connections == {} for host in nr.inventory.hosts.values())


async def concurrent_commands(task: Task) -> None:
    await asyncio.gather(
        arun_subtask(task, asend_command, command="show version", enable=True),
        arun_subtask(task, asend_command, command="show clock"),
        arun_subtask(task, asend_command, command="show version", enable=True),
    )


def test_concurrent_commands_on_one_host_do_not_interleave(fakenos_lab: LabProcess) -> None:
    device = fakenos_lab.devices[0]
    nr = fakenos_lab.nornir("asyncio").filter(name=device.name)
    result = nr.run(task=concurrent_commands)
    assert not result.failed, result.failed_hosts
    _, first, clock, second = result[device.name]
    assert first.result == second.result
    assert VERSION[device.platform] in first.result and VERSION[device.platform] not in clock.result


def failure(result: Any, host: str = "r1") -> tuple[BaseException, str]:
    multi = result[host]
    assert multi.failed
    return multi.exception, str(multi.result)


def test_wrong_password_fails_without_showing_it(fakenos_lab: LabProcess, tmp_path: Path) -> None:
    inventory = one_host(tmp_path, fakenos_lab.devices[0].port, password=WRONG)
    exc, text = failure(
        nornir_on(inventory, "asyncio").run(task=asend_command, command="show clock")
    )
    assert isinstance(exc, ScrapliAuthenticationFailed)
    assert WRONG not in str(exc) and WRONG not in text and "Traceback" in text

    sync = nornir_on(inventory, "threadpool")
    try:
        exc, text = failure(sync.run(task=send_command, command="show clock"))
    finally:
        sync.close_connections()
    assert WRONG not in str(exc) and WRONG not in text


def test_closed_port_fails_by_the_refusal_not_the_timeout(tmp_path: Path) -> None:
    with closed_port() as port:
        nr = nornir_on(one_host(tmp_path, port), "asyncio")
        exc, _ = failure(nr.run(task=asend_command, command="show clock", timeout=20))
    # The refusal itself: a login that waited for the 20 s would end in a TimeoutError.
    assert isinstance(exc, ConnectionRefusedError), repr(exc)


def test_send_command_says_a_refused_port_was_refused(tmp_path: Path) -> None:
    """netmiko words it "TCP connection to device failed", which reads as a slow network."""
    with closed_port() as port:
        nr = nornir_on(one_host(tmp_path, port), "threadpool")
        exc, _ = failure(nr.run(task=send_command, command="show clock"))
    assert isinstance(exc, ConnectionRefusedError)
    assert str(exc) == (
        f"connection refused by 127.0.0.1:{port}: nothing listens on that port "
        "(is the device, or the lab, up?)"
    )


def test_silent_device_fails_by_the_timeout(tmp_path: Path) -> None:
    with silent_port() as port:
        nr = nornir_on(one_host(tmp_path, port), "asyncio")
        start = time.monotonic()
        exc, _ = failure(nr.run(task=asend_command, command="show clock", timeout=1))
        elapsed = time.monotonic() - start
    # a timeout, retried by default, not the authentication failure scrapli words it as
    assert isinstance(exc, TimeoutError) and not isinstance(exc, ScrapliAuthenticationFailed)
    assert str(exc) == (f"127.0.0.1:{port}: no SSH banner within 1 s: the port took the "
                        "connection and said nothing")
    assert elapsed >= 1  # not before it


@pytest.mark.parametrize("command", ["", "  ", "show\nclock", 42])
def test_command_must_be_one_line(tmp_path: Path, command: object) -> None:
    nr = nornir_on(one_host(tmp_path, 9), "asyncio")
    exc, _ = failure(nr.run(task=asend_command, command=command))
    assert isinstance(exc, ValueError) and "command must be one non-empty line" in str(exc)


def test_sync_open_points_to_aopen() -> None:
    with pytest.raises(TypeError, match="await session.aopen"):
        ScrapliSession().open("127.0.0.1", "u", "p", 22, "cisco_ios")


def test_a_command_the_device_refuses_fails_the_host_and_keeps_the_session(
    fakenos_lab: LabProcess,
) -> None:
    """scrapli knows each platform's error answers (``% Invalid input``); IOS's show version
    needs enable."""
    nr = fakenos_lab.nornir("asyncio").filter(name="rtr1")
    try:
        refused = nr.run(task=asend_command, command="show version")
        exc, _ = failure(refused, "rtr1")
        assert isinstance(exc, ScrapliCommandFailure)
        assert str(exc).endswith("'show version' failed: % Invalid input detected at '^' marker.")
        session = nr.inventory.hosts["rtr1"].connections["scrapli_async"]
        again = nr.run(task=asend_command, command="show version", enable=True, on_failed=True)
        assert not again.failed and VERSION["cisco_ios"] in again["rtr1"].result
        assert nr.inventory.hosts["rtr1"].connections["scrapli_async"] is session
    finally:
        nr.close_connections()


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"enabel": True}, "send_command has no parameter 'enabel', nor has netmiko's send_command;"
         " it takes: command, enable, use_timing, expect_string, read_timeout"),
        ({"use_timing": True, "expect_string": "#"}, "send_command has no parameter "
         "'expect_string', nor has netmiko's send_command_timing (use_timing is true); it takes: "
         "command, enable, use_timing, last_read, read_timeout"),
        ({"command_string": "show clock"}, "send_command has no parameter 'command_string'"),
    ],
)
def test_send_command_refuses_a_misspelt_argument_before_connecting(
    tmp_path: Path, kwargs: dict[str, Any], says: str
) -> None:
    """Unchecked, netmiko would refuse it after logging in, on every device; here the port
    refuses connections, so an attempt to connect would fail with ConnectionRefusedError."""
    with closed_port() as port:
        nr = nornir_on(one_host(tmp_path, port), "threadpool")
        try:
            exc, _ = failure(nr.run(task=send_command, command="show clock", **kwargs))
        finally:
            nr.close_connections()
    assert isinstance(exc, TypeError), exc
    assert says in str(exc)


def test_send_command_carries_the_check_job_files_run_first() -> None:
    check = params_check_of(send_command)
    assert check is not None
    check({"command": "show clock", "enable": True, "read_timeout": 5, "use_textfsm": True})
    check({"command": "show clock", "use_timing": True, "last_read": 1})
    with pytest.raises(TypeError, match="no parameter 'enabel'"):
        check({"command": "show clock", "enabel": True})


@pytest.mark.parametrize("runner", ["threadpool", "asyncio"])
def test_send_command_to_a_silent_device_gives_its_thread_back_at_the_deadline(
    tmp_path: Path, runner: str
) -> None:
    """Once, netmiko's own login timeouts (10 s to connect, 15 s for the banner) held the
    thread long after task_timeout gave the host up."""
    with silent_port() as port:
        nr = nornir_on(one_host(tmp_path, port), runner, task_timeout=1, retries=0)
        # Login timeouts of an hour: only the deadline's bound ends the thread's wait before
        # the hang guard.
        nr.inventory.hosts["r1"].connection_options["netmiko"] = ConnectionOptions(
            extras=dict.fromkeys(("conn_timeout", "auth_timeout", "banner_timeout"), 3600)
        )
        before = threading.active_count()
        exc, _ = failure(nr.run(task=send_command, command="show clock"))
        assert isinstance(exc, TimeoutError), repr(exc)
        wait_until(
            lambda: threading.active_count() <= before,
            f"the thread given back (threads: {[t.name for t in threading.enumerate()]})",
        )


@pytest.mark.parametrize(
    ("runner", "task"),
    [
        ("threadpool", send_command),
        ("asyncio", asend_command),
        ("processpool", send_command),
        ("processpool", asend_command),
        ("dask", asend_command),
    ],
    ids=lambda value: getattr(value, "__name__", value),
)
def test_devices_restarted_between_steps_get_new_sessions_in_the_next_steps(
    tmp_path: Path, runner: str, task: Any
) -> None:
    """Once, every step after the devices restarted failed on every host (OSError: Socket is
    closed with netmiko, ConnectionLost with asyncssh), though the devices were up again."""
    # A lab of the test's own: it restarts the devices.
    with lab_process(tmp_path, {"r1": "cisco_ios", "r2": "arista_eos"}) as lab:
        procs = {"num_procs": 1} if runner in ("processpool", "dask") else {}
        nr = lab.nornir(runner, **procs)
        try:
            assert not nr.run(task=task, command="show clock").failed
            lab.restart()
            for command, enable in (("show version", True), ("show clock", False)):
                result = nr.run(task=task, command=command, enable=enable)
                assert not result.failed, {h: m.exception for h, m in result.failed_hosts.items()}
                assert all(multi.result for multi in result.values())
        finally:
            nr.close_connections()
            getattr(nr.runner, "close", lambda: None)()
