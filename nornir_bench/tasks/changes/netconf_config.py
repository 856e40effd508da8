"""Change a device's configuration over NETCONF: ``netconf_edit_config`` (ncclient, blocking)
and ``anetconf_edit_config`` (async: the same ncclient calls off the event loop).

Both take the same steps, one plan (:func:`~nornir_bench.tasks.changes._netconf_flow.netconf_flow`):

1. **The XML**: ``config`` (the XML of a ``<config>``, or of the elements inside one),
   ``config_file``, or ``template_file`` (Jinja2, rendered per host with ``host`` and
   ``variables``); not well-formed XML is refused before any device is touched.
2. **Checks before** (``checks``, each read with a ``<get>`` of its ``xpath`` or subtree
   ``filter``), read once the lock (3) is taken, so that they read what the change starts
   from: one not read leaves the device untouched.
3. **Lock** the candidate. Refused (another session holds it): the host fails naming the
   holder's session-id; nothing was sent. With ``lock_wait: S`` the lock is asked for again
   while another session holds it, for up to ``S`` seconds (hosts that share one server take
   turns at its candidate this way).
4. **Edit** the candidate (``<edit-config>``, ``:rollback-on-error``), then **validate** it
   inline (its contents given in the ``<validate>``). An ``<rpc-error>`` at either: the
   candidate is discarded, the running configuration untouched, the error named.
5. **Diff**: the candidate against the running configuration. A dry run (``--check``) ends
   here with that diff, the candidate discarded; so does a change with nothing to do.
6. **Backup** of the running configuration (XML, 0600), then **commit**. With ``confirm:
   {within: S}`` a confirmed commit: the server reverts it by itself unless confirmed
   within ``S`` + ``timeout`` seconds, or as soon as this session ends (a run killed, a
   deadline); the journal records it pending, as the device's own promise.
7. **Checks after** (with ``confirm``: tried again each second within the window, and with
   ``new_login: true`` a new login too). They hold: the confirming ``<commit>``. One fails:
   ``<cancel-commit>`` (with ``confirm``), else the configuration before committed again
   (``rollback``, on by default).
8. **Unlock**, on every path that leaves the session usable; on the others (an exception,
   a deadline, a cancel) the session is dropped, which gives the lock back and discards the
   candidate on the server's side.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nornir.core.task import Result

from nornir_bench.core.checks import number
from nornir_bench.core.read_only import read_only
from nornir_bench.core.subtasks import async_twin
from nornir_bench.core.task_traits import with_traits
from nornir_bench.tasks._needs import DEVICES_EXTRA, needs, require_libraries
from nornir_bench.tasks._params import check_params_with
from nornir_bench.tasks.changes._change import (
    MAX_CONFIRM,
    Change,
    ChangeOptions,
    check_around,
)
from nornir_bench.tasks.changes._netconf_flow import device_reverts, netconf_flow
from nornir_bench.tasks.changes._templates import check_template
from nornir_bench.tasks.changes.backups import (
    ChangeProgress,
    abandoned_failure,
    backup_writer,
    noting,
)
from nornir_bench.tasks.changes.config_input import MAX_CONFIG_BYTES, rendered
from nornir_bench.tasks.changes.journal import PENDING, JournalError, read_journal
from nornir_bench.tasks.checks.check_outcomes import resolved
from nornir_bench.tasks.checks.state_checks import checks_from
from nornir_bench.tasks.dialects.netconf_xml import config_xml
from nornir_bench.tasks.sessions._netconf_plan import ndrive
from nornir_bench.tasks.sessions._plan import Plan

if TYPE_CHECKING:
    from nornir.core.inventory import Host
    from nornir.core.task import Task

__all__ = [
    "DEFAULT_NETCONF_TIMEOUT",
    "anetconf_edit_config",
    "check_netconf_params",
    "netconf_edit_config",
]

DEFAULT_NETCONF_TIMEOUT = 60.0
"""Seconds for the login, and again for each RPC."""
_SOURCES = ("config", "config_file", "template_file")
# ncclient speaks NETCONF (lxml, its dependency, reads the XML); xmltodict parses the data
# checks read; Jinja2 renders a template.
_LIBRARIES = ["ncclient", "lxml", "xmltodict", "jinja2"]


def check_netconf_params(params: Mapping[str, Any]) -> None:
    """The job loader's check, once for the run: one source of XML, well-formed (a
    template's syntax), the checks (by xpath), ``confirm``, ``timeout``."""
    given = [name for name in _SOURCES if params.get(name) is not None]
    if len(given) != 1:
        raise ValueError(f"give the XML as exactly one of {', '.join(_SOURCES)}"
                         + (f", not {' and '.join(given)}" if given else ""))
    if params.get("config") is not None:
        config_xml(params["config"])
    elif params.get("config_file") is not None:
        _file_xml(params["config_file"])
    else:
        source = params["template_file"]
        if not isinstance(source, (str, Path)) or not Path(source).is_file():
            raise ValueError(f"template_file: no such file: {source}")
        check_template(Path(source))
    variables = params.get("variables")
    if variables is not None and not isinstance(variables, Mapping):
        raise ValueError(f"variables must be a mapping of names to values, got {variables!r}")
    check_around(params, netconf=True)
    if "timeout" in params:
        number("timeout", params["timeout"], above=0, unit="a number of seconds")
    _lock_wait(params.get("lock_wait"))


