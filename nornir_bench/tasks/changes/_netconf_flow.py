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

import random
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
from nornir_bench.tasks.changes.journal import (
    CONFIRMED,
    PENDING,
    REVERT_FAILED,
    REVERTED,
    append_entry,
)
from nornir_bench.tasks.dialects.netconf_xml import as_config, config_text, xml_diff
from nornir_bench.tasks.sessions._netconf_requests import (
    CANDIDATE,
    LOCK_DENIED,
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
from nornir_bench.tasks.sessions._plan import PastDeadline, Plan, Wait

__all__ = ["device_reverts", "netconf_flow"]

# What holds on the device once a plain commit, or a confirming one, is answered.
_COMMITTED = "committed: running holds the change"
_CONFIRMED = "committed and confirmed: running holds the change"
_CANCELLED = "cancelled: the server reverted its confirmed commit"

_FIRST_ASK, _LAST_ASK = 0.05, 0.5  # seconds between asks for a lock another session holds


def netconf_flow(
    config: str, how: ChangeOptions, progress: ChangeProgress, *, confirm_timeout: int | None,
    lock_wait: float = 0.0,
) -> Plan[Change]:
    """The change of ``config`` (a ``<config>`` element's XML) on the host's candidate, as
    requests to the server; what it did. ``confirm_timeout``: the seconds the server waits
    for the confirming ``<commit>`` (with ``how.confirm``); ``lock_wait``: the seconds the
    lock is asked for again while another session holds it."""
    around = AroundChange(how)
    yield from _lock(lock_wait, around)
    # The checks are read under the lock: their values are those the change starts from,
    # after another session's change that the lock waited for too. One not read raises: the
    # session is dropped, which gives the lock back.
    yield from around.read_before()
    change = yield from _locked(config, how, progress, around, confirm_timeout)
    try:
        yield Unlock()
    except PastDeadline:
        raise
    except Exception as exc:  # raised: the driver drops the session (ndrive)
        backup = f", backup at {change.backup}" if change.backup else ""
        said = str(exc) if isinstance(exc, NetconfRefused) else \
            f"the session failed at <unlock> ({type(exc).__name__}: {exc})"
        raise ConfigChangeFailed(
            f"the change ended {change.state}{backup}; then {said}: the session is dropped, "
            "which gives the lock back and leaves running as the change left it",
            state=change.state, backup=change.backup, diff=change.diff, checks=change.checks,
        ) from exc
    return change


def _lock(lock_wait: float, around: AroundChange) -> Plan[None]:
    """The candidate locked; while another session holds it (``lock-denied``), asked again
    for ``lock_wait`` seconds, the pause between asks growing from :data:`_FIRST_ASK` to
    :data:`_LAST_ASK` (each a little shorter at random, so that hosts waiting on one server
    do not ask in step)."""
    until = time.monotonic() + lock_wait
    pause = _FIRST_ASK
    while True:
        try:
            yield Lock()
            return
        except NetconfRefused as refused:
            left = until - time.monotonic()
            if refused.tag != LOCK_DENIED or left <= 0:
                held = f" (held by session {refused.holder})" if refused.holder else ""
                waited = f" after asking for {lock_wait:g} s" \
                    if lock_wait and refused.tag == LOCK_DENIED else ""
                raise ConfigChangeFailed(
                    f"{refused}{held}: nothing sent{waited}", state=NOT_TOUCHED, backup=None,
                    checks=around.records(),
                ) from None
        yield Wait(min(left, pause * random.uniform(0.5, 1.0)))
        pause = min(pause * 2, _LAST_ASK)


def device_reverts(seconds: int) -> str:
    """What holds on a server whose confirmed commit (of ``seconds``) is not confirmed."""
    return (f"the server reverts its confirmed commit itself when the session ends, or "
            f"{seconds} s after the commit")


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
                                      progress, confirm_timeout))
    except (ConfigChangeFailed, PastDeadline):
        raise
    except Exception as exc:  # the session failed under the change: it is dropped
        how_failed = f"ended during the change ({exc})" if isinstance(exc, SessionLost) else \
            f"failed during the change ({type(exc).__name__}: {exc})"
        raise ConfigChangeFailed(
            _masked(f"the session {how_failed}: {progress.unknown_or_holds()} backup at {saved}"),
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
    around: AroundChange, progress: ChangeProgress, confirm_timeout: int | None,
) -> Plan[Change]:
    """The candidate committed (confirmed, with ``confirm_timeout``), the checks read after:
    confirmed, or cancelled (a confirmed commit) or rolled back (a plain one). Each step
    notes what holds on the device if the change stops there (``progress``)."""
    try:
        yield Commit(confirm_timeout)
    except NetconfRefused as refused:
        yield from _discarded()
        around.ended(REVERTED)
        raise ConfigChangeFailed(
            _masked(f"{refused}: candidate discarded, running untouched"),
            state=NOT_TOUCHED, backup=saved, checks=around.records(),
        ) from None
    progress.holding(_COMMITTED if confirm_timeout is None else device_reverts(confirm_timeout))
    problem = yield from around.read_after()
    if problem is None:
        if confirm_timeout is not None:
            yield from _confirmed(saved, around, progress, confirm_timeout)
        around.ended(CONFIRMED)
        try:
            now = config_text((yield GetConfig(RUNNING)))
        except PastDeadline:
            raise
        except Exception as exc:  # the change holds: only its reading back failed
            raise ConfigChangeFailed(
                _masked(f"{progress.unknown_or_holds()} backup at {saved}; then the session "
                        f"failed reading running back ({type(exc).__name__}: {exc}): it is "
                        "dropped"),
                state=CHANGED, backup=saved, diff=diff, checks=around.records(),
            ) from exc
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
        try:
            yield CancelCommit()
        except NetconfRefused as refused:  # pending in the journal: the device's to revert
            raise _still_pending(f"{problem}; {refused}", saved, around,
                                 confirm_timeout) from None
        how_undone = "<cancel-commit> sent: the server reverted its confirmed commit"
        progress.holding(_CANCELLED)
    else:
        progress.holding(None)  # the candidate made the configuration before, then committed
        try:
            yield CopyConfig(as_config(running_xml))
            yield Commit()
        except NetconfRefused as refused:
            raise ConfigChangeFailed(
                _masked(f"{problem}; rolling back, {refused}: ROLLBACK FAILED: running holds "
                        f"the change, the configuration before is in the backup at {saved}"),
                state=ROLLBACK_FAILED, backup=saved, diff=diff, checks=around.records(),
            ) from None
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


