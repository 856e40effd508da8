"""``threadpool``: nornir's threaded runner rebuilt for low per-host overhead.

nornir's ``ThreadedRunner`` makes a ``ThreadPoolExecutor`` per run, a ``Future`` per host (each
with its own lock and condition), puts every host through a locked ``queue.Queue`` and then
walks the futures a second time to build the result. Following fastthreadpool's reasoning,
this runner does none of that:

- all hosts are known before the run starts, so they go into one ``HostQueue`` (a
  ``collections.deque``); workers ``popleft`` from it (atomic, lock-free under the GIL) and stop
  when it is empty, so there is no queue, no wake-up signalling and no shutdown sentinel;
- each worker stores the host's ``MultiResult`` straight into the ``AggregatedResult`` as it
  finishes; there is no per-host object besides what nornir's results need;
- a thread is started only while hosts are still waiting, so a fast task on few hosts never
  pays for ``num_workers`` thread starts;
- every thread has ended before ``run()`` returns, on success, on error and on Ctrl-C (a
  second Ctrl-C abandons those in flight);
- the garbage collector is tuned for the run (see ``nornir_bench.core._gc``): the pre-run heap is
  frozen and collections come less often, so they do not stall every worker on the GIL;
- each host runs through the shared core (``run_one``), run policies included. With a plan,
  the run's main thread drives the runner core's ``Scheduler`` (which host starts when, the
  blocking calls past their deadline): the threads only run the hosts it starts and report
  their ends. A call past its deadline is given up (its host fails with
  ``TaskTimeout``, or is retried), and a new thread takes over the host and then the slot, so
  ``num_workers`` hosts stay in flight. The stuck thread's late return is dropped; ``run()``
  waits for such threads at most ``ABANDONED_GRACE_SECONDS``.
"""

from __future__ import annotations

import queue
import threading
from typing import TYPE_CHECKING, Any

from nornir_bench.core._switching import fewer_gil_switches
from nornir_bench.core.checks import whole_number
from nornir_bench.core.ctrl_c import POLL_SECONDS, ctrl_c_deferred
from nornir_bench.core.one_host import run_one
from nornir_bench.core.policies.hosts import HostAttempts, run_policed
from nornir_bench.core.policies.options import Policed, RunPolicy
from nornir_bench.core.runner_traits import IN_PROCESS, Placement
from nornir_bench.runners._core.blocking import BlockingCalls, Ended, join_threads, serve_hosts
from nornir_bench.runners._core.lifecycle import Lifecycle, Transport
from nornir_bench.runners._core.limiter import InFlight, in_flight_here
from nornir_bench.runners._core.queue import HostQueue
from nornir_bench.runners._core.scheduler import Scheduler, Start, TakeOver

if TYPE_CHECKING:
    from nornir.core.inventory import Host
    from nornir.core.task import AggregatedResult, Task

__all__ = ["ThreadPoolRunner"]


class ThreadPoolRunner(Policed):
    """Runs the task over the hosts on up to ``num_workers`` threads.

    Same semantics and results as nornir's ``threaded`` runner: the ``AggregatedResult`` holds
    one ``MultiResult`` per host, in the order of ``hosts``.

    Args:
        num_workers: the most threads, and so hosts, at work at once (>= 1; default 20 as in
            nornir). Kept as an attribute because other nornir tools read it.
        **policy: the run policies (``task_timeout``, ``retries``, ``max_failures`` ...), the
            same on every runner: see :class:`~nornir_bench.core.policies.options.RunPolicy`.

    Raises:
        ValueError: for a bad option value, saying what is allowed.
    """

    stops_on_ctrl_c = True  # no host starts after Ctrl-C; RunInterrupted keeps what finished

    def __init__(self, num_workers: int = 20, **policy: Any) -> None:
        self.num_workers = whole_number("threadpool runner: num_workers", num_workers, minimum=1)
        self.policy = RunPolicy.build("threadpool runner", policy)

    def placement(self) -> Placement:
        """Its hosts run in this process (a trait: :mod:`~nornir_bench.core.runner_traits`)."""
        return IN_PROCESS

    def run(self, task: Task, hosts: list[Host]) -> AggregatedResult:
        """Run ``task`` on every host in ``hosts`` (the lifecycle, Ctrl-C included:
        :mod:`~nornir_bench.runners._core.lifecycle`).

        Raises:
            RunInterrupted: on Ctrl-C, holding every finished host. A second Ctrl-C raises it
                at once, ``abandoned`` set (the threads are daemons: they do not keep the
                process alive).
            BaseException: a task's ``SystemExit`` or similar, once every thread has stopped.
        """
        what = "threadpool runner"
        with in_flight_here(self.num_workers, len(hosts), task.task, what=what) as places:
            policy = self.policy.for_task(task.task)
            run = Lifecycle(task, hosts, policy, in_flight=places.limit)
            return run.drive(_Threads(run, places), fewer_gil_switches(places.limit))

    def __repr__(self) -> str:
        return f"ThreadPoolRunner(num_workers={self.num_workers}{self._policy_repr()})"


