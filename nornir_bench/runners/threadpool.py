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
  frozen and collections come less often, so they do not stall every worker on the GIL.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from nornir_bench.core._gc import tuned_for_run
from nornir_bench.core.checks import whole_number
from nornir_bench.core.execution import run_host
from nornir_bench.core.stopping import ctrl_c_held
from nornir_bench.runners._queue import HostQueue
from nornir_bench.runners._results import interrupted, placeholders

if TYPE_CHECKING:
    from nornir.core.inventory import Host
    from nornir.core.task import AggregatedResult, Task

__all__ = ["ThreadPoolRunner"]


class ThreadPoolRunner:
    """Runs the task over the hosts on up to ``num_workers`` threads.

    Same semantics and results as nornir's ``threaded`` runner: the ``AggregatedResult`` holds
    one ``MultiResult`` per host, in the order of ``hosts``.

    Args:
        num_workers: the most threads, and so hosts, at work at once (>= 1; default 20 as in
            nornir). Kept as an attribute because other nornir tools read it.

    Raises:
        ValueError: when ``num_workers`` is not a whole number >= 1.
    """

    stops_on_ctrl_c = True  # no host starts after Ctrl-C; RunInterrupted keeps what finished

    def __init__(self, num_workers: int = 20) -> None:
        self.num_workers = whole_number("threadpool runner: num_workers", num_workers, minimum=1)

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
        result = placeholders(task, hosts)
        pending = HostQueue(hosts)
        escaped: list[BaseException] = []
        running = _Running()

        def work() -> None:
            try:
                for host in pending:
                    result[host.name] = run_host(task, host)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread below
                escaped.append(exc)
            finally:
                running.ended()

        threads: list[threading.Thread] = []
        try:
            with tuned_for_run():
                # Held once for all the starts (not per thread: 1,000 starts would pay for it
                # 1,000 times): interrupted, a start would leave the count of threads wrong.
                with ctrl_c_held():
                    for i in range(min(self.num_workers, len(hosts))):
                        if not pending:
                            break
                        thread = threading.Thread(target=work, name=f"threadpool-{i}", daemon=True)
                        running.started()
                        try:
                            thread.start()
                        except BaseException:
                            running.ended()
                            raise
                        threads.append(thread)
                running.wait()
        except KeyboardInterrupt:
            pending.clear()
            try:
                running.wait()
            except KeyboardInterrupt:  # Ctrl-C again: do not wait for the hosts in flight
                raise interrupted(result, abandoned=True) from None
            raise interrupted(result) from None
        finally:
            if running.count == 0:  # each thread is past its last host: this takes no time
                for thread in threads:
                    thread.join()
        if escaped:
            raise escaped[0]
        return result


# A SIGINT the kernel hands to a worker thread, or ``_thread.interrupt_main()``, only sets a
# flag that the main thread checks when it runs bytecode: a wait without a timeout would sit on
# it until the run ended. Waking up this often keeps Ctrl-C prompt at no measurable cost.
_WAIT_POLL_SECONDS = 0.1


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

    def wait(self) -> None:
        """Return once every thread has ended (raises ``KeyboardInterrupt`` on Ctrl-C)."""
        while not self._none_left.wait(_WAIT_POLL_SECONDS):
            pass
