"""``dask``: the hosts of a run on the workers of a Dask distributed cluster.

One Python process saturates at a few thousand device sessions, and the process pool at one
machine's cores; a fleet of 50,000 to 1,000,000 devices, or a parsing-heavy job, needs more
machines. This runner sends the hosts of a run to Dask workers, each running up to
``num_workers`` hosts at once on an event loop of its own, through the same shared core and
run policies as every runner of the package.

- ``address`` ``None`` (the default): a cluster of this runner's own, on this machine: a Dask
  scheduler and ``num_procs`` worker processes started with Dask's command-line tools, on
  loopback, with TLS (:mod:`~nornir_bench.runners.dask.cluster`). Started on the first run,
  kept for the runner's life, closed with :meth:`DaskRunner.close` (and at the end of ``with
  DaskRunner() as runner:``), at interpreter exit and on garbage collection. A script needs
  no ``__main__`` guard: no worker imports it.
- A run from another thread while one uses the runner's cluster gets a cluster of its own
  (the embedded one started again, or another client to ``address``), closed as it ends
  (:mod:`~nornir_bench.runners._keeper`).
- ``address`` a scheduler's (``tls://scheduler.example.net:8786``): the runner connects to it,
  within ``connect_timeout`` seconds, and checks that every worker (and the scheduler) runs
  the same nornir-bench and nornir as this process (the cluster's lifetime:
  :mod:`~nornir_bench.runners.dask.lifetime`).
- The run goes to each worker once; hosts go in chunks (``chunk_size``), results come back per
  chunk as chunks finish (:mod:`~nornir_bench.runners.dask.run`), so processor hooks fire and
  the progress bar moves during the run; host data changes merge back.
- A worker that dies: the chunks it had run again on another worker, once for a read-only task
  and never for another (``crash_reruns`` sets how many times for any task;
  :mod:`~nornir_bench.runners.dask.reruns`); past that their hosts fail with
  ``WorkerCrashed`` naming it. A lost scheduler fails the hosts not back with
  ``WorkerUnavailable``. Ctrl-C sends no more chunks and tells the workers to start no more
  hosts; the hosts that finished are kept; a second Ctrl-C abandons the rest.
- A host's connections stay in the worker that opened them until ``nr.close_connections()``;
  the next run sends the host back there. The parent's ``host.connections`` shows them.
- Workers at each site: a host whose inventory sets ``site`` runs only on workers started
  for that site (Dask resource ``site:NAME``); a site no worker serves fails its hosts at
  once, naming it (:mod:`~nornir_bench.runners.dask.sites`).
- Credentials do not cross a network in clear text: a ``tcp://`` scheduler address that is not
  loopback is refused while hosts carry passwords, unless ``allow_unencrypted``.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from nornir.core.task import AggregatedResult, Task

from nornir_bench.core.checks import flag, number, whole_number
from nornir_bench.core.connections import is_close_connections_task
from nornir_bench.core.loops import resolve_loop
from nornir_bench.core.policies.options import Policed, RunPolicy
from nornir_bench.core.read_only import is_read_only
from nornir_bench.core.runner_traits import Placement
from nornir_bench.runners._core.lifecycle import Lifecycle
from nornir_bench.runners._core.limiter import per_worker_elsewhere
from nornir_bench.runners._core.results import placeholders
from nornir_bench.runners._keeper import Keeper, Keeping
from nornir_bench.runners._remote.options import RemoteOptions, worker_processes
from nornir_bench.runners.dask.address import (
    DaskClusterError,
    is_loopback,
    scheme_and_host,
    security_from,
    workers_and_threads,
)
from nornir_bench.runners.dask.lifetime import RunnerCluster

if TYPE_CHECKING:
    from nornir.core.inventory import Host

    from nornir_bench.runners.dask.run import DaskChunks

__all__ = ["DaskClusterError", "DaskRunner"]

_MAX_ADDRESS_LENGTH = 2_000

DEFAULT_READ_ONLY_RERUNS = 1
"""How many times a read-only task's hosts run again after their worker died, by default."""


