"""Which devices the lab emulates: read from a nornir inventory, or generated.

A lab device is a name, a loopback address and port, a FakeNOS platform and credentials
(:class:`LabDevice`). There are two ways to describe a lab:

- :func:`load_lab_devices` reads a nornir SimpleInventory with nornir's own ``SimpleInventory``,
  so groups and defaults inherit exactly as they do when nornir connects to the devices;
- :func:`generate_lab_devices` makes N devices, and
  :mod:`~nornir_bench.lab.inventory_files` writes the SimpleInventory that reaches them.

Either way the same inventory then drives nornir against the lab. Starting the devices is
:mod:`nornir_bench.lab.emulator`'s job.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from nornir_bench.core.checks import is_whole_number, whole_number
from nornir_bench.core.secrets import SecretError, expand_env
from nornir_bench.lab._errors import LabError

__all__ = [
    "DEFAULT_BASE_PORT",
    "DEFAULT_PASSWORD",
    "DEFAULT_PLATFORMS",
    "DEFAULT_USERNAME",
    "LabDevice",
    "check_ports",
    "fakenos_platforms",
    "generate_lab_devices",
    "load_lab_devices",
]

DEFAULT_PLATFORMS = ("cisco_ios", "arista_eos")
DEFAULT_BASE_PORT = 6001
# The lab's own credentials (as in inventory/lab). Not "user": every output masks the password,
# and a common word would be masked wherever it appears ("username" included).
DEFAULT_USERNAME = "user"
DEFAULT_PASSWORD = "fakenos-lab"


@dataclass(frozen=True)
class LabDevice:
    """One emulated device: where it listens, what it emulates, who may log in."""

    name: str
    address: str
    port: int
    platform: str
    username: str
    password: str = field(repr=False)  # never in a repr, a log line or an error message
    host_key: str = ""
    """Its SSH host key, as OpenSSH writes a public key (``ssh-ed25519 AAAA...``); none for
    a FakeNOS device, which shows FakeNOS's own
    (:func:`~nornir_bench.lab.inventory_files.fakenos_host_key`)."""


def fakenos_platforms() -> tuple[str, ...]:
    """The platforms FakeNOS can emulate (``cisco_ios``, ``arista_eos``, ``juniper_junos`` ...).

    Raises:
        LabError: when FakeNOS is not installed, saying how to install it.
    """
    try:
        from fakenos.core.nos import available_platforms
    except ImportError as exc:
        raise LabError(
            "the device lab needs FakeNOS, which is not installed: pip install 'nornir-bench[lab]'"
        ) from exc
    return tuple(available_platforms)


def load_lab_devices(path: str | os.PathLike[str]) -> list[LabDevice]:
    """The devices of a nornir SimpleInventory, checked for use in the lab.

    Args:
        path: a directory holding ``hosts.yaml`` (and optionally ``groups.yaml`` and
            ``defaults.yaml``), or the path of a hosts file whose directory holds the others.
            Each host needs a loopback ``hostname`` (127.x.x.x or ``localhost``), its own
            ``port``, a FakeNOS ``platform``, a ``username`` and a ``password``; a password
            written ``${VAR}`` is read from the environment variable ``VAR``. Any of them may
            come from a group or the defaults.

    Raises:
        LabError: naming the host and what is wrong with it, or the file that cannot be read.
    """
    from nornir.plugins.inventory.simple import SimpleInventory

    hosts_file = Path(path)
    if hosts_file.is_dir():
        hosts_file = hosts_file / "hosts.yaml"
    if not hosts_file.is_file():
        raise LabError(
            f"no inventory at {os.fspath(path)!r}: expected a directory holding hosts.yaml, "
            "or the path of a hosts file"
        )
    folder = hosts_file.parent
    try:
        inventory = SimpleInventory(
            host_file=str(hosts_file),
            group_file=str(folder / "groups.yaml"),
            defaults_file=str(folder / "defaults.yaml"),
        ).load()
    except Exception as exc:  # YAML errors, unknown groups (KeyError), wrong types: one line each
        detail = " ".join(str(exc).split()) or type(exc).__name__
        raise LabError(f"cannot load the inventory at {os.fspath(path)!r}: {detail}") from exc
    if not inventory.hosts:
        raise LabError(f"the inventory at {os.fspath(path)!r} has no hosts")
    platforms = fakenos_platforms()
    devices = [
        LabDevice(
            name=name,
            address=_loopback_address(name, host.hostname),
            port=_port(name, host.port),
            platform=_platform(name, host.platform, platforms),
            username=_required(name, "username", host.username),
            password=_password(name, host.password),
        )
        for name, host in inventory.hosts.items()
    ]
    check_ports(devices)
    return devices


def generate_lab_devices(
    count: int,
    *,
    platforms: Sequence[str] = DEFAULT_PLATFORMS,
    port: int = DEFAULT_BASE_PORT,
    username: str = DEFAULT_USERNAME,
    password: str = DEFAULT_PASSWORD,
    address: str = "127.0.0.1",
) -> list[LabDevice]:
    """``count`` devices named ``dev1`` ... on consecutive ports of one loopback address.

    Args:
        count: how many devices (>= 1).
        platforms: FakeNOS platforms, given to the devices in turn.
        port: the first device's port; the others follow it.
        username, password: every device's credentials.
        address: the loopback address they all listen on.

    Raises:
        LabError: for a bad value, saying what is allowed.
    """
    whole_number("count", count, minimum=1, error=LabError)
    if isinstance(platforms, str) or not platforms:
        raise LabError(f"platforms must be a non-empty list of platform names, got {platforms!r}")
    known = fakenos_platforms()
    for platform in platforms:
        _platform("", platform, known)
    first = _port("", port)
    if first + count - 1 > 65535:
        raise LabError(
            f"{count} devices from port {first} need ports up to {first + count - 1}, "
            "past 65535: lower the base port or the count"
        )
    bound = _loopback_address("", address)
    for text, value in (("username", username), ("password", password)):
        if not isinstance(value, str) or not value:
            raise LabError(f"{text} must be a non-empty string")
    cycle = list(platforms)
    return [
        LabDevice(f"dev{i + 1}", bound, first + i, cycle[i % len(cycle)], username, password)
        for i in range(count)
    ]


def check_ports(devices: Iterable[LabDevice]) -> None:
    """Every device needs a port of its own (FakeNOS allocates ports whatever the address)."""
    owners: dict[int, str] = {}
    for device in devices:
        other = owners.setdefault(device.port, device.name)
        if other != device.name:
            raise LabError(
                f"hosts {other!r} and {device.name!r} both use port {device.port}: "
                "each lab device needs a port of its own"
            )


def _where(host: str) -> str:
    return f"host {host!r}: " if host else ""


def _loopback_address(host: str, hostname: object) -> str:
    if not isinstance(hostname, str) or not hostname:
        raise LabError(f"{_where(host)}a lab device needs a hostname, e.g. 127.0.0.1")
    if hostname == "localhost":
        return "127.0.0.1"
    try:
        ip = ipaddress.ip_address(hostname)
    except ValueError:
        ip = None
    if ip is None or not ip.is_loopback:
        raise LabError(
            f"{_where(host)}hostname {hostname!r} is not a loopback address: lab devices listen "
            "on 127.x.x.x, localhost or ::1 only"
        )
    if ip.version == 6:
        raise LabError(f"{_where(host)}FakeNOS listens on IPv4 only: use 127.0.0.1, not {hostname}")
    return str(ip)


def _port(host: str, port: object) -> int:
    if not is_whole_number(port, 1, 65535):
        raise LabError(
            f"{_where(host)}port must be a whole number from 1 to 65535 "
            f"(each lab device listens on its own port), got {port!r}"
        )
    return port


def _platform(host: str, platform: object, known: Sequence[str]) -> str:
    if not isinstance(platform, str) or platform not in known:
        raise LabError(
            f"{_where(host)}platform {platform!r} is not one FakeNOS emulates; "
            f"use one of: {', '.join(sorted(known))}"
        )
    return platform


def _required(host: str, what: str, value: object) -> str:
    if not isinstance(value, str) or not value:
        raise LabError(f"{_where(host)}a lab device needs a {what}")
    return value


def _password(host: str, value: object) -> str:
    # str(), not the value: YAML reads an unquoted number as an int.
    password = _required(host, "password", None if value is None else str(value))
    try:
        return expand_env(password, f"host {host!r}: password")
    except SecretError as exc:  # names the variable, never a value
        raise LabError(str(exc)) from None
