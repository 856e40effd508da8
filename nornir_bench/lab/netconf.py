"""Real NETCONF servers for the lab: yuma123's netconfd, each in a network namespace of its own,
behind one OpenSSH server on loopback.

A lab (:class:`NetconfLab`; ``nornir-bench lab --netconf N``, :mod:`.netconf_command`) is,
for a plan of :mod:`~nornir_bench.lab.netconf_plan`:

- one network namespace and one ``netconfd`` per server (``--target=candidate``: the
  candidate datastore, ``<validate>``, confirmed commits the server reverts by itself), with
  a folder of its own in the lab's work folder: its working directory, home and
  ``YUMA_HOME`` (its rollback file and transaction id), its socket, startup file and log;
- one login user with a generated password (written to the inventory only), the servers'
  superuser;
- one ``sshd`` on 127.0.0.1 with a port per server, whose sessions are that server's NETCONF
  sessions (OpenSSH's ``netconf`` subsystem, ``netconf-subsystem`` to the server's socket);
- a guard process that removes it all if the lab process dies without doing so.

Ready (:meth:`NetconfLab.wait_ready`, :mod:`.netconf_ready`) is every server answering a
NETCONF session over SSH. The state file, teardown and the checks before the start are the
router lab's (:mod:`._system`, :mod:`._preflight`).
"""

from __future__ import annotations

import os
import pwd
import shutil
from pathlib import Path

from nornir_bench.lab._needs import LabNeeds
from nornir_bench.lab._sshd import KindFields, SshLab
from nornir_bench.lab._system import LabState, command
from nornir_bench.lab.netconf_plan import NETCONF_SUBSYSTEM, NETCONFD, NetconfPlan
from nornir_bench.lab.netconf_ready import wait_for_netconf_lab
from nornir_bench.lab.netconf_running import RunningNetconfLab
from nornir_bench.lab.netconf_server import start_netconfd, wait_for_netconfd

__all__ = ["NetconfLab", "check_netconf_lab_needs"]

_FOLDER_MODE = 0o710  # root's, entered by the lab user's group: the sockets its sessions reach
_NEEDS = LabNeeds(
    "NETCONF lab", "netconfd and OpenSSH's server", "netconfd openssh-server",
    programs=(NETCONFD, NETCONF_SUBSYSTEM, "/usr/sbin/sshd", "/usr/bin/ssh-keygen"),
    tools=("ip", "setsid", "useradd", "userdel", "chpasswd"),
)


class NetconfLab(SshLab[NetconfPlan, RunningNetconfLab]):
    """One NETCONF lab: :meth:`start` makes it, :meth:`stop` removes it (also as a context
    manager, and through its guard if this process dies first).

    Args:
        plan: its servers (:func:`~nornir_bench.lab.netconf_plan.plan_netconf_lab`).
    """

    _running_type = RunningNetconfLab
    _login_options = ("--user-group",)

    def _check_needs(self) -> None:
        check_netconf_lab_needs()

    def _state_fields(self) -> KindFields:
        yuma = Path(pwd.getpwuid(os.geteuid()).pw_dir) / ".yuma"
        return KindFields(
            namespaces=[s.namespace for s in self.plan.servers],
            ports={s.name: s.port for s in self.plan.servers},
            topology="netconf",
            kind="netconf",
            # netconfd reads it whatever its home says; one made is removed if left empty
            made_folders=[] if yuma.exists() else [os.fspath(yuma)],
        )

    def _make(self, state: LabState) -> None:
        workdir = state.workdir
        self._open_workdir(workdir)
        for server in self.plan.servers:
            command("ip", "netns", "add", server.namespace)
            command("ip", "-n", server.namespace, "link", "set", "lo", "up")
            start_netconfd(server, workdir, self.plan.user)
        for server in self.plan.servers:
            wait_for_netconfd(server, workdir)
        self._serve_ssh(lambda key: self.plan.sshd_config(workdir, key),
                        [s.port for s in self.plan.servers])

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Return once every server answers a NETCONF session over SSH.

        Raises:
            NetconfNotReady: naming the servers that did not at ``timeout``.
        """
        wait_for_netconf_lab(self.plan, self.password, timeout)

    def _open_workdir(self, workdir: str) -> None:
        """The work folder and each server's folder entered by the lab user's group only (its
        sessions' ``netconf-subsystem`` reaches the server's socket there)."""
        for folder in (Path(workdir), *(s.folder(workdir) for s in self.plan.servers)):
            folder.mkdir(exist_ok=True)
            shutil.chown(folder, "root", self.plan.user)
            folder.chmod(_FOLDER_MODE)


def check_netconf_lab_needs() -> None:
    """Raise :class:`LabError` naming what the NETCONF lab lacks: root, netconfd and
    OpenSSH's server, and the command that installs them."""
    _NEEDS.check()
