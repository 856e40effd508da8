"""The ``dask`` runner's own cluster on this machine, when the user names no scheduler.

It is Dask's own command-line tools (``dask scheduler``, ``dask worker``), started as processes
listening on loopback only (Dask's HTTP servers too), in a session of their own (a terminal's
Ctrl-C reaches the runner's process alone), with TLS by default (a temporary self-signed
certificate, in a private folder removed when the cluster closes, or when its process was
killed). Dask's ``LocalCluster`` would start its worker processes with multiprocessing's
``spawn``, which re-runs the user's script in every worker unless it has an
``if __name__ == "__main__":`` guard; processes started from Dask's command line never import
the user's script. They import what the runner's process imports, from where it imports it (its
import path, in its order). A scheduler the user names is reached as any other
(:mod:`~nornir_bench.runners.dask.address`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from nornir_bench.runners.dask.address import DaskClusterError

if TYPE_CHECKING:
    from distributed.security import Security

__all__ = ["STOP_WAIT_SECONDS", "EmbeddedCluster", "remove_stale_folders"]

STOP_WAIT_SECONDS = 10.0
"""How long the cluster's processes may take to stop when asked, before they are killed."""


# Run first in each process of the embedded cluster: once the process that started it is gone
# (killed, out of memory: it could not close the cluster), the process removes the cluster's
# folder if asked to (the scheduler is: the private key is in it), stops as when asked (SIGTERM:
# Dask's tools close gracefully, a worker's nannies with it), and exits if that takes more than
# STOP_WAIT_SECONDS. Processpool's workers end with their parent in the same way.
_END_WITH_PARENT = """
import os, shutil, signal, threading, time
def _watch(parent=os.getppid(), folder={folder!r}):
    while os.getppid() == parent:
        time.sleep(0.5)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep({wait})
    os._exit(1)
threading.Thread(target=_watch, name="nornir-bench-parent-watch", daemon=True).start()
"""

_FOLDER_PREFIX = "nornir-bench-dask-"


def _python(module: str, remove: Path | None = None) -> list[str]:
    # Not ``-m``, which puts the current directory first on the import path (a checkout of
    # another version there would be imported); ``-c`` puts it first as "": dropped.
    watch = _END_WITH_PARENT.format(wait=STOP_WAIT_SECONDS, folder=str(remove or ""))
    return [
        sys.executable,
        "-c",
        f"import sys; del sys.path[0]\n{watch}\nfrom {module} import main; main()",
    ]


def _env() -> dict[str, str]:
    """The environment of the cluster's processes: this process's import path, in order ("" is
    the current directory), so that they import what it imports."""
    paths = dict.fromkeys(path or os.getcwd() for path in sys.path)
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


