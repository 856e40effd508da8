"""Which scrapli driver a host gets, and how its login starts: the platform names, the
driver from scrapli's factory, the privilege level a session runs at, a login's timeout told
apart from a wrong password. It opens nothing: :mod:`nornir_bench.tasks.scrapli_session`
opens the driver and keeps it.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from nornir_bench.tasks._ssh_banner import (
    ConnectionWatch,
    connection_refused,
    login_timeout_error,
)
from nornir_bench.tasks.host_keys import HostKeyCheck, without_setting

if TYPE_CHECKING:
    from scrapli.driver import AsyncGenericDriver, AsyncNetworkDriver

__all__ = [
    "SCRAPLI_PLATFORMS",
    "TERMINAL_SIZE",
    "driver_options",
    "login_error",
    "login_timed_out",
    "privileged_level",
    "scrapli_driver",
    "scrapli_platform",
    "stay_where_logged_in",
]

SCRAPLI_PLATFORMS: Mapping[str, str] = MappingProxyType(
    {
        "cisco_ios": "cisco_iosxe",
        "cisco_xe": "cisco_iosxe",
        "ios": "cisco_iosxe",
        "iosxe": "cisco_iosxe",
        "arista_eos": "arista_eos",
        "eos": "arista_eos",
        "cisco_nxos": "cisco_nxos",
        "nxos": "cisco_nxos",
        "nxos_ssh": "cisco_nxos",
        "juniper_junos": "juniper_junos",
        "junos": "juniper_junos",
        "cisco_xr": "cisco_iosxr",
        "iosxr": "cisco_iosxr",
    }
)
"""scrapli's platform for nornir's, netmiko's and NAPALM's names; any other name goes to
scrapli as it is (``cisco_iosxe``, ``generic``, a scrapli-community platform)."""

TERMINAL_SIZE = (511, 1000)
"""The session's terminal, columns and rows: netmiko's (``establish_connection``)."""


def scrapli_platform(platform: str | None) -> str:
    """scrapli's name for the host's ``platform``.

    Raises:
        ValueError: no platform: scrapli needs one to know the device's prompts.
    """
    if not platform:
        raise ValueError(
            "asend_command needs the host's platform (cisco_ios, arista_eos, cisco_nxos, "
            "juniper_junos, cisco_xr, or a scrapli platform such as generic)"
        )
    return SCRAPLI_PLATFORMS.get(platform, platform)


def scrapli_driver(platform: str, **options: Any) -> AsyncGenericDriver:
    """scrapli's async driver for ``platform`` (its core drivers, ``generic``, or
    scrapli-community's when installed), from scrapli's own factory."""
    from scrapli import AsyncScrapli
    from scrapli.driver import AsyncGenericDriver
    from scrapli.exceptions import ScrapliModuleNotFound

    if platform == "generic":  # scrapli's sync factory knows it, its async one does not
        return AsyncGenericDriver(**options)
    try:
        driver: AsyncGenericDriver = AsyncScrapli(platform=platform, **options)
    except ScrapliModuleNotFound:
        raise ValueError(
            f"scrapli has no driver for platform {platform!r}: use one of "
            f"{', '.join(sorted(SCRAPLI_PLATFORMS))}, generic (a prompt, no privilege levels), "
            "or a scrapli-community platform with scrapli-community installed"
        ) from None
    return driver


def privileged_level(driver: AsyncGenericDriver) -> str | None:
    """The level scrapli's driver runs commands at by default, its privileged one (IOS's
    ``privilege_exec``), which ``enable`` reaches; ``None`` without privilege levels
    (``generic``)."""
    from scrapli.driver import AsyncNetworkDriver

    if not isinstance(driver, AsyncNetworkDriver):
        return None
    return driver.default_desired_privilege_level


def stay_where_logged_in(driver: AsyncGenericDriver) -> None:
    """Make the driver run commands at the level the login lands on, not higher: a device
    that asks for an enable password is not sent ``enable`` until a command asks for it, and
    an account that logs in privileged is not made to leave it (``disable``). It costs a look
    at the prompt (a round trip) before scrapli readies the terminal."""
    from scrapli.driver import AsyncNetworkDriver

    if not isinstance(driver, AsyncNetworkDriver):
        return
    privileged = driver.default_desired_privilege_level
    below = _unprivileged(driver)
    if below == privileged:
        return
    platform_on_open = driver.on_open

    async def on_open(conn: AsyncNetworkDriver) -> None:
        prompt = await conn.get_prompt()
        if not re.search(conn.privilege_levels[privileged].pattern, prompt, flags=re.M | re.I):
            conn.default_desired_privilege_level = below
        if platform_on_open is not None:
            await platform_on_open(conn)

    driver.on_open = on_open


def _unprivileged(driver: AsyncNetworkDriver) -> str:
    """The level below the driver's default one when reaching that takes a password (IOS,
    EOS and NX-OS ``exec`` under ``privilege_exec``); else the default level itself."""
    default = driver.privilege_levels[driver.default_desired_privilege_level]
    if default.escalate_auth and default.previous_priv:
        return default.previous_priv
    return default.name


def login_timed_out(exc: BaseException) -> bool:
    """scrapli reports a login that timed out as an authentication failure (which is never
    retried, while a timeout is): tell them apart by the cause."""
    from scrapli.exceptions import ScrapliAuthenticationFailed

    return isinstance(exc, ScrapliAuthenticationFailed) and isinstance(
        exc.__cause__, (TimeoutError, asyncio.TimeoutError)
    )


def login_error(
    exc: BaseException, watch: ConnectionWatch, where: str, timeout: float, *, direct: bool
) -> BaseException | None:
    """What a scrapli login to ``where`` that failed with ``exc`` fails with instead, if
    anything: a login that ran out of its ``timeout`` (which scrapli reports as an
    authentication failure) says how far it got, a device's port that refused the connection
    (``direct``: not through a bastion) is named."""
    if login_timed_out(exc):
        return login_timeout_error(watch, where, timeout)
    if direct and isinstance(exc, ConnectionRefusedError):
        return connection_refused(where)
    return None


def driver_options(
    extras: dict[str, Any], check: HostKeyCheck, timeout: float, watch: ConnectionWatch
) -> dict[str, Any]:
    """scrapli's driver options for a login: the host's ``extras`` over the login's timeouts,
    with the host-key check given to asyncssh (scrapli's own, ``auth_strict_key``, comes after
    the password), and its client watched (``watch``: how far a login that timed out got)."""
    options: dict[str, Any] = {
        "auth_strict_key": False,
        "timeout_socket": timeout,
        "timeout_transport": timeout,
        "timeout_ops": timeout,
    }
    options.update(without_setting(extras))
    transport_options = dict(options.get("transport_options") or {})
    transport_options["asyncssh"] = watch.options({
        **check.transport_options(),
        # A terminal as wide as netmiko's: at asyncssh's default (80 columns) FRR's vtysh
        # wraps the echo of a longer line, which scrapli then waits for until its timeout.
        "term_size": TERMINAL_SIZE,
        **(transport_options.get("asyncssh") or {}),
    })
    options["transport_options"] = transport_options
    return options
