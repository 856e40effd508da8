"""One host's task under the run's policies: a deadline for each attempt, and retries.

:class:`HostAttempts` holds what does no I/O (when an attempt's deadline is, which error a missed
one is, whether a failure is tried again and after how long, the result that counts); the
blocking and the awaitable drivers, :func:`run_policed` and :func:`arun_policed`, hold only the
calls, the waits and the reconnects. Processor hooks fire once per host, whatever the number
of attempts: ``task_instance_started`` before the first, ``task_instance_completed`` with the
result of the attempt that counted (subtasks of an earlier attempt fired their own hooks as
they ran, and their results are dropped with that attempt).

Before a retry the host's connections are closed, so the task opens fresh ones (a reconnect,
as nornir-salt's ``reconnect_on_fail``). The attempts that did not count are kept on the
host's result (:mod:`nornir_bench.core.attempts`).
"""

from __future__ import annotations

import functools
import logging
import random
import time
import traceback
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from nornir.core.task import MultiResult

from nornir_bench.core.attempts import FailedAttempt, record_attempts
from nornir_bench.core.changes import noted_change
from nornir_bench.core.deadlines import set_deadline
from nornir_bench.core.exceptions import RunTimeout, TaskTimeout
from nornir_bench.core.execution import (
    Offload,
    acall_task,
    call_task,
    complete_host,
    failure_result,
    start_host,
    to_thread,
    wrap_result,
)
from nornir_bench.core.policies.logins import HostLogins, LoginPace, Refused
from nornir_bench.core.policies.retry import retry_wait

if TYPE_CHECKING:
    from nornir.core.inventory import Host
    from nornir.core.task import Task

    from nornir_bench.core.ctrl_c import Halt
    from nornir_bench.core.policies.options import RunPolicy

__all__ = ["HostAttempts", "Outcome", "arun_policed", "run_policed"]

# nornir's own task logger, where failures are logged too: the logging a job configures for
# nornir (its default) shows the retries next to the failures.
logger = logging.getLogger("nornir.core.task")

# A failed attempt's message, as kept on the result and in the records: one line, this long.
_MESSAGE_LENGTH = 500

# A task's own timeout, bounded by the time its attempt has left, may end a hair before the
# deadline (a clock read before the call, the system's timer granularity).
_EARLY = 0.01


class Outcome:
    """How one attempt ended: its return value, or the exception and its traceback text."""

    __slots__ = ("error", "text", "value")

    def __init__(self, value: Any = None, error: Exception | None = None, text: str = "") -> None:
        self.value = value
        self.error = error
        self.text = text