@dataclass
class EmbeddedCluster:
    """A Dask scheduler and ``workers`` worker processes on 127.0.0.1, owned by the runner.

    Args:
        workers: worker processes.
        tls: encrypt and authenticate every connection with a temporary certificate.
        dashboard: serve the scheduler's dashboard (on loopback).
        allowed_failures: the scheduler's ``allowed-failures``.
        start_timeout: seconds the scheduler and workers may take to start.
    """

    workers: int
    tls: bool = True
    dashboard: bool = False
    allowed_failures: int = 3
    start_timeout: float = 60.0

    def __post_init__(self) -> None:
        self.address = ""
        self.security: Security | None = None
        self.processes: list[subprocess.Popen[bytes]] = []
        remove_stale_folders()
        # Mode 0700; named after this process, so that a later cluster knows it is stale.
        self.folder = Path(tempfile.mkdtemp(prefix=f"{_FOLDER_PREFIX}{os.getpid()}-"))

    def start(self) -> None:
        """Start the scheduler and the workers (together: the workers wait for the scheduler's
        file), until the scheduler's address is known.

        Raises:
            DaskClusterError: a process exited at start, or did not start in time.
        """
        tls = self._tls_arguments()
        protocol = "tls" if self.tls else "tcp"
        scheduler_file = self.folder / "scheduler.json"
        env = {
            **_env(),
            "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": str(self.allowed_failures),
        }
        # The scheduler and each worker serve HTTP (/health, /metrics, /info: logs and call
        # stacks) with or without the dashboard, on every interface unless told: loopback here.
        http = ["--dashboard-address", "127.0.0.1:0"]
        dashboard = [*http, "--dashboard" if self.dashboard else "--no-dashboard"]
        self._spawn(
            [
                *_python("distributed.cli.dask_scheduler", remove=self.folder),
                "--host", "127.0.0.1", "--port", "0", "--protocol", protocol,
                "--scheduler-file", str(scheduler_file), *dashboard, *tls,
            ],
            env,
        )
        self._spawn(
            [
                *_python("distributed.cli.dask_worker"),
                "--scheduler-file", str(scheduler_file),
                "--host", "127.0.0.1", "--nworkers", str(self.workers), "--nthreads", "1",
                *http, "--no-dashboard", "--local-directory", str(self.folder),
                "--death-timeout", "30", *tls,
            ],
            env,
        )
        deadline = time.monotonic() + self.start_timeout
        while not self.address:
            try:
                self.address = json.loads(scheduler_file.read_text())["address"]
            except (OSError, ValueError, KeyError):
                self._check_started(deadline)
                time.sleep(0.02)

    def _check_started(self, deadline: float) -> None:
        for process in self.processes:
            if process.poll() is not None:
                raise DaskClusterError(
                    f"dask runner: the embedded cluster's {_what(process)} exited with status "
                    f"{process.returncode} at start"
                )
        if time.monotonic() > deadline:
            raise DaskClusterError(
                f"dask runner: the embedded cluster did not start within {self.start_timeout:g} s"
            )

    def exited(self) -> str | None:
        """Which process of the cluster has exited since it started, and how; ``None``: none."""
        for process in self.processes:
            if process.poll() is not None:
                return f"{_what(process)} exited with status {process.returncode}"
        return None

    def _spawn(self, command: list[str], env: dict[str, str]) -> None:
        self.processes.append(
            subprocess.Popen(
                command,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,  # Dask's own log lines: nothing the user asked for
                # This process's: a task's relative paths mean what they mean here, as in the
                # process pool's workers (Dask's own files go to --local-directory).
                cwd=os.getcwd(),
                # A session of its own: a Ctrl-C in the terminal (SIGINT to the foreground
                # process group) reaches the runner's process alone, whose rule decides what
                # it does to the hosts; the cluster ends with that process all the same.
                start_new_session=True,
            )
        )

    def _tls_arguments(self) -> list[str]:
        if not self.tls:
            return []
        from distributed.security import Security

        temporary = Security.temporary()
        files = {
            "ca.pem": temporary.tls_ca_file,
            "cert.pem": temporary.tls_scheduler_cert,
            "key.pem": temporary.tls_scheduler_key,
        }
        for name, text in files.items():
            path = self.folder / name
            path.touch(mode=0o600)
            path.write_text(str(text))
        folder = self.folder
        self.security = Security(
            tls_ca_file=str(folder / "ca.pem"),
            tls_client_cert=str(folder / "cert.pem"),
            tls_client_key=str(folder / "key.pem"),
            require_encryption=True,
        )
        return [
            "--tls-ca-file", str(folder / "ca.pem"),
            "--tls-cert", str(folder / "cert.pem"),
            "--tls-key", str(folder / "key.pem"),
        ]

    def close(self) -> None:
        """Stop the workers (their plugins close the connections they keep), then the
        scheduler; kill what does not stop in time; remove the folder."""
        for process in reversed(self.processes):  # the workers first
            if process.poll() is None:
                process.terminate()
            try:
                process.wait(STOP_WAIT_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.processes.clear()
        shutil.rmtree(self.folder, ignore_errors=True)


def remove_stale_folders() -> None:
    """Remove the folders of embedded clusters whose process is gone (killed before it could
    remove its own, and before its scheduler's watcher could), this user's only."""
    base = Path(tempfile.gettempdir())
    try:
        candidates = list(base.glob(f"{_FOLDER_PREFIX}*-*"))
    except OSError:
        return
    for folder in candidates:
        pid = folder.name.removeprefix(_FOLDER_PREFIX).split("-", 1)[0]
        try:
            if not pid.isdigit() or folder.lstat().st_uid != os.getuid() or _alive(int(pid)):
                continue
        except OSError:
            continue
        shutil.rmtree(folder, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's: alive
        return True
    return True


def _what(process: subprocess.Popen[bytes]) -> str:
    return "scheduler" if "dask_scheduler" in str(process.args) else "workers"
