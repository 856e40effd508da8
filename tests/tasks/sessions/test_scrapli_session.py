"""The scrapli session: each lab platform, closing from synchronous code, liveness, a device
that goes away mid-command."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import asyncssh
import pytest
from asyncssh.packet import UInt32
from nornir.core.inventory import ConnectionOptions, Host
from nornir.core.task import Task
from scrapli.exceptions import ScrapliConnectionError

from nornir_bench.core.attempts import attempts_of
from nornir_bench.tasks import asend_command
from nornir_bench.tasks.sessions.scrapli_session import CONNECTION_NAME, ScrapliSession, session_of
from tests.devices import LabProcess, closed_port, lab_process, nornir_on
from tests.ssh_servers import ssh_server

# Per platform: a privileged command and what its output says, and a second command.
COMMANDS = {
    "cisco_ios": ("show version", "Cisco IOS XE Software", "show interfaces"),
    "arista_eos": ("show version", "cEOSLab", "show interfaces"),
    "cisco_nxos": ("show version", "Cisco Systems", "show ip interface brief"),
    "juniper_junos": ("show version", "JUNOS", "show interfaces"),
}


@pytest.fixture(scope="module")
def more_platforms(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabProcess]:
    """The lab platforms fakenos_lab has not: NX-OS, Junos, and IOS-XR (a lab of the
    module's own: the tests of the session's lab run on each of its devices)."""
    platforms = {"nx1": "cisco_nxos", "mx1": "juniper_junos", "xr1": "cisco_xr"}
    with lab_process(tmp_path_factory.mktemp("more-platforms"), platforms) as lab:
        yield lab


@pytest.fixture
def own_lab(tmp_path: Path) -> Iterator[LabProcess]:
    """One cisco_ios device of this test's own, which it may kill."""
    with lab_process(tmp_path, {"rtr9": "cisco_ios"}) as lab:
        yield lab


def lab_host(lab: LabProcess, name: str | None = None) -> Host:
    host: Host = lab.nornir("asyncio").inventory.hosts[name or lab.devices[0].name]
    return host


@pytest.fixture
def idle_loop() -> Iterator[asyncio.AbstractEventLoop]:
    """An event loop of the test's own, idle but when the test runs it; at the end it runs
    once more (releasing the sockets of connections aborted meanwhile) and is closed."""
    loop = asyncio.new_event_loop()
    try:
        yield loop
    finally:
        loop.run_until_complete(asyncio.sleep(0.01))
        loop.close()


async def opened(host: Host) -> ScrapliSession:
    session = session_of(host)
    async with session.lock:
        await session.aopen(host, timeout=20)
    return session


@pytest.mark.parametrize("platform", COMMANDS)
def test_each_lab_platform_on_its_scrapli_driver(
    platform: str, fakenos_lab: LabProcess, more_platforms: LabProcess
) -> None:
    lab = more_platforms if platform in ("cisco_nxos", "juniper_junos") else fakenos_lab
    device = next(d for d in lab.devices if d.platform == platform)
    privileged, says, other = COMMANDS[platform]
    nr = lab.nornir("asyncio").filter(name=device.name)
    try:
        first = nr.run(task=asend_command, command=privileged, enable=True)
        second = nr.run(task=asend_command, command=other)
        assert not first.failed and not second.failed, (first.failed_hosts, second.failed_hosts)
        assert says in first[device.name].result and second[device.name].result
        driver = nr.inventory.hosts[device.name].connections[CONNECTION_NAME].connection
        scrapli_class = {
            "cisco_ios": "AsyncIOSXEDriver",
            "arista_eos": "AsyncEOSDriver",
            "cisco_nxos": "AsyncNXOSDriver",
            "juniper_junos": "AsyncJunosDriver",
        }[platform]
        assert type(driver).__name__ == scrapli_class
    finally:
        nr.close_connections()