class HostAttempts:
    """One host's task under ``policy``: started (its hook fired), and its attempts so far.

    Args:
        template: the run's task.
        host: the host.
        policy: the run's policies.
        run_deadline: the run's deadline on the ``time.monotonic`` clock, if it has one.
        halt: the run's halt: once set, a host waiting to retry gives up and keeps its last
            failure.
        rand: random numbers in ``[0, 1)`` for the jitter (a test passes its own).
        pace: the run's pace of logins (``login_retries``), if on.
        started: the host's task, if its start hook fired already (a host the plain path ran
            once, going on here); ``began``: when that attempt began.
    """

    __slots__ = (
        "_by_run",
        "_deadline",
        "_began",
        "failed",
        "halt",
        "host",
        "logins",
        "policy",
        "rand",
        "run_deadline",
        "task",
    )

    def __init__(
        self,
        template: Task,
        host: Host,
        policy: RunPolicy,
        *,
        run_deadline: float | None = None,
        halt: Halt | None = None,
        rand: Callable[[], float] = random.random,
        pace: LoginPace | None = None,
        started: Task | None = None,
        began: float | None = None,
    ) -> None:
        self.task = start_host(template, host) if started is None else started
        self.host = host
        self.logins = None if pace is None else HostLogins(pace, host)
        self.policy = policy
        self.run_deadline = run_deadline
        self.halt = halt
        self.rand = rand
        self.failed: list[FailedAttempt] = []
        self._by_run = False
        # the attempt under way (``began``: one the plain path made, see ``core.one_host``)
        self._began = time.monotonic() if began is None else began
        self._deadline: float | None = None

    def deadline(self) -> float | None:
        """The deadline of an attempt starting now (``time.monotonic``), if it has one; the
        task's own timeouts may be bounded by it (``core.deadlines.time_left``)."""
        limit = self.policy.task_timeout
        deadline = None if limit is None else time.monotonic() + limit
        self._by_run = self.run_deadline is not None and (
            deadline is None or self.run_deadline <= deadline
        )
        chosen = self.run_deadline if self._by_run else deadline
        set_deadline(self.task, chosen)
        self._deadline = chosen
        return chosen

    def timeout_error(self, abandoned: bool = False) -> Exception:
        """The error of an attempt stopped at the deadline :meth:`deadline` gave;
        ``abandoned``: a blocking call, which goes on in its thread."""
        change = noted_change(self.task)  # a change stopped here: how far it got
        if self._by_run:
            return RunTimeout(self.policy.run_timeout or 0.0, True, abandoned, change)
        seconds = self.policy.task_timeout or 0.0
        return TaskTimeout(self.task.name, self.host.name, seconds, abandoned, change)

    def timed_out(self) -> Outcome:
        """The outcome of an attempt whose deadline passed while its blocking call went on."""
        error = self.timeout_error(abandoned=True)  # before the copy: what the call noted
        self._leave_call()
        return Outcome(error=error, text="".join(traceback.format_exception_only(error)))

    def _leave_call(self) -> None:
        """Go on with a copy of the task: the call given up still holds the old one, and what
        it adds later (subtask results) must not reach the host's result. The blocking
        connections it used leave the host (``abandon_connections``)."""
        from nornir_bench.core.connections import abandon_connections  # imports asyncio

        fresh = self.task.copy()
        fresh.host = self.host
        self.task = fresh
        abandon_connections(self.host)

    def call(self) -> Outcome:
        """Run the task once, here (blocking)."""
        self._began = time.monotonic()
        try:
            return Outcome(call_task(self.task))
        except Exception as exc:  # noqa: BLE001 - a task's error is the attempt's outcome
            return self._own_timeout(exc) or Outcome(error=exc, text=traceback.format_exc())

    async def acall(self, offload: Offload | None) -> Outcome:
        """Run the task once on the event loop (``offload``: see ``acall_task``), within the
        attempt's deadline."""
        deadline = self.deadline()
        bound = None if deadline is None else functools.partial(self._within, deadline)
        self._began = time.monotonic()
        try:
            return Outcome(await acall_task(self.task, offload, bound))
        except Exception as exc:  # noqa: BLE001 - a task's error is the attempt's outcome
            return self.call_failed(exc, offload is not None)

    def _within(self, deadline: float, call: Awaitable[Any], blocking: bool) -> Awaitable[Any]:
        """``call`` stopped at ``deadline`` with this attempt's timeout error."""
        from nornir_bench.core.timeouts import within  # imports asyncio: only on a loop

        timed_out = functools.partial(self.timeout_error, blocking)
        return within(call, deadline - time.monotonic(), timed_out)

    def call_failed(self, error: Exception, blocking: bool) -> Outcome:
        """The outcome of an attempt whose call raised ``error`` (in an ``except`` block)."""
        if blocking and getattr(error, "abandoned", False):
            self._leave_call()
        return self._own_timeout(error) or Outcome(error=error, text=traceback.format_exc())

    def _own_timeout(self, error: Exception) -> Outcome | None:
        """A ``TimeoutError`` the task raised at its attempt's deadline (its own timeout,
        bounded by the time left: ``core.deadlines``) is the deadline's: the attempt fails
        with the same error as when the runner gives it up there."""
        if (
            isinstance(error, TimeoutError)
            and not isinstance(error, (TaskTimeout, RunTimeout))
            and self._deadline is not None
            and time.monotonic() >= self._deadline - _EARLY
        ):
            timeout = self.timeout_error()
            return Outcome(error=timeout, text="".join(traceback.format_exception_only(timeout)))
        return None

    def login_wait(self) -> float:
        """Seconds to wait before asking again for a place to log in (the host's SSH server
        refused logins in this run: see ``core.policies.logins``); 0: the attempt may start."""
        return 0.0 if self.logins is None else self.logins.wait()

    def retry_after(self, outcome: Outcome) -> float | None:
        """Seconds to wait before the next attempt, or ``None``: ``outcome`` counts.

        A failure that is retried is logged as a warning and kept on the host's result; the
        task's results are emptied for the next attempt.
        """
        error = outcome.error
        if self.logins is not None:
            refused = self.logins.ended(error)
            if refused is not None:
                return self._refused(outcome, refused)
        if error is None or not self.policy.retries:
            return None
        retried = sum(1 for attempt in self.failed if attempt.exception != "LoginRefused")
        return self._again(error, retry_wait(self.policy, error, retried + 1, self.rand))

    def _refused(self, outcome: Outcome, refused: Refused) -> float | None:
        """``outcome``, a login the server refused, fails with ``refused.error`` (a
        LoginRefused caused by the library's error), tried again after ``refused.wait``."""
        if refused.error is not outcome.error:
            outcome.text += "".join(traceback.format_exception_only(refused.error))
            outcome.error = refused.error
        return self._again(refused.error, refused.wait)

    def _again(self, error: Exception, wait: float | None) -> float | None:
        """``wait`` before trying again after ``error``, or ``None`` when the run's deadline
        comes first (or ``wait`` is ``None``)."""
        if wait is None or (
            self.run_deadline is not None and time.monotonic() + wait >= self.run_deadline
        ):
            return None
        message = " ".join(str(error).split())[:_MESSAGE_LENGTH]
        abandoned = bool(getattr(error, "abandoned", False))
        ran = round(time.monotonic() - self._began, 6)
        self.failed.append(
            FailedAttempt(type(error).__name__, message, abandoned, ran, round(wait, 6))
        )
        logger.warning(
            "Host %r: task %r attempt %d failed (%s: %s); trying again in %.2f s",
            self.host.name,
            self.task.name,
            len(self.failed),
            type(error).__name__,
            message,
            wait,
        )
        self.task.results = MultiResult(self.task.name)
        return wait

    def finish(self, outcome: Outcome) -> MultiResult:
        """The host's ``MultiResult`` with ``outcome`` as the attempt that counted; the
        completion hook fires."""
        task, host = self.task, self.host
        if outcome.error is None:
            result = wrap_result(host, outcome.value)
        else:
            result = failure_result(task, host, outcome.error, outcome.text)
        record_attempts(result, self.failed)  # before the hook: the records show them
        if self.logins is not None and self.logins.waited:
            result.login_wait = round(self.logins.waited, 3)  # type: ignore[attr-defined]
        return complete_host(task, host, result)

    def reconnect(self) -> None:
        """Close the host's connections (blocking), so that the next attempt opens new ones."""
        from nornir_bench.core.connections import close_connections  # imports asyncio

        close_connections([self.host])

    async def areconnect(self, offload: Offload | None) -> None:
        """Close the host's connections on the loop (blocking ones in a thread)."""
        from nornir_bench.core.connections import aclose_every_connection

        await aclose_every_connection([self.host], offload or to_thread)

    def pause(self, seconds: float) -> bool:
        """Wait ``seconds`` (blocking); False if the run was halted meanwhile (no retry)."""
        if self.halt is None:
            time.sleep(seconds)
            return True
        return not self.halt.wait(seconds)

    async def apause(self, seconds: float) -> bool:
        """Wait ``seconds`` on the loop; False if the run was halted meanwhile (no retry)."""
        if self.halt is None:
            import asyncio

            await asyncio.sleep(seconds)
            return True
        return not await self.halt.wait_async(seconds)


