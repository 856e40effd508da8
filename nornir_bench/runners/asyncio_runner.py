"""``asyncio``: one event loop, one coroutine per host in flight.

The "how many threads" study found nornir needing about 1 s for 10,000 hosts at 50 ms where Go
coroutines need 0.11 s: a thread per host in flight is what costs. Here a host in flight is a
coroutine, so 10,000 of them cost little more than one round trip.

- ``async def`` tasks run natively on the loop; blocking tasks (netmiko, anything sync) run in a
  bounded thread pool, so they still work and still run concurrently.
- Every host goes through the shared core (``arun_host``): processor hooks, ``Result``
  wrapping, failed hosts, ``raise_on_error``, ``on_good``/``on_failed`` and dry run as in nornir.
- Scheduling is ``min(num_workers, hosts)`` worker coroutines draining a deque of hosts (no
  semaphore, no task per host beyond that); each writes its host's result as it finishes.
- Connections live from one run to the next, as in nornir, until ``nr.close_connections()``:
  the loop that opened async ones (asyncssh sessions) is kept by the runner while some host
  holds one, and closed with them by ``nr.close_connections()``, :meth:`AsyncioRunner.close`
  or at interpreter exit (see :mod:`~nornir_bench.runners._kept_loop`).
- ``nr.run(...)`` runs that loop in the calling thread; code that already runs a loop (a
  Jupyter cell, an async application) awaits :func:`arun` instead, whose connections live on
  the caller's loop and are closed when it returns.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from nornir.core.task import Task

from nornir_bench.core.checks import whole_number
from nornir_bench.core.execution import arun_host, run_task
from nornir_bench.core.loops import LOOPS, resolve_loop
from nornir_bench.core.policies.hosts import HostRun, arun_policed
from nornir_bench.core.policies.options import Policed, RunPolicy
from nornir_bench.core.policies.plan import HostPlan
from nornir_bench.core.policies.waiting import AsyncPlan
from nornir_bench.core.session import AsyncRunSession
from nornir_bench.runners._kept_loop import LoopKeeper
from nornir_bench.runners._queue import HostQueue
from nornir_bench.runners._results import fill_not_run, interrupted, placeholders

if TYPE_CHECKING:
    from nornir.core import Nornir
    from nornir.core.inventory import Host
    from nornir.core.task import AggregatedResult

__all__ = ["LOOPS", "AsyncioRunner", "arun"]


logger = logging.getLogger(__name__)


class AsyncioRunner(Policed):
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
        self._loops = LoopKeeper(self, self.loop_implementation, _close)

    def run(self, task: Task, hosts: list[Host]) -> AggregatedResult:
        """Run ``task`` on ``hosts`` in a new event loop (what ``nr.run`` calls).

        Raises:
            RuntimeError: when called from a thread whose event loop is running: await
                :func:`arun` there instead (nesting loops would deadlock or crash).
            RunInterrupted: on Ctrl-C; in-flight hosts are cancelled, and the exception's
                ``result`` holds every host that had finished. Blocking calls already running
                in the thread pool are waited for, unless Ctrl-C is pressed again: then it is
                raised at once, ``abandoned`` set.
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise RuntimeError(
                "asyncio runner: nr.run() was called inside a running event loop (async code or "
                "a Jupyter cell); use `await nornir_bench.arun(nr, task, ...)` there instead"
            )
        result = placeholders(task, hosts)
        loop, kept = self._loops.take()
        abandoned = ended = False
        try:
            main = loop.create_task(self._fill(task, hosts, result, keep_connections=kept))
            with _ctrl_c_cancels(main) as ctrl_c:
                try:
                    loop.run_until_complete(main)
                except (asyncio.CancelledError, KeyboardInterrupt) as exc:
                    # Ctrl-C: cancelled by our handler (a KeyboardInterrupt from it is the second
                    # Ctrl-C), or a KeyboardInterrupt raised in the loop where no handler of ours
                    # could be installed; let the cancellation finish.
                    abandoned = isinstance(exc, KeyboardInterrupt) and ctrl_c.presses > 1
                    abandoned = _end_cancelled(loop, main, wait=not abandoned)
                    raise interrupted(result, abandoned=abandoned) from None
            ended = True
        finally:
            if not kept:  # a loop of its own: the run's session closed its connections
                _close(loop, wait_for_threads=not abandoned)
            elif ended:
                self._loops.give_back(loop, hosts)  # kept while its connections live
            else:  # Ctrl-C, an error: close what the loop holds, and the loop
                self._loops.discard(loop, hosts, wait=not abandoned)
        return result

    def close(self) -> None:
        """Close the async connections kept from earlier runs, and their event loop.

        ``nr.close_connections()`` does it too (and closes blocking connections as well), and
        so does the interpreter at exit.
        """
        self._loops.close()

    async def arun_hosts(self, task: Task, hosts: list[Host]) -> AggregatedResult:
        """Run ``task`` on ``hosts`` in the running event loop: ``run`` for async callers.

        Cancelling it cancels the hosts in flight and propagates ``CancelledError``.
        """
        result = placeholders(task, hosts)
        await self._fill(task, hosts, result, keep_connections=False)
        return result

    async def _fill(
        self, task: Task, hosts: list[Host], result: AggregatedResult, *, keep_connections: bool
    ) -> None:
        """Run every host, writing each host's ``MultiResult`` into ``result`` as it finishes;
        the hosts' async connections are closed at the end unless ``keep_connections``."""
        policy = self.policy
        plan = HostPlan(hosts, policy) if policy.schedules else None
        loop = asyncio.get_running_loop()
        all_done = loop.create_future()
        running = min(self.num_workers, len(hosts))
        session = AsyncRunSession(
            task.task,
            hosts,
            max_threads=min(self.max_threads, len(hosts) or 1),
            close_async=not keep_connections,
        )

        deadline = None if plan is None else plan.deadline
        per_host = policy.per_host
        pending = HostQueue(hosts)

        async def hosts_in_order() -> None:  # no policy decides when a host starts
            offload = session.offload  # the hot path: no call between the loop and the core
            if not per_host:
                for host in pending:
                    result[host.name] = await arun_host(task, host, offload=offload)
                return
            for host in pending:
                run = HostRun(task, host, policy, run_deadline=deadline)
                result[host.name] = await arun_policed(run, offload)

        async def hosts_planned(planned: AsyncPlan) -> None:
            offload = session.offload
            while True:
                host = planned.take()  # without a coroutine, when one may start now
                if host is None and (host := await planned.next()) is None:
                    return
                if per_host:
                    run = HostRun(task, host, policy, run_deadline=deadline)
                    multi = result[host.name] = await arun_policed(run, offload)
                else:
                    multi = result[host.name] = await arun_host(task, host, offload=offload)
                planned.finished(host, multi.failed)

        async def work() -> None:
            nonlocal running
            try:
                await (hosts_in_order() if plan is None else hosts_planned(planned))
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # not a task error (the core captures those): fail the run
                if not all_done.done():
                    all_done.set_exception(exc)
                raise
            finally:
                # A count instead of gather: no done-callback per worker on the hot path.
                running -= 1
                if running == 0 and not all_done.done():
                    all_done.set_result(None)

        if plan is not None:
            planned = AsyncPlan(plan)
        async with session:
            workers = [loop.create_task(work()) for _ in range(running)]
            try:
                if workers:
                    await all_done
            except BaseException:  # cancelled (Ctrl-C), or a task raised SystemExit & co.
                for worker in workers:
                    worker.cancel()
                await asyncio.gather(*workers, return_exceptions=True)
                raise
        if plan is not None:
            fill_not_run(task, plan, result)

    def __repr__(self) -> str:
        return (
            f"AsyncioRunner(num_workers={self.num_workers}, loop={self.loop!r}, "
            f"max_threads={self.max_threads}{self._policy_repr()})"
        )


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
        task, nr, dry_run=nr.data.dry_run, processors=nr.processors, name=name, **kwargs
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