def test_the_labs_ios_xr_prompt_is_not_ios_xrs_but_the_generic_driver_reads_it(
    more_platforms: LabProcess, tmp_path: Path
) -> None:
    """FakeNOS's cisco_xr logs in at ``xr1>`` and takes ``enable``, as IOS does; a real IOS-XR
    logs in at ``RP/0/RP0/CPU0:xr1#``, which is all scrapli's IOS-XR driver knows. A device
    with no fitting driver is reached with scrapli's generic one (prompts only)."""
    nr = more_platforms.nornir("asyncio").filter(name="xr1")
    try:
        result = nr.run(task=asend_command, command="show version", timeout=2)
    finally:
        nr.close_connections()
    assert type(result["xr1"].exception).__name__ == "ScrapliTimeout"

    inventory = more_platforms.inventory
    (tmp_path / "hosts.yaml").write_text((inventory / "hosts.yaml").read_text())
    (tmp_path / "groups.yaml").write_text(
        (inventory / "groups.yaml")
        .read_text()
        .replace(
            "cisco_xr:\n  platform: cisco_xr",
            "cisco_xr:\n  platform: cisco_xr\n"
            "  connection_options: {scrapli_async: {platform: generic}}",
        )
    )
    (tmp_path / "defaults.yaml").write_text((inventory / "defaults.yaml").read_text())
    generic = nornir_on(tmp_path, "asyncio").filter(name="xr1")
    try:
        result = generic.run(task=asend_command, command="show version")
        assert not result.failed, result.failed_hosts
        assert "Cisco IOS XR Software" in result["xr1"].result
    finally:
        generic.close_connections()


def test_a_session_runs_where_the_login_landed_until_a_command_asks_for_enable(
    fakenos_lab: LabProcess,
) -> None:
    host = lab_host(fakenos_lab, "rtr1")

    async def main() -> list[str]:
        session = await opened(host)
        driver = session.connection
        assert driver is not None
        prompts = [await driver.get_prompt()]
        async with session.lock:
            await session.send_command("show clock")
            prompts.append(await driver.get_prompt())
            await session.send_command("show version", enable=True)
            await session.send_command("show clock")  # no disable after it
            prompts.append(await driver.get_prompt())
        await session.aclose()
        return prompts

    assert asyncio.run(main()) == ["rtr1>", "rtr1>", "rtr1#"]


def test_a_session_opened_for_an_enable_command_logs_in_to_the_privileged_level(
    fakenos_lab: LabProcess,
) -> None:
    """As scrapli does: one look at the prompt fewer than staying where the login landed."""
    host = lab_host(fakenos_lab, "sw1")

    async def main() -> tuple[str, str]:
        session = session_of(host)
        async with session.lock:
            await session.aopen(host, enable=True)
            assert session.connection is not None
            prompt = await session.connection.get_prompt()
            output = await session.send_command("show version", enable=True)
        await session.aclose()
        return prompt, output

    prompt, output = asyncio.run(main())
    assert prompt == "sw1#" and "cEOSLab" in output


def test_close_connections_from_the_sessions_own_loop(fakenos_lab: LabProcess) -> None:
    host = lab_host(fakenos_lab)

    async def main() -> bool:
        session = await opened(host)
        ssh = session._ssh()
        assert ssh is not None and session.is_open
        host.close_connections()  # nornir's synchronous close, called on the session's loop
        await asyncio.wait_for(ssh.wait_closed(), 10)
        return session.is_open

    assert asyncio.run(main()) is False
    assert host.connections == {}


def test_close_connections_after_the_loop_stopped(
    fakenos_lab: LabProcess, idle_loop: asyncio.AbstractEventLoop
) -> None:
    host = lab_host(fakenos_lab)
    session = idle_loop.run_until_complete(opened(host))
    ssh = session._ssh()
    assert ssh is not None
    host.close_connections()  # the loop is idle: close() runs it until the session is gone
    assert session.connection is None and host.connections == {} and ssh.is_closed()


