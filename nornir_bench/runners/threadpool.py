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

from nornir_bench.core._gc import tuned_for_run
from nornir_bench.core._switching import fewer_gil_switches
from nornir_bench.core.checks import whole_number
from nornir_bench.core.one_host import RunContext, run_one
from nornir_bench.core.open_files import descriptors_of, open_files_for
from nornir_bench.core.policies.hosts import HostAttempts, Outcome, run_policed
from nornir_bench.core.policies.options import Policed, RunPolicy
from nornir_bench.core.policies.plan import HostPlan
from nornir_bench.core.stopping import (
    ABANDONED_GRACE_SECONDS,
    POLL_SECONDS,
    CtrlC,
    Halt,
    ctrl_c_deferred,
)
from nornir_bench.runners._queue import HostQueue
from nornir_bench.runners._results import fill_not_run, placeholders, raise_if_stopped

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

    def run(self, task: Task, hosts: list[Host]) -> AggregatedResult:
        """Run ``task`` on every host in ``hosts``.

        Raises:
            RunInterrupted: on Ctrl-C; in-flight hosts finish, the rest do not start, and the
                exception's ``result`` holds every finished host. A second Ctrl-C raises it at
                once, ``abandoned`` set, without waiting for the hosts in flight (their threads
                are daemons: they do not keep the process alive).
            BaseException: a ``SystemExit`` or similar raised by a task is re-raised once every
                thread has stopped, as nornir's runner re-raises it.
        """
        in_flight = min(self.num_workers, len(hosts))
        with open_files_for(
            in_flight, descriptors_of(task.task), what="threadpool runner"
        ) as fits:  # the open files the threads' hosts need (fewer threads if they cannot)
            policy = self.policy.for_task(task.task)
            return self._run(_ThreadHosts(task, hosts, policy, min(in_flight, fits)))

    def _run(self, run: _ThreadHosts) -> AggregatedResult:
        task = run.task
        ctrl_c = CtrlC(run.halt.set)
        try:
            with tuned_for_run(), fewer_gil_switches(run.threads), ctrl_c.handled():
                # Held once for all the starts (not per thread: 1,000 starts would pay for it
                # 1,000 times): interrupted, a start would leave the count of threads wrong.
                with ctrl_c_deferred():
                    for i in range(run.threads):
                        if not run.pending:
                            break
                        run.start(run.work, f"threadpool-{i}")
                ctrl_c.wait(run.wait)
        finally:
            if run.running.count == 0:  # each thread is past its last host: this takes no time
                run.join()
        raise_if_stopped(ctrl_c, run.result, run.escaped)
        if run.plan is not None:
            fill_not_run(task, run.plan, run.result)
        return run.result

    def __repr__(self) -> str:
        return f"ThreadPoolRunner(num_workers={self.num_workers}{self._policy_repr()})"


