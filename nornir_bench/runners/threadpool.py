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
- each host runs through the shared core (``run_one``), run policies included: the plan says
  which host starts when (the run's main thread applies it and hands hosts out, see
  ``_Feed``). What is this runner's own is the deadline of a blocking call: the run's main
  thread watches every call in flight; one past its deadline is given up (its host fails with
  ``TaskTimeout``, or is retried), and a new thread takes over the host and then the slot, so
  ``num_workers`` hosts stay in flight. The stuck thread's late return is dropped; ``run()``
  waits for such threads at most ``ABANDONED_GRACE_SECONDS``.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import TYPE_CHECKING, Any

from nornir_bench.core._switching import fewer_gil_switches
from nornir_bench.core.checks import whole_number
from nornir_bench.core.ctrl_c import ABANDONED_GRACE_SECONDS, POLL_SECONDS, ctrl_c_deferred
from nornir_bench.core.one_host import run_one
from nornir_bench.core.policies.hosts import HostAttempts, run_policed
from nornir_bench.core.policies.options import Policed, RunPolicy
from nornir_bench.core.runner_traits import IN_PROCESS, Placement
from nornir_bench.runners._core.blocking import BlockingCalls
from nornir_bench.runners._core.lifecycle import Lifecycle, Transport
from nornir_bench.runners._core.limiter import InFlight, in_flight_here
from nornir_bench.runners._core.queue import HostQueue

if TYPE_CHECKING:
    from nornir.core.inventory import Host
    from nornir.core.task import AggregatedResult, Task

    from nornir_bench.core.policies.plan import HostPlan

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
    """One run's threads, the hosts waiting for them, and the watch over their deadlines."""

    def __init__(self, run: Lifecycle, places: InFlight) -> None:
        self.run = run
        self.threads = places.limit
        self.pending: HostQueue | _Feed = (
            HostQueue(run.hosts) if run.plan is None else _Feed(run.plan, places)
        )
        self.running = _Running()
        self.started: list[threading.Thread] = []
        policy = run.policy
        self.watch = BlockingCalls() if policy.task_timeout or policy.run_timeout else None
        self.context = run.context(
            attempt=HostAttempts.call if self.watch is None else self.watch.call
        )
        self._begun = False

    def wait(self) -> None:
        """Start the threads (once), then wait until every one has ended; with a plan,
        applying it meanwhile (see _Feed)."""
        if not self._begun:
            self._begun = True
            # Held once for all the starts (not per thread: 1,000 starts would pay for it
            # 1,000 times): interrupted, a start would leave the count of threads wrong.
            with ctrl_c_deferred():
                for i in range(self.threads):
                    if not self.pending:
                        break
                    self.start(self.work, f"threadpool-{i}")
        if isinstance(self.pending, _Feed):
            self.pending.hand_out(self)
        self.running.wait(self)

    def on_halt(self) -> None:
        # The threads take hosts from the queue themselves: emptied now (a deque's clear is
        # atomic), no host starts after the press is taken. A plan is the main thread's own:
        # its wait applies the halt within POLL_SECONDS.
        if isinstance(self.pending, HostQueue):
            self.pending.halt()

    def close(self, *, ended: bool) -> None:
        if self.running.count == 0:  # each thread is past its last host: this takes no time
            self.join()

    def start(self, target: Any, name: str) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        self.running.started()
        try:
            thread.start()
        except BaseException:
            self.running.ended()
            raise
        self.started.append(thread)

    def work(self, taken_over: HostAttempts | None = None) -> None:
        """A thread's life: hosts from ``pending`` until none is left (or, past a deadline,
        another thread has taken its slot)."""
        task, result, context = self.run.task, self.run.result, self.context
        try:
            done: tuple[Host, bool] | None = None
            if taken_over is not None:  # a host whose call passed its deadline: go on
                multi = run_policed(taken_over, taken_over.timed_out(), call=context.attempt)
                if multi is None:
                    return
                result[taken_over.host.name] = multi
                done = (taken_over.host, multi.failed)
            if isinstance(self.pending, HostQueue):
                for host in self.pending:  # the hot path: no call between the loop and the core
                    multi = run_one(task, host, context)
                    if multi is None:  # given up at its deadline: another thread goes on
                        return
                    result[host.name] = multi
            else:
                take = self.pending.next
                while (taken := take(done)) is not None:
                    multi = run_one(task, taken, context)
                    if multi is None:
                        return
                    result[taken.name] = multi
                    done = (taken, multi.failed)
        except BaseException as exc:  # noqa: BLE001 - a task's SystemExit: the run raises it
            self.run.escape(exc)
        self.running.ended()

    def take_over(self) -> None:
        """The main thread: each call past its deadline is given up, and a new thread goes on
        with its host."""
        if self.watch is None:
            return
        for attempts in self.watch.expired():
            self.start(lambda attempts=attempts: self.work(attempts), "threadpool-takeover")
            self.running.ended()  # the thread left in the call no longer counts

    def join(self) -> None:
        """Join the threads; those left in a call past its deadline at most for the grace."""
        abandoned = set() if self.watch is None else self.watch.abandoned
        grace_ends = time.monotonic() + ABANDONED_GRACE_SECONDS
        for thread in self.started:
            if thread in abandoned:
                thread.join(max(0.0, grace_ends - time.monotonic()))
            else:
                thread.join()

