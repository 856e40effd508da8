"""What a lab needs of this machine before it is made (root, the programs it runs, the tools
that make its parts), and the one line that names what is missing and how to install it."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from nornir_bench.lab._errors import LabError
from nornir_bench.lab._system import FRR_DAEMONS

__all__ = ["LabNeeds", "check_router_lab_needs"]

_CAP_NET_ADMIN = 12
_CAP_SYS_ADMIN = 21


@dataclass(frozen=True)
class LabNeeds:
    """What one kind of lab needs.

    Args:
        lab: how messages name the lab (``router lab``).
        software: what it runs, as messages name it (``FRR and OpenSSH's server``).
        packages: the packages ``apt-get install`` installs it from.
        programs: the programs it runs (paths), each executable.
        tools: the commands it runs to make its parts, on the ``PATH``.
        capabilities: CAP_NET_ADMIN and CAP_SYS_ADMIN do instead of root.
    """

    lab: str
    software: str
    packages: str
    programs: tuple[str, ...]
    tools: tuple[str, ...]
    capabilities: bool = False

    def check(self) -> None:
        """Raise :class:`LabError` naming what this machine lacks: root (or the
        capabilities), a program or a tool, and the command that installs them."""
        if not (_capable() if self.capabilities else os.geteuid() == 0):
            raise LabError(
                f"the {self.lab} needs root"
                + (", or CAP_NET_ADMIN and CAP_SYS_ADMIN," if self.capabilities else ",")
                + " to make network namespaces and a login user: run it as root"
                + (" (in a container: --cap-add NET_ADMIN --cap-add SYS_ADMIN)"
                   if self.capabilities else "")
            )
        missing = [path for path in self.programs if not os.access(path, os.X_OK)]
        missing += [tool for tool in self.tools if shutil.which(tool) is None]
        if missing:
            raise LabError(
                f"the {self.lab} needs {self.software} (missing: {', '.join(missing)}): "
                f"apt-get install -y {self.packages}"
            )


_ROUTER_LAB = LabNeeds(
    "router lab", "FRR and OpenSSH's server", "frr openssh-server",
    programs=(*(f"/usr/lib/frr/{daemon}" for daemon in FRR_DAEMONS),
              "/usr/bin/vtysh", "/usr/sbin/sshd", "/usr/bin/ssh-keygen"),
    tools=("ip", "useradd", "userdel", "chpasswd"),
    capabilities=True,
)


def check_router_lab_needs() -> None:
    """Raise :class:`LabError` naming what the router lab lacks: root (or CAP_NET_ADMIN and
    CAP_SYS_ADMIN), FRR and OpenSSH's server, and the command that installs them."""
    _ROUTER_LAB.check()


def _capable() -> bool:
    """Root, or CAP_NET_ADMIN and CAP_SYS_ADMIN in effect."""
    if os.geteuid() == 0:
        return True
    try:
        status = Path("/proc/self/status").read_text(encoding="ascii")
    except OSError:
        return False
    for line in status.splitlines():
        if line.startswith("CapEff:"):
            caps = int(line.split()[1], 16)
            return all(caps >> bit & 1 for bit in (_CAP_NET_ADMIN, _CAP_SYS_ADMIN))
    return False
