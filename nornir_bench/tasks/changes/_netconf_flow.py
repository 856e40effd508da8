"""A NETCONF change as one plan: lock, edit, validate, diff, commit (confirmed or not), the
checks, confirm or cancel, unlock.

:func:`netconf_flow` is the whole of a NETCONF change's conversation with its server, written
once (:mod:`~nornir_bench.tasks.sessions._netconf_plan`) for ``netconf_edit_config`` and
``anetconf_edit_config``; :mod:`~nornir_bench.tasks.changes.netconf_config` checks the
parameters and describes the steps. What makes it safe is the server's: the candidate holds
the edit until ``<commit>``, ``:rollback-on-error`` takes back an edit half applied, and a
confirmed commit is reverted by the server itself unless confirmed in time.
"""

from __future__ import annotations

import time

from nornir_bench.core.changes import (
    CHANGED,
    INTERRUPTED,
    NO_CHANGE,
    NOT_ROLLED_BACK,
    NOT_TOUCHED,
    ROLLBACK_FAILED,
    ROLLED_BACK,
    WOULD_CHANGE,
)
from nornir_bench.core.secrets import mask_config_secrets, mask_xml_secrets
from nornir_bench.tasks.changes._change import (
    AroundChange,
    Change,
    ChangeOptions,
    ConfigChangeFailed,
)
from nornir_bench.tasks.changes.backups import ChangeProgress
from nornir_bench.tasks.changes.journal import CONFIRMED, REVERT_FAILED, REVERTED
from nornir_bench.tasks.dialects.netconf_xml import as_config, config_text, xml_diff
from nornir_bench.tasks.sessions._netconf_requests import (
    CANDIDATE,
    RUNNING,
    CancelCommit,
    Commit,
    CopyConfig,
    DiscardChanges,
    EditConfig,
    GetConfig,
    Lock,
    NetconfRefused,
    SessionLost,
    Unlock,
    Validate,
)
from nornir_bench.tasks.sessions._plan import PastDeadline, Plan

__all__ = ["netconf_flow"]


def netconf_flow(
    config: str, how: ChangeOptions, progress: ChangeProgress, *, confirm_timeout: int | None
) -> Plan[Change]:
    """The change of ``config`` (a ``<config>`` element's XML) on the host's candidate, as
    requests to the server; what it did. ``confirm_timeout``: the seconds the server waits
    for the confirming ``<commit>`` (with ``how.confirm``)."""
    around = AroundChange(how)
    yield from around.read_before()
    try:
        yield Lock()
    except NetconfRefused as refused:
        held = f" (held by session {refused.holder})" if refused.holder else ""
        raise ConfigChangeFailed(
            f"{refused}{held}: nothing sent", state=NOT_TOUCHED, backup=None,
            checks=around.records(),
        ) from None
    change = yield from _locked(config, how, progress, around, confirm_timeout)
    try:
        yield Unlock()
    except NetconfRefused as refused:  # the session is dropped, which frees the lock
        raise ConfigChangeFailed(
            f"{change.state}, and then {refused}: the session is dropped to give the lock "
            "back", state=change.state, backup=change.backup, diff=change.diff,
            checks=change.checks,
        ) from None
    return change


