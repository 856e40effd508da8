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
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path

from nornir_bench.lab._errors import LabError
from nornir_bench.lab._preflight import refuse_held_ports, remove_stale, user_exists
from nornir_bench.lab._sshd import add_login_user, make_host_key, reap, start_guard, start_sshd
from nornir_bench.lab._system import LabState, command, labs_locked, process_started, teardown
from nornir_bench.lab.netconf_plan import NETCONF_SUBSYSTEM, NETCONFD, NetconfPlan
from nornir_bench.lab.netconf_ready import wait_for_netconf_lab
from nornir_bench.lab.netconf_running import RunningNetconfLab
from nornir_bench.lab.netconf_server import start_netconfd, wait_for_netconfd

__all__ = ["NetconfLab", "check_netconf_lab_needs"]

_FOLDER_MODE = 0o710  # root's, entered by the lab user's group: the sockets its sessions reach
_NEEDED = (NETCONFD, NETCONF_SUBSYSTEM, "/usr/sbin/sshd", "/usr/bin/ssh-keygen")
_TOOLS = ("ip", "setsid", "useradd", "userdel", "chpasswd")
# The labs this process made and has not stopped (as the router lab's).
_RUNNING_HERE: set[str] = set()


class NetconfLab:
    """One NETCONF lab: :meth:`start` makes it, :meth:`stop` removes it (also as a context
    manager, and through its guard if this process dies first).

    Args:
        plan: its servers (:func:`~nornir_bench.lab.netconf_plan.plan_netconf_lab`).
    """

    def __init__(self, plan: NetconfPlan) -> None:
        self.plan = plan
        self.password = secrets.token_urlsafe(18)
        self.state: LabState | None = None
        self._sshd: subprocess.Popen[bytes] | None = None
        self._guard: subprocess.Popen[bytes] | None = None
        self.made = False
        """Whether :meth:`start` got past its refusals to making the lab."""

    def running(self, inventory: str | os.PathLike[str] | None = None) -> RunningNetconfLab:
        """The lab as tests and benchmarks drive it, once started."""
        if self.state is None:
            raise LabError(f"NETCONF lab {self.plan.name!r} is not started")
        return RunningNetconfLab(self.plan, self.password, self.state.workdir,
                                 sshd_pid=self.state.sshd_pid, owner=self.state.owner,
                                 inventory=inventory)

    def __enter__(self) -> NetconfLab:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        """Make the lab; on any error part-way, remove what was made and raise.

        Raises:
            LabError: what the lab needs and lacks, a lab of that name already running, a
                port in use (naming what holds it), or the system command that failed.
        """
        check_netconf_lab_needs()
        with labs_locked():  # taking turns with a killed lab's guard: it never removes this one
            remove_stale(self.plan, _RUNNING_HERE)
            refuse_held_ports(self.plan)
            self.made = True
            _RUNNING_HERE.add(self.plan.name)
            workdir = tempfile.mkdtemp(prefix=f"nornir-bench-lab-{self.plan.name}-")
            yuma = Path(pwd.getpwuid(os.geteuid()).pw_dir) / ".yuma"
            self.state = LabState(
                name=self.plan.name,
                owner=os.getpid(),
                namespaces=[s.namespace for s in self.plan.servers],
                user=self.plan.user,
                password=self.password,
                workdir=workdir,
                ports={s.name: s.port for s in self.plan.servers},
                topology="netconf",
                owner_started=process_started(os.getpid()),
                kind="netconf",
                # netconfd reads it whatever its home says; one made is removed if left empty
                made_folders=[] if yuma.exists() else [os.fspath(yuma)],
            )
            self.state.save()  # before anything is made: whatever follows can be removed
        try:
            self._guard = start_guard(self.state)
            if user_exists(self.plan.user):
                raise LabError(
                    f"user {self.plan.user} exists already and is not the lab's: remove it"
                )
            add_login_user(self.state, self.password, "--user-group")
            self._open_workdir(workdir)
            for server in self.plan.servers:
                command("ip", "netns", "add", server.namespace)
                command("ip", "-n", server.namespace, "link", "set", "lo", "up")
                start_netconfd(server, workdir, self.plan.user)
            for server in self.plan.servers:
                wait_for_netconfd(server, workdir)
            key = make_host_key(workdir)
            self._sshd = start_sshd(self.plan, self.state, self.plan.sshd_config(workdir, key),
                                    [s.port for s in self.plan.servers])
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Remove everything the lab made (what is gone already is skipped)."""
        if self.state is None:
            return
        if self._sshd is not None:
            self._sshd.terminate()
        teardown(self.state)
        for process in (self._sshd, self._guard):
            if process is not None:
                reap(process)
        self._sshd = self._guard = None
        self.state = None
        _RUNNING_HERE.discard(self.plan.name)

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
    if os.geteuid() != 0:
        raise LabError(
            "the NETCONF lab needs root, to make network namespaces and a login user: run it "
            "as root"
        )
    missing = [path for path in _NEEDED if not os.access(path, os.X_OK)]
    missing += [tool for tool in _TOOLS if shutil.which(tool) is None]
    if missing:
        raise LabError(
            f"the NETCONF lab needs netconfd and OpenSSH's server (missing: "
            f"{', '.join(missing)}): apt-get install -y netconfd openssh-server"
        )
