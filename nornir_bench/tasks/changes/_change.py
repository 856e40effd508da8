"""What a change is and says (:class:`Change`, :class:`ConfigChangeFailed`), how it is made
(:class:`ChangeOptions`), and what is read around it: its state checks before and after, and
its journal entry while it waits for confirmation (:class:`AroundChange`). The plan that uses
them is :mod:`nornir_bench.tasks.changes.config`'s.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hier_config.platforms.driver_base import HConfigDriverBase
from hier_config.platforms.generic.driver import HConfigDriverGeneric

from nornir_bench.core.changes import CHANGED, DRIFTED, NOT_TOUCHED, WOULD_CHANGE, ConfigsRead
from nornir_bench.core.checks import number
from nornir_bench.core.exceptions import NornirBenchError
from nornir_bench.core.wording import seconds_text
from nornir_bench.tasks.changes.journal import PENDING, append_entry
from nornir_bench.tasks.checks.check_outcomes import (
    CheckOutcome,
    checks_text,
    failures_said,
    read_checks,
)
from nornir_bench.tasks.checks.state_checks import StateCheck, checks_from
from nornir_bench.tasks.sessions._plan import Login, PastDeadline, Plan, Wait

__all__ = [
    "MAX_CONFIRM",
    "AroundChange",
    "Change",
    "ChangeOptions",
    "ConfigChangeFailed",
    "ConfigInputError",
    "check_around",
]

MAX_CONFIRM = 3600.0
"""A confirm window, in seconds, at most: the change is pending (and its host held) so long."""


class ConfigInputError(NornirBenchError):
    """A change's input is wrong for a host, found before any device is touched: a replace
    on a platform without a configuration driver, a scope its intended configuration lacks.
    A job stops on it (one line, exit status 2)."""

    __module__ = "nornir_bench.tasks.changes.config"


class ConfigChangeFailed(Exception):
    """A change the device refused a line of, that did not verify, or that was not saved:
    the message says which line and what the device said, and whether the configuration was
    rolled back.

    Attributes:
        state: ``rolled back``, ``rollback failed``, ``not rolled back``, ``not saved`` or
            ``interrupted during change``.
        backup: the backup file of the configuration before the change (``None``: nothing was
            to change, so nothing was backed up).
        diff: how the configuration now differs from the backup (empty once rolled back): a
            device left changed (``core.changes.left_changed``).
        checks: the state checks read around it (``CheckOutcome.record``).
        configs: the configuration read before and read back last, when asked
            (``keep_configs``).
    """

    # Public as nornir_bench.tasks.changes.config.ConfigChangeFailed: tracebacks and pickles
    # name it.
    __module__ = "nornir_bench.tasks.changes.config"

    def __init__(
        self, message: str, *, state: str, backup: str | None, diff: str = "",
        checks: list[dict[str, Any]] | None = None, configs: ConfigsRead | None = None,
    ) -> None:
        super().__init__(message)
        self.state = state
        self.backup = backup
        self.diff = diff
        self.checks = checks or []
        self.configs = configs

    @property
    def change(self) -> dict[str, Any]:
        return {"state": self.state, "backup": self.backup}

    def __reduce__(self) -> tuple[Any, ...]:  # rebuilt in the parent of a worker process
        return _rebuilt, (str(self), self.state, self.backup, self.diff, self.checks,
                          self.configs)


def _rebuilt(
    message: str, state: str, backup: str | None, diff: str, checks: list[dict[str, Any]],
    configs: ConfigsRead | None = None,
) -> ConfigChangeFailed:
    return ConfigChangeFailed(message, state=state, backup=backup, diff=diff, checks=checks,
                              configs=configs)


@dataclass(frozen=True)
class Change:
    """What a change did (or, as a dry run, would do) to a host: ``state`` (``would change``,
    ``no change``, ``changed``; a replace's dry run ``compliant`` or ``drifted``), the diff,
    the lines that make (or would make) it, the backup file when one was written, the
    checks around it (:meth:`~nornir_bench.tasks.checks.check_outcomes.CheckOutcome.record`),
    and notes on its input (a restore's commit, its masked lines left out), and, when asked
    (``keep_configs``), the configuration read before and after."""

    state: str
    diff: str
    backup: str | None = None
    checks: list[dict[str, Any]] = field(default_factory=list)
    remediation: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    configs: ConfigsRead | None = None

    @property
    def changed(self) -> bool:
        return self.state in (WOULD_CHANGE, CHANGED, DRIFTED)

    def record(self) -> dict[str, Any]:
        """The ``change`` mapping of the result and the records."""
        record: dict[str, Any] = {"state": self.state, "backup": self.backup}
        if self.remediation:
            record["remediation"] = list(self.remediation)
        if self.notes:
            record["notes"] = list(self.notes)
        return record

    def text(self) -> str:
        """The result's text: the state (and backup), then the diff, the remediation, the
        notes and the checks."""
        head = self.state + (f" (backup: {self.backup})" if self.backup else "")
        checks = checks_text(self.checks)
        fix = "\nremediation:\n" + "\n".join(self.remediation) if self.remediation else ""
        said = "".join(f"\n{note}" for note in self.notes)
        return head + (":\n" + self.diff if self.diff else "") + fix + said + (
            "\n" + checks if checks else "")


@dataclass(frozen=True)
class ChangeOptions:
    """How a change is made: its options, as the task was given them."""

    task: str
    host: str
    platform: str | None
    dry_run: bool
    rollback: bool
    save: bool
    backup: Callable[[str], Path]
    checks: tuple[StateCheck, ...] = ()
    settle: float = 0.0
    confirm: float | None = None  # the window, in seconds
    new_login: bool = True  # with confirm, a new login must succeed too
    journal: str | None = None
    driver: HConfigDriverBase = field(default_factory=HConfigDriverGeneric)
    replace: bool = False  # mode: replace (else merge)
    scope: tuple[str, ...] = ()
    ignore: tuple[re.Pattern[str], ...] = ()
    keep_configs: bool = False  # the configurations read kept on the result (ConfigsRead)


class AroundChange:
    """What is read around a change (its checks), and its entry in the journal when it waits
    for confirmation (``confirm``)."""

    def __init__(self, how: ChangeOptions) -> None:
        self.how = how
        self.outcomes = [CheckOutcome(check) for check in how.checks]
        self.journal: str | None = None  # where its pending entry was written, if it was

    def records(self) -> list[dict[str, Any]]:
        return [outcome.record() for outcome in self.outcomes]

    def read_before(self) -> Plan[None]:
        """Each check's value before the change; one not read leaves the device untouched."""
        if not self.how.checks:
            return
        values = yield from read_checks(self.how.checks, self.how.platform)
        pairs = list(zip(self.how.checks, values, strict=True))
        self.outcomes = [
            CheckOutcome(check, before=value, failure=why and f"before the change, {why}")
            for check, (value, why) in pairs
        ]
        unread = [f"{check.said()}: {why}" for check, (_, why) in pairs if why]
        if unread:
            raise ConfigChangeFailed(
                f"before the change, {'; '.join(unread)}: not touched", state=NOT_TOUCHED,
                backup=None, checks=self.records(),
            )

    def pending(self, backup: str, *, device_reverts_at: float | None = None) -> None:
        """The change waits for confirmation from now on: in the journal before it is sent;
        ``device_reverts_at``: the device reverts it itself by then (a ``time.time()``)."""
        how = self.how
        if how.confirm is None or how.journal is None:
            return
        device = {} if device_reverts_at is None else {"device_reverts_at": device_reverts_at}
        append_entry(how.journal, how.host, PENDING, backup=backup, task=how.task,
                     until=time.time() + how.confirm, **device)
        self.journal = how.journal

    def confirming(self) -> None:
        """The confirmation is about to be sent to the device (a NETCONF ``<commit>`` ending a
        confirmed commit): a run that dies from now on leaves a change whose state only the
        device knows."""
        if self.journal is not None:
            append_entry(self.journal, self.how.host, PENDING, confirming=True)

    def ended(self, state: str) -> None:
        if self.journal is not None:
            append_entry(self.journal, self.how.host, state)

    def read_after(self) -> Plan[str | None]:
        """Why the change must be undone (``None``: every check holds): the checks read once,
        or, with ``confirm``, again until they hold, a new login included (``new_login``),
        within its window."""
        how = self.how
        if not how.checks and how.confirm is None:
            return None
        if how.settle:
            yield Wait(how.settle)
        until = None if how.confirm is None else time.monotonic() + how.confirm
        while True:
            problem = None
            if how.confirm is not None and how.new_login:
                try:
                    yield Login()
                except PastDeadline:
                    raise
                except Exception as exc:  # noqa: BLE001 - not reached again: not confirmed
                    problem = f"no new login to the device ({type(exc).__name__}: {exc})"
            if problem is None:
                problem = yield from self._checks_after()
                if problem is None:
                    return None
            if until is None or time.monotonic() >= until:
                window = "" if how.confirm is None else \
                    f" (not confirmed within {seconds_text(how.confirm)} s)"
                return f"after the change, {problem}{window}"
            yield Wait(min(1.0, max(0.0, until - time.monotonic())))

    def _checks_after(self) -> Plan[str | None]:
        values = yield from read_checks(self.how.checks, self.how.platform)
        self.outcomes = [
            CheckOutcome(o.check, before=o.before, after=value, after_read=True,
                         failure=why or o.check.fails(o.before, value))
            for o, (value, why) in zip(self.outcomes, values, strict=True)
        ]
        return failures_said(self.outcomes) or None


# -- the plan: what to ask the device, in order (tasks.sessions._plan drives it) -------------


def check_around(params: Mapping[str, Any], *, netconf: bool = False) -> float | None:
    """The checks (read over NETCONF: ``netconf``), ``settle`` and ``confirm`` checked; the
    confirm window, if any."""
    checks_from(params.get("checks"), netconf=netconf)
    if params.get("settle") is not None:
        number("settle", params["settle"], minimum=0, maximum=MAX_CONFIRM,
               unit="a number of seconds")
    confirm = params.get("confirm")
    if confirm is None:
        return None
    keys = (["within"], ["new_login", "within"]) if netconf else (["within"],)
    if not isinstance(confirm, Mapping) or sorted(confirm) not in keys:
        allowed = "{within: SECONDS} or {within: SECONDS, new_login: true}" if netconf \
            else "{within: SECONDS}"
        raise ValueError(f"confirm must be {allowed}, got {confirm!r}")
    if not isinstance(confirm.get("new_login", False), bool):
        raise ValueError(f"confirm.new_login must be true or false, got "
                         f"{confirm['new_login']!r}")
    within = number("confirm.within", confirm["within"], above=0, maximum=MAX_CONFIRM,
                    unit="a number of seconds")
    if params.get("rollback") is False:
        raise ValueError(
            "confirm reverts a change that is not confirmed, and rollback: false says not to "
            "revert: give one or the other"
        )
    return float(within)
