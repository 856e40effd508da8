"""A device's running configuration as text: ``backup_config`` (netmiko) and
``abackup_config`` (scrapli), what ``nornir-bench backup`` runs on each host.

Read as a change reads it (the same plan request, :class:`~nornir_bench.tasks.sessions._plan.Read`,
answered by either driver): the host's ``running_config_command`` data, else its dialect's
command (``show running-config`` for most). One reader for the change engine and the backups,
so a backup holds exactly what a change diffs against and a restore goes back to, but for
the lines a device rewrites on its own (:mod:`~nornir_bench.history.volatile`: the time of
its last change), which would make every backup of an unchanged device a commit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nornir.core.task import Result

from nornir_bench.core.checks import number
from nornir_bench.core.read_only import read_only
from nornir_bench.history.volatile import without_volatile_lines
from nornir_bench.tasks._needs import DEVICES_EXTRA, needs, require_libraries
from nornir_bench.tasks.sessions._plan import Plan, Read, adrive, drive

if TYPE_CHECKING:
    from nornir.core.task import Task

__all__ = ["BACKUP_TASKS", "abackup_config", "backup_config"]

BACKUP_TASKS = ("backup_config", "abackup_config")
"""The tasks whose result is a host's running configuration, by the names job files use."""


def _read_running() -> Plan[str]:
    text: str = yield Read()
    return without_volatile_lines(text)


@read_only
@needs(libraries=["netmiko", "nornir_netmiko"], connections=["netmiko"], install=DEVICES_EXTRA)
def backup_config(task: Task, *, timeout: float = 60.0) -> Result:
    """The host's running configuration, read through netmiko (blocking).

    Args:
        timeout: seconds for the login, and again for the command.

    Returns:
        A ``Result`` whose ``result`` is the configuration's text, as the device printed
        it but for the lines it rewrites on its own.
    """
    require_libraries(backup_config)
    number("timeout", timeout, above=0, unit="a number of seconds")
    return Result(host=task.host, result=drive(task, _read_running(), timeout))


@read_only
@needs(libraries=["scrapli", "asyncssh"], install=DEVICES_EXTRA)
async def abackup_config(task: Task, *, timeout: float = 60.0) -> Result:
    """:func:`backup_config` on scrapli's async driver."""
    require_libraries(abackup_config)
    number("timeout", timeout, above=0, unit="a number of seconds")
    return Result(host=task.host, result=await adrive(task, _read_running(), timeout))
