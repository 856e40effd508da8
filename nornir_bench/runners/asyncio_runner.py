"""``asyncio``: one event loop, one coroutine per host in flight.

The "how many threads" study found nornir needing about 1 s for 10,000 hosts at 50 ms where Go
coroutines need 0.11 s: a thread per host in flight is what costs. Here a host in flight is a
coroutine, so 10,000 of them cost little more than one round trip.

- ``async def`` tasks run natively on the loop; blocking tasks (netmiko, anything sync) run in a
  bounded thread pool, so they still work and still run concurrently.
- Every host goes through the shared core (``arun_one``): processor hooks, ``Result``
  wrapping, failed hosts, ``raise_on_error``, ``on_good``/``on_failed`` and dry run as in nornir.
- Scheduling is ``min(num_workers, hosts)`` worker coroutines draining a deque of hosts (no
  semaphore, no task per host beyond that); each writes its host's result as it finishes.
- Connections live from one run to the next, as in nornir, until ``nr.close_connections()``:
  the loop that opened async ones (asyncssh sessions) is kept by the runner while some host
  holds one, and closed with them by ``nr.close_connections()``, :meth:`AsyncioRunner.close`
  (``with AsyncioRunner() as runner:`` too) or at interpreter exit (see
  :mod:`~nornir_bench.runners._kept_loop`, and :mod:`~nornir_bench.runners._keeper` for two
  threads running at once).
- ``nr.run(...)`` runs that loop in the calling thread; code that already runs a loop (a
  Jupyter cell, an async application) awaits :func:`arun` instead, whose connections live on
  the caller's loop and are closed when it returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from nornir.core.task import Task

from nornir_bench.core.checks import whole_number
from nornir_bench.core.execution import run_task
from nornir_bench.core.loops import LOOPS, resolve_loop
from nornir_bench.core.one_host import arun_one
from nornir_bench.core.policies.options import Policed, RunPolicy
from nornir_bench.core.runner_traits import IN_PROCESS, Placement
from nornir_bench.core.session import AsyncRunSession
from nornir_bench.runners._core.async_scheduler import AsyncScheduler
from nornir_bench.runners._core.lifecycle import Lifecycle, Transport
from nornir_bench.runners._core.limiter import InFlight, in_flight_here
from nornir_bench.runners._core.queue import HostQueue
from nornir_bench.runners._core.scheduler import Scheduler
from nornir_bench.runners._keeper import Keeper, Keeping
from nornir_bench.runners._kept_loop import KeptLoop

if TYPE_CHECKING:
    from nornir.core import Nornir
    from nornir.core.inventory import Host
    from nornir.core.task import AggregatedResult

__all__ = ["LOOPS", "AsyncioRunner", "arun"]


logger = logging.getLogger(__name__)

# Workers started before the loop runs their first steps (see _LoopHosts._main).
_START_BATCH = 1000


class AsyncioRunner(Policed, Keeping):
    """Runs the task over the hosts as coroutines on one event loop.

    Args:
        num_workers: the most hosts in flight at once (>= 1). Kept as an attribute because
            other nornir tools read it. The default, 100, keeps a job that opens a connection
            per host well inside the usual limit of 1,024 open files.
        loop: ``"auto"`` (uvloop when installed, else asyncio), ``"asyncio"`` or ``"uvloop"``.
        max_threads: the size of the thread pool for blocking tasks; default ``num_workers``.
        **policy: the run policies (``task_timeout``, ``retries``, ``max_failures`` ...), the
            same on every runner: see :class:`~nornir_bench.core.policies.options.RunPolicy`.
            Past ``task_timeout`` a host's coroutine is cancelled.

    Raises:
        ValueError: for a bad option value, saying what is allowed.
    """

    prefers_async_tasks = True
    stops_on_ctrl_c = True  # no host starts after Ctrl-C; RunInterrupted keeps what finished

    def __init__(
        self,
        num_workers: int = 100,
        *,
        loop: str = "auto",
        max_threads: int | None = None,
        **policy: Any,
    ) -> None:
        self.num_workers = whole_number("asyncio runner: num_workers", num_workers, minimum=1)
        self.loop = loop
        self.loop_implementation = resolve_loop(loop, what="asyncio runner")
        self.policy = RunPolicy.build("asyncio runner", policy)
        self.max_threads = (
            num_workers
            if max_threads is None
            else whole_number("asyncio runner: max_threads", max_threads, minimum=1)
        )
        kept_loop = functools.partial(KeptLoop, self.loop_implementation)
        self._keeper = Keeper(self, kept_loop(), kept_loop)

    def placement(self) -> Placement:
        """Its hosts run in this process (a trait: :mod:`~nornir_bench.core.runner_traits`)."""
        return IN_PROCESS

    def run(self, task: Task, hosts: list[Host]) -> AggregatedResult:
        """Run ``task`` on ``hosts`` in the runner's event loop (what ``nr.run`` calls; the
        lifecycle, Ctrl-C included: :mod:`~nornir_bench.runners._core.lifecycle`).

        Raises:
            RuntimeError: when called from a thread whose event loop is running: await
                :func:`arun` there instead (nesting loops would deadlock or crash).
            RunInterrupted: on Ctrl-C, holding every host that finished; the hosts in flight
                finish first. A second Ctrl-C cancels them and raises it at once, blocking
                calls left in the thread pool not waited for (``abandoned`` set).
        """
        _no_running_loop()
        with in_flight_here(self.num_workers, len(hosts), task.task, what=self._what) as places:
            run = Lifecycle(task, hosts, self.policy.for_task(task.task), in_flight=places.limit)
            kept, own = self._keeper.take()
            try:
                on_loop = _LoopHosts(self, run, places, keep_connections=own)
                transport = _Loop(on_loop, kept, own, self._keeper)
            except BaseException:
                self._keeper.give_back(kept)
                raise
            return run.drive(transport)

    def close(self) -> None:
        """Close the async connections kept from earlier runs, and their event loop.

        ``nr.close_connections()`` does it too (and closes blocking connections as well), and
        so do the end of ``with runner:``, garbage collection of the runner and the
        interpreter's exit. While a run uses the loop, it is closed as that run ends.
        """
        self._keeper.close()

    async def arun_hosts(self, task: Task, hosts: list[Host]) -> AggregatedResult:
        """Run ``task`` on ``hosts`` in the running event loop: ``run`` for async callers.

        Cancelling it cancels the hosts in flight and propagates ``CancelledError``.
        """
        with in_flight_here(self.num_workers, len(hosts), task.task, what=self._what) as places:
            run = Lifecycle(task, hosts, self.policy.for_task(task.task), in_flight=places.limit)
            await _LoopHosts(self, run, places, keep_connections=False).main()
        return run.outcome()

    _what = "asyncio runner"

    def __repr__(self) -> str:
        return (
            f"AsyncioRunner(num_workers={self.num_workers}, loop={self.loop!r}, "
            f"max_threads={self.max_threads}{self._policy_repr()})"
        )


def _no_running_loop() -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise RuntimeError(
        "asyncio runner: nr.run() was called inside a running event loop (async code or "
        "a Jupyter cell); use `await nornir_bench.arun(nr, task, ...)` there instead"
    )


class _Loop(Transport):
    """The run's hosts on its event loop, run from the calling thread; the runner's loop kept
    after the run while hosts hold connections on it (see
    :mod:`~nornir_bench.runners._kept_loop`), a loop of the run's own closed."""

    def __init__(
        self, on_loop: _LoopHosts, kept: KeptLoop, own: bool, keeper: Keeper[KeptLoop]
    ) -> None:
        self.on_loop = on_loop
        self.kept = kept
        self.own = own  # the runner's loop (else a loop of this run's own)
        self.keeper = keeper
        self.loop = kept.open()
        self.main: asyncio.Task[None] | None = None

    def wait(self) -> None:
        if self.main is None:
            self.main = self.loop.create_task(self.on_loop.main())
        self.loop.run_until_complete(self.main)

    def on_halt(self) -> None:
        # Applied on the loop, between two steps of its coroutines: a KeyboardInterrupt raised
        # wherever the loop happens to be could cut a host's hooks or result in half.
        with contextlib.suppress(RuntimeError):  # the loop closed: the run is over
            self.loop.call_soon_threadsafe(self.on_loop.halt)

    def interrupt(self) -> None:
        # Raised between two of the loop's callbacks, as the first press is applied: raised
        # inside one, uvloop takes it for that connection's error (closing the connection)
        # and the wait goes on, as long as a host in flight takes.
        if self.main is None:
            raise KeyboardInterrupt
        try:
            self.loop.call_soon_threadsafe(self._interrupt_wait)
        except RuntimeError:  # the loop closed: the run is over
            pass

    def _interrupt_wait(self) -> None:
        if self.main is not None and not self.main.done():  # else the wait is over already
            raise KeyboardInterrupt

    def abandon(self) -> None:
        """Cancel the hosts in flight, and the wait for blocking calls in threads (which
        cannot be stopped); a further Ctrl-C stops even that."""
        main = self.main
        if main is None or main.done():
            return
        main.cancel()
        try:
            self.loop.run_until_complete(main)
        except (asyncio.CancelledError, KeyboardInterrupt):
            pass

    def close(self, *, ended: bool) -> None:
        run, kept = self.on_loop.run, self.kept
        keep = self.own and ended and kept.holds(run.hosts)  # kept while connections live
        if not keep:
            # After Ctrl-C or an error, the run's hosts' connections are closed on the loop
            # too; a loop of the run's own had its session close them.
            failed = run.hosts if self.own and not ended else ()
            kept.close(hosts=failed, wait=not run.ctrl_c.abandoned)
        self.keeper.give_back(kept, keep=keep)


