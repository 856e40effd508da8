"""Change a device's configuration safely: ``send_config`` (netmiko, blocking) and
``asend_config`` (scrapli, async).

Both take the same steps, one plan (:func:`~nornir_bench.tasks.changes._change_flow.change_flow`)
that a blocking and an async driver run against the device:

1. **The lines**: ``lines`` (a list), ``config_file``, or ``template_file`` (Jinja2, rendered
   for each host with ``host`` and ``variables``; an undefined variable fails the host before
   its device is touched), or ``from_history`` (a restore: the host's file at a commit of the
   backup repository, with ``mode: replace``; lines holding a masked secret left out,
   :mod:`~nornir_bench.tasks.changes.from_history`). In a job file, a ``..._file`` is found
   from the job's folder (:mod:`~nornir_bench.tasks.changes.config_input`).
2. **What they aim at** (:mod:`~nornir_bench.tasks.dialects.config_text`, hier_config in the host's
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
   stopping at the first the device refuses, by the host's dialect's rule
   (:mod:`~nornir_bench.tasks.dialects.refusals`: for FRR any output but a note, ``BGP is already
   running; AS is 65003`` too; for IOS a reply line starting ``% ``).
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

import dataclasses
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from nornir.core.task import Result

from nornir_bench.core.checks import number
from nornir_bench.core.read_only import read_only
from nornir_bench.core.task_traits import with_traits
from nornir_bench.tasks._needs import DEVICES_EXTRA, needs, require_libraries
from nornir_bench.tasks._params import check_params_with
from nornir_bench.tasks.changes._change import (
    Change,
    ChangeOptions,
    ConfigChangeFailed,
    check_around,
)
from nornir_bench.tasks.changes._change_flow import change_flow
from nornir_bench.tasks.changes.backups import (
    ChangeProgress,
    abandoned_failure,
    backup_writer,
    noting,
)
from nornir_bench.tasks.changes.config_input import (
    check_config_params,
    check_mode,
    check_scope,
    config_lines,
    prepare_config,
)
from nornir_bench.tasks.changes.from_history import history_source, masked_lines, notes
from nornir_bench.tasks.checks.check_outcomes import resolved
from nornir_bench.tasks.checks.state_checks import checks_from
from nornir_bench.tasks.dialects.dialects import dialect_of, driver_for
from nornir_bench.tasks.sessions._plan import Plan, adrive, drive

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


def _result(host: Host, change: Change, said: tuple[str, ...]) -> Result:
    change = dataclasses.replace(change, notes=said) if said else change
    result = Result(host=host, result=change.text(), changed=change.changed, diff=change.diff)
    result.change = change.record()  # type: ignore[attr-defined]
    result.checks = change.checks  # type: ignore[attr-defined]
    if change.configs is not None:
        result.configs = change.configs  # type: ignore[attr-defined]
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


def _planned(
    which: Callable[..., Any], task: Task, given: Mapping[str, Any]
) -> tuple[Plan[Change], tuple[str, ...]]:
    """The change ``which`` (``send_config``, ``asend_config``) makes on the task's host, as a
    plan not yet started: the parameters checked, the lines rendered; and what its result
    notes (a restore's source, its masked lines left out)."""
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
    source = None if given["from_history"] is None else history_source(given["from_history"])
    lines = config_lines(task.host, given["lines"], given["config_file"],
                         given["template_file"], given["variables"],
                         None if source is None else source.pinned())
    check_scope(lines, mode.scope, task.host.name)
    driver = driver_for(dialect_of(task.host), replace=mode.replace)
    ignore = mode.ignore
    said: tuple[str, ...] = ()
    if source is not None:  # the lines of one commit, named; a masked secret never sent
        ignore += masked_lines(lines, driver)
        said = notes(task.host.name, source, lines)
    how = ChangeOptions(
        task=which.__name__, host=task.host.name, platform=task.host.platform,
        dry_run=task.is_dry_run(given["dry_run"]), rollback=given["rollback"],
        save=given["save"], backup=backup_writer(task.host, given["backup_dir"]),
        checks=resolved(task, checks_from(given["checks"])),
        settle=float(given["settle"] or 0), confirm=confirm,
        journal=None if given.get("journal_file") is None else str(given["journal_file"]),
        driver=driver, replace=mode.replace, scope=mode.scope, ignore=ignore,
        keep_configs=bool(given["keep_configs"]),
    )
    progress = ChangeProgress(task)
    return noting(change_flow(lines, how, progress), progress), said


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
    from_history: dict[str, Any] | None = None,
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
    keep_configs: bool = False,
) -> Result:
    """Change the host's configuration through nornir-netmiko's connection (blocking): see the
    module for the steps.

    Args:
        lines, config_file, template_file, from_history: the change, exactly one of them;
            ``from_history`` (``{repo: DIR, commit: REV}``, ``commit`` ``HEAD`` unless given)
            restores the host's file at that commit of a backup repository, with
            ``mode: replace``.
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
            (:mod:`~nornir_bench.tasks.checks.state_checks`); one that fails after it rolls it back.
        settle: seconds to wait after the change before reading the checks.
        confirm: ``{within: SECONDS}``: the change is pending, in ``journal_file``, until a
            new login and its checks succeed within the window; else it is reverted.
        journal_file: the journal of pending changes (:mod:`~nornir_bench.tasks.changes.journal`).
        timeout: seconds for each exchange with the device.
        keep_configs: keep the configuration read before the change and the one read back
            last on the result, or its error (``configs``, a
            :class:`~nornir_bench.core.changes.ConfigsRead`): for a job that commits them to
            its repository (``output.repo``), which sets it.

    Returns:
        A ``Result`` whose ``result`` is the state and diff, ``changed`` and ``diff`` set,
        ``change`` (``state``, ``backup``), ``checks`` (each check's values) and, with
        ``keep_configs``, ``configs``.

    Raises:
        ConfigChangeFailed: a line refused, the change not verified, a check failed after it
            (rolled back or not).
        ValueError: no lines, a missing file, a template error.
    """
    plan, said = _planned(send_config, task, locals())
    return _result(task.host, drive(task, plan, timeout), said)


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
    from_history: dict[str, Any] | None = None,
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
    keep_configs: bool = False,
) -> Result:
    """:func:`send_config` on scrapli's async driver, on the host's kept session (the one
    ``asend_command`` uses): the same steps, parameters and result."""
    plan, said = _planned(asend_config, task, locals())
    # Cancelled (a deadline, a second Ctrl-C, an awaiting caller's cancel), the change stops
    # where it is: its session is dropped, and what it did is noted on the task (the
    # deadline's error says it; a first Ctrl-C cancels nothing, the change ends).
    return _result(task.host, await adrive(task, plan, timeout), said)
