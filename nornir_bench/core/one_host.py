"""One way to run a host, for every runner: the plain path, or the policed one.

A runner hands each host to :func:`run_one` (blocking) or :func:`arun_one` (on an event loop)
with the run's :class:`RunContext`. Without a deadline (``task_timeout``, ``run_timeout``) a
host first runs as nornir's ``Task.start`` runs it (``run_host``/``arun_host``); otherwise
through its :class:`~nornir_bench.core.policies.hosts.HostAttempts`. A plain host whose task
failed goes on through its attempts when the run retries, or when its SSH server refused its
login, so that retries cost nothing until a host fails; once a server has refused a login,
every host goes through its attempts: their logins are paced (``core.policies.logins``). This
is the one place that decides: runners schedule hosts, they do not choose how one runs.
"""

from __future__ import annotations

import traceback
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from nornir_bench.core.execution import arun_host, run_host
from nornir_bench.core.policies.hosts import HostAttempts, Outcome, arun_policed, run_policed
from nornir_bench.core.policies.logins import LoginPace, refused_before_login

if TYPE_CHECKING:
    from nornir.core.inventory import Host
    from nornir.core.task import MultiResult, Task

    from nornir_bench.core.ctrl_c import Halt
    from nornir_bench.core.execution import Offload
    from nornir_bench.core.policies.options import RunPolicy

__all__ = ["RunContext", "arun_one", "run_one"]


class RunContext:
    """What a run gives every host it runs.

    Args:
        policy: the run's policies.
        deadline: the run's deadline on this process's ``time.monotonic`` clock, if it has one.
        offload: on an event loop: ``None`` for an ``async def`` task, else the thread pool a
            blocking task runs in.
        halt: the run's halt (a host waiting to retry stops waiting once it is set).
        attempt: makes one blocking attempt (a runner watching deadlines of blocking calls
            passes its own, which returns ``None`` for an attempt it gave up and took over).
    """

    __slots__ = ("attempt", "deadline", "halt", "offload", "pace", "plain", "policy", "rescues")

    def __init__(
        self,
        policy: RunPolicy,
        *,
        deadline: float | None = None,
        offload: Offload | None = None,
        halt: Halt | None = None,
        attempt: Callable[[HostAttempts], Outcome | None] = HostAttempts.call,
    ) -> None:
        self.policy = policy
        self.deadline = deadline
        self.offload = offload
        self.halt = halt
        self.attempt = attempt
        # Decided once a run, read once a host: without a deadline, a host runs plain, and a
        # failure goes on through its attempts (retries, a refused login) from there.
        self.plain = policy.task_timeout is None and policy.run_timeout is None
        self.pace = LoginPace(policy.login_retries) if policy.login_retries else None
        self.rescues = bool(policy.retries) or self.pace is not None

    def attempts(
        self, task: Task, host: Host, started: Task | None = None, began: float | None = None
    ) -> HostAttempts:
        """``host``'s attempts under the run's policies (its start hook fires, unless it
        did: ``started``, whose first attempt ``began``)."""
        return HostAttempts(
            task, host, self.policy, run_deadline=self.deadline, halt=self.halt, pace=self.pace,
            started=started, began=began,
        )

    def _plain(self) -> bool:
        return self.plain and (self.pace is None or not self.pace.active)

    def _goes_on(
        self, started: Task, host: Host, error: Exception, began: float
    ) -> HostAttempts | None:
        """A plain host whose task failed: its attempts, to go on with, when the run retries
        (which errors, its attempts decide) or its SSH server refused the login."""
        if not self.policy.retries and (self.pace is None or not refused_before_login(error)):
            return None
        return self.attempts(started, host, started, began)

    def rescue(
        self, started: Task, host: Host, error: Exception, began: float
    ) -> MultiResult | None:
        """What the plain path does with a task's ``error`` (in its ``except`` block): it goes
        on through the host's attempts (see :meth:`_goes_on`), or ``None``."""
        run = self._goes_on(started, host, error, began)
        if run is None:
            return None
        return run_policed(run, Outcome(error=error, text=traceback.format_exc()),
                           call=self.attempt)

    def arescue(
        self, started: Task, host: Host, error: Exception, began: float
    ) -> Awaitable[MultiResult] | None:
        """The awaitable twin of :meth:`rescue`."""
        run = self._goes_on(started, host, error, began)
        if run is None:
            return None
        return arun_policed(run, self.offload, Outcome(error=error, text=traceback.format_exc()))


def run_one(task: Task, host: Host, context: RunContext) -> MultiResult | None:
    """Run ``task`` on ``host`` here (blocking) under the run's ``context``.

    Returns:
        The host's ``MultiResult``; ``None`` only when ``context.attempt`` gave an attempt up
        at its deadline (the runner that took the host over finishes it).
    """
    if context._plain():
        return run_host(task, host, rescue=context.rescue if context.rescues else None)
    return run_policed(context.attempts(task, host), call=context.attempt)


def arun_one(task: Task, host: Host, context: RunContext) -> Awaitable[MultiResult]:
    """Run ``task`` on ``host`` on the event loop under the run's ``context``: await it.

    Cancelling it (Ctrl-C) propagates ``CancelledError``: a host that did not finish has no
    result. (A plain function returning the coroutine to await: no coroutine of its own.)
    """
    if context._plain():
        return arun_host(
            task, host, offload=context.offload, rescue=context.arescue if context.rescues else None
        )
    return arun_policed(context.attempts(task, host), context.offload)