class _LoopHosts:
    """One run's hosts on the event loop: as many worker coroutines as the run has places,
    taking hosts in order (or as the run's plan allows), each writing its host's result as it
    finishes; the hosts' async connections are closed at the end unless ``keep_connections``.
    """

    def __init__(
        self, runner: AsyncioRunner, run: Lifecycle, places: InFlight, *, keep_connections: bool
    ) -> None:
        self.run = run
        self.count = places.limit
        self.pending = HostQueue(run.hosts if run.plan is None else ())
        self.planned = None if run.plan is None else AsyncScheduler(Scheduler(run, places))
        self.session = AsyncRunSession(
            run.task.task,
            run.hosts,
            max_threads=min(runner.max_threads, len(run.hosts) or 1),
            close_async=not keep_connections,
        )
        self.context = run.context(offload=self.session.offload)
        self.workers: set[asyncio.Task[None]] = set()  # those running: each leaves as it ends

    def halt(self) -> None:
        """On the loop: no host starts any more (those in flight finish)."""
        self.pending.halt()
        if self.planned is not None:
            self.planned.halt()

    async def _hosts_planned(self, planned: AsyncScheduler) -> None:
        """A worker's hosts as the run's scheduler starts them."""
        task, context = self.run.task, self.context
        while True:
            start = planned.take()  # without a coroutine, when one may start now
            if start is None and (start := await planned.next()) is None:
                return
            planned.ended(start, await arun_one(task, start.host, context))

    async def main(self) -> None:
        loop = asyncio.get_running_loop()
        all_done = loop.create_future()
        run, planned, workers = self.run, self.planned, self.workers
        task, result, context = run.task, run.result, self.context
        take, halted = self.pending.take, run.halt
        raised_by_a_task = run.ctrl_c.raised_by_a_task
        running = 1  # the workers, and the loop starting them below

        def ended() -> None:
            nonlocal running
            running -= 1  # a count instead of gather: no done-callback per worker
            if running == 0 and not all_done.done():
                all_done.set_result(None)

        async def work() -> None:
            # One coroutine per worker on the hot path: no generator or coroutine of ours
            # between the loop and the core.
            try:
                if planned is None:
                    while (host := take()) is not None:
                        result[host.name] = await arun_one(task, host, context)
                else:
                    await self._hosts_planned(planned)
            except asyncio.CancelledError:
                raise  # abandoned
            except (SystemExit, KeyboardInterrupt) as exc:
                if not raised_by_a_task(exc):
                    raise  # Ctrl-C: the runner's rule takes it
                run.escape(exc)
                self.halt()  # here already: also where no lifecycle drives (arun)
            except BaseException as exc:  # not a task error (the core captures those): fail the run
                if not all_done.done():
                    all_done.set_exception(exc)
                raise
            finally:
                workers.discard(asyncio.current_task())
                ended()

        async with self.session:
            try:
                # Workers start a batch at a time, the loop running each batch's first steps
                # (and the timers due) before the next: a host that cannot start yet costs
                # its place in the queue, not a task and a coroutine; and a worker done early
                # takes the next host, so no more workers start than the hosts need.
                for started in range(self.count):
                    if halted.is_set() or (planned is None and not self.pending):
                        break
                    running += 1
                    workers.add(loop.create_task(work()))
                    if started % _START_BATCH == _START_BATCH - 1:
                        await asyncio.sleep(0)
                ended()
                await all_done
            except BaseException:  # cancelled (abandoned, arun's caller), or a worker's error
                for worker in workers:
                    worker.cancel()
                await asyncio.gather(*workers, return_exceptions=True)
                raise


