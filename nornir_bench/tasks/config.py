"""Change a device's configuration safely: ``send_config`` (netmiko, blocking) and
``asend_config`` (scrapli, async).

Both take the same steps, one plan (:func:`_change`) that a blocking and an async driver run
against the device:

1. **The lines**: ``lines`` (a list), ``config_file``, or ``template_file`` (Jinja2, rendered
   for each host with ``host`` and ``variables``; an undefined variable fails the host before
   its device is touched). In a job file, a ``..._file`` is found from the job's folder
   (:mod:`~nornir_bench.tasks.config_input`).
2. **What they aim at** (:mod:`~nornir_bench.tasks.config_text`, hier_config in the host's
   dialect): ``mode: merge`` (the default), the running configuration with the lines applied
   as the device would; ``mode: replace``, the lines as the whole intended configuration, or
   the sections ``scope`` names. Lines ``ignore`` matches are left out. A unified diff.
3. **Dry run** (nornir's ``dry_run``: the task's parameter, ``nr.run(dry_run=True)``, or
   ``nornir-bench run --check``): the diff is the result, ``changed`` says whether anything
   would change, and nothing is sent in configuration mode. A replace says ``compliant`` or
   ``drifted``, with the remediation.
4. **Nothing to change**: nothing is sent; ``changed`` is false, the diff empty. So a change
   applied twice reports ``changed: false`` the second time.
5. **Backup**: the running configuration as read, to a file of its own (mode 0600: it holds
   the device's secrets, so that it can be restored) under ``backup_dir`` (default: the
   records folder's ``backups/``); its path is in the result and the record.
6. **Apply**: the remediation (what the change still has to do: a change half made before,
   by a run stopped in the middle, is completed), one line at a time in configuration mode,
   stopping at the first the device refuses (a reply line starting ``% ``: ``% Invalid
   input``, FRR's ``% Unknown command`` and ``% Refusing to remove a non-existent route``).
7. **Verify**: read back, a merge must leave the lines nothing to do; a replace must find the
   intended configuration within its scope.
8. **Rollback** (on by default; ``rollback=False`` turns it off), after a refused line or a
   failed verification: the remediation back to the backup, in rounds, then the
   configuration read back and compared with the backup. The host fails with
   :class:`ConfigChangeFailed`, which says ``rolled back`` or ``rollback failed: ...``.
9. **Save** (``save=True``): ``write memory`` once the change verified, or when there was
   nothing to change (a change left unsaved is saved then). A reply refusing it (a line
   starting ``%``, not a warning) fails the host with state ``not saved``; the change stays.

Secrets in configuration lines (``username admin secret ...``) are masked in the result, the
diff and every message (:func:`~nornir_bench.core.secrets.mask_config_secrets`); only the
backup file holds them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from nornir.core.task import Result

from nornir_bench.core.changes import (
    CHANGED,
    COMPLIANT,
    DRIFTED,
    INTERRUPTED,
    NO_CHANGE,
    NOT_ROLLED_BACK,
    NOT_SAVED,
    NOT_TOUCHED,
    ROLLBACK_FAILED,
    ROLLED_BACK,
    WOULD_CHANGE,
    note_change,
)
from nornir_bench.core.checks import number
from nornir_bench.core.read_only import read_only
from nornir_bench.core.secrets import mask_config_secrets
from nornir_bench.core.traits import with_traits
from nornir_bench.tasks._change import (
    AroundChange,
    Change,
    ChangeOptions,
    ConfigChangeFailed,
    check_around,
)
from nornir_bench.tasks._needs import DEVICES_EXTRA, needs, require_libraries
from nornir_bench.tasks._params import check_params_with
from nornir_bench.tasks._plan import (
    SAVE,
    PastDeadline,
    Plan,
    Read,
    Save,
    Send,
    adrive,
    drive,
)
from nornir_bench.tasks.backups import abandoned_failure, backup_writer
from nornir_bench.tasks.config_input import (
    check_config_params,
    check_mode,
    check_scope,
    config_lines,
    prepare_config,
)
from nornir_bench.tasks.config_text import (
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
from nornir_bench.tasks.dialects import dialect_of, driver_for
from nornir_bench.tasks.journal import CONFIRMED, REVERT_FAILED, REVERTED
from nornir_bench.tasks.restore import restoring
from nornir_bench.tasks.state_checks import (
    checks_from,
    resolved,
)

if TYPE_CHECKING:
    from nornir.core.inventory import Host
    from nornir.core.task import Task

__all__ = [
    "DEFAULT_CONFIG_TIMEOUT",
    "ConfigChangeFailed",
    "Change",
    "asend_config",
    "send_config",
]

DEFAULT_CONFIG_TIMEOUT = 60.0
"""Seconds for the login, and again for each exchange with the device."""

class _Progress:
    """How far a change got: its backup, and whether lines were sent to the device; noted on
    the host's task as it goes (``core.changes``), for a deadline that stops it to say."""

    __slots__ = ("backup", "sending", "task")

    def __init__(self, task: Task) -> None:
        self.task = task
        self.backup: str | None = None
        self.sending = False
        note_change(task, NOT_TOUCHED)

    def sends(self, backup: str) -> None:
        """The backup is written: lines go to the device from now on."""
        self.backup = backup
        self.sending = True
        note_change(self.task, INTERRUPTED, backup)

    def ended(self, state: str, backup: str | None) -> None:
        """The change ended as its result or error says: a deadline after it says so too."""
        note_change(self.task, state, backup)


