"""The lifetime of a ``dask`` runner's cluster: opened on its first run (the embedded cluster
started, or the address connected to), the scheduler's and each new worker's versions checked,
started again when the embedded cluster died between runs, and closed with the connections
its workers keep. The runner's :class:`~nornir_bench.runners._keeper.Keeper` hands it to one
run at a time."""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING, Any

from nornir_bench.runners._remote.connections import HeldInWorkers
from nornir_bench.runners.dask.address import DaskClusterError, connect, described_workers
from nornir_bench.runners.dask.asking import RUN_ON_WORKERS_SECONDS, run_on_workers
from nornir_bench.runners.dask.cluster import EmbeddedCluster

if TYPE_CHECKING:
    from distributed import Client

__all__ = ["RunnerCluster"]

logger = logging.getLogger(__name__)


class RunnerCluster:
    """A runner's cluster: its client, the embedded cluster if it owns one, and the
    connections its workers keep. Opened by a run; one run at a time uses it (its keeper's
    rule: a run from another thread meanwhile gets a cluster of its own, closed as it ends).

    Args:
        address: the scheduler's; ``None``: an embedded cluster of ``num_procs`` workers.
        security: for a ``tls://`` address.
        num_procs, tls, dashboard: the embedded cluster's.
        timeout: seconds to connect (and for the embedded cluster's workers to start).
        loop: each worker's event loop implementation.
        allowed_failures: the embedded scheduler's reruns of a task whose worker died.
    """

    def __init__(
        self,
        address: str | None,
        security: Any,
        *,
        num_procs: int,
        tls: bool,
        dashboard: bool,
        timeout: float,
        loop: str,
        allowed_failures: int,
    ) -> None:
        self.address = address
        self.security = security
        self.num_procs = num_procs
        self.tls = tls
        self.dashboard = dashboard
        self.timeout = timeout
        self.loop = loop
        self.allowed_failures = allowed_failures
        self.client: Client | None = None
        self.embedded: EmbeddedCluster | None = None
        self.held: HeldInWorkers[str] = HeldInWorkers(self._close_held)
        self.checked: set[str] = set()  # workers whose versions were compared

    @property
    def where(self) -> str:
        if self.address is not None:
            return self.address
        return self.embedded.address if self.embedded is not None else "(not started)"

    def open(self) -> Client:
        """The cluster's client for a run: the embedded cluster started, or the address
        connected to, unless done already; the plugins registered; the scheduler's versions
        checked.

        Raises:
            DaskClusterError: in one line.
        """
        from nornir_bench.runners.dask.events import REMOVALS_PLUGIN, WorkerRemovals
        from nornir_bench.runners.dask.reruns import PLUGIN_NAME, CrashReruns
        from nornir_bench.runners.dask.worker import PLUGIN_NAME as WORKER_PLUGIN
        from nornir_bench.runners.dask.worker import NornirBenchWorker, versions

        if self.client is not None and self.client.status == "running":
            exited = None if self.embedded is None else self.embedded.exited()
            if exited is None:
                return self.client
            # Killed between runs (by hand, the OOM killer): a new cluster, as when the
            # scheduler is lost; the connections its workers kept are gone with them.
            logger.warning("dask runner: the embedded cluster's %s; starting a new one", exited)
        self.close()
        address, security = self.address, self.security
        if address is None:
            embedded = self.embedded = EmbeddedCluster(
                workers=self.num_procs,
                tls=self.tls,
                dashboard=self.dashboard,
                allowed_failures=self.allowed_failures,
                start_timeout=self.timeout,
            )
            embedded.start()
            address, security = embedded.address, embedded.security
        client = self.client = connect(address, security, self.timeout)
        _same_versions("the scheduler", client.run_on_scheduler(versions))
        client.register_plugin(CrashReruns(), name=PLUGIN_NAME)
        client.register_plugin(WorkerRemovals(), name=REMOVALS_PLUGIN)
        client.register_plugin(NornirBenchWorker(self.loop), name=WORKER_PLUGIN)
        if self.embedded is not None:
            try:
                client.wait_for_workers(self.num_procs, timeout=self.timeout)
            except Exception:  # noqa: BLE001 - a timeout: said in one line below
                raise DaskClusterError(
                    f"dask runner: the embedded cluster's {self.num_procs} workers did not "
                    f"start within {self.timeout:g} s"
                ) from None
            if self.dashboard:
                print(f"dask runner: dashboard at {client.dashboard_link}", file=sys.stderr)
        return client

    def workers(self) -> dict[str, frozenset[str]]:
        """The workers there are now, by address, with the sites each serves; those new since
        the last run have their versions checked; the connections of those gone are
        forgotten."""
        from nornir_bench.runners.dask.sites import worker_sites
        from nornir_bench.runners.dask.worker import versions

        assert self.client is not None
        described = described_workers(self.client)
        alive = set(described)
        self.held.release(set(self.held.holders.values()) - alive)
        new = sorted(alive - self.checked)
        if new:
            try:
                found_on = run_on_workers(self.client, versions, workers=new)
            except TimeoutError:
                raise DaskClusterError(
                    f"dask runner: a worker of the scheduler at {self.where} did not answer "
                    f"within {RUN_ON_WORKERS_SECONDS:g} s (stopped, or its loop frozen): "
                    f"{', '.join(new)}"
                ) from None
            for worker, found in found_on.items():
                _same_versions(f"worker {worker}", found)
            self.checked |= set(new)
        if not alive:
            raise DaskClusterError(f"dask runner: the scheduler at {self.where} has no workers")
        return {a: worker_sites(described[a].get("resources")) for a in sorted(alive)}

    def _close_held(self, by_worker: dict[str, list[tuple[str, str]]]) -> None:
        """Ask each worker to close the connections it keeps that are listed for it."""
        from nornir_bench.runners.dask.worker import close_held

        if self.client is None or self.client.status != "running":
            return
        for worker, pairs in by_worker.items():
            try:
                run_on_workers(self.client, close_held, pairs, workers=[worker])
            except Exception:
                logger.debug("dask: closing connections on %s failed", worker, exc_info=True)

    def close(self) -> None:
        """Close the connections the workers keep, the client, and the embedded cluster."""
        client, self.client = self.client, None
        embedded, self.embedded = self.embedded, None
        self.checked.clear()
        try:
            if client is not None:
                if client.status == "running":
                    self.client = client  # for the workers' closing of connections
                    self.held.close_all()
                    self.client = None
                client.close(timeout=10)
        except Exception:
            logger.debug("dask: closing the client failed", exc_info=True)
        finally:
            self.held.release(list(set(self.held.holders.values())))
            if embedded is not None:
                embedded.close()


def _same_versions(where: str, found: dict[str, str]) -> None:
    """Raise :class:`DaskClusterError` unless ``where`` runs this process's nornir-bench and
    nornir."""
    from nornir_bench.runners.dask.worker import versions

    for name, version in versions().items():
        theirs = found.get(name)
        if theirs != version:
            raise DaskClusterError(
                f"dask runner: {where} runs {name} {theirs}, this process {version}: install "
                "the same versions everywhere"
            )
