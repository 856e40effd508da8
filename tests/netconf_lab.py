"""Real NETCONF servers for tests, as root: a fixture over the package's NETCONF lab
(:func:`nornir_bench.lab.netconf_lab`), as tests/routers.py offers router labs.

- ``netconf_lab``: the session's 2 netconfd servers (``nc1``, ``nc2``), an inventory host on
  each (platform ``netconf``, the servers' host key in its ``known_hosts``), one lab per
  session (per xdist worker), made in the test's process by the first test that asks for it
  (its guard process removes it if that process is killed) and removed at the session's
  end. After each test, a server whose running or candidate configuration is not the one it
  started from is started again from it (:meth:`~nornir_bench.lab.RunningNetconfLab.restore`).

:func:`skip_without_netconf_lab` is the one reason a test of the NETCONF lab is skipped. Every
lab is named by tests/routers.py's :func:`~tests.routers.new_lab_name`, so the session's end
check finds what any of them left.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from nornir_bench.lab import LabError, RunningNetconfLab, netconf_lab
from tests.routers import LAB_READY_TIMEOUT, new_lab_name

__all__ = [
    "NEEDS_NETCONF_LAB",
    "netconf_lab_fixture",
    "netconf_lab_unavailable",
    "netconf_session_lab",
    "skip_without_netconf_lab",
    "wrong_keys",
]

NEEDS_NETCONF_LAB = "needs root and apt-get install -y netconfd openssh-server"
_NEEDED = ("/usr/sbin/netconfd", "/usr/sbin/netconf-subsystem", "/usr/sbin/sshd")


def netconf_lab_unavailable() -> str | None:
    """Why this machine cannot run a NETCONF lab, or ``None`` when it can."""
    if os.geteuid() != 0 or not all(os.access(path, os.X_OK) for path in _NEEDED):
        return NEEDS_NETCONF_LAB
    return None


def skip_without_netconf_lab() -> None:
    """Skip the test where a NETCONF lab cannot run (not root, netconfd or OpenSSH missing)."""
    reason = netconf_lab_unavailable()
    if reason is not None:
        pytest.skip(reason)


@pytest.fixture(scope="session")
def netconf_session_lab(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[RunningNetconfLab | str]:
    """The session's NETCONF lab, made when first asked for; or why it could not be made
    (each test asking for it then fails, saying so)."""
    if netconf_lab_unavailable() is not None:
        yield NEEDS_NETCONF_LAB
        return
    folder = tmp_path_factory.mktemp("netconf-lab")
    with ExitStack() as stack:
        try:
            running = stack.enter_context(
                netconf_lab(2, name=new_lab_name(), write=folder, timeout=LAB_READY_TIMEOUT))
        except LabError as exc:
            yield f"the session's NETCONF lab did not start: {exc}"
            return
        yield running


@pytest.fixture(name="netconf_lab")
def netconf_lab_fixture(
    netconf_session_lab: RunningNetconfLab | str,
) -> Iterator[RunningNetconfLab]:
    """The session's 2 NETCONF servers, a host each, put back after the test if it changed
    them."""
    skip_without_netconf_lab()
    if isinstance(netconf_session_lab, str):
        pytest.fail(netconf_session_lab)
    yield netconf_session_lab
    changed = netconf_session_lab.changed()
    if changed:
        netconf_session_lab.restore(changed)


def wrong_keys(lab: RunningNetconfLab, folder: Path) -> str:
    """known_hosts lines giving each of ``lab``'s servers a key that is not its own (made in
    ``folder``): an impostor's, or a server's key changed."""
    key = folder / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    other = " ".join(key.with_suffix(".pub").read_text().split()[:2])
    return "".join(f"[127.0.0.1]:{server.port} {other}\n" for server in lab.plan.servers)
