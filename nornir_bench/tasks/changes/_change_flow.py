"""A configuration change as one plan: read, diff, back up, send, verify, roll back, save.

:func:`change_flow` is the whole of a change's conversation with its device, written once as a
plan (:mod:`~nornir_bench.tasks.sessions._plan`) that ``send_config`` (netmiko) and
``asend_config`` (scrapli) both drive; :mod:`~nornir_bench.tasks.changes.config` checks the
parameters, makes the lines and describes the steps. Verifying reads the configuration back:
a line the device took but does not hold fails the change as surely as one it refused.
"""

from __future__ import annotations

from collections.abc import Sequence

from nornir_bench.core.changes import (
    CHANGED,
    COMPLIANT,
    DRIFTED,
    INTERRUPTED,
    NO_CHANGE,
    NOT_ROLLED_BACK,
    NOT_SAVED,
    ROLLBACK_FAILED,
    ROLLED_BACK,
    WOULD_CHANGE,
    ConfigsRead,
)
from nornir_bench.core.secrets import mask_config_secrets
from nornir_bench.tasks.changes._change import (
    AroundChange,
    Change,
    ChangeOptions,
    ConfigChangeFailed,
)
from nornir_bench.tasks.changes.backups import ChangeProgress
from nornir_bench.tasks.changes.journal import CONFIRMED, REVERT_FAILED, REVERTED
from nornir_bench.tasks.changes.restore import restoring
from nornir_bench.tasks.dialects.config_text import (
    HConfig,
    config_diff,
    in_scope,
    merged,
    parse_config,
    remediation,
    replaced,
    same,
    save_refusal,
)
from nornir_bench.tasks.sessions._plan import SAVE, PastDeadline, Plan, Read, Save, Send

__all__ = ["change_flow"]


def change_flow(
    lines: Sequence[str], how: ChangeOptions, progress: ChangeProgress
) -> Plan[Change]:
    """The change of ``lines``, as requests to the device (see ``tasks.changes.config`` for the
    steps); what it did. ``progress`` follows how far it got."""
    running: str = yield Read()
    before = parse_config(running, how.driver, how.ignore)
    given = parse_config(lines, how.driver, how.ignore)
    target = _target(before, given, how)
    diff = mask_config_secrets(config_diff(before, target))
    around = AroundChange(how)
    yield from around.read_before()
    if how.dry_run:
        return Change(_dry_state(how, diff), diff, checks=around.records(),
                      remediation=_masked(remediation(before, target)) if how.replace else ())
    if not diff:  # nothing to send; saved all the same, so that a change left unsaved is now
        kept = ConfigsRead.unchanged(running) if how.keep_configs else None
        if how.save:
            yield from _save("", None, around, kept)
        return Change(NO_CHANGE, diff, checks=around.records(), configs=kept)
    saved = str(how.backup(running))
    progress.sends(saved)
    around.pending(saved)
    read = _Read(running, how.keep_configs)
    try:
        problem, printed, now = yield from _apply(lines, before, given, target, how)
        read.after = printed
        if problem is None:
            problem = yield from around.read_after()
        if problem is None:
            around.ended(CONFIRMED)
            diff = mask_config_secrets(config_diff(before, now))
            if how.save:
                yield from _save(diff, saved, around, read.kept())
            return Change(CHANGED, diff, saved, checks=around.records(), configs=read.kept())
        # Rolled back whole: the ignored lines too, so that they are compared with the backup.
        yield from _roll_back(mask_config_secrets(problem), _whole(running, before, how),
                              _whole(printed, now, how), saved, how, around, read)
    except ConfigChangeFailed:
        raise
    except Exception as exc:  # the session failed under the change: what holds is unknown
        raise ConfigChangeFailed(
            mask_config_secrets(
                f"the session failed during the change ({type(exc).__name__}: {exc}): state "
                f"unknown, backup at {saved}"
            ), state=INTERRUPTED, backup=saved, checks=around.records(),
            configs=read.kept(after_known=False),
        ) from exc
    raise AssertionError("a rollback ends in an error")  # pragma: no cover


class _Read:
    """The configuration a change read before, and the one it read back last, kept for the
    result when the change is asked to (``keep_configs``)."""

    __slots__ = ("after", "before", "keep")

    def __init__(self, before: str, keep: bool) -> None:
        self.before, self.keep = before, keep
        self.after: str | None = None

    def kept(self, *, after_known: bool = True) -> ConfigsRead | None:
        """What the result keeps: ``None`` unless asked; the after ``None`` once unknown (the
        session failed, the device not read again)."""
        if not self.keep:
            return None
        return ConfigsRead.of(self.before, self.after if after_known else None)


def _target(before: HConfig, given: HConfig, how: ChangeOptions) -> HConfig:
    """The configuration the change aims at: ``given`` merged into ``before``, or, replaced,
    ``given`` within the scope and ``before`` outside it."""
    return replaced(before, given, how.scope) if how.replace else merged(before, given)


