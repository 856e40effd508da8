"""A runner from the runner core alone: plain threads fed through an in-process queue, its
transport all it has. It passes the conformance and policy suites (``queue-threads``)."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from functools import partial
from typing import Any

from nornir.core.inventory import Host
from nornir.core.task import AggregatedResult, MultiResult, Task

from nornir_bench.core.checks import whole_number
from nornir_bench.core.ctrl_c import ABANDONED_GRACE_SECONDS, POLL_SECONDS
from nornir_bench.core.one_host import run_one
from nornir_bench.core.policies.hosts import run_policed
from nornir_bench.core.policies.options import Policed, RunPolicy
from nornir_bench.runners._core.blocking import BlockingCalls
from nornir_bench.runners._core.lifecycle import Lifecycle, Transport
from nornir_bench.runners._core.limiter import InFlight, in_flight_here


class QueueThreadsRunner(Policed):
    """``num_workers`` plain threads taking hosts from a queue; every run policy applies."""

    stops_on_ctrl_c = True

    def __init__(self, num_workers: int = 20, **policy: Any) -> None:
        self.num_workers = whole_number("queue-threads runner: num_workers", num_workers, minimum=1)
        self.policy = RunPolicy.build("queue-threads runner", policy)

    def run(self, task: Task, hosts: list[Host]) -> AggregatedResult:
        with in_flight_here(self.num_workers, len(hosts), task.task, what="queue") as places:
            run = Lifecycle(task, hosts, self.policy.for_task(task.task), in_flight=places.limit,
                            planned=True)
            return run.drive(_QueueThreads(run, places))


class _QueueThreads(Transport):
    def __init__(self, run: Lifecycle, places: InFlight) -> None:
        self.run, self.places, self.calls = run, places, BlockingCalls()
        self.context = run.context(attempt=self.calls.call)
        self.inbox: queue.SimpleQueue[tuple[int, Host] | None] = queue.SimpleQueue()
        self.outbox: queue.SimpleQueue[tuple[int, MultiResult | BaseException]] = (
            queue.SimpleQueue())
        self.threads: list[threading.Thread] = []
        for _ in range(places.limit):
            self._thread()

    def _thread(self, first: Callable[[], None] | None = None) -> None:
        self.threads.append(threading.Thread(target=self._work, args=(first,), daemon=True))
        self.threads[-1].start()

    def _work(self, first: Callable[[], None] | None) -> None:
        if first is not None:  # a host taken over at its deadline, then the queue's
            first()
        while (item := self.inbox.get()) is not None:
            self._finish(item[0], run_one, self.run.task, item[1], self.context)

    def _finish(self, index: int, call: Callable[..., MultiResult | None], *args: Any) -> None:
        try:
            done: MultiResult | BaseException | None = call(*args)
        except BaseException as exc:  # noqa: BLE001 - a task's SystemExit: the run raises it
            done = exc
        if done is not None:  # None: given up at its deadline, another thread goes on
            self.outbox.put((index, done))

    def wait(self) -> None:
        plan, places, halt = self.run.plan, self.places, self.run.halt
        assert plan is not None
        while places.taken or (not halt.is_set() and plan.wait_time() is not None):
            if halt.is_set():
                plan.halt()
                while not self.inbox.empty() and self.inbox.get() is not None:
                    places.give()  # taken, never started: not run
            while not halt.is_set() and places.room > 0 and (index := plan.take()) is not None:
                places.take()
                self.inbox.put((index, plan.hosts[index]))
            for attempts in self.calls.expired():  # a new thread goes on with the host
                self._thread(partial(self._finish, plan.index[attempts.host.name], partial(
                    run_policed, call=self.calls.call), attempts, attempts.timed_out()))
            try:
                index, done = self.outbox.get(timeout=min(POLL_SECONDS, plan.wait_time() or 1))
            except queue.Empty:
                continue
            places.give()
            if isinstance(done, BaseException):
                self.run.escape(done)
                continue
            self.run.result[plan.hosts[index].name] = done
            plan.finished(index, done.failed)

    def close(self, *, ended: bool) -> None:
        for _ in self.threads:
            self.inbox.put(None)
        if not self.run.ctrl_c.abandoned:
            for thread in self.threads:  # a thread left in a call given up: not for long
                thread.join(ABANDONED_GRACE_SECONDS if thread in self.calls.abandoned else None)
