"""Run a CLI command on a device: ``send_command`` (netmiko) and ``asend_command`` (scrapli).

``send_command`` is nornir-netmiko's ``netmiko_send_command``: the same connection plugin,
the same output; it blocks, so event-loop runners run it in their thread pool.
``asend_command`` awaits scrapli's async driver over asyncssh
(:mod:`nornir_bench.tasks.sessions.scrapli_session`), so thousands of devices can be in flight
on one loop. Both return a ``Result`` whose ``result`` is the command's output text (no echo,
no prompt, ``\\n`` line ends).

Each keeps one session per host in ``host.connections`` (``"netmiko"`` and
``"scrapli_async"``), reused by every command on that host, in this run and the next ones: both
stay open until ``nr.close_connections()``, as in nornir (the async runners keep the event loop
a scrapli session lives on, see :mod:`nornir_bench.core.connections`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from nornir.core.task import Result

from nornir_bench.core.checks import number
from nornir_bench.core.deadlines import bounded, time_left
from nornir_bench.core.read_only import read_only, reads_only_commands
from nornir_bench.tasks._needs import DEVICES_EXTRA, needs, require_libraries
from nornir_bench.tasks._params import check_params_with
from nornir_bench.tasks.checks.output_parsers import check_parser, parse_output
from nornir_bench.tasks.sessions.scrapli_session import session_of

if TYPE_CHECKING:
    from nornir.core.task import Task

__all__ = ["DEFAULT_COMMAND_TIMEOUT", "asend_command", "send_command"]

DEFAULT_COMMAND_TIMEOUT = 30.0
"""Seconds ``asend_command`` allows for the login, and again for each command."""


_OURS = ("command", "enable", "parse", "template_file")


def _check_send_command(params: Mapping[str, Any]) -> None:
    """The job loader's check of ``send_command`` parameters, as the task does it."""
    check_parser(params)
    _check_netmiko_arguments({k: v for k, v in params.items() if k not in _OURS})


def _parsed(task: Task, command: str, result: Result, parse: str | None,
            template_file: str | None) -> Result:
    """``result`` with its output parsed (``parse``), the text kept as ``raw``."""
    if parse is None:
        return result
    text = result.result
    data = parse_output(str(text), parse, command=command, platform=task.host.platform,
                        template_file=template_file)
    return Result(host=task.host, result=data, raw=text)


@read_only(when=reads_only_commands)
@needs(libraries=["netmiko", "nornir_netmiko"], connections=["netmiko"], install=DEVICES_EXTRA)
@check_params_with(_check_send_command)
def send_command(
    task: Task,
    command: str,
    *,
    enable: bool = False,
    parse: str | None = None,
    template_file: str | None = None,
    **kwargs: Any,
) -> Result:
    """Run ``command`` through nornir-netmiko's connection (blocking).

    Args:
        command: the CLI command, one line.
        enable: enter privileged mode first (netmiko's ``enable()``; the enable password is
            netmiko's ``secret`` in the host's ``connection_options.netmiko.extras``).
        parse: ``json``, ``textfsm`` or ``ttp``: the result is the output as data, the text
            in the result's ``raw`` (:mod:`~nornir_bench.tasks.checks.output_parsers`).
        template_file: the TextFSM or TTP template (TextFSM: ntc-templates' by default).
        **kwargs: ``use_timing`` (netmiko's ``send_command_timing`` instead), and the rest is
            passed to netmiko's ``send_command`` (``read_timeout``, ``expect_string``,
            ``use_textfsm`` ...), or ``send_command_timing``.

    Returns:
        A ``Result`` whose ``result`` is the output, or the data ``parse`` made of it.

    Raises:
        MissingLibrary: netmiko or nornir-netmiko is not installed (``pip install
            'nornir-bench[devices]'``).
        TypeError: a keyword argument netmiko's method does not take, before connecting.
        OutputNotParsed: the output is not what ``parse`` reads, or its template matched
            nothing.
    """
    require_libraries(send_command)
    check_parser({"parse": parse, "template_file": template_file})
    # 0.17 s to import: only when used.
    from netmiko.exceptions import NetmikoTimeoutException
    from nornir_netmiko.tasks import netmiko_send_command  # type: ignore[import-untyped]

    from nornir_bench.tasks.sessions._netmiko_channel import netmiko_connection

    command = _checked(command)
    _check_netmiko_arguments(kwargs)  # not after logging in to every device
    if time_left(task) is not None:  # a deadline: netmiko's waits end by it, not after it
        _open_by_the_deadline(task)
        method = "send_command_timing" if kwargs.get("use_timing") else "send_command"
        wait = kwargs.get("read_timeout", _netmiko_default(method, "read_timeout"))
        kwargs = {**kwargs, "read_timeout": bounded(task, float(wait))}
    try:
        netmiko_connection(task)  # the one netmiko_send_command gets
        result: Result = netmiko_send_command(
            task, command_string=command, enable=enable, **kwargs
        )
    except NetmikoTimeoutException as exc:
        # netmiko words a refused port as "TCP connection to device failed", which reads as a
        # slow network: say what happened, since it is usually a device (or lab) not up.
        if _refused(exc):
            params = task.host.get_connection_parameters("netmiko")
            raise ConnectionRefusedError(
                f"connection refused by {params.hostname}:{params.port or 22}: nothing listens "
                "on that port (is the device, or the lab, up?)"
            ) from exc
        raise
    return _parsed(task, command, result, parse, template_file)