def _dry_state(how: ChangeOptions, diff: str) -> str:
    if how.replace:
        return DRIFTED if diff else COMPLIANT
    return WOULD_CHANGE if diff else NO_CHANGE


def _whole(text: str, parsed: HConfig, how: ChangeOptions) -> HConfig:
    """``text``'s configuration with the lines ``ignore`` left out of ``parsed``."""
    return parse_config(text, how.driver) if how.ignore else parsed


def _masked(lines: Sequence[str]) -> tuple[str, ...]:
    return tuple(mask_config_secrets("\n".join(lines)).splitlines())


def _apply(
    lines: Sequence[str], before: HConfig, given: HConfig, target: HConfig, how: ChangeOptions
) -> Plan[tuple[str | None, str, HConfig]]:
    """The lines that take ``before`` to ``target`` sent (what a change half made before
    left to do), and verified: what went wrong (``None``: nothing), and the configuration
    read back, as the device printed it and parsed."""
    sent = remediation(before, target)
    refused: tuple[int, str] | None = yield Send(tuple(sent))
    printed: str = yield Read()
    now = parse_config(printed, how.driver, how.ignore)
    if refused is not None:
        return _refused(lines, sent, *refused), printed, now
    if how.replace:  # read back, the scope must be the intended configuration
        left = config_diff(in_scope(now, how.scope), in_scope(target, how.scope))
        if left:
            return "not verified: read back, the configuration still differs from the " \
                   "intended one:\n" + left, printed, now
    else:  # read back, the change must leave nothing to do (held, not only taken)
        left = config_diff(now, merged(now, given))
        if left:
            return "not verified: read back, the configuration still lacks:\n" + left, \
                printed, now
    return None, printed, now


def _refused(lines: Sequence[str], sent: Sequence[str], index: int, said: str) -> str:
    """The refused line, by its number among the lines given where it is one of them, else
    among the remediation's (a removal the change computed)."""
    line = sent[index].strip()
    given = [k for k, text in enumerate(lines) if text.strip() == line]
    where = (f"line {given[0] + 1} of {len(lines)}" if given
             else f"remediation line {index + 1} of {len(sent)}")
    return f"{where} refused: {line!r}: {said}"


def _roll_back(
    problem: str, before: HConfig, now: HConfig, saved: str, how: ChangeOptions,
    around: AroundChange, read: _Read,
) -> Plan[None]:
    """Back to ``before`` (backed up in ``saved``), or not (``rollback: false``): always ends
    in :class:`ConfigChangeFailed` saying which."""
    if not how.rollback:
        raise ConfigChangeFailed(
            f"{problem}; not rolled back (rollback: false): the configuration differs from "
            f"the backup at {saved}", state=NOT_ROLLED_BACK, backup=saved,
            diff=mask_config_secrets(config_diff(before, now)), checks=around.records(),
            configs=read.kept(),
        )
    why = ""
    try:
        now, read.after = yield from restoring(before, now, read.after or "")
    except PastDeadline:
        raise
    except Exception as exc:  # noqa: BLE001 - the device could not be reached to restore it
        why = f" (the device could not be reached: {type(exc).__name__}: {exc})"
    if not why and same(now, before):
        around.ended(REVERTED)
        raise ConfigChangeFailed(
            f"{problem}; rolled back to the backup at {saved}", state=ROLLED_BACK, backup=saved,
            checks=around.records(), configs=read.kept(),
        )
    around.ended(REVERT_FAILED)
    left = "" if why else mask_config_secrets(config_diff(before, now))
    raise ConfigChangeFailed(
        mask_config_secrets(
            f"{problem}; ROLLBACK FAILED{why}: the configuration differs from the backup at "
            f"{saved}" + (f":\n{left}" if left else "")
        ), state=ROLLBACK_FAILED, backup=saved, diff=left or "state unknown",
        checks=around.records(), configs=read.kept(after_known=not why),
    )


def _save(
    diff: str, saved: str | None, around: AroundChange, configs: ConfigsRead | None
) -> Plan[None]:
    """``write memory``, checked: a reply refusing it, or an error on the way, fails the host
    with :data:`NOT_SAVED`. A change made (``diff``, backed up in ``saved``) stays: it
    verified, and saving is no reason to undo it."""
    try:
        said = save_refusal((yield Save()))
        if said is None:
            return
        why = f"refused: {said}"
    except PastDeadline:
        raise
    except Exception as exc:  # noqa: BLE001 - the session failed under the save: not saved
        why = f"failed ({type(exc).__name__}: {exc})"
    made = (
        f"changed, not saved: the change is on the device, verified, not rolled back (backup "
        f"at {saved})" if diff else "not saved (nothing to change: the change was made before)"
    )
    raise ConfigChangeFailed(mask_config_secrets(f"{SAVE!r} {why}; {made}"), state=NOT_SAVED,
                             backup=saved, diff=diff, checks=around.records(), configs=configs)
