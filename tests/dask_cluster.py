"""A real Dask cluster for tests: a scheduler and worker processes started with Dask's own
command-line tools on 127.0.0.1, reached by address (``tcp://``, or ``tls://`` with a temporary
certificate). "Ready" is the scheduler accepting a client and the workers registered with it.
Its processes are in a process group of their own with a guard (tests/dask_guard.py) that ends
them when the process that started the cluster ends without stopping it (pytest killed).

The tests share one (:func:`shared_address`, started by the first test that asks for it, stopped
at the session's end by tests/conftest.py): the ``dask`` runner of the runner suites and of
the tests whose subject is not the runner connects to it by address, which spares a cluster
start per test. Tests of the runner's own embedded cluster start theirs.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from distributed import Client
from distributed.security import Security

__all__ = ["DaskCluster", "SharedClusterOptions", "dask_cluster", "shared_address"]

START_SECONDS = 60.0
# A cluster the tests keep idles most of the session: Dask's sampling profiler (every 10 ms on
# each worker) and its event-loop and system monitors (20 ms, 0.5 s) cost about 4 s of CPU a
# minute for a scheduler and two workers, about 1 s without. They only observe; no test reads
# them.
IDLE_QUIETLY = {
    "DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED": "False",
    "DASK_DISTRIBUTED__ADMIN__TICK__INTERVAL": "1s",
    "DASK_DISTRIBUTED__ADMIN__SYSTEM_MONITOR__INTERVAL": "2s",
}
SITE_ENV = "NORNIR_BENCH_TEST_SITE"


class DaskCluster:
    """A scheduler and ``workers`` worker processes on loopback (stop with :meth:`stop`);
    ``worker_path``: folders the workers import from first (the scheduler does not);
    ``sites``: one worker more for each, serving that site (Dask resource ``site:NAME``), its
    process's environment saying which (``SITE_ENV``)."""

    def __init__(
        self,
        workers: int = 2,
        *,
        tls: bool = False,
        nanny: bool = True,
        worker_path: Sequence[str] = (),
        sites: Sequence[str] = (),
    ) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="nornir-bench-test-dask-"))
        self.security: Security | None = None
        tls_args: list[str] = []
        if tls:
            temporary = Security.temporary()
            for name, text in (
                ("ca.pem", temporary.tls_ca_file),
                ("cert.pem", temporary.tls_scheduler_cert),
                ("key.pem", temporary.tls_scheduler_key),
            ):
                (self.folder / name).write_text(str(text))
            paths = {n: str(self.folder / f"{n}.pem") for n in ("ca", "cert", "key")}
            tls_args = [
                "--tls-ca-file", paths["ca"], "--tls-cert", paths["cert"], "--tls-key", paths["key"]
            ]
            self.security = Security(
                tls_ca_file=paths["ca"],
                tls_client_cert=paths["cert"],
                tls_client_key=paths["key"],
                require_encryption=True,
            )
        path = [p or os.getcwd() for p in sys.path]
        env = {**os.environ, **IDLE_QUIETLY, "PYTHONPATH": os.pathsep.join(path)}
        scheduler_file = self.folder / "scheduler.json"
        # First, so that no process of the cluster is ever without it; a group of its own,
        # which every process of the cluster joins: a terminal's Ctrl-C does not reach them.
        self.guard = subprocess.Popen(
            [sys.executable, "-m", "tests.dask_guard", str(os.getpid()), str(self.folder)],
            env=env, cwd=self.folder, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, **_in_group(0),
        )
        in_group = _in_group(self.guard.pid)
        self.scheduler = subprocess.Popen(
            [
                sys.executable, "-m", "distributed.cli.dask_scheduler",
                "--host", "127.0.0.1", "--port", "0", "--protocol", "tls" if tls else "tcp",
                "--no-dashboard", "--scheduler-file", str(scheduler_file), *tls_args,
            ],
            env=env, cwd=self.folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            **in_group,
        )
        worker_env = {**env, "PYTHONPATH": os.pathsep.join([*worker_path, *path])}
        kinds = [(workers, [], worker_env)] if workers else []
        kinds += [
            (1, ["--resources", f"site:{site}=1"], {**worker_env, SITE_ENV: site})
            for site in sites
        ]
        self.worker_processes = [
            subprocess.Popen(
                [
                    sys.executable, "-m", "distributed.cli.dask_worker",
                    "--scheduler-file", str(scheduler_file), "--host", "127.0.0.1",
                    "--nworkers", str(count), "--nthreads", "1", "--no-dashboard",
                    "--local-directory", str(self.folder), "--death-timeout", "30",
                    *(["--nanny"] if nanny else ["--no-nanny"]), *tls_args, *extra,
                ],
                env=process_env, cwd=self.folder,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **in_group,
            )
            for count, extra, process_env in kinds
        ]
        deadline = time.monotonic() + START_SECONDS
        self.address = ""
        while not self.address:
            try:
                self.address = json.loads(scheduler_file.read_text())["address"]
            except (OSError, ValueError, KeyError):
                if time.monotonic() > deadline or self.scheduler.poll() is not None:
                    self.stop()
                    raise RuntimeError("the test's Dask scheduler did not start") from None
                time.sleep(0.02)
        with self.client() as client:
            client.wait_for_workers(workers + len(sites), timeout=START_SECONDS)

    @contextmanager
    def client(self) -> Iterator[Client]:
        client = Client(self.address, security=self.security, timeout=30, set_as_default=False)
        try:
            yield client
        finally:
            client.close()

    def worker_pids(self) -> dict[str, int]:
        """Each worker's address and process id."""
        with self.client() as client:
            pids: dict[str, int] = client.run(os.getpid)
        return pids

    def stop(self) -> None:
        """Stop the workers, the scheduler, then whatever is left of their group, the guard
        with it."""
        for process in (*self.worker_processes, self.scheduler):
            if process.poll() is None:
                process.terminate()
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self.guard.poll() is None:  # the group's number is the guard's until it is reaped
            os.killpg(self.guard.pid, signal.SIGKILL)
        self.guard.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


