"""A device's configuration taken back to a backup: the rounds a rollback makes, and the
tasks ``nornir-bench recover`` runs on changes a dead run left pending (``restore_config``,
``arestore_config``).

Restoring is done in rounds: the lines that take the configuration back (its remediation)
are sent, the configuration read again, and sent again for what is still off, a few rounds
at most. A line whose removal takes others with it (FRR's ``no neighbor X remote-as Y``
removes the whole neighbour) leaves those to add back in the next round.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nornir.core.task import Result

from nornir_bench.core.changes import ROLLBACK_FAILED, ROLLED_BACK
from nornir_bench.core.checks import number
from nornir_bench.core.secrets import mask_config_secrets
from nornir_bench.tasks._needs import DEVICES_EXTRA, needs, require_libraries
from nornir_bench.tasks.dialects.config_text import (
    HConfig,
    config_diff,
    parse_config,
    remediation,
    same,
)
from nornir_bench.tasks.dialects.dialects import dialect_of, driver_for
from nornir_bench.tasks.sessions._plan import Plan, Read, Send, adrive, drive

if TYPE_CHECKING:
    from nornir.core.task import Task

__all__ = ["ROUNDS", "RestoreFailed", "arestore_config", "restore_config", "restoring"]

ROUNDS = 3


def restoring(before: HConfig, now: HConfig, printed: str) -> Plan[tuple[HConfig, str]]:
    """``now`` (as the device printed it: ``printed``) taken back to ``before``, in
    :data:`ROUNDS` rounds at most (see the module); the configuration read back last, parsed
    and as printed."""
    for _ in range(ROUNDS):
        undo = remediation(now, before)
        if not undo:
            break
        yield Send(tuple(undo))
        printed = yield Read()
        now = parse_config(printed, before.driver)
    return now, printed


class RestoreFailed(Exception):
    """The configuration could not be taken back to the backup: how it still differs."""

    def __init__(self, message: str, *, backup: str, diff: str) -> None:
        super().__init__(message)
        self.change = {"state": ROLLBACK_FAILED, "backup": backup}
        self.diff = diff

    def __reduce__(self) -> tuple[Any, ...]:  # rebuilt in the parent of a worker process
        return _rebuilt, (str(self), self.change["backup"], self.diff)


def _rebuilt(message: str, backup: str, diff: str) -> RestoreFailed:
    return RestoreFailed(message, backup=backup, diff=diff)


def _restore(task: Task, backup: str) -> Plan[str]:
    driver = driver_for(dialect_of(task.host), replace=False)
    before = parse_config(Path(backup).read_text(encoding="utf-8"), driver)
    printed: str = yield Read()
    now, _ = yield from restoring(before, parse_config(printed, driver), printed)
    if same(now, before):
        return ""
    return mask_config_secrets(config_diff(before, now))


def _backup_of(task: Task, backups: Mapping[str, str]) -> str:
    backup = backups.get(task.host.name)
    if not isinstance(backup, str) or not Path(backup).is_file():
        raise ValueError(f"no backup of {task.host.name} to restore: {backup!r}")
    return backup


def _result(task: Task, backup: str, left: str) -> Result:
    if left:
        raise RestoreFailed(
            f"ROLLBACK FAILED: the configuration differs from the backup at {backup}:\n{left}",
            backup=backup, diff=left,
        )
    result = Result(host=task.host, result=f"rolled back to the backup at {backup}")
    result.change = {"state": ROLLED_BACK, "backup": backup}  # type: ignore[attr-defined]
    return result


@needs(libraries=["netmiko", "nornir_netmiko"], connections=["netmiko"], install=DEVICES_EXTRA)
def restore_config(task: Task, backups: Mapping[str, str], *, timeout: float = 60.0) -> Result:
    """Take the host's configuration back to its backup (``backups``: a file per host name),
    through netmiko.

    Raises:
        RestoreFailed: it still differs from the backup (the diff says how).
    """
    require_libraries(restore_config)
    number("timeout", timeout, above=0, unit="a number of seconds")
    backup = _backup_of(task, backups)
    return _result(task, backup, str(drive(task, _restore(task, backup), timeout)))


@needs(libraries=["scrapli", "asyncssh"], install=DEVICES_EXTRA)
async def arestore_config(
    task: Task, backups: Mapping[str, str], *, timeout: float = 60.0
) -> Result:
    """:func:`restore_config` on scrapli's async driver."""
    require_libraries(arestore_config)
    number("timeout", timeout, above=0, unit="a number of seconds")
    backup = _backup_of(task, backups)
    return _result(task, backup, str(await adrive(task, _restore(task, backup), timeout)))