class DaskRunner(Policed, Keeping):
    """Runs the task over the hosts on the workers of a Dask distributed cluster.

    Args:
        num_workers: hosts in flight at once on each Dask worker (>= 1); kept as an
            attribute, as other nornir tools read it.
        address: the scheduler to connect to (``tls://host:8786``); ``None``: a cluster of
            this runner's own on this machine.
        num_procs: the embedded cluster's worker processes (>= 1); default the CPU count.
        chunk_size: hosts sent to a worker in one Dask task; default a quarter of a worker's
            share of the run, at most ``num_workers`` (see docs/runners.md).
        crash_reruns: how many times the hosts of a worker that died run again on another
            (0-100); default: once for a task marked read-only (``read_only``: safe to repeat),
            never for any other (a task that may change a device must not run twice on it).
        security: for ``tls://`` addresses: a ``distributed.security.Security``, or a mapping
            of ``tls_ca_file``, ``tls_client_cert``, ``tls_client_key`` to PEM files.
        allow_unencrypted: let the hosts' credentials go to a ``tcp://`` address that is not
            loopback (unencrypted); refused by default.
        tls: the embedded cluster encrypts its connections (default true).
        dashboard: serve the embedded cluster's dashboard on loopback, and print its address.
        connect_timeout: seconds to reach the scheduler (and the embedded cluster's workers to
            start) before the run fails in one line naming the address.
        loop: each worker's event loop: ``"auto"``, ``"asyncio"`` or ``"uvloop"``.
        **policy: the run policies (``task_timeout``, ``retries``, ``max_failures`` ...), the
            same on every runner: see :class:`~nornir_bench.core.policies.options.RunPolicy`.

    Raises:
        ValueError: for a bad option value, saying what is allowed.
    """

    prefers_async_tasks = True
    runs_elsewhere = takes_address = True  # traits: core/runner_traits.py
    requires_modules = ("distributed",)  # the extra dask
    stops_on_ctrl_c = True  # no host starts after Ctrl-C; RunInterrupted keeps what finished

    def __init__(
        self,
        num_workers: int = 100,
        *,
        address: str | None = None,
        num_procs: int | None = None,
        chunk_size: int | None = None,
        crash_reruns: int | None = None,
        security: Any = None,
        allow_unencrypted: bool = False,
        tls: bool = True,
        dashboard: bool = False,
        connect_timeout: float = 30.0,
        loop: str = "auto",
        **policy: Any,
    ) -> None:
        what = "dask runner"
        self.num_workers = whole_number(f"{what}: num_workers", num_workers, minimum=1)
        if address is not None and (
            not isinstance(address, str) or not address or len(address) > _MAX_ADDRESS_LENGTH
        ):
            raise ValueError(
                f"{what}: address must be a scheduler's address such as 'tls://host:8786', or "
                f"None for a cluster of its own, got {address!r:.200}"
            )
        self.address = address
        self.num_procs = worker_processes(what, num_procs)
        self.chunk_size = (
            None
            if chunk_size is None
            else whole_number(f"{what}: chunk_size", chunk_size, minimum=1)
        )
        self.crash_reruns = None if crash_reruns is None else whole_number(
            f"{what}: crash_reruns", crash_reruns, minimum=0, maximum=100
        )
        self.security = security_from(security)
        self.allow_unencrypted = flag(f"{what}: allow_unencrypted", allow_unencrypted)
        self.tls = flag(f"{what}: tls", tls)
        self.dashboard = flag(f"{what}: dashboard", dashboard)
        self.connect_timeout = number(
            f"{what}: connect_timeout", connect_timeout, above=0, maximum=3600,
            unit="a number of seconds",
        )
        self.loop = loop
        self.loop_implementation = resolve_loop(loop, what=what)
        self.policy = RunPolicy.build(what, policy)
        cluster = functools.partial(
            RunnerCluster, self.address, self.security, num_procs=self.num_procs,
            tls=self.tls, dashboard=self.dashboard, timeout=self.connect_timeout,
            loop=self.loop_implementation,
            allowed_failures=max(3, self.crash_reruns or DEFAULT_READ_ONLY_RERUNS),
        )
        self._cluster = cluster()  # the kept one (a run from another thread: its own)
        self._keeper = Keeper(self, self._cluster, cluster)

    def run(self, task: Task, hosts: list[Host]) -> AggregatedResult:
        """Run ``task`` on ``hosts`` on the cluster's workers (the lifecycle, Ctrl-C included:
        :mod:`~nornir_bench.runners._core.lifecycle`).

        Raises:
            DaskClusterError: the cluster cannot be used (not reachable, not started, other
                versions, or an unencrypted address for the hosts' credentials), in one line.
            SiteError: a host's ``site`` that is not a site's name, whatever the cluster
                (an embedded one serves no site); before the cluster is used.
            ValueError: when the task or its arguments cannot be sent to the workers.
            RunInterrupted: on Ctrl-C; no chunk is sent after it, the workers start no more
                hosts, and the exception's ``result`` holds every host that had finished. A
                second Ctrl-C does not wait for the hosts in flight (``abandoned`` set).
        """
        if not hosts:
            return placeholders(task, hosts)
        if is_close_connections_task(task.task):
            return self._cluster.held.close_connections_task(task, hosts, placeholders(task, hosts))
        self._refuse_cleartext(hosts)
        from nornir_bench.runners.dask.sites import host_sites

        sites = host_sites(hosts)  # bad input whatever the cluster: checked before it is used
        with self._keeper.using() as cluster:  # kept for the runner's life
            run = Lifecycle(task, hosts, self.policy, planned=True)
            return run.drive(self._chunks(task, cluster, run, sites))

    def _chunks(
        self, task: Task, cluster: RunnerCluster, run: Lifecycle, sites: list[str | None]
    ) -> DaskChunks:
        """The run's transport over the cluster (opened first if need be) and its workers
        there are now (with the sites they serve, and the hosts' ``sites``, once any serves
        one)."""
        from nornir_bench.runners.dask.run import DaskChunks

        client = cluster.open()
        workers = cluster.workers()
        return DaskChunks(self._options(task), client, run, cluster.held,
                          workers=workers, sites=sites if any(workers.values()) else None,
                          where=cluster.where)

    def _options(self, task: Task) -> RemoteOptions:
        return RemoteOptions(
            num_workers=self._per_worker(task),
            num_procs=self.num_procs,
            chunk_size=self.chunk_size,
            crash_reruns=self._reruns(task),
            loop=self.loop_implementation,
            policy=self.policy,
            reruns_given=self.crash_reruns is not None,
        )

    def _reruns(self, task: Task) -> int:
        """How many times the hosts of a worker that died run again: ``crash_reruns``, else
        once for a read-only task, never for another."""
        if self.crash_reruns is not None:
            return self.crash_reruns
        return DEFAULT_READ_ONLY_RERUNS if is_read_only(task.task, task.params) else 0

    def _per_worker(self, task: Task) -> int:
        """Hosts in flight on each worker: ``num_workers``, or fewer where the embedded
        cluster's workers (on this machine, under its limits) cannot open the files they need,
        said once, here. Workers elsewhere fit their own (each raises its soft limit, or keeps
        fewer hosts in flight)."""
        if self.address is not None:
            return self.num_workers
        return per_worker_elsewhere(self.num_workers, task.task, what="dask runner")

    def placement(self) -> Placement:
        """The embedded cluster's ``num_procs`` workers, or the scheduler's, asked now."""
        if self.address is None:
            return Placement.worker_processes(self.num_procs)
        workers, threads = workers_and_threads(self.address, self.security, self.connect_timeout)
        return Placement(workers, threads, is_loopback(scheme_and_host(self.address)[1]))

    def _refuse_cleartext(self, hosts: list[Host]) -> None:
        """Refuse to send credentials over a network unencrypted: decided from the address's
        text, before any connection or name lookup."""
        if self.address is None or self.allow_unencrypted:
            return
        scheme, host = scheme_and_host(self.address)
        if scheme != "tcp" or is_loopback(host):
            return
        if any(_has_password(h) for h in hosts):
            raise DaskClusterError(
                f"dask runner: the hosts carry passwords and {self.address} is not encrypted "
                "(tcp://, not loopback): use a tls:// address with security, or set "
                "allow_unencrypted: true"
            )

    def close(self) -> None:
        """Close the connections the workers keep, the client, and the embedded cluster.

        ``nr.close_connections()`` closes the connections (the cluster stays), and the end of
        ``with runner:``, garbage collection of the runner and the interpreter's exit close
        all. While a run uses the cluster, it is closed as that run ends.
        """
        self._keeper.close()

    def __repr__(self) -> str:
        return (
            f"DaskRunner(num_workers={self.num_workers}, address={self.address!r}, "
            f"num_procs={self.num_procs}, chunk_size={self.chunk_size}, "
            f"crash_reruns={self.crash_reruns}, loop={self.loop!r}{self._policy_repr()})"
        )


def _has_password(host: Host) -> bool:
    """Whether ``host`` has a password, its own or inherited, for itself or any connection."""
    if host.password:
        return True
    plugins = set(host.connection_options) | set(host.defaults.connection_options)
    for group in host.extended_groups():
        plugins |= set(group.connection_options)
    return any(host.get_connection_parameters(plugin).password for plugin in plugins)
