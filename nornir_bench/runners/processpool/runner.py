"""``processpool``: worker processes x coroutines, with crash isolation.

Parsing device output (TextFSM, TTP, Genie) is CPU work that the GIL serialises; a device
library that crashes takes its process with it. This runner spreads hosts over ``num_procs``
worker processes, each running up to ``num_workers`` hosts at once on its own event loop
(``async def`` tasks) or thread pool (blocking tasks), through the shared core.

- The task (cloudpickle: functions from ``__main__`` and closures travel) and nornir's config go
  to the fork server and to each kept worker once per run, and every worker is forked holding
  them; hosts go out in chunks, each to the worker that runs it, and finished hosts come back
  in batches, so IPC stays small next to the work.
- Workers are forked by a fork server: one fresh interpreter, running the package this process
  runs, that loads the run once and forks a worker in milliseconds, so a crashed worker is
  replaced at once (see :mod:`~nornir_bench.runners.processpool.forkserver`). Never a fork of
  the user's threaded process, and the user's ``__main__`` is not re-run as multiprocessing
  would (Linux and macOS: sockets and descriptors pass between processes).
- Processor hooks fire in the parent for every host, subtask hooks included, so progress bars
  and result printers work; each host's ``MultiResult`` refers to the parent's ``Host`` and the
  task's changes to ``task.host.data`` are merged back into the parent's inventory.
- A worker that dies (segfault, ``os._exit``, the out-of-memory killer) is replaced. The host
  that was running when it died fails with :class:`~nornir_bench.core.exceptions.WorkerCrashed`; the
  other hosts it had in flight run again on another worker, once (the rule, in full:
  :mod:`~nornir_bench.runners.processpool.crashes`). No host is ever missing from the result.
- ``task_timeout``: the host fails with ``TaskTimeout``. A blocking task past its deadline
  cannot be stopped, so its worker is retired (killed and replaced) once its other hosts are
  done; a worker that stops answering altogether is killed at once.
- Workers are kept from one run to the next (``keep_workers``, on by default): a run then costs
  no start-up, and the connections a host opened in a worker are there for the next run, which
  sends the host back to that worker, as nornir keeps connections until
  ``nr.close_connections()``. The parent's ``host.connections`` shows each of them (a
  stand-in that closes it in its worker), so ``"netmiko" in host.connections``,
  ``host.close_connection()``, ``nr.close_connections()`` and ``with nr:`` work as with
  nornir's runners; once no worker holds a connection, the workers stop. So do
  :meth:`ProcessPoolRunner.close` (and the end of ``with ProcessPoolRunner() as runner:``),
  garbage collection of the runner, and interpreter exit. A worker that died between runs
  took its connections along: its hosts connect again. With ``keep_workers=False`` workers
  are stopped after every run. A run from another thread while one uses the kept workers
  gets workers of its own, stopped as it ends (:mod:`~nornir_bench.runners._keeper`).
- Plugins registered at run time in the parent (``ConnectionPluginRegister.register(...)`` and
  the other registers) are registered in the workers with every run.
- Ctrl-C stops sending hosts and lets the hosts in flight finish, as the other runners do; a
  second Ctrl-C kills the workers at once. Workers are stopped on error and on Ctrl-C.
"""


from __future__ import annotations

import functools
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from nornir.core.task import AggregatedResult, Task

from nornir_bench.core.checks import flag, whole_number
from nornir_bench.core.connections import is_close_connections_task
from nornir_bench.core.loops import resolve_loop
from nornir_bench.core.policies.options import Policed, RunPolicy
from nornir_bench.core.runner_traits import Placement
from nornir_bench.runners._core.lifecycle import Lifecycle
from nornir_bench.runners._core.limiter import per_worker_elsewhere
from nornir_bench.runners._core.results import placeholders
from nornir_bench.runners._keeper import Keeper, Keeping
from nornir_bench.runners._remote.options import RemoteOptions, worker_processes
from nornir_bench.runners.processpool.crashes import DEFAULT_CRASH_RERUNS
from nornir_bench.runners.processpool.pool import Pool
from nornir_bench.runners.processpool.sizing import default_chunk_size
from nornir_bench.runners.processpool.workers import WorkerSet

if TYPE_CHECKING:
    from nornir.core.inventory import Host

__all__ = ["ProcessPoolRunner"]