class _ThreadHosts:
    """One run's threads, its hosts waiting, its result, and its watch over deadlines."""

    def __init__(self, task: Task, hosts: list[Host], policy: RunPolicy, threads: int) -> None:
        self.task = task
        self.threads = threads
        self.result = placeholders(task, hosts)
        self.plan = HostPlan.for_run(hosts, policy, in_flight=threads)
        self.pending: HostQueue | _Feed = (
            HostQueue(hosts) if self.plan is None else _Feed(self.plan, threads)
        )
        self.escaped: list[BaseException] = []
        self.running = _Running()
        self.started: list[threading.Thread] = []
        self.halt = Halt()  # set by Ctrl-C; the main thread's wait applies it
        self.watch = _Deadlines() if policy.task_timeout or policy.run_timeout else None
        self.context = RunContext(
            policy,
            deadline=None if self.plan is None else self.plan.deadline,
            halt=self.halt,
            attempt=HostAttempts.call if self.watch is None else self.watch.call,
        )

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
        task, result, context = self.task, self.result, self.context
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
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            self.escaped.append(exc)
        self.running.ended()

    def _take_over(self, attempts: HostAttempts) -> None:
        """The main thread, for a call past its deadline: a new thread goes on with its host."""
        self.start(lambda: self.work(attempts), "threadpool-takeover")
        self.running.ended()  # the thread left in the call no longer counts

    def wait(self) -> None:
        """Until every thread has ended; with a plan, applying it meanwhile (see _Feed)."""
        if isinstance(self.pending, _Feed):
            self.pending.run(self)
        self.running.wait(self)

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
    thread's alone, and it keeps as many hosts out as there are threads.
    """

    def __init__(self, plan: HostPlan, threads: int) -> None:
        self.plan = plan
        self.threads = threads
        self.ready: queue.SimpleQueue[Host | None] = queue.SimpleQueue()
        self.done: queue.SimpleQueue[tuple[Host, bool]] = queue.SimpleQueue()
        self.out = 0  # hosts handed out and not back yet
        self.halted = False
        self._fill()

    def __bool__(self) -> bool:
        return not self.halted and (self.out > 0 or self.plan.wait_time() is not None)

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
            self.out -= 1

    def run(self, run: _ThreadHosts) -> None:
        """The main thread: hand hosts out and take them back until none is out or will be;
        watch deadlines meanwhile; then let every thread go."""
        watch, plan = run.watch, self.plan
        while self.out > len(run.escaped) or self:  # a thread ended by SystemExit owes one
            if (run.escaped or run.halt.is_set()) and not self.halted:
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
            if watch is not None:
                for expired in watch.expired():
                    run._take_over(expired)
            self._fill()
        for _ in range(run.running.count):
            self.ready.put(None)

    def _finished(self, host: Host, failed: bool) -> None:
        self.out -= 1
        if not self.halted:
            self.plan.finished(self.plan.index[host.name], failed)

    def _fill(self) -> None:
        hosts, take = self.plan.hosts, self.plan.take
        while not self.halted and self.out < self.threads:
            index = take()
            if index is None:
                return
            self.out += 1
            self.ready.put(hosts[index])


class _Deadlines:
    """The blocking calls in flight that have a deadline, watched from the run's main thread.

    A worker thread makes each attempt through :meth:`call`; the main thread calls
    :meth:`expired` as it waits. Whichever comes first owns the attempt: the call's return, or
    the deadline (the call is then abandoned: its thread ends when it returns, and its return
    value is dropped).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: dict[int, tuple[float, HostAttempts, threading.Thread]] = {}
        self.abandoned: set[threading.Thread] = set()  # threads left in such a call

    def call(self, attempts: HostAttempts) -> Outcome | None:
        deadline = attempts.deadline()
        if deadline is None:
            return attempts.call()
        key = id(attempts)
        with self._lock:
            self._calls[key] = (deadline, attempts, threading.current_thread())
        outcome = attempts.call()
        with self._lock:
            if self._calls.pop(key, None) is None:  # the deadline won: drop this return
                return None
        return outcome

    def next_in(self) -> float | None:
        """Seconds to the nearest deadline, if any call has one."""
        with self._lock:
            if not self._calls:
                return None
            return max(0.0, min(call[0] for call in self._calls.values()) - time.monotonic())

    def expired(self) -> list[HostAttempts]:
        """The calls past their deadline, now given up (their threads no longer own them)."""
        now = time.monotonic()
        with self._lock:
            due = [key for key, call in self._calls.items() if call[0] <= now]
            late = [self._calls.pop(key) for key in due]
        self.abandoned.update(thread for _, _, thread in late)
        return [run for _, run, _ in late]


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

    def wait(self, run: _ThreadHosts) -> None:
        """Return once every thread has ended; meanwhile hand each call past its deadline to
        a new thread, and apply the run's halt to the hosts waiting."""
        watch, halt = run.watch, run.halt
        while True:
            nearest = None if watch is None else watch.next_in()
            poll = POLL_SECONDS if nearest is None else min(POLL_SECONDS, nearest)
            if self._none_left.wait(poll):
                return
            if halt.is_set():
                run.pending.halt()
            if watch is not None:
                for expired in watch.expired():
                    run._take_over(expired)
