"""One run, from its first host to its last: the lifecycle every runner shares.

A runner is its transport (:class:`Transport`: how hosts reach where they run, and how their
results come back); the rest of a run is a :class:`Lifecycle`, written once:

- the result, in host order, no host missing: the hosts the run's policies kept from starting
  get their failed result (``RunAborted``, ``HostSkipped``, ``RunTimeout``) from the core;
- the plan of the run's policies (:class:`~nornir_bench.core.policies.plan.HostPlan`) and the
  :class:`~nornir_bench.core.one_host.RunContext` every host runs under;
- Ctrl-C, one meaning on every runner: the first press halts the run (no host starts, hosts
  waiting to retry stop waiting; the hosts in flight finish or reach their deadline), the
  second abandons the hosts in flight; ``RunInterrupted`` holds every host that finished. The
  commands send SIGTERM the same way (``cli._common.sigterm_as_ctrl_c``);
- a task's own ``SystemExit`` or ``KeyboardInterrupt`` (not an error: nornir's ``Task.start``
  does not catch it): the run halts as on a first press, and it is raised once the run has
  stopped, as nornir's runners raise it;
- closing what the run used, on success, on error and on Ctrl-C.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack
from typing import TYPE_CHECKING, Any

from nornir_bench.core._gc import tuned_for_run
from nornir_bench.core.ctrl_c import CtrlC, Halt
from nornir_bench.core.one_host import RunContext
from nornir_bench.core.policies.hosts import HostAttempts, Outcome
from nornir_bench.core.policies.plan import HostPlan
from nornir_bench.runners._core.results import fill_not_run, interrupted, placeholders

if TYPE_CHECKING:
    from nornir.core.inventory import Host
    from nornir.core.task import AggregatedResult, Task

    from nornir_bench.core.execution import Offload
    from nornir_bench.core.policies.options import RunPolicy

__all__ = ["Lifecycle", "Transport"]


class Transport:
    """What a runner adds to the lifecycle: its hosts carried where they run, and back.

    Only :meth:`wait` is required; the others do nothing unless the transport needs them.
    """

    def wait(self) -> None:
        """Run the hosts (start them as the plan lets them, settle them as they end) until
        none is in flight and none will start; once the run is halted, only those in flight.

        Called again after a ``KeyboardInterrupt`` cut it short: it goes on where it was.
        """
        raise NotImplementedError

    def on_halt(self) -> None:
        """The run was halted (the first Ctrl-C, a task's ``SystemExit``): make the wait see
        it soon. It may run in a signal handler: only set flags or schedule work."""

    def interrupt(self) -> None:
        """The second Ctrl-C, in the signal handler: make :meth:`wait` raise
        ``KeyboardInterrupt``, by default by raising it here."""
        raise KeyboardInterrupt

    def abandon(self) -> None:
        """The second Ctrl-C: stop the hosts in flight where that can be done, and wait for
        none of them."""

    def close(self, *, ended: bool) -> None:
        """Let go of what the run used. ``ended``: the run ended as runs do (no Ctrl-C, no
        error): what the next run reuses (kept workers, a kept event loop) may be kept."""


class Lifecycle:
    """One run of ``task`` over ``hosts`` (see the module).

    Args:
        task: the run's task template.
        hosts: the run's hosts, in order.
        policy: the run's policies (for this task).
        in_flight: the most hosts in flight at once, for the plan's group limits.
        planned: always make a plan (runners whose loop takes every host from one), not only
            when a limit can act.

    Attributes:
        result: every host's ``MultiResult`` as it finishes (``None`` until then), in host order.
        plan: which host starts when, or ``None``: in order, as soon as there is room.
        halt: set by the first Ctrl-C or a task's ``SystemExit``: no host starts any more.
        escaped: what tasks raised that is not an error, the first raised once the run stopped.
        ctrl_c: the two-press rule.
    """

    def __init__(
        self,
        task: Task,
        hosts: list[Host],
        policy: RunPolicy,
        *,
        in_flight: int | None = None,
        planned: bool = False,
    ) -> None:
        self.task = task
        self.hosts = hosts
        self.policy = policy
        self.result = placeholders(task, hosts)
        self.plan = (
            HostPlan(hosts, policy, in_flight=in_flight)
            if planned
            else HostPlan.for_run(hosts, policy, in_flight=in_flight)
        )
        self.halt = Halt()
        self.escaped: list[BaseException] = []
        # What the first press does holds the halt and the transport's hook, not the run: a
        # run holding itself would keep its results until a full collection (a job's runs).
        self._on_halt: list[Callable[[], None]] = []
        self.ctrl_c = CtrlC(functools.partial(_halted, self.halt, self._on_halt))

    def context(
        self,
        *,
        offload: Offload | None = None,
        attempt: Callable[[HostAttempts], Outcome | None] = HostAttempts.call,
    ) -> RunContext:
        """What every host of the run runs under (``offload``, ``attempt``: see ``RunContext``)."""
        return RunContext(
            self.policy,
            deadline=None if self.plan is None else self.plan.deadline,
            offload=offload,
            halt=self.halt,
            attempt=attempt,
        )

    def escape(self, exc: BaseException) -> None:
        """A host's task raised ``exc`` (``SystemExit``, its own ``KeyboardInterrupt``): the run
        halts, the hosts in flight finish, and :meth:`drive` raises it once they have."""
        self.escaped.append(exc)
        _halted(self.halt, self._on_halt)

    def drive(
        self, transport: Transport, *contexts: AbstractContextManager[Any]
    ) -> AggregatedResult:
        """Run the hosts through ``transport`` under the lifecycle (``contexts`` held while
        they run); the run's result.

        Raises:
            RunInterrupted: Ctrl-C stopped the run; it holds every host that finished.
            BaseException: a task's ``SystemExit`` or ``KeyboardInterrupt``, once the run
                stopped.
        """
        ctrl_c = self.ctrl_c
        self._on_halt.append(transport.on_halt)
        try:
            with ExitStack() as stack:
                stack.enter_context(tuned_for_run())
                for context in contexts:
                    stack.enter_context(context)
                stack.enter_context(ctrl_c.handled(interrupt=transport.interrupt))
                ctrl_c.wait(transport.wait)
            if ctrl_c.abandoned:
                transport.abandon()
        except BaseException:
            with contextlib.suppress(Exception):  # what ended the run is what is raised
                transport.close(ended=False)
            raise
        finally:
            self._on_halt.clear()
        transport.close(ended=not ctrl_c.presses)
        return self.outcome()

    def outcome(self) -> AggregatedResult:
        """Once the run has stopped: its result, with the hosts it never ran; or what stopped
        it, raised (see :meth:`drive`)."""
        if self.ctrl_c.presses:
            raise interrupted(self.result, abandoned=self.ctrl_c.abandoned)
        if self.escaped:
            raise self.escaped[0]
        if self.plan is not None:
            fill_not_run(self.task, self.plan, self.result)
        return self.result


def _halted(halt: Halt, hooks: list[Callable[[], None]]) -> None:
    """The run is halted: the first Ctrl-C (maybe in a signal handler), a task's SystemExit."""
    halt.set()
    for hook in hooks:
        hook()
