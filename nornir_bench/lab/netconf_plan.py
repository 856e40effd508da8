"""What a NETCONF lab is made of: its servers, their ports and namespaces, each one's starting
configuration, netconfd's command line and the SSH server's configuration.

Pure data, no I/O: :func:`plan_netconf_lab` turns ``--netconf N`` into a :class:`NetconfPlan`
that :mod:`~nornir_bench.lab.netconf` builds. Each server starts from a configuration a
network engineer recognises (ietf-interfaces with ietf-ip addresses, ietf-system's host
name); the addresses lie in documentation and benchmarking ranges, and are only data in the
server's datastore (netconfd drives no interface).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from nornir_bench.lab._errors import LabError
from nornir_bench.lab._system import password_logins_of
from nornir_bench.lab.topology import check_lab_name

__all__ = [
    "DEFAULT_NETCONF_LAB_NAME",
    "DEFAULT_NETCONF_PORT",
    "MAX_SERVERS",
    "NETCONF_PLATFORM",
    "NETCONF_SUBSYSTEM",
    "YANG_MODULES",
    "NetconfPlan",
    "NetconfServer",
    "plan_netconf_lab",
]

DEFAULT_NETCONF_PORT = 2830
DEFAULT_NETCONF_LAB_NAME = "netconf"
MAX_SERVERS = 100
NETCONF_PLATFORM = "netconf"
"""The inventory's platform: no vendor's (ncclient's ``default`` device handler)."""
NETCONF_SUBSYSTEM = "/usr/sbin/netconf-subsystem"
NETCONFD = "/usr/sbin/netconfd"
YANG_MODULES = ("iana-if-type", "ietf-interfaces", "ietf-ip", "ietf-system")
"""The modules each server loads (shipped in /usr/share/yuma/modules). Not ietf-alarms (netconfd
exits) nor ietf-if-ethernet-like (it crashes)."""


@dataclass(frozen=True)
class NetconfServer:
    """One netconfd: its name (``nc1``), network namespace and SSH port on 127.0.0.1."""

    name: str
    namespace: str
    port: int
    number: int

    def folder(self, workdir: str | os.PathLike[str]) -> Path:
        """Its own folder in the lab's work folder: netconfd's working directory and home
        (its rollback file ``backup-cfg.xml``, its transaction id), its socket, startup file
        and log. A folder shared by two servers makes one revert to the other's
        configuration."""
        return Path(workdir) / self.name

    def socket(self, workdir: str | os.PathLike[str]) -> Path:
        return self.folder(workdir) / "ncx.sock"

    def startup(self, workdir: str | os.PathLike[str]) -> Path:
        return self.folder(workdir) / "startup-cfg.xml"

    def startup_config(self) -> str:
        """The configuration it starts from: a loopback, an uplink and a spare interface
        (shut), its host name."""
        k = self.number
        interfaces = "".join(
            _interface(name, kind, description, enabled, address)
            for name, kind, description, enabled, address in (
                ("lo0", "softwareLoopback", f"loopback of {self.name}", True, f"192.0.2.{k}/32"),
                ("eth0", "ethernetCsmacd", "uplink", True, f"198.18.{k}.1/24"),
                ("eth1", "ethernetCsmacd", "spare", False, None),
            )
        )
        return (
            '<config xmlns="urn:ietf:params:xml:ns:netconf:base:1.0">\n'
            '  <interfaces xmlns="urn:ietf:params:xml:ns:yang:ietf-interfaces">\n'
            f"{interfaces}"
            "  </interfaces>\n"
            '  <system xmlns="urn:ietf:params:xml:ns:yang:ietf-system">\n'
            f"    <hostname>{self.name}</hostname>\n"
            "  </system>\n"
            "</config>\n"
        )

    def netconfd_command(self, workdir: str | os.PathLike[str], user: str) -> list[str]:
        """netconfd's command line: the candidate datastore as the target of edits (its
        confirmed commit with it), no separate startup datastore, ``user`` its superuser."""
        folder = self.folder(workdir)
        return [
            NETCONFD, "--target=candidate", "--with-startup=false",
            f"--port={self.port}",  # the SSH port its sessions arrive on: it refuses others
            f"--ncxserver-sockname={self.socket(workdir)}",
            f"--startup={self.startup(workdir)}",
            f"--superuser={user}",
            *(f"--module={module}" for module in YANG_MODULES),
            f"--log={folder / 'netconfd.log'}", "--log-level=info",
        ]


def _interface(name: str, kind: str, description: str, enabled: bool,
               address: str | None) -> str:
    ipv4 = ""
    if address is not None:
        ip, prefix = address.split("/")
        ipv4 = (
            '      <ipv4 xmlns="urn:ietf:params:xml:ns:yang:ietf-ip">\n'
            f"        <address><ip>{ip}</ip><prefix-length>{prefix}</prefix-length></address>\n"
            "      </ipv4>\n"
        )
    return (
        "    <interface>\n"
        f"      <name>{name}</name>\n"
        f"      <description>{description}</description>\n"
        '      <type xmlns:ianaift="urn:ietf:params:xml:ns:yang:iana-if-type">'
        f"ianaift:{kind}</type>\n"
        f"      <enabled>{'true' if enabled else 'false'}</enabled>\n"
        f"{ipv4}"
        "    </interface>\n"
    )


@dataclass(frozen=True)
class NetconfPlan:
    """Every server of one NETCONF lab."""

    name: str
    servers: tuple[NetconfServer, ...]

    @property
    def user(self) -> str:
        """The lab's own login user on this machine (a system-wide name: one per lab)."""
        return f"nbl-{self.name}"

    @property
    def kind(self) -> str:
        return "NETCONF lab"

    def exposed_ports(self) -> list[tuple[int, str]]:
        return [(s.port, f"NETCONF server {s.name}") for s in self.servers]

    def server(self, name: str) -> NetconfServer:
        """The server named ``name``; LabError if the lab has none of that name."""
        for server in self.servers:
            if server.name == name:
                return server
        raise LabError(f"NETCONF lab {self.name!r} has no server {name!r}")

    def sshd_config(self, workdir: str | os.PathLike[str], key: Path) -> str:
        """The lab's OpenSSH: a port per server, whose every session (the ``netconf``
        subsystem, or any command or shell asked for) is that server's NETCONF session."""
        lines = [f"Port {s.port}" for s in self.servers]
        lines += [
            "ListenAddress 127.0.0.1",
            *password_logins_of(self.user, key),
            f"PidFile {Path(workdir) / 'sshd.pid'}",
            "PrintMotd no",
            "PrintLastLog no",
            "AllowTcpForwarding no",
            "PermitTTY no",
            f"Subsystem netconf {NETCONF_SUBSYSTEM}",
        ]
        for server in self.servers:
            lines += [
                f"Match LocalPort {server.port}",
                # the subsystem finds its netconfd by PORT@SOCKET
                f"    ForceCommand {NETCONF_SUBSYSTEM} "
                f"--ncxserver-sockname={server.port}@{server.socket(workdir)}",
            ]
        return "\n".join(lines) + "\n"


def plan_netconf_lab(servers: int, *, port: int, name: str) -> NetconfPlan:
    """The plan of a lab of ``servers`` netconfd servers, the first SSH port ``port`` and the
    others after it.

    Raises:
        LabError: a count, port or name that is not allowed, saying what is.
    """
    if isinstance(servers, bool) or not isinstance(servers, int) or not (
        1 <= servers <= MAX_SERVERS
    ):
        raise LabError(
            f"--netconf must be a whole number from 1 to {MAX_SERVERS}, got {servers!r}"
        )
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65536 - servers:
        raise LabError(
            f"--port must leave room for {servers} ports up to 65535, from 1 to "
            f"{65536 - servers}, got {port!r}"
        )
    name = check_lab_name(name, "NETCONF lab")
    return NetconfPlan(name, tuple(
        NetconfServer(f"nc{k}", f"nb-{name}-nc{k}", port + k - 1, k)
        for k in range(1, servers + 1)
    ))