def _file_xml(source: object) -> str:
    if not isinstance(source, (str, Path)) or not Path(source).is_file():
        raise ValueError(f"config_file: no such file: {source}")
    path = Path(source)
    if path.stat().st_size > MAX_CONFIG_BYTES:
        raise ValueError(f"{path}: larger than {MAX_CONFIG_BYTES:,} bytes: not a change")
    return config_xml(path.read_text(encoding="utf-8"), where=str(path))


def _config(host: Host, params: Mapping[str, Any]) -> str:
    """The ``<config>`` XML of the change for ``host``."""
    if params.get("config") is not None:
        return config_xml(params["config"])
    if params.get("config_file") is not None:
        return _file_xml(params["config_file"])
    template = params["template_file"]
    return config_xml(rendered(host, template, params.get("variables")),
                      where=f"template {template} for {host.name}")


def prepare_netconf(host: Host, params: Mapping[str, Any]) -> None:
    """A host's XML made as the task will make it, before any device is touched: a template
    that fails or renders XML that is not well-formed fails the host first."""
    if params.get("template_file") is not None:
        _config(host, params)


def _result(host: Host, change: Change) -> Result:
    result = Result(host=host, result=change.text(), changed=change.changed, diff=change.diff)
    result.change = change.record()  # type: ignore[attr-defined]
    result.checks = change.checks  # type: ignore[attr-defined]
    return result


def _planned(which: Callable[..., Any], task: Task, given: Mapping[str, Any]) -> Plan[Change]:
    """The change ``which`` makes on the task's host, as a plan not yet started."""
    require_libraries(which)
    number(f"{which.__name__}: timeout", given["timeout"], above=0, unit="a number of seconds")
    confirm = check_around(given, netconf=True)
    if confirm is not None and given.get("journal_file") is None:
        raise ValueError(
            "confirm needs a journal_file, where a pending change is kept until it is "
            "confirmed (a job gives it one, beside its records)"
        )
    config = _config(task.host, given)
    timeout = float(given["timeout"])
    how = ChangeOptions(
        task=which.__name__, host=task.host.name, platform=task.host.platform,
        dry_run=task.is_dry_run(given["dry_run"]), rollback=given["rollback"], save=False,
        backup=backup_writer(task.host, given["backup_dir"]),
        checks=resolved(task, checks_from(given["checks"], netconf=True)),
        settle=float(given["settle"] or 0), confirm=confirm,
        new_login=confirm is not None and bool(given["confirm"].get("new_login", False)),
        journal=None if given.get("journal_file") is None else str(given["journal_file"]),
    )
    progress = ChangeProgress(task)
    plan = netconf_flow(config, how, progress, confirm_timeout=_device_wait(confirm, timeout),
                        lock_wait=_lock_wait(given["lock_wait"], f"{which.__name__}: "))
    return noting(plan, progress)


def _lock_wait(value: object, where: str = "") -> float:
    """``lock_wait`` in seconds (``None``: ask once), checked: by the job loader, and again as
    the task starts (a task called from Python is not loaded from a job); ``where`` prefixes
    the message."""
    if value is None:
        return 0.0
    return float(number(f"{where}lock_wait", value, minimum=0, maximum=MAX_CONFIRM,
                        unit="a number of seconds"))


def _device_wait(confirm: float | None, timeout: float) -> int | None:
    """The seconds the server waits for the confirming commit: the window and one more RPC's
    time (the checks end within the window, the confirming commit after them)."""
    return None if confirm is None else math.ceil(confirm + timeout)