class _Feed:
    """The run's plan, applied by the run's main thread: hosts go out to the threads through
    one queue, finished hosts come back through another.

    Threads sharing the plan under a lock queued on it: a thread holding the lock when the
    interpreter switched threads made every other thread wait for it, which cost more than
    the run itself (docs/benchmarks.md, "The costs behind the code's choices"). The queues
    are ``queue.SimpleQueue``, whose lock is held only inside C code; the plan is the main
    thread's alone, and it keeps as many hosts out as there are places.
    """

    def __init__(self, plan: HostPlan, places: InFlight) -> None:
        self.plan = plan
        self.places = places  # taken: hosts handed out and not back yet
        self.ready: queue.SimpleQueue[Host | None] = queue.SimpleQueue()
        self.done: queue.SimpleQueue[tuple[Host, bool]] = queue.SimpleQueue()
        self.halted = False
        self._fill()

    def __bool__(self) -> bool:
        return not self.halted and (self.places.taken > 0 or self.plan.wait_time() is not None)

    def next(self, finished: tuple[Host, bool] | None = None) -> Host | None:
        """A worker thread: report ``finished``, then wait for the next host (``None``: stop)."""
        if finished is not None:
            self.done.put(finished)
        return self.ready.get()

    def halt(self) -> None:
        """No host starts any more (those handed out but not yet taken are not run)."""
        self.halted = True
        self.plan.halt()
        while True:
            try:
                self.ready.get_nowait()
            except queue.Empty:
                break
            self.places.give()

    def hand_out(self, threads: _Threads) -> None:
        """The main thread: hand hosts out and take them back until none is out or will be;
        watch deadlines meanwhile; then let every thread go."""
        watch, plan, places, run = threads.watch, self.plan, self.places, threads.run
        while places.taken > len(run.escaped) or self:  # a thread ended by SystemExit owes one
            if run.halt.is_set() and not self.halted:
                self.halt()
            wait = None if self.halted else plan.wait_time()
            nearest = None if watch is None else watch.next_in()
            timeout = min(
                POLL_SECONDS,
                wait if wait is not None else POLL_SECONDS,
                nearest if nearest is not None else POLL_SECONDS,
            )
            try:
                self._finished(*self.done.get(timeout=timeout))
                while True:
                    self._finished(*self.done.get_nowait())
            except queue.Empty:
                pass
            threads.take_over()
            self._fill()
        for _ in range(threads.running.count):
            self.ready.put(None)

    def _finished(self, host: Host, failed: bool) -> None:
        self.places.give()
        if not self.halted:
            self.plan.finished(self.plan.index[host.name], failed)

    def _fill(self) -> None:
        hosts, take, places = self.plan.hosts, self.plan.take, self.places
        while not self.halted and places.room > 0:
            index = take()
            if index is None:
                return
            places.take()
            self.ready.put(hosts[index])


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