def _confirmed(
    saved: str, around: AroundChange, progress: ChangeProgress, confirm_timeout: int
) -> Plan[None]:
    """The confirming ``<commit>`` sent, journaled ``confirming`` first: once sent, what holds
    is the server's to say; refused, the confirmed commit is still pending."""
    around.confirming()
    progress.holding(None)
    try:
        yield Commit()
    except (NetconfRefused, SessionLost) as refused:  # not sent, or answered no
        if around.journal is not None:  # not confirmed after all: the device reverts it
            append_entry(around.journal, around.how.host, PENDING, confirming=False)
        said = f"{refused} (the confirming one)" if isinstance(refused, NetconfRefused) else \
            f"the session ended before the confirming <commit> was sent ({refused})"
        raise _still_pending(said, saved, around, confirm_timeout) from None
    progress.holding(_CONFIRMED)


def _still_pending(
    refused: str, saved: str, around: AroundChange, confirm_timeout: int
) -> ConfigChangeFailed:
    """The failure of a change whose confirmed commit is still pending after ``refused``:
    the session is dropped (the plan raises), and the server reverts the commit itself."""
    return ConfigChangeFailed(
        _masked(f"{refused}: the confirmed commit is still pending: the session is dropped, "
                f"and {device_reverts(confirm_timeout)}; backup at {saved}"),
        state=INTERRUPTED, backup=saved, checks=around.records(),
    )