def run_policed(
    attempts: HostAttempts,
    outcome: Outcome | None = None,
    *,
    call: Callable[[HostAttempts], Outcome | None] = HostAttempts.call,
) -> MultiResult | None:
    """Run ``attempts`` here (blocking) to the one that counts; its ``MultiResult``.

    Deadlines of blocking calls are the runner's to watch (a call cannot be stopped from
    inside), through ``call``: it makes one attempt, or returns ``None`` when the runner gave
    the attempt up at its deadline and took the host over (this returns ``None`` then).
    ``outcome``: an attempt already made (the runner taking a host over continues from there).
    """
    last: Outcome | None = None
    while True:
        if outcome is None:
            while turn := attempts.login_wait():
                if not attempts.pause(turn):  # halted: a host that ran once keeps its outcome
                    if last is not None:
                        return attempts.finish(last)
                    break
            outcome = call(attempts)
            if outcome is None:
                return None
        wait = attempts.retry_after(outcome)
        if wait is None:
            return attempts.finish(outcome)
        attempts.reconnect()
        if not attempts.pause(wait):
            return attempts.finish(outcome)
        last, outcome = outcome, None


async def arun_policed(
    attempts: HostAttempts, offload: Offload | None, outcome: Outcome | None = None
) -> MultiResult:
    """The awaitable twin of :func:`run_policed`; each attempt within its deadline.

    ``offload`` is ``None`` for an ``async def`` task, else the pool blocking calls run in.
    ``outcome``: an attempt already made. Cancelling it (Ctrl-C) propagates
    ``CancelledError``: a host that did not finish has no result.
    """
    last: Outcome | None = None
    while True:
        if outcome is None:
            while turn := attempts.login_wait():
                if not await attempts.apause(turn):
                    if last is not None:
                        return attempts.finish(last)
                    break
            outcome = await attempts.acall(offload)
        wait = attempts.retry_after(outcome)
        if wait is None:
            return attempts.finish(outcome)
        await attempts.areconnect(offload)
        if not await attempts.apause(wait):
            return attempts.finish(outcome)
        last, outcome = outcome, None