class ProcessPoolRunner(Policed, Keeping):
    """Runs the task over the hosts in worker processes, each running many hosts at once.

    Args:
        num_workers: hosts in flight at once in each worker process (>= 1); kept as an
            attribute, as other nornir tools read it.
        num_procs: worker processes (>= 1); default the machine's CPU count. More than
            ``MAX_PROCS_PER_CPU`` (:mod:`~nornir_bench.runners._remote.options`) per CPU is
            capped, with a warning; a run starts no more than its hosts can keep busy.
        chunk_size: hosts sent to a worker in one message; default chosen from ``num_workers``.
        crash_reruns: how many times a host in flight on a worker that another host crashed
            runs again on a fresh worker (>= 0; default 1; 0 for tasks that must never run
            twice on a device). See :mod:`~nornir_bench.runners.processpool.crashes` for the rule.
        loop: each worker's event loop: ``"auto"`` (uvloop when installed, else asyncio),
            ``"asyncio"`` or ``"uvloop"``, as the asyncio runner's.
        keep_workers: keep the worker processes, and the connections hosts opened in them,
            from one run to the next (default true, as nornir keeps connections); false: start
            workers for each run and stop them, connections closed, when it ends.
        **policy: the run policies (``task_timeout``, ``retries``, ``max_failures`` ...), the
            same on every runner: see :class:`~nornir_bench.core.policies.options.RunPolicy`.
            Which host starts when is decided here, in the parent; each host's attempts and
            retries run in its worker.

    Raises:
        ValueError: for a bad option value, saying what is allowed.
    """

    prefers_async_tasks = True
    runs_elsewhere = True  # traits: core/runner_traits.py
    stops_on_ctrl_c = True  # no host starts after Ctrl-C; RunInterrupted keeps what finished

    def __init__(
        self,
        num_workers: int = 100,
        *,
        num_procs: int | None = None,
        chunk_size: int | None = None,
        crash_reruns: int = DEFAULT_CRASH_RERUNS,
        loop: str = "auto",
        keep_workers: bool = True,
        **policy: Any,
    ) -> None:
        self.num_workers = whole_number("processpool runner: num_workers", num_workers, minimum=1)
        self.num_procs = worker_processes("processpool runner", num_procs)
        self.policy = RunPolicy.build("processpool runner", policy)
        self.chunk_size = (
            default_chunk_size(self.num_workers)
            if chunk_size is None
            else whole_number("processpool runner: chunk_size", chunk_size, minimum=1)
        )
        self.crash_reruns = whole_number(
            "processpool runner: crash_reruns", crash_reruns, minimum=0
        )
        self.loop = loop
        self.loop_implementation = resolve_loop(loop, what="processpool runner")
        self.keep_workers = flag("processpool runner: keep_workers", keep_workers)
        self._procs = WorkerSet()  # the kept workers (a run from another thread: its own)
        self._keeper = Keeper(self, self._procs, WorkerSet)
        self._procs.idle = self._keeper.idle  # between runs, closing waits for the replies

    def run(self, task: Task, hosts: list[Host]) -> AggregatedResult:
        """Run ``task`` on ``hosts`` in the worker processes (the lifecycle, Ctrl-C included:
        :mod:`~nornir_bench.runners._core.lifecycle`; a second Ctrl-C kills the workers).

        Raises:
            ValueError: when the task or its arguments cannot be sent to another process.
            RunInterrupted: on Ctrl-C, holding every host that had finished.
        """
        if not hosts or is_close_connections_task(task.task):
            return self._close_connections(task, hosts, placeholders(task, hosts))
        # Each worker's hosts fit its open files (it raises its own soft limit)
        options = replace(self._options, num_workers=per_worker_elsewhere(
            self.num_workers, task.task, what="processpool runner"))
        keeper = self._keeper
        procs, _ = keeper.take()  # another thread's run has the kept ones: workers of its own
        try:
            procs.ensure_fork_server()  # a fresh interpreter starts while the run is pickled
            run = Lifecycle(task, hosts, self.policy, planned=True)
            pool = Pool(options, run, procs, keep_workers=self.keep_workers,
                        give_back=functools.partial(keeper.give_back, procs))
        except BaseException:
            keeper.give_back(procs, keep=False)
            raise
        return run.drive(pool)

    def _close_connections(
        self, task: Task, hosts: list[Host], result: AggregatedResult
    ) -> AggregatedResult:
        """``nr.close_connections()``, as on every runner whose hosts run elsewhere; then the
        workers, holding none any more, stop. (A run of no host does nothing else.)"""
        if not hosts:
            return result
        self._procs.held.close_connections_task(task, hosts, result)
        with self._keeper.idle() as procs:  # else a run uses them: it gives them back
            if procs is not None and not procs.held.holders:
                procs.close()
        return result

    @property
    def _options(self) -> RemoteOptions:
        return RemoteOptions(
            num_workers=self.num_workers,
            num_procs=self.num_procs,
            chunk_size=self.chunk_size,
            crash_reruns=self.crash_reruns,
            loop=self.loop_implementation,
            policy=self.policy,
        )

    def placement(self) -> Placement:
        """``num_procs`` worker processes on this machine."""
        return Placement.worker_processes(self.num_procs)

    @property
    def worker_pids(self) -> list[int]:
        """The process ids of the worker processes running now (kept between runs)."""
        return [worker.pid for worker in self._procs.workers]

    def close(self) -> None:
        """Stop the worker processes kept between runs, closing the connections they hold.

        ``nr.close_connections()`` does it too, and so do the end of ``with runner:``, garbage
        collection of the runner and the interpreter's exit. While a run uses the workers,
        they stop as that run ends.
        """
        self._keeper.close()

    def __repr__(self) -> str:
        return (
            f"ProcessPoolRunner(num_workers={self.num_workers}, num_procs={self.num_procs}, "
            f"chunk_size={self.chunk_size}, crash_reruns={self.crash_reruns}, "
            f"loop={self.loop!r}, keep_workers={self.keep_workers}{self._policy_repr()})"
        )
