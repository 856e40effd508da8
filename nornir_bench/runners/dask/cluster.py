"""Where a ``dask`` run's workers come from: a cluster of its own on this machine, or a scheduler
the user names; and what the runner checks before sending anything there.

The embedded cluster is Dask's own command-line tools (``dask scheduler``, ``dask worker``),
started as processes listening on loopback only (Dask's HTTP servers too), in a session of their
own (a terminal's Ctrl-C reaches the runner's process alone), with TLS by default (a temporary
self-signed certificate, in a private folder removed when the cluster closes, or when its
process was killed). Dask's ``LocalCluster``
would start its worker processes with multiprocessing's ``spawn``, which re-runs the user's
script in every worker unless it has an ``if __name__ == "__main__":`` guard; processes started
from Dask's command line never import the user's script. They import what the runner's process
imports, from where it imports it (its import path, in its order).
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nornir_bench.core.exceptions import NornirBenchError
from nornir_bench.core.threads import in_a_daemon_thread

if TYPE_CHECKING:
    from distributed import Client
    from distributed.security import Security

__all__ = [
    "DaskClusterError",
    "EmbeddedCluster",
    "connect",
    "described_workers",
    "is_loopback",
    "scheme_and_host",
    "workers_and_threads",
]

STOP_WAIT_SECONDS = 10.0
"""How long the cluster's processes may take to stop when asked, before they are killed."""


class DaskClusterError(NornirBenchError, RuntimeError):
    """The Dask cluster cannot be used: not reachable, not started, not the same versions, or
    not safe for the run's credentials. One line, saying what and where."""


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


def connect(address: str, security: Security | None, timeout: float) -> Client:
    """A client of the scheduler at ``address``, connected within ``timeout`` seconds.

    Raises:
        DaskClusterError: it cannot be reached in time, or refuses the connection.
    """
    from distributed import Client

    try:
        _greet(address, security, timeout)
        return Client(address, security=security, timeout=timeout, set_as_default=False)
    except Exception as exc:  # noqa: BLE001 - any of it: the scheduler is not usable
        reason = " ".join(str(exc).split()) or "no answer"
        raise DaskClusterError(
            f"dask runner: cannot reach the scheduler at {address} within {timeout:g} s "
            f"({type(exc).__name__}: {reason[:300]})"
        ) from None


def workers_and_threads(address: str, security: Security | None, timeout: float) -> tuple[int, int]:
    """The workers of the scheduler at ``address`` and their threads in all, as it reports
    them; nothing is run or registered there.

    Raises:
        DaskClusterError: it cannot be reached in time, or refuses the connection.
    """
    client = connect(address, security, timeout)
    try:
        workers = described_workers(client)
    finally:
        client.close()
    return len(workers), sum(int(worker["nthreads"]) for worker in workers.values())


def described_workers(client: Client) -> dict[str, Any]:
    """The scheduler's description of each of its workers (``resources``, ``nthreads`` ...),
    by address, asked of it now.

    Not ``client.scheduler_info(n_workers=-1)``: it updates the client's copy and returns the
    copy, which the client's periodic update (every 2 s, without the workers) may have
    replaced in between: no workers at all, under load.
    """
    scheduler = client.scheduler
    if scheduler is None:  # the client was closed
        raise DaskClusterError("the Dask client is closed: no scheduler to ask for its workers")
    identity: dict[str, Any] = client.sync(scheduler.identity, n_workers=-1)
    return dict(identity["workers"])


def _greet(address: str, security: Security | None, timeout: float) -> None:
    """Connect to ``address`` and exchange Dask's handshake, within ``timeout`` seconds in all,
    on a loop and thread of its own that end with it.

    Before a ``Client``: it bounds the TCP connection but not the handshake after it (a peer
    that accepts and never answers, a stopped scheduler or another service, holds it for ever),
    and a client whose connection failed keeps its I/O thread for ever.
    """
    from distributed.comm.core import connect as dask_connect

    arguments = security.get_connection_args("client") if security is not None else {}

    async def greet() -> None:
        comm = await asyncio.wait_for(dask_connect(address, timeout, **arguments), timeout)
        await comm.close()

    in_a_daemon_thread(lambda: asyncio.run(greet()), "nornir-bench-dask-connect")


def scheme_and_host(address: str) -> tuple[str, str]:
    """The protocol (``tcp``, ``tls`` ...) and host of a scheduler address, read from the text
    alone (no name is looked up): ``tls://10.0.0.5:8786`` -> ``("tls", "10.0.0.5")``."""
    scheme, _, rest = address.partition("://")
    if not rest:
        scheme, rest = "tcp", address  # Dask's default protocol
    host = rest.rsplit(":", 1)[0] if not rest.startswith("[") else rest[1:].split("]", 1)[0]
    return scheme.lower(), host


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address, judged from its text alone: an IP literal of
    127.0.0.0/8 or ::1, or ``localhost``; any other name counts as remote (knowing better
    would mean looking it up)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def security_from(given: Any) -> Security | None:
    """The runner's ``security`` option as a ``Security``: one given, ``None``, or paths (a job
    file's ``{tls_ca_file, tls_client_cert, tls_client_key}``).

    Raises:
        ValueError: anything else, or a path that is not a readable file.
    """
    if given is None:
        return None
    from distributed.security import Security

    if isinstance(given, Security):
        return given
    keys = ("tls_ca_file", "tls_client_cert", "tls_client_key")
    if not isinstance(given, dict) or set(given) != set(keys):
        raise ValueError(
            "dask runner: security must be a distributed.security.Security, or a mapping of "
            f"{', '.join(keys)} to PEM files, got {given!r:.200}"
        )
    for key in keys:
        path = given[key]
        if not isinstance(path, str) or not os.path.isfile(path):
            raise ValueError(f"dask runner: security.{key} must be a readable file, got {path!r}")
    return Security(**{key: given[key] for key in keys}, require_encryption=True)