def _noting(plan: Plan[Change], progress: _Progress) -> Plan[Change]:
    """``plan``, its end noted on the host's task (see :class:`_Progress`)."""
    try:
        change = yield from plan
    except ConfigChangeFailed as failed:
        progress.ended(failed.state, failed.backup)
        raise
    progress.ended(change.state, change.backup)
    return change


def _change(lines: Sequence[str], how: ChangeOptions, progress: _Progress) -> Plan[Change]:
    """The change, as requests to the device (see the module); what it did. ``progress``
    follows how far it got."""
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
        if how.save:
            yield from _save("", None, around)
        return Change(NO_CHANGE, diff, checks=around.records())
    saved = str(how.backup(running))
    progress.sends(saved)
    around.pending(saved)
    try:
        problem, printed, now = yield from _apply(lines, before, given, target, how)
        if problem is None:
            problem = yield from around.read_after()
        if problem is None:
            around.ended(CONFIRMED)
            diff = mask_config_secrets(config_diff(before, now))
            if how.save:
                yield from _save(diff, saved, around)
            return Change(CHANGED, diff, saved, checks=around.records())
        # Rolled back whole: the ignored lines too, so that they are compared with the backup.
        yield from _roll_back(mask_config_secrets(problem), _whole(running, before, how),
                              _whole(printed, now, how), saved, how, around)
    except ConfigChangeFailed:
        raise
    except Exception as exc:  # the session failed under the change: what holds is unknown
        raise ConfigChangeFailed(
            mask_config_secrets(
                f"the session failed during the change ({type(exc).__name__}: {exc}): state "
                f"unknown, backup at {saved}"
            ), state=INTERRUPTED, backup=saved, checks=around.records(),
        ) from exc
    raise AssertionError("a rollback ends in an error")  # pragma: no cover


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
    around: AroundChange,
) -> Plan[None]:
    """Back to ``before`` (backed up in ``saved``), or not (``rollback: false``): always ends
    in :class:`ConfigChangeFailed` saying which."""
    if not how.rollback:
        raise ConfigChangeFailed(
            f"{problem}; not rolled back (rollback: false): the configuration differs from "
            f"the backup at {saved}", state=NOT_ROLLED_BACK, backup=saved,
            diff=mask_config_secrets(config_diff(before, now)), checks=around.records(),
        )
    why = ""
    try:
        now = yield from restoring(before, now)
    except PastDeadline:
        raise
    except Exception as exc:  # noqa: BLE001 - the device could not be reached to restore it
        why = f" (the device could not be reached: {type(exc).__name__}: {exc})"
    if not why and same(now, before):
        around.ended(REVERTED)
        raise ConfigChangeFailed(
            f"{problem}; rolled back to the backup at {saved}", state=ROLLED_BACK, backup=saved,
            checks=around.records(),
        )
    around.ended(REVERT_FAILED)
    left = "" if why else mask_config_secrets(config_diff(before, now))
    raise ConfigChangeFailed(
        mask_config_secrets(
            f"{problem}; ROLLBACK FAILED{why}: the configuration differs from the backup at "
            f"{saved}" + (f":\n{left}" if left else "")
        ), state=ROLLBACK_FAILED, backup=saved, diff=left or "state unknown",
        checks=around.records(),
    )


def _save(diff: str, saved: str | None, around: AroundChange) -> Plan[None]:
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
                             backup=saved, diff=diff, checks=around.records())


def _result(host: Host, change: Change) -> Result:
    result = Result(host=host, result=change.text(), changed=change.changed, diff=change.diff)
    result.change = change.record()  # type: ignore[attr-defined]
    result.checks = change.checks  # type: ignore[attr-defined]
    return result


_changing = with_traits(
    honours_dry_run=True, prepare=prepare_config, abandoned_failure=abandoned_failure
)
"""Marks a change task: it honours ``dry_run``; a job makes every host's lines before the step
touches any device (``prepare``); and it says what it may have done when Ctrl-C stops it in
flight (``abandoned_failure``)."""


def _dry_run_only(params: Mapping[str, Any]) -> bool:
    return params.get("dry_run") is True


# -- the tasks ---------------------------------------------------------------------------