# netmiko's waits while it logs in, as ConnectHandler's keyword arguments.
_LOGIN_TIMEOUTS = ("conn_timeout", "auth_timeout", "banner_timeout")
_PARAMIKO_WAIT = 30.0  # paramiko's own, for a wait netmiko leaves to it (None)


def _open_by_the_deadline(task: Task) -> None:
    """Open the host's netmiko connection, unless it has one, with the login's timeouts
    (``conn_timeout``, ``auth_timeout``, ``banner_timeout``: the host's, else netmiko's)
    bounded by the time the attempt has left: a device that accepts and never answers gives
    the thread back at the deadline, not a minute later."""
    from nornir_bench.tasks.sessions._netmiko_channel import open_netmiko

    host = task.host
    if "netmiko" in host.connections:
        return
    params = host.get_connection_parameters("netmiko")
    extras = dict(params.extras or {})
    for name in _LOGIN_TIMEOUTS:
        given = extras.get(name, _netmiko_default("__init__", name))
        extras[name] = bounded(task, _PARAMIKO_WAIT if given is None else float(given))
    open_netmiko(task, host, extras)


@functools.cache
def _netmiko_default(method: str, name: str) -> Any:
    """The default of netmiko's ``BaseConnection.<method>`` argument ``name``."""
    from netmiko import BaseConnection

    return inspect.signature(getattr(BaseConnection, method)).parameters[name].default


def _check_netmiko_arguments(kwargs: Mapping[str, Any]) -> None:
    """Raise ``TypeError`` for a name in ``kwargs`` that nornir-netmiko's
    ``netmiko_send_command`` would pass on and netmiko's method would refuse."""
    timing = bool(kwargs.get("use_timing"))  # as netmiko_send_command decides
    method = "send_command_timing" if timing else "send_command"
    takes = _netmiko_parameters(method)
    unknown = next((name for name in kwargs if name != "use_timing" and name not in takes), None)
    if unknown is not None:
        which = f"{method} (use_timing is true)" if timing else method
        raise TypeError(
            f"send_command has no parameter {unknown!r}, nor has netmiko's {which}; it takes: "
            f"command, enable, use_timing, {', '.join(takes)}"
        )


@functools.cache
def _netmiko_parameters(method: str) -> tuple[str, ...]:
    """The keyword arguments of netmiko's ``BaseConnection.<method>`` but the command, which
    ``send_command`` gives."""
    from netmiko import BaseConnection

    parameters = inspect.signature(getattr(BaseConnection, method)).parameters.values()
    return tuple(
        p.name
        for p in parameters
        if p.name not in ("self", "command_string")
        and p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    )


def _refused(exc: BaseException) -> bool:
    """Whether ``exc`` was raised while handling a refused TCP connection."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, ConnectionRefusedError):
            return True
        # paramiko's NoValidConnectionsError: one error per address tried, in ``errors``
        errors = getattr(cause, "errors", None)
        if isinstance(errors, dict) and errors:
            return all(isinstance(e, ConnectionRefusedError) for e in errors.values())
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


@read_only(when=reads_only_commands)
@needs(libraries=["scrapli", "asyncssh"], install=DEVICES_EXTRA)
@check_params_with(check_parser)
async def asend_command(
    task: Task,
    command: str,
    *,
    enable: bool = False,
    timeout: float = DEFAULT_COMMAND_TIMEOUT,
    parse: str | None = None,
    template_file: str | None = None,
) -> Result:
    """Run ``command`` on scrapli's async driver for the host's platform, logging in on first
    use.

    The session logs in with the host's ``hostname``, ``port`` (22 if unset), ``username``,
    ``password`` and ``platform`` (``cisco_ios``, ``arista_eos``, ``cisco_nxos``,
    ``juniper_junos``, ``cisco_xr`` or a scrapli name), each overridable under
    ``connection_options.scrapli_async`` in the inventory, whose ``extras`` go to scrapli's
    driver (``auth_secondary`` is the enable password). scrapli handles prompts, privilege
    levels and paging.

    Args:
        command: the CLI command, one line.
        enable: reach the privileged level first (``enable``) and stay there; otherwise the
            command runs at the level the session is at (where the login landed, at first).
        timeout: seconds for the login, and again for the command.
        parse, template_file: as :func:`send_command`'s.

    Returns:
        A ``Result`` whose ``result`` is the output, or the data ``parse`` made of it.

    Raises:
        MissingLibrary: scrapli or asyncssh is not installed (``pip install
            'nornir-bench[devices]'``).
        scrapli.exceptions.ScrapliAuthenticationFailed: wrong credentials, or ``enable``
            refused.
        scrapli.exceptions.ScrapliTimeout: no prompt within ``timeout``.
        scrapli.exceptions.ScrapliConnectionError: the device closed the session.
        scrapli.exceptions.ScrapliCommandFailure: the device refused the command.
        OSError: the port refused, the host unreachable.
        TimeoutError: no SSH login within ``timeout``.
    """
    command = _checked(command)
    number("asend_command: timeout", timeout, above=0, unit="a number of seconds")
    check_parser({"parse": parse, "template_file": template_file})
    host = task.host
    session = session_of(host)
    async with session.lock:
        if not session.is_open or not await session.still_open():
            require_libraries(asend_command)
            await session.aopen(host, timeout=timeout, enable=enable)
        output = await session.send_command(command, enable=enable, timeout=timeout)
    return _parsed(task, command, Result(host=host, result=output), parse, template_file)


def _checked(command: object) -> str:
    if not isinstance(command, str) or not command.strip() or "\n" in command or "\r" in command:
        raise ValueError(f"command must be one non-empty line of text, got {command!r}")
    return command
