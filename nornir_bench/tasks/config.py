"""Change a device's configuration safely: ``send_config`` (netmiko, blocking) and
``asend_config`` (scrapli, async).

Both take the same steps, one plan (:func:`_change`) that a blocking and an async driver run
against the device:

1. **The lines**: ``lines`` (a list), ``config_file``, or ``template_file`` (Jinja2, rendered
   for each host with ``host`` and ``variables``; an undefined variable fails the host before
   its device is touched). In a job file, a ``..._file`` is found from the job's folder.
2. **What they would change**: the running configuration is read and the lines applied to it
   as the device would (:mod:`nornir_bench.tasks.config_text`): a unified diff.
3. **Dry run** (nornir's ``dry_run``: the task's parameter, ``nr.run(dry_run=True)``, or
   ``nornir-bench run --check``): the diff is the result, ``changed`` says whether anything
   would change, and nothing is sent in configuration mode.
4. **Nothing to change**: the lines are not sent; ``changed`` is false, the diff empty. So a
   change applied twice reports ``changed: false`` the second time.
5. **Backup**: the running configuration as read, to a file of its own (mode 0600: it holds
   the device's secrets, so that it can be restored) under ``backup_dir`` (default: the
   records folder's ``backups/``); its path is in the result and the record.
6. **Apply**: the lines that change something (a change half made before, by a run stopped
   in the middle, is completed; see :func:`~nornir_bench.tasks.config_text.changing_lines`),
   one at a time in configuration mode, stopping at the first the device refuses (a reply
   line starting ``% ``: ``% Invalid input``, FRR's ``% Unknown command`` and ``% Refusing to
   remove a non-existent route``).
7. **Verify**: the configuration read back must leave the change nothing to do.
8. **Rollback** (on by default; ``rollback=False`` turns it off), after a refused line or a
   failed verification: the lines that take the configuration back to the backup (what the
   change added removed, in reverse order, then what it removed added again), then the
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

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nornir.core.task import Result

from nornir_bench.core.changes import (
    CHANGED,
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
from nornir_bench.tasks._templates import check_template
from nornir_bench.tasks.backups import abandoned_failure, backup_writer
from nornir_bench.tasks.config_text import (
    Section,
    applied,
    change_lines,
    changing_lines,
    config_diff,
    parse_config,
    same,
    save_refusal,
)
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

MAX_CONFIG_BYTES = 16 * 1024 * 1024
"""A change's text, from a file or a template, at most: a larger one is a mistake (a template
looping without end), refused before anything is sent."""

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
    before, change = parse_config(running), parse_config(lines)
    diff = mask_config_secrets(config_diff(before, applied(before, change)))
    around = AroundChange(how)
    yield from around.read_before()
    if how.dry_run:
        return Change(WOULD_CHANGE if diff else NO_CHANGE, diff, checks=around.records())
    if not diff:  # nothing to send; saved all the same, so that a change left unsaved is now
        if how.save:
            yield from _save("", None, around)
        return Change(NO_CHANGE, diff, checks=around.records())
    saved = str(how.backup(running))
    progress.sends(saved)
    around.pending(saved)
    try:
        problem, now = yield from _apply(lines, before, change, saved, how)
        if problem is None:
            problem = yield from around.read_after()
        if problem is None:
            around.ended(CONFIRMED)
            diff = mask_config_secrets(config_diff(before, now))
            if how.save:
                yield from _save(diff, saved, around)
            return Change(CHANGED, diff, saved, checks=around.records())
        yield from _roll_back(mask_config_secrets(problem), before, now, saved, how, around)
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


def _apply(
    lines: Sequence[str], before: Section, change: Section, saved: str, how: ChangeOptions
) -> Plan[tuple[str | None, Section]]:
    """The lines that change something sent (a change half made before is completed), and
    verified: what went wrong (``None``: nothing), and the configuration read back."""
    sent = changing_lines(before, lines)
    refused: tuple[int, str] | None = yield Send(tuple(lines[k] for k in sent))
    now = parse_config((yield Read()))
    if refused is not None:
        index, said = sent[refused[0]], refused[1]
        return f"line {index + 1} of {len(lines)} refused: {lines[index].strip()!r}: {said}", now
    left = config_diff(now, applied(now, change))
    if left:
        return "not verified: read back, the configuration still lacks:\n" + left, now
    return None, now


def _roll_back(
    problem: str, before: Section, now: Section, saved: str, how: ChangeOptions,
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


# -- the lines ---------------------------------------------------------------------------


def _check_config_params(params: Mapping[str, Any]) -> None:
    """The job loader's check, once for the run: :func:`_check_sources`, the checks and
    ``confirm``, and a template's syntax (each host's render parses it again: a check there
    would parse it twice)."""
    _check_sources(params)
    check_around(params)
    if params.get("template_file") is not None:
        check_template(Path(params["template_file"]))


def _check_sources(params: Mapping[str, Any]) -> None:
    """One source of lines, which exists; a list of lines checked; variables, timeout."""
    given = [name for name in _SOURCES if params.get(name) is not None]
    if len(given) != 1:
        raise ValueError(
            f"give the config as exactly one of {', '.join(_SOURCES)}"
            + (f", not {' and '.join(given)}" if given else "")
        )
    source = params[given[0]]
    if given[0] == "lines":
        if not isinstance(source, list):
            raise ValueError(f"lines must be a list of config lines, got {source!r}")
        change_lines(source)
    elif not isinstance(source, (str, os.PathLike)) or not Path(source).is_file():
        raise ValueError(f"{given[0]}: no such file: {source}")
    variables = params.get("variables")
    if variables is not None and not isinstance(variables, Mapping):
        raise ValueError(f"variables must be a mapping of names to values, got {variables!r}")
    if "timeout" in params:
        number("timeout", params["timeout"], above=0, unit="a number of seconds")


_SOURCES = ("lines", "config_file", "template_file")


def config_lines(
    host: Host,
    lines: Sequence[object] | None = None,
    config_file: str | os.PathLike[str] | None = None,
    template_file: str | os.PathLike[str] | None = None,
    variables: Mapping[str, Any] | None = None,
) -> list[str]:
    """The change's lines for ``host``, from exactly one of ``lines``, ``config_file`` and
    ``template_file`` (Jinja2, with ``host`` and ``variables``; undefined names fail)."""
    _check_sources({"lines": lines, "config_file": config_file,
                    "template_file": template_file, "variables": variables})
    if lines is not None:
        return change_lines(lines)
    if config_file is not None:
        path = Path(config_file)
        if path.stat().st_size > MAX_CONFIG_BYTES:
            raise ValueError(f"{path}: larger than {MAX_CONFIG_BYTES:,} bytes: not a change")
        return change_lines(path.read_text(encoding="utf-8").splitlines())
    import jinja2
    from jinja2.sandbox import SandboxedEnvironment

    path = Path(template_file)  # type: ignore[arg-type]
    # Sandboxed: a template reads host data; it cannot call into the host, nornir or Python.
    environment = SandboxedEnvironment(
        loader=jinja2.FileSystemLoader(path.parent), undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True, autoescape=False,
    )
    chunks: list[str] = []
    size = 0
    try:
        for chunk in environment.get_template(path.name).generate(host=host, **(variables or {})):
            size += len(chunk)
            if size > MAX_CONFIG_BYTES:
                break
            chunks.append(chunk)
    except Exception as exc:  # the template's own error (1/0, a sandbox refusal)
        raise ValueError(f"template {path}: {type(exc).__name__}: {exc}") from exc
    if size > MAX_CONFIG_BYTES:
        raise ValueError(
            f"template {path}: renders past {MAX_CONFIG_BYTES:,} characters for {host.name}: "
            "not a change"
        )
    return change_lines("".join(chunks).splitlines())


def _result(host: Host, change: Change) -> Result:
    result = Result(host=host, result=change.text(), changed=change.changed, diff=change.diff)
    result.change = {"state": change.state, "backup": change.backup}  # type: ignore[attr-defined]
    result.checks = change.checks  # type: ignore[attr-defined]
    return result


def _prepare(host: Host, params: Mapping[str, Any]) -> None:
    """A host's lines made as the task will make them, before any device is touched: a
    template's error (an undefined variable, its own exception, past the size cap) is a
    ``ValueError`` naming the template. Lines and files are the same for every host, and
    checked once when the job is loaded."""
    if params.get("template_file") is not None:
        config_lines(host, template_file=params["template_file"],
                     variables=params.get("variables"))


def _changing(task: Callable[..., Any]) -> Callable[..., Any]:
    """Marks a change task: it honours ``dry_run``; a job makes every host's lines before the
    step touches any device (``prepare``); and it says what it may have done when Ctrl-C stops
    it in flight (``abandoned_failure``). The jobs read these."""
    task.supports_dry_run = True  # type: ignore[attr-defined]
    task.prepare = _prepare  # type: ignore[attr-defined]
    task.abandoned_failure = abandoned_failure  # type: ignore[attr-defined]
    return task


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
    lines = config_lines(task.host, given["lines"], given["config_file"],
                         given["template_file"], given["variables"])
    how = ChangeOptions(
        task=which.__name__, host=task.host.name, platform=task.host.platform,
        dry_run=task.is_dry_run(given["dry_run"]), rollback=given["rollback"],
        save=given["save"], backup=backup_writer(task.host, given["backup_dir"]),
        checks=resolved(task, checks_from(given["checks"])),
        settle=float(given["settle"] or 0), confirm=confirm,
        journal=None if given.get("journal_file") is None else str(given["journal_file"]),
    )
    progress = _Progress(task)
    return _noting(_change(lines, how, progress), progress)


@_changing
@read_only(when=_dry_run_only)
@needs(libraries=["netmiko", "nornir_netmiko", "jinja2"], connections=["netmiko"],
       install=DEVICES_EXTRA)
@check_params_with(_check_config_params)
def send_config(
    task: Task,
    lines: list[str] | None = None,
    config_file: str | None = None,
    template_file: str | None = None,
    variables: dict[str, Any] | None = None,
    *,
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
@check_params_with(_check_config_params)
async def asend_config(
    task: Task,
    lines: list[str] | None = None,
    config_file: str | None = None,
    template_file: str | None = None,
    variables: dict[str, Any] | None = None,
    *,
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