def _in_group(group: int) -> dict[str, Any]:
    """Popen's arguments starting a process in process group ``group`` (0: one of its own)."""
    if sys.version_info >= (3, 11):
        return {"process_group": group}
    return {"preexec_fn": functools.partial(os.setpgid, 0, group)}


@contextmanager
def dask_cluster(workers: int = 2, **options: Any) -> Iterator[DaskCluster]:
    cluster = DaskCluster(workers, **options)
    try:
        yield cluster
    finally:
        cluster.stop()


_shared: DaskCluster | None = None


def shared_address() -> str:
    """The address of the session's shared cluster (started on first use)."""
    global _shared
    if _shared is None:
        _shared = DaskCluster(2)
    return _shared.address


def shared_pids() -> set[int]:
    """The shared cluster's own processes (its guard, its scheduler, its workers' parent), if
    started: the session's, not a test's, whichever test started them."""
    if _shared is None:
        return set()
    return {_shared.guard.pid, _shared.scheduler.pid, *(p.pid for p in _shared.worker_processes)}


def stop_shared() -> None:
    global _shared
    if _shared is not None:
        _shared.stop()
        _shared = None


class SharedClusterOptions(Mapping[str, Any]):
    """The ``dask`` runner's options in the runner suites: the shared cluster's address, read
    when a test builds its runner (the cluster is started for the session, not at import)."""

    def __init__(self, **options: Any) -> None:
        self.options = options

    def _all(self) -> dict[str, Any]:
        return {"address": shared_address(), **self.options}

    def __getitem__(self, key: str) -> Any:
        return self._all()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


def main() -> None:
    """``python -m tests.dask_cluster``: a cluster of two workers owned by this process, as a
    test session owns its shared one, until this process is killed; its folder said once it is
    ready."""
    cluster = DaskCluster(2)
    print(json.dumps({"folder": str(cluster.folder)}), flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