def _abandoned_netconf(host: str, params: Mapping[str, Any], since: float) -> Exception:
    """What a NETCONF change Ctrl-C stopped in flight on ``host`` did (see
    :func:`~nornir_bench.tasks.changes.backups.abandoned_failure`): with its confirmed commit
    pending in the journal, the server reverts it itself, the run's session ending."""

    def holding(backup: str) -> str | None:
        journal, confirm = params.get("journal_file"), params.get("confirm")
        if journal is None or not isinstance(confirm, Mapping):
            return None
        try:
            entry = read_journal(journal).hosts.get(host)
        except (OSError, JournalError):
            return None
        if entry is None or entry.get("backup") != backup or entry["state"] != PENDING \
                or entry.get("confirming") or "device_reverts_at" not in entry:
            return None  # not this change's commit, or its confirmation may have been sent
        timeout = float(params.get("timeout", DEFAULT_NETCONF_TIMEOUT))
        wait = _device_wait(float(confirm["within"]), timeout)
        return None if wait is None else device_reverts(wait)

    return abandoned_failure(host, params, since, holding=holding)


_changing = with_traits(
    honours_dry_run=True, prepare=prepare_netconf, abandoned_failure=_abandoned_netconf
)


def _dry_run_only(params: Mapping[str, Any]) -> bool:
    return params.get("dry_run") is True


@_changing
@read_only(when=_dry_run_only)
@needs(libraries=_LIBRARIES, install=DEVICES_EXTRA)
@check_params_with(check_netconf_params)
def netconf_edit_config(
    task: Task,
    config: str | None = None,
    config_file: str | None = None,
    template_file: str | None = None,
    variables: dict[str, Any] | None = None,
    *,
    dry_run: bool | None = None,
    rollback: bool = True,
    backup_dir: str | None = None,
    checks: list[dict[str, Any]] | None = None,
    settle: float | None = None,
    confirm: dict[str, float] | None = None,
    journal_file: str | None = None,
    lock_wait: float | None = None,
    timeout: float = DEFAULT_NETCONF_TIMEOUT,
) -> Result:
    """Change the host's configuration over NETCONF, through its candidate (ncclient,
    blocking): see the module for the steps.

    Args:
        config, config_file, template_file: the XML to edit the candidate with, exactly one.
        variables: the template's variables besides ``host``.
        dry_run: only show the diff; ``None`` follows nornir's.
        rollback: without ``confirm``, commit the configuration before again when a check
            fails after the change.
        backup_dir: the folder of the backups (default: the records folder's ``backups/``).
        checks: state checks (each an ``xpath`` or a subtree ``filter``) read before and
            after the change.
        settle: seconds to wait after the commit before reading the checks.
        confirm: ``{within: SECONDS}``: a confirmed commit, confirmed once the checks (and,
            with ``new_login: true``, a new login) succeed within the window; else cancelled
            (the server reverts it).
        journal_file: the journal of pending changes.
        lock_wait: seconds to ask for the candidate's lock again while another session
            holds it (``None``: once).
        timeout: seconds for the login and for each RPC.

    Returns:
        A ``Result`` whose ``result`` is the state and diff, ``changed`` and ``diff`` set,
        ``change`` (``state``, ``backup``) and ``checks``.

    Raises:
        ConfigChangeFailed: the lock refused, an ``<rpc-error>``, a check failed after the
            change (cancelled, rolled back or not), the session lost mid-change.
    """
    return _changed(_running(task), task, locals())


anetconf_edit_config = async_twin(netconf_edit_config, name="anetconf_edit_config", doc="""\
:func:`netconf_edit_config` for event-loop runners: the same change, run whole in the run's
thread pool (the loop goes on meanwhile), its RPCs bounded by the host's deadline as the
blocking task's are.""")


def _running(task: Task) -> Callable[..., Any]:
    """The twin ``task`` runs (the async one runs the blocking one in a thread): the change,
    its messages and its journal are named after it. Told by name: a run wraps the task it
    is given (``functools.wraps`` keeps the name), so it is not the twin itself."""
    name = getattr(getattr(task, "task", None), "__name__", None)
    return anetconf_edit_config if name == anetconf_edit_config.__name__ \
        else netconf_edit_config


def _changed(which: Callable[..., Any], task: Task, given: Mapping[str, Any]) -> Result:
    return _result(task.host, ndrive(task, _planned(which, task, given), given["timeout"]))
