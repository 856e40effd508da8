"""Which scrapli driver a host gets, and how its login starts: the platform names, the
driver from scrapli's factory (:class:`ScrapliLogin`: its options, the host key checked, a
bastion's tunnel), the privilege level a session runs at, a login's timeout told apart from a
wrong password. It opens nothing: :mod:`nornir_bench.tasks.sessions.scrapli_session` opens
the driver and keeps it.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from nornir_bench.tasks.sessions._ssh_banner import (
    ConnectionWatch,
    connection_refused,
    login_timeout_error,
)
from nornir_bench.tasks.sessions.bastion_connections import atunnel
from nornir_bench.tasks.sessions.host_keys import HostKeyCheck, trust_of, without_setting
from nornir_bench.tasks.sessions.jump_hosts import jump_host_of

if TYPE_CHECKING:
    from nornir.core.inventory import Host
    from scrapli.driver import AsyncGenericDriver, AsyncNetworkDriver

__all__ = [
    "CONNECTION_NAME",
    "SCRAPLI_PLATFORMS",
    "TERMINAL_SIZE",
    "ScrapliLogin",
    "driver_options",
    "login_error",
    "login_timed_out",
    "privileged_level",
    "scrapli_driver",
    "scrapli_platform",
    "stay_where_logged_in",
]

CONNECTION_NAME = "scrapli_async"
"""The key of the session in ``host.connections`` and of its options in the inventory (not
nornir-scrapli's ``scrapli``, whose connection is a blocking one)."""

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


class ScrapliLogin:
    """One login to ``host`` with scrapli: the driver it opens, and what a failed one raises.

    Args:
        host: its ``hostname`` (else its name), ``port`` (22 if unset), ``username``,
            ``password``, ``platform`` and ``extras``, as nornir gives a connection plugin them
            (``connection_options.scrapli_async`` overrides each).
        timeout: seconds for the TCP and SSH login, and for each exchange of the login.
    """

    def __init__(self, host: Host, timeout: float) -> None:
        self.params = host.get_connection_parameters(CONNECTION_NAME)
        self.hostname, self.port = self.params.hostname or host.name, self.params.port or 22
        self.where = f"{self.hostname}:{self.port}"
        self.timeout = timeout
        self.trust = trust_of(host, CONNECTION_NAME)
        self.check = HostKeyCheck(self.trust, host.name, self.hostname, self.port)
        self.watch = ConnectionWatch()  # how far a login that timed out got
        self.jump = jump_host_of(host)
        self._carried: Callable[[Any], None] | None = None

    async def driver(self) -> AsyncGenericDriver:
        """The driver to open, in a tunnel of the bastion's connection if the host has one.

        Raises:
            ValueError: no platform, a platform scrapli has no driver for, or a
                ``transport`` in ``extras`` (it is asyncssh here).
        """
        options = driver_options(self.params.extras or {}, self.check, self.timeout, self.watch)
        if "transport" in options:
            raise ValueError(
                f"{self.where}: scrapli's transport is asyncssh here; remove 'transport' from "
                f"connection_options.{CONNECTION_NAME}.extras"
            )
        if self.jump is not None:  # from the bastion's place on: what fails gives it back
            tunnel, self._carried = await atunnel(self.jump, self.trust, self.timeout)
            options["transport_options"]["asyncssh"]["tunnel"] = tunnel
        return scrapli_driver(
            scrapli_platform(self.params.platform),
            host=self.hostname,
            port=self.port,
            auth_username=self.params.username or "",
            auth_password=self.params.password or "",
            transport="asyncssh",
            **options,
        )

    def opened(self, driver: AsyncGenericDriver | None) -> None:
        """The login ended (``driver`` open, or ``None``: it failed): the session's place on
        the bastion's connection is held until the session closes, or freed now."""
        if self._carried is not None:
            self._carried(None if driver is None else getattr(driver.transport, "session", None))

    def failure(self, exc: BaseException) -> BaseException | None:
        """What the failed login raises instead of ``exc``, if anything but the host key
        refused (:attr:`check`'s ``refused``): a timeout named for how far it got, a refused
        port named."""
        return login_error(exc, self.watch, self.where, self.timeout, direct=self.jump is None)
