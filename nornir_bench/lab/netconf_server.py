"""A NETCONF lab's server as a process: its netconfd started in its namespace, waited for
until it listens, and stopped (:mod:`~nornir_bench.lab.netconf` makes the lab with them,
:meth:`~nornir_bench.lab.netconf_running.RunningNetconfLab.restore` starts servers again)."""

from __future__ import annotations

import os
import subprocess
import time

from nornir_bench.lab._errors import LabError
from nornir_bench.lab._system import command, kill_processes
from nornir_bench.lab.netconf_plan import NetconfServer

__all__ = ["SERVER_START_TIMEOUT", "start_netconfd", "stop_netconfd", "wait_for_netconfd"]

SERVER_START_TIMEOUT = 10.0
_LOG_CLOSED = "*** log close"  # the last line netconfd logs as it ends


def start_netconfd(server: NetconfServer, workdir: str | os.PathLike[str], user: str) -> None:
    """``server``'s netconfd started in its namespace from its starting configuration, written
    anew (what the server saved of its running configuration is replaced), detached from this
    process (``setsid --fork``: whoever restarts a server need not reap it; teardown finds it
    in its namespace)."""
    folder = server.folder(workdir)
    server.socket(workdir).unlink(missing_ok=True)  # a server killed leaves its socket
    (folder / "backup-cfg.xml").unlink(missing_ok=True)  # a killed one's pending rollback
    (folder / "data").mkdir(exist_ok=True)  # $YUMA_HOME/data: its transaction id, or it ends
    log = folder / "netconfd.log"
    if log.exists():  # the last run's, ending "log close", until the new one truncates it
        log.replace(folder / "netconfd.log.1")
    server.startup(workdir).write_text(server.startup_config(), encoding="utf-8")
    env = {**os.environ, "HOME": os.fspath(folder), "YUMA_HOME": os.fspath(folder)}
    try:
        with open(folder / "netconfd.out", "ab") as out:
            subprocess.run(
                ["setsid", "--fork", "ip", "netns", "exec", server.namespace,
                 *server.netconfd_command(workdir, user)],
                cwd=folder, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                check=True, timeout=SERVER_START_TIMEOUT,
            )
    except (OSError, subprocess.SubprocessError) as exc:
        raise LabError(f"netconfd of {server.name} could not be started: {exc}") from exc


def wait_for_netconfd(server: NetconfServer, workdir: str | os.PathLike[str]) -> None:
    """Return once ``server``'s netconfd listens on its socket; LabError with the end of its
    log if it ended first (its log closed) or did not listen in time."""
    ends = time.monotonic() + SERVER_START_TIMEOUT
    log = server.folder(workdir) / "netconfd.log"
    while not server.socket(workdir).exists():
        said = log.read_text(errors="replace") if log.exists() else ""
        if _LOG_CLOSED in said or time.monotonic() > ends:
            lines = [line for line in said.splitlines() if line.strip() and "***" not in line]
            why = lines[-1] if lines else "no socket"
            raise LabError(f"netconfd of {server.name} did not start: {why}")
        time.sleep(0.02)


def stop_netconfd(servers: list[NetconfServer]) -> None:
    """Whatever runs in the servers' namespaces (their netconfd) stopped and waited for."""
    pids = {int(p) for server in servers
            for p in command("ip", "netns", "pids", server.namespace).split() if p.isdigit()}
    if pids:
        kill_processes(pids)