def _locked(
    config: str, how: ChangeOptions, progress: ChangeProgress, around: AroundChange,
    confirm_timeout: int | None,
) -> Plan[Change]:
    """The change, the candidate locked: the lock is given back on every path that leaves the
    session usable (the others drop the session, which gives it back)."""
    try:
        running_xml = yield GetConfig(RUNNING)
        running = config_text(running_xml)
        yield EditConfig(config)
        candidate_xml = yield GetConfig(CANDIDATE)
        yield Validate(as_config(candidate_xml))
    except NetconfRefused as refused:
        yield from _discarded()
        raise ConfigChangeFailed(
            _masked(f"{refused}: candidate discarded, running untouched"),
            state=NOT_TOUCHED, backup=None, checks=around.records(),
        ) from None
    candidate = config_text(candidate_xml)
    diff = _masked(xml_diff(running, candidate))
    if how.dry_run or not diff:
        yield DiscardChanges()
        return Change(WOULD_CHANGE if diff else NO_CHANGE, diff, checks=around.records())
    saved = str(how.backup(running))
    progress.sends(saved)
    until = None if confirm_timeout is None else time.time() + confirm_timeout
    around.pending(saved, device_reverts_at=until)
    try:
        return (yield from _committed(running_xml, running, diff, saved, how, around,
                                      confirm_timeout))
    except (ConfigChangeFailed, PastDeadline):
        raise
    except Exception as exc:  # the session failed under the change: what holds is unknown
        reverts = "" if confirm_timeout is None else (
            f"; the server reverts its confirmed commit itself (when it sees this session end, or "
            f"{confirm_timeout} s after the commit)")
        how_failed = f"ended during the change ({exc})" if isinstance(exc, SessionLost) else \
            f"failed during the change ({type(exc).__name__}: {exc})"
        raise ConfigChangeFailed(
            _masked(f"the session {how_failed}: state unknown{reverts}, backup at {saved}"),
            state=INTERRUPTED, backup=saved, checks=around.records(),
        ) from exc


def _masked(text: str) -> str:
    """``text`` (XML, a diff of it, a message quoting it) with its secrets masked."""
    return mask_xml_secrets(mask_config_secrets(text))


def _discarded() -> Plan[None]:
    try:
        yield DiscardChanges()
    except NetconfRefused:
        pass  # the lock's end (the session's) discards it all the same


def _committed(
    running_xml: str, running: str, diff: str, saved: str, how: ChangeOptions,
    around: AroundChange, confirm_timeout: int | None,
) -> Plan[Change]:
    """The candidate committed (confirmed, with ``confirm_timeout``), the checks read after:
    confirmed, or cancelled (a confirmed commit) or rolled back (a plain one)."""
    try:
        yield Commit(confirm_timeout)
    except NetconfRefused as refused:
        yield from _discarded()
        around.ended(REVERTED)
        raise ConfigChangeFailed(
            _masked(f"{refused}: candidate discarded, running untouched"),
            state=NOT_TOUCHED, backup=saved, checks=around.records(),
        ) from None
    problem = yield from around.read_after()
    if problem is None:
        if confirm_timeout is not None:
            around.confirming()
            yield Commit()  # the confirming one
        around.ended(CONFIRMED)
        now = config_text((yield GetConfig(RUNNING)))
        return Change(CHANGED, _masked(xml_diff(running, now)) or diff, saved,
                      checks=around.records())
    if confirm_timeout is None and not how.rollback:
        now = config_text((yield GetConfig(RUNNING)))
        raise ConfigChangeFailed(
            f"{problem}; not rolled back (rollback: false): running differs from the backup "
            f"at {saved}", state=NOT_ROLLED_BACK, backup=saved,
            diff=_masked(xml_diff(running, now)), checks=around.records(),
        )
    if confirm_timeout is not None:
        yield CancelCommit()
        how_undone = "<cancel-commit> sent: the server reverted its confirmed commit"
    else:
        yield CopyConfig(as_config(running_xml))
        yield Commit()
        how_undone = "rolled back: the configuration before committed again"
    now = config_text((yield GetConfig(RUNNING)))
    left = _masked(xml_diff(running, now))
    if not left:
        around.ended(REVERTED)
        raise ConfigChangeFailed(f"{problem}; {how_undone} (backup at {saved})",
                                 state=ROLLED_BACK, backup=saved, checks=around.records())
    around.ended(REVERT_FAILED)
    raise ConfigChangeFailed(
        f"{problem}; {how_undone}, and yet ROLLBACK FAILED: running differs from the backup "
        f"at {saved}:\n{left}", state=ROLLBACK_FAILED, backup=saved, diff=left,
        checks=around.records(),
    )
