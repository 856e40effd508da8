"""A runner from the runner core alone: plain threads fed through an in-process queue, its
transport all it has. It passes the conformance and policy suites (``queue-threads``)."""

from __future__ import annotations

import queue
import threading
from typing import Any

from nornir.core.inventory import Host
from nornir.core.task import AggregatedResult, Task

from nornir_bench.core.checks import whole_number
from nornir_bench.core.policies.options import Policed, RunPolicy
from nornir_bench.runners._core.blocking import BlockingCalls, Ended, join_threads, serve_hosts
from nornir_bench.runners._core.lifecycle import Lifecycle, Transport
from nornir_bench.runners._core.limiter import InFlight, in_flight_here
from nornir_bench.runners._core.scheduler import Scheduler, Start, TakeOver


class QueueThreadsRunner(Policed):
    """``num_workers`` plain threads taking hosts from a queue; every run policy applies."""

    stops_on_ctrl_c = True

    def __init__(self, num_workers: int = 20, **policy: Any) -> None:
        self.num_workers = whole_number("queue-threads runner: num_workers", num_workers, minimum=1)
        self.policy = RunPolicy.build("queue-threads runner", policy)

    def run(self, task: Task, hosts: list[Host]) -> AggregatedResult:
        with in_flight_here(self.num_workers, len(hosts), task.task, what="queue") as places:
            run = Lifecycle(task, hosts, self.policy.for_task(task.task), in_flight=places.limit)
            return run.drive(_QueueThreads(run, places))


class _QueueThreads(Transport):
    def __init__(self, run: Lifecycle, places: InFlight) -> None:
        self.run, self.calls, self.threads = run, BlockingCalls(), list[threading.Thread]()
        self.scheduler = Scheduler(run, places, self.calls)
        self.context = run.context(attempt=self.calls.call)
        self.inbox: queue.SimpleQueue[Start | None] = queue.SimpleQueue()
        self.ends: queue.SimpleQueue[Ended] = queue.SimpleQueue()

    def wait(self) -> None:
        self.scheduler.drive(self._start, self.ends)

    def _start(self, action: Start | TakeOver) -> None:
        if isinstance(action, Start) and len(self.threads) >= self.scheduler.places.limit:
            return self.inbox.put(action)  # a thread is free: each has a place
        args = (action, self.run, self.context, self.inbox.get)
        self.threads.append(threading.Thread(target=serve_hosts, args=(*args, self.ends.put)))
        self.threads[-1].daemon = True
        self.threads[-1].start()

    def close(self, *, ended: bool) -> None:
        for _ in self.threads:
            self.inbox.put(None)
        if not self.run.ctrl_c.abandoned:
            join_threads(self.threads, self.calls)