async def arun(
    nr: Nornir,
    task: Callable[..., Any],
    *,
    raise_on_error: bool | None = None,
    on_good: bool = True,
    on_failed: bool = False,
    name: str | None = None,
    **kwargs: Any,
) -> AggregatedResult:
    """``nr.run`` for code that already runs an event loop: ``await arun(nr, task, ...)``.

    Takes ``nr.run``'s arguments and does what it does (processor hooks, host selection with
    ``on_good``/``on_failed``, ``raise_on_error`` or recording failed hosts in
    ``nr.data.failed_hosts``), on the running loop. ``nr`` must use the asyncio runner.

    Raises:
        TypeError: when ``nr``'s runner is not the asyncio runner.
        NornirExecutionError: when a host failed and ``raise_on_error`` applies.
    """
    runner = nr.runner
    if not isinstance(runner, AsyncioRunner):
        raise TypeError(
            "arun needs the asyncio runner, got "
            f"{type(runner).__name__}: InitNornir(runner={{'plugin': 'asyncio'}}) or "
            "nr.with_runner(AsyncioRunner())"
        )
    # The steps of nornir's Nornir.run, in its order, with the runner call awaited.
    template = run_task(
        task, nr, global_dry_run=nr.data.dry_run, processors=nr.processors, name=name, **kwargs
    )
    nr.processors.task_started(template)
    failed = nr.data.failed_hosts
    run_on = [h for n, h in nr.inventory.hosts.items() if on_good and n not in failed]
    run_on += [h for n, h in nr.inventory.hosts.items() if on_failed and n in failed]
    if run_on:
        logger.info("Running task %r with args %s on %d hosts", template.name, kwargs, len(run_on))
    else:
        logger.warning("Task %r has not been run – 0 hosts selected", template.name)
    result = await runner.arun_hosts(template, run_on)
    if raise_on_error if raise_on_error is not None else nr.config.core.raise_on_error:
        result.raise_on_error()
    else:
        nr.data.failed_hosts.update(result.failed_hosts.keys())
    nr.processors.task_completed(template, result)
    return result