class _Threads(Transport):
    """One run's threads. Without a plan nothing is decided per host: the threads take the
    hosts in order themselves (a ``HostQueue``), and the run's main thread only hands each
    call past its deadline (the ``Scheduler``'s ``TakeOver``) to a new thread. With a plan the
    main thread drives the run's :class:`~nornir_bench.runners._core.scheduler.Scheduler`: a
    host to start goes to a new thread while fewer than the places have started, else to a
    free one through a queue; each end comes back through another. (Threads sharing the plan
    under a lock queued on it: docs/benchmarks.md, "The costs behind the code's choices".)"""

    def __init__(self, run: Lifecycle, places: InFlight) -> None:
        self.run = run
        self.threads = places.limit
        policy = run.policy
        self.watch = BlockingCalls() if policy.task_timeout or policy.run_timeout else None
        self.context = run.context(
            attempt=HostAttempts.call if self.watch is None else self.watch.call
        )
        self.scheduler = Scheduler(run, places, self.watch)
        self.pending = HostQueue(run.hosts if run.plan is None else ())
        self.ready: queue.SimpleQueue[Start | None] = queue.SimpleQueue()
        self.ends: queue.SimpleQueue[Ended] = queue.SimpleQueue()
        self.running = _Running()
        self.started: list[threading.Thread] = []
        self._begun = False

    def wait(self) -> None:
        """Drive the scheduler until the run is over; or, without a plan, start the threads
        (once) and wait until every one has ended, taking over the calls past their deadline."""
        if self.run.plan is not None:
            self.scheduler.drive(self._start, self.ends)
            return
        if not self._begun:
            self._begun = True
            # Held once for all the starts (not per thread: 1,000 starts would pay for it
            # 1,000 times): interrupted, a start would leave the count of threads wrong.
            with ctrl_c_deferred():
                for i in range(self.threads):
                    if not self.pending:
                        break
                    self.start(self.work, f"threadpool-{i}")
        self.running.wait(self)

    def take_over(self) -> None:
        """Without a plan, the main thread: each call past its deadline goes on in a new
        thread, which then takes hosts from the queue (the stuck one no longer counts)."""
        for action in self.scheduler.expired():
            self.start(lambda action=action: self.work(action), "threadpool-takeover")
            self.running.ended()

    def _start(self, action: Start | TakeOver) -> None:
        """A host the scheduler starts (to a free thread, or a new one while fewer than the
        places have started), or takes over (a new thread: the old one is left in its call)."""
        if isinstance(action, Start) and len(self.started) >= self.threads:
            self.ready.put(action)
            return
        name = f"threadpool-{len(self.started)}" if isinstance(action, Start) else "takeover"
        args = (action, self.run, self.context, self.ready.get, self.ends.put)
        thread = threading.Thread(target=serve_hosts, args=args, name=name, daemon=True)
        thread.start()
        self.started.append(thread)

    def on_halt(self) -> None:
        # The threads take hosts from the queue themselves: emptied now (a deque's clear is
        # atomic), no host starts after the press is taken. A scheduler applies it itself.
        self.pending.halt()

    def close(self, *, ended: bool) -> None:
        if self.run.plan is not None:
            for _ in self.started:
                self.ready.put(None)
            if not self.run.ctrl_c.abandoned:
                join_threads(self.started, self.watch)
        elif self.running.count == 0:  # each thread is past its last host: this takes no time
            join_threads(self.started, self.watch)

    def start(self, target: Any, name: str) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        self.running.started()
        try:
            thread.start()
        except BaseException:
            self.running.ended()
            raise
        self.started.append(thread)

    def work(self, taken_over: TakeOver | None = None) -> None:
        """A thread's life without a plan: hosts from ``pending`` until none is left (or, past
        a deadline, another thread has taken its place)."""
        task, result, context = self.run.task, self.run.result, self.context
        try:
            if taken_over is not None:  # a host whose call passed its deadline: go on
                attempts = taken_over.attempts
                multi = run_policed(attempts, attempts.timed_out(), call=context.attempt)
                if multi is None:
                    return
                result[attempts.host.name] = multi
            for host in self.pending:  # the hot path: no call between the loop and the core
                multi = run_one(task, host, context)
                if multi is None:  # given up at its deadline: another thread goes on
                    return
                result[host.name] = multi
        except BaseException as exc:  # noqa: BLE001 - a task's SystemExit: the run raises it
            self.run.escape(exc)
        self.running.ended()


class _Running:
    """How many of a run's threads are still at work, and a way to wait until none is.

    The run waits on this, not on ``Thread.join``: a Ctrl-C that interrupts ``join`` can leave
    CPython (3.10-3.12, gh-90882) taking a thread that is still running a host for ended, and
    that host would then be missing from the result.
    """

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()
        self._none_left = threading.Event()
        self._none_left.set()

    def started(self) -> None:
        with self._lock:
            self.count += 1
            self._none_left.clear()

    def ended(self) -> None:
        with self._lock:
            self.count -= 1
            if self.count == 0:
                self._none_left.set()

    def wait(self, threads: _Threads) -> None:
        """Return once every thread has ended; meanwhile hand each call past its deadline to
        a new thread, and apply the run's halt to the hosts waiting."""
        watch, halt = threads.watch, threads.run.halt
        while True:
            nearest = None if watch is None else watch.next_in()
            poll = POLL_SECONDS if nearest is None else min(POLL_SECONDS, nearest)
            if self._none_left.wait(poll):
                return
            if halt.is_set():
                threads.pending.halt()
            threads.take_over()