def test_a_session_from_another_loop_is_replaced(
    fakenos_lab: LabProcess, idle_loop: asyncio.AbstractEventLoop
) -> None:
    host = lab_host(fakenos_lab)
    stale = idle_loop.run_until_complete(opened(host))

    async def next_run() -> ScrapliSession:
        return session_of(host)

    fresh = asyncio.run(next_run())
    assert fresh is not stale and host.connections[CONNECTION_NAME] is fresh
    assert stale.connection is None  # its socket is released when its loop runs again


def test_alive_sees_a_device_that_went_away_while_the_loop_was_idle(
    own_lab: LabProcess, idle_loop: asyncio.AbstractEventLoop
) -> None:
    session = idle_loop.run_until_complete(opened(lab_host(own_lab)))
    assert session.alive()
    assert session.alive()  # asking twice takes nothing from the connection
    own_lab.kill()  # the device's process dies; the loop is idle
    assert not session.alive()
    idle_loop.run_until_complete(session.aclose())
    assert not session.alive() and not ScrapliSession().alive()


def test_alive_answers_without_writing_to_the_device(fakenos_lab: LabProcess) -> None:
    """What the device sent back would be echoed into the next command's output."""
    host = lab_host(fakenos_lab, "rtr2")

    async def main() -> str:
        session = await opened(host)
        for _ in range(3):
            assert session.alive()
        async with session.lock:
            output = await session.send_command("show clock")
        await session.aclose()
        return output

    assert asyncio.run(main()).startswith("*")  # IOS's clock line, nothing before it


def test_a_device_that_restarted_between_runs_gets_a_new_session(own_lab: LabProcess) -> None:
    """The core asks alive() before the host's task gets its kept session: the dead one is
    dropped and the task logs in again, instead of failing on it."""
    nr = own_lab.nornir("asyncio")
    host = nr.inventory.hosts["rtr9"]
    try:
        assert not nr.run(task=asend_command, command="show clock").failed
        before = host.connections[CONNECTION_NAME]
        own_lab.kill()
        own_lab.start()  # on the same port
        result = nr.run(task=asend_command, command="show clock")
        assert not result.failed, result.failed_hosts
        assert host.connections[CONNECTION_NAME] is not before
        assert before.connection is None  # closed when dropped
    finally:
        nr.close_connections()
        getattr(nr.runner, "close", lambda: None)()


async def drop_mid_command(task: Task, lab: LabProcess) -> str:
    """A command, then a long one during which the device's process is killed (once)."""
    await asend_command(task, "show clock")
    long_command = asyncio.ensure_future(asend_command(task, "show clock " + "x" * 300))
    process = lab.process
    if process is not None and process.poll() is None:
        await asyncio.sleep(0.2)  # the device echoes a byte per 10 ms: 3 s for this command
        process.kill()
    return str((await long_command).result)


def test_a_device_that_drops_the_session_mid_command_fails_with_a_retried_error(
    own_lab: LabProcess,
) -> None:
    nr = own_lab.nornir("asyncio", retries=1, retry_delay=0)
    try:
        result = nr.run(task=drop_mid_command, lab=own_lab)
    finally:
        nr.close_connections()
    multi = result["rtr9"]
    assert multi.failed
    attempts, failed = attempts_of(multi)
    # the first attempt lost the session, and was retried (on a device now gone for good)
    assert attempts == 2 and failed[0].exception == ScrapliConnectionError.__name__
    assert isinstance(multi.exception, ConnectionRefusedError)