def _planned(which: Callable[..., Any], task: Task, given: Mapping[str, Any]) -> Plan[Change]:
    """The change ``which`` (``send_config``, ``asend_config``) makes on the task's host, as a
    plan not yet started: the parameters checked, the lines rendered."""
    require_libraries(which)
    timeout = given["timeout"]
    number(f"{which.__name__}: timeout", timeout, above=0, unit="a number of seconds")
    confirm = check_around(given)
    if confirm is not None and given.get("journal_file") is None:
        raise ValueError(
            "confirm needs a journal_file, where a pending change is kept until it is "
            "confirmed (a job gives it one, beside its records)"
        )
    mode = check_mode(given)
    lines = config_lines(task.host, given["lines"], given["config_file"],
                         given["template_file"], given["variables"])
    check_scope(lines, mode.scope, task.host.name)
    how = ChangeOptions(
        task=which.__name__, host=task.host.name, platform=task.host.platform,
        dry_run=task.is_dry_run(given["dry_run"]), rollback=given["rollback"],
        save=given["save"], backup=backup_writer(task.host, given["backup_dir"]),
        checks=resolved(task, checks_from(given["checks"])),
        settle=float(given["settle"] or 0), confirm=confirm,
        journal=None if given.get("journal_file") is None else str(given["journal_file"]),
        driver=driver_for(dialect_of(task.host), replace=mode.replace), replace=mode.replace,
        scope=mode.scope, ignore=mode.ignore,
    )
    progress = _Progress(task)
    return _noting(_change(lines, how, progress), progress)


@_changing
@read_only(when=_dry_run_only)
@needs(libraries=["netmiko", "nornir_netmiko", "jinja2"], connections=["netmiko"],
       install=DEVICES_EXTRA)
@check_params_with(check_config_params)
def send_config(
    task: Task,
    lines: list[str] | None = None,
    config_file: str | None = None,
    template_file: str | None = None,
    variables: dict[str, Any] | None = None,
    *,
    mode: str = "merge",
    scope: list[str] | None = None,
    ignore: list[str] | None = None,
    dry_run: bool | None = None,
    rollback: bool = True,
    save: bool = False,
    backup_dir: str | None = None,
    checks: list[dict[str, Any]] | None = None,
    settle: float | None = None,
    confirm: dict[str, float] | None = None,
    journal_file: str | None = None,
    timeout: float = DEFAULT_CONFIG_TIMEOUT,
) -> Result:
    """Change the host's configuration through nornir-netmiko's connection (blocking): see the
    module for the steps.

    Args:
        lines, config_file, template_file: the change, exactly one of them.
        variables: the template's variables besides ``host``.
        mode: ``merge`` (the lines are added to the configuration) or ``replace`` (they are
            the whole intended configuration, or the sections ``scope`` names).
        scope: with ``replace``, the first words of the sections replaced (``router bgp``).
        ignore: regular expressions of lines left out of the comparison (lines the device
            writes itself).
        dry_run: only show the diff; ``None`` follows nornir's (``nr.run(dry_run=...)``).
        rollback: restore the backup when a line is refused or the change does not verify.
        save: ``write memory`` after a verified change.
        backup_dir: the folder of the backups (default: the records folder's ``backups/``).
        checks: state checks read before and after the change
            (:mod:`~nornir_bench.tasks.state_checks`); one that fails after it rolls it back.
        settle: seconds to wait after the change before reading the checks.
        confirm: ``{within: SECONDS}``: the change is pending, in ``journal_file``, until a
            new login and its checks succeed within the window; else it is reverted.
        journal_file: the journal of pending changes (:mod:`~nornir_bench.tasks.journal`).
        timeout: seconds for each exchange with the device.

    Returns:
        A ``Result`` whose ``result`` is the state and diff, ``changed`` and ``diff`` set,
        ``change`` (``state``, ``backup``) and ``checks`` (each check's values).

    Raises:
        ConfigChangeFailed: a line refused, the change not verified, a check failed after it
            (rolled back or not).
        ValueError: no lines, a missing file, a template error.
    """
    plan = _planned(send_config, task, locals())
    return _result(task.host, drive(task, plan, timeout))


@_changing
@read_only(when=_dry_run_only)
@needs(libraries=["scrapli", "asyncssh", "jinja2"], install=DEVICES_EXTRA)
@check_params_with(check_config_params)
async def asend_config(
    task: Task,
    lines: list[str] | None = None,
    config_file: str | None = None,
    template_file: str | None = None,
    variables: dict[str, Any] | None = None,
    *,
    mode: str = "merge",
    scope: list[str] | None = None,
    ignore: list[str] | None = None,
    dry_run: bool | None = None,
    rollback: bool = True,
    save: bool = False,
    backup_dir: str | None = None,
    checks: list[dict[str, Any]] | None = None,
    settle: float | None = None,
    confirm: dict[str, float] | None = None,
    journal_file: str | None = None,
    timeout: float = DEFAULT_CONFIG_TIMEOUT,
) -> Result:
    """:func:`send_config` on scrapli's async driver, on the host's kept session (the one
    ``asend_command`` uses): the same steps, parameters and result."""
    plan = _planned(asend_config, task, locals())
    # Cancelled (a deadline, a second Ctrl-C, an awaiting caller's cancel), the change stops
    # where it is: its session is dropped, and what it did is noted on the task (the
    # deadline's error says it; a first Ctrl-C cancels nothing, the change ends).
    return _result(task.host, await adrive(task, plan, timeout))