def _end_cancelled(loop: asyncio.AbstractEventLoop, main: asyncio.Task[None], *, wait: bool) -> bool:
    """Cancel ``main`` and run it to its end; whether its wait for blocking calls in threads
    was given up (``wait`` false, or a Ctrl-C during it).

    Once cancelled, ``main`` still waits for blocking calls running in the thread pool (they
    cannot be stopped); cancelling it again cuts that wait short.
    """
    for attempt in range(2):
        if main.done():
            return attempt > 0 or not wait
        main.cancel()
        try:
            with _suppress_cancel():
                loop.run_until_complete(main)
            return attempt > 0 or not wait
        except KeyboardInterrupt:  # Ctrl-C again while waiting: cancel the wait itself
            wait = False
    return True


class _CtrlC:
    """How many times Ctrl-C was pressed during a run."""

    presses = 0


@contextmanager
def _ctrl_c_cancels(main: asyncio.Task[None]) -> Iterator[_CtrlC]:
    """While the loop runs, Ctrl-C cancels ``main`` rather than raising mid-host.

    A ``KeyboardInterrupt`` raised wherever the loop happens to be could cut a host's processor
    hooks or result in half; cancelling instead stops every host at an ``await``. A second
    Ctrl-C raises at once, for a run that will not stop. Only in the main thread, and only if
    the user has not installed a SIGINT handler of their own.
    """
    ctrl_c = _CtrlC()
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield ctrl_c
        return
    loop = main.get_loop()

    def on_ctrl_c(signum: int, frame: object) -> None:
        ctrl_c.presses += 1
        if ctrl_c.presses > 1:
            raise KeyboardInterrupt
        loop.call_soon_threadsafe(main.cancel)

    signal.signal(signal.SIGINT, on_ctrl_c)
    try:
        yield ctrl_c
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@contextmanager
def _suppress_cancel() -> Iterator[None]:
    try:
        yield
    except asyncio.CancelledError:
        pass


def _close(loop: asyncio.AbstractEventLoop, *, wait_for_threads: bool = True) -> None:
    """Close ``loop`` as ``asyncio.run`` does: no task, async generator or thread left behind.

    Without ``wait_for_threads`` (a run abandoned by a second Ctrl-C), the default executor is
    not waited for: a thread of it may be waiting for a blocking call that never returns.
    """
    try:
        leftover = asyncio.all_tasks(loop)
        for task in leftover:
            task.cancel()
        if leftover:
            gathered: Coroutine[Any, Any, Any] = _gather_quietly(leftover)
            loop.run_until_complete(gathered)
        loop.run_until_complete(loop.shutdown_asyncgens())
        if wait_for_threads:
            loop.run_until_complete(loop.shutdown_default_executor())
    finally:
        asyncio.set_event_loop(None)
        loop.close()


async def _gather_quietly(tasks: set[asyncio.Task[Any]]) -> None:
    await asyncio.gather(*tasks, return_exceptions=True)
