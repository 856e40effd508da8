"""A conversation with a device written once, as a plan, and driven by either driver.

A plan is a generator of requests (:data:`Request`): it yields what it needs from the device,
gets the answer sent back (or the error thrown in, where it stands), and returns what it did.
:func:`drive` runs a plan on nornir-netmiko's connection (blocking), :func:`adrive` on
scrapli's async session; the change (:mod:`~nornir_bench.tasks.changes.config`), the checks
around it and an audit (:mod:`~nornir_bench.tasks.checks.check_outcomes`) are plans, so both
drivers behave alike.

A command for another host (a check on a neighbour) goes through a session of its own to that
host, opened on first use and closed when the plan ends: the host's own sessions may be busy
with its own task in the same run.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from nornir_bench.core.deadlines import bounded, time_left
from nornir_bench.core.exceptions import SessionClosed
from nornir_bench.tasks.sessions._netconf_requests import NetconfRequest

if TYPE_CHECKING:
    from nornir.core.inventory import Host
    from nornir.core.task import Task

__all__ = [
    "SAVE",
    "Command",
    "PastDeadline",
    "Plan",
    "Login",
    "Read",
    "Request",
    "Save",
    "Send",
    "Wait",
    "adrive",
    "drive",
    "private_copy",
]

SAVE = "write memory"
T = TypeVar("T")


@dataclass(frozen=True)
class Read:
    """Read the running configuration (by the host's ``running_config_command``): the
    device's text is sent back."""


@dataclass(frozen=True)
class Send:
    """Send lines in configuration mode: ``None`` or (refused index, the device's words)."""

    lines: tuple[str, ...]


@dataclass(frozen=True)
class Save:
    """Save the running configuration: the device's reply is sent back."""


@dataclass(frozen=True)
class Command:
    """Run a command on the host (``host`` ``None``), or on another ``Host``: its output."""

    command: str
    host: Any = None


@dataclass(frozen=True)
class Wait:
    """Let ``seconds`` pass (within the host's deadline)."""

    seconds: float


@dataclass(frozen=True)
class Login:
    """Log in to the host anew, on a session of its own, and log out: whether it can still be
    reached (the session in use may outlive what a change did to the device's access)."""


Request = Read | Send | Save | Command | Wait | Login | NetconfRequest
Plan = Generator[Request, Any, T]


class PastDeadline(TimeoutError):
    """The host's attempt is past its deadline: a blocking plan given up there sends nothing
    further. Plans let it through (it is not the device's answer)."""


def private_copy(host: Host) -> Host:
    """``host`` as another ``Host`` with the same settings and no connections: a session of
    its own, which the host's own task (maybe running now) does not share."""
    from nornir.core.inventory import Host

    return Host(
        host.name, hostname=host.hostname, port=host.port, username=host.username,
        password=host.password, platform=host.platform, groups=host.groups, data=host.data,
        connection_options=host.connection_options, defaults=host.defaults,
    )


def within_the_deadline(task: Task) -> None:
    """Raise :class:`PastDeadline` once the host's attempt is past its deadline."""
    if time_left(task) == 0:
        raise PastDeadline("the host's deadline passed: nothing further is sent")


def _advance(plan: Plan[T], answer: Any, error: Exception | None) -> tuple[bool, Any]:
    """``plan`` given ``answer`` (or ``error``, thrown in where it stands): ``(False, its next
    request)``, or ``(True, what it returned)``; what it raises goes up."""
    try:
        return False, plan.throw(error) if error is not None else plan.send(answer)
    except StopIteration as done:
        return True, done.value


# -- netmiko (blocking) --------------------------------------------------------------------


def drive(task: Task, plan: Plan[T], timeout: float) -> T:
    """``plan`` on the host's netmiko connection (opened if need be); what it returns."""
    from nornir_bench.tasks.sessions._netmiko_channel import netmiko_connection

    others: dict[str, Host] = {}
    connection = netmiko_connection(task)
    try:
        done, request = _advance(plan, None, None)
        while not done:
            try:
                within_the_deadline(task)  # a call the runner gave up goes no further
                answer, error = _netmiko_answer(task, connection, request, timeout, others), None
            except Exception as exc:  # noqa: BLE001 - the plan says what it means where it is
                answer, error = None, exc
            done, request = _advance(plan, answer, error)
        return request  # type: ignore[no-any-return]
    finally:
        for other in others.values():
            with contextlib.suppress(Exception):
                other.close_connections()


def _netmiko_answer(
    task: Task, connection: Any, request: Request, timeout: float, others: dict[str, Host]
) -> Any:
    if isinstance(request, Read):
        from nornir_bench.tasks.dialects.dialects import running_config_command

        return connection.send_command(
            running_config_command(task.host), read_timeout=bounded(task, timeout)
        )
    if isinstance(request, Send):
        return _netmiko_send(connection, request.lines, timeout, task)
    if isinstance(request, Save):
        return connection.send_command(SAVE, read_timeout=bounded(task, timeout))
    if isinstance(request, Wait):
        time.sleep(bounded(task, request.seconds))
        return None
    if isinstance(request, Login):
        fresh = private_copy(task.host)
        try:
            _netmiko_login(task, fresh, timeout)
        finally:
            with contextlib.suppress(Exception):
                fresh.close_connections()
        return None
    assert isinstance(request, Command)
    if request.host is not None:
        other = others.get(request.host.name)
        if other is None:
            other = others[request.host.name] = private_copy(request.host)
        connection = _netmiko_login(task, other, timeout)
    return connection.send_command(request.command, read_timeout=bounded(task, timeout))


_LOGIN_WAITS = ("conn_timeout", "auth_timeout", "banner_timeout")


def _netmiko_login(task: Task, host: Host, timeout: float) -> Any:
    """``host``'s netmiko connection, logged in if need be within ``timeout`` (and the task's
    deadline) for each of the login's waits: a device that takes no new login is told in
    seconds, not netmiko's minute."""
    from nornir_bench.tasks.sessions._netmiko_channel import open_netmiko

    if "netmiko" not in host.connections:
        extras = dict(host.get_connection_parameters("netmiko").extras or {})
        for name in _LOGIN_WAITS:
            given = extras.get(name)
            extras[name] = bounded(task, timeout if given is None else min(float(given), timeout))
        open_netmiko(task, host, extras)
    return host.get_connection("netmiko", task.nornir.config)


def _netmiko_send(
    connection: Any, lines: Sequence[str], timeout: float, task: Task
) -> tuple[int, str] | None:
    """``lines`` in configuration mode, one at a time, up to the first refused (by the
    host's dialect's rule); each exchange within the host's deadline, and none after it."""
    from nornir_bench.tasks.dialects.dialects import dialect_of
    from nornir_bench.tasks.dialects.refusals import answer_in, refusal

    dialect = dialect_of(task.host)
    connection.config_mode()
    try:
        for index, line in enumerate(lines):
            within_the_deadline(task)
            reply = connection.send_config_set(
                [line], enter_config_mode=False, exit_config_mode=False,
                read_timeout=bounded(task, timeout),
            )
            said = refusal(answer_in(reply, line, connection.base_prompt), dialect)
            if said is not None:
                return index, said
        return None
    finally:
        # A session the device closed has no mode left to leave: what ended it is the error.
        # Past the deadline nothing more is written: the session is dropped (given up).
        if time_left(task) != 0:
            with contextlib.suppress(SessionClosed):
                connection.exit_config_mode()


# -- scrapli (async) -----------------------------------------------------------------------


async def adrive(task: Task, plan: Plan[T], timeout: float) -> T:
    """``plan`` on the host's scrapli session (opened if need be, held while the plan runs);
    what it returns."""
    from nornir_bench.tasks.sessions.scrapli_session import ScrapliSession, session_of

    session = session_of(task.host)
    others: dict[str, ScrapliSession] = {}
    async with session.lock:
        try:
            if not session.is_open or not await session.still_open():
                await session.aopen(task.host, timeout=timeout)
            done, request = _advance(plan, None, None)
            while not done:
                try:
                    answer = await _scrapli_answer(task, session, request, timeout, others)
                    error = None
                except Exception as exc:  # noqa: BLE001 - the plan decides what it means
                    answer, error = None, exc
                done, request = _advance(plan, answer, error)
            return request  # type: ignore[no-any-return]
        finally:
            for other in others.values():
                with contextlib.suppress(Exception):
                    await other.aclose()


async def _scrapli_answer(
    task: Task, session: Any, request: Request, timeout: float, others: dict[str, Any]
) -> Any:
    if isinstance(request, Read):
        from nornir_bench.tasks.dialects.dialects import running_config_command

        return await session.send_command(running_config_command(task.host), timeout=timeout)
    if isinstance(request, Send):
        from nornir_bench.tasks.dialects.dialects import dialect_of

        return await session.send_config_lines(
            request.lines, dialect=dialect_of(task.host), timeout=timeout
        )
    if isinstance(request, Save):
        return await session.send_command(SAVE, timeout=timeout)
    if isinstance(request, Wait):
        await asyncio.sleep(request.seconds)
        return None
    from nornir_bench.tasks.sessions.scrapli_session import ScrapliSession

    if isinstance(request, Login):
        fresh = ScrapliSession()
        try:
            await fresh.aopen(private_copy(task.host), timeout=timeout)
        finally:
            await fresh.aclose()
        return None
    assert isinstance(request, Command)
    if request.host is None:
        return await session.send_command(request.command, timeout=timeout)

    other = others.get(request.host.name)
    if other is None:
        other = others[request.host.name] = ScrapliSession()
    if not other.is_open:
        await other.aopen(private_copy(request.host), timeout=timeout)
    return await other.send_command(request.command, timeout=timeout)