@pytest.mark.parametrize(
    ("platform", "extras", "says"),
    [
        ("linux", None, "scrapli has no driver for platform 'linux': use one of arista_eos,"),
        (None, None, "asend_command needs the host's platform"),
        ("cisco_ios", {"transport": "system"}, "scrapli's transport is asyncssh here"),
        ("generic", {}, "enable needs a platform with privilege levels"),
    ],
)
def test_a_platform_or_option_scrapli_cannot_use_is_one_line(
    platform: str | None, extras: dict[str, str] | None, says: str
) -> None:
    async def main() -> None:
        with closed_port() as port:  # never reached: refused before connecting
            options = {CONNECTION_NAME: ConnectionOptions(extras=extras)}
            host = Host("r1", "127.0.0.1", port=port, platform=platform, connection_options=options)
            await ScrapliSession().aopen(host, enable=platform == "generic")

    with pytest.raises(ValueError) as error:
        asyncio.run(main())
    assert says in str(error.value) and "\n" not in str(error.value)


@dataclass
class Shell:
    """A device's CLI over a real SSH server on loopback: a prompt, each line answered."""

    port: int
    key: asyncssh.SSHKey
    channels: list[asyncssh.SSHServerChannel[str]] = field(default_factory=list)


@contextmanager
def shell_server() -> Iterator[Shell]:
    shell = Shell(0, asyncssh.generate_private_key("ssh-ed25519"))

    class Session(asyncssh.SSHServerSession):  # type: ignore[type-arg]
        def connection_made(self, chan: asyncssh.SSHServerChannel[str]) -> None:
            self.chan = chan
            shell.channels.append(chan)

        def pty_requested(self, *args: object) -> bool:
            return True

        def shell_requested(self) -> bool:
            return True

        def session_started(self) -> None:
            self.chan.write("r1#")

        def data_received(self, data: str, datatype: object) -> None:
            self.chan.write(data.replace("\n", "\r\n"))
            if "\n" in data:
                self.chan.write("\r\nr1#")

    class Server(asyncssh.SSHServer):
        def begin_auth(self, username: str) -> bool:
            return True

        def password_auth_supported(self) -> bool:
            return True

        def validate_password(self, username: str, password: str) -> bool:
            return True

        def session_requested(self) -> asyncssh.SSHServerSession:  # type: ignore[type-arg]
            return Session()

    with ssh_server(shell.key, Server) as shell.port:
        yield shell


def test_a_cli_that_ended_is_dead_before_its_channel_closes(
    tmp_path: Path, idle_loop: asyncio.AbstractEventLoop
) -> None:
    """sshd tells the CLI's end (its exit status, or the signal that killed it) and closes
    the channel in packets of their own: a kept session whose CLI ended is dead from the
    first, not reused until the close comes."""
    from nornir import InitNornir

    from tests.waiting import wait_until

    with shell_server() as shell:
        known = tmp_path / "known_hosts"
        known.write_text(
            f"[127.0.0.1]:{shell.port} {shell.key.export_public_key().decode().strip()}\n"
        )
        (tmp_path / "hosts.yaml").write_text(
            json.dumps(
                {
                    "r1": {
                        "hostname": "127.0.0.1",
                        "port": shell.port,
                        "platform": "generic",
                        "username": "admin",
                        "password": "any",
                        "data": {"known_hosts": str(known)},
                    }
                }
            )
        )
        nr = InitNornir(
            inventory={
                "plugin": "SimpleInventory",
                "options": {"host_file": str(tmp_path / "hosts.yaml")},
            },
            logging={"enabled": False},
        )
        session = idle_loop.run_until_complete(opened(nr.inventory.hosts["r1"]))
        assert idle_loop.run_until_complete(session.still_open())
        chan = shell.channels[0]
        chan.get_connection()._loop.call_soon_threadsafe(  # the exit status, no close yet
            chan._send_request, b"exit-status", UInt32(0)
        )
        # Asked until the exit status has reached this end whole (the first bytes waiting may
        # be another packet, or part of it): only still_open turns the idle loop meanwhile.
        wait_until(lambda: not idle_loop.run_until_complete(session.still_open()),
                   "the exit status read at this end", every=0.05)
        assert session.connection is None  # dropped: the caller logs in again
