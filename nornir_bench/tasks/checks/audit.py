"""A fleet audit: state checks read once, changing nothing (``check_state`` through netmiko,
``acheck_state`` through scrapli); a host fails where one does not hold ("every BGP session
Established"). The checks are :mod:`nornir_bench.tasks.checks.state_checks`'s, ``present``,
``absent`` and ``equals`` only: an audit has no "before" to compare with.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from nornir.core.task import Result

from nornir_bench.core.checks import number
from nornir_bench.core.read_only import read_only
from nornir_bench.tasks._needs import DEVICES_EXTRA, needs, require_libraries
from nornir_bench.tasks._params import check_params_with
from nornir_bench.tasks.checks.check_outcomes import (
    CheckOutcome,
    checks_text,
    failures_said,
    read_checks,
    resolved,
)
from nornir_bench.tasks.checks.state_checks import StateCheck, checks_from
from nornir_bench.tasks.sessions._plan import Plan, adrive, drive

if TYPE_CHECKING:
    from nornir.core.task import Task

__all__ = ["StateCheckFailed", "acheck_state", "check_state"]


class StateCheckFailed(Exception):
    """Checks that did not hold: the message names each, with its values.

    Attributes:
        checks: every check's outcome, as records keep it (:meth:`CheckOutcome.record`).
    """

    def __init__(self, message: str, *, checks: list[dict[str, Any]]) -> None:
        super().__init__(message)
        self.checks = checks

    def __reduce__(self) -> tuple[Any, ...]:  # rebuilt in the parent of a worker process
        return StateCheckFailed._rebuilt, (str(self), self.checks)

    @staticmethod
    def _rebuilt(message: str, checks: list[dict[str, Any]]) -> StateCheckFailed:
        return StateCheckFailed(message, checks=checks)


def _audit(
    checks: tuple[StateCheck, ...], platform: str | None
) -> Plan[list[dict[str, Any]]]:
    values = yield from read_checks(checks, platform)
    outcomes = [
        CheckOutcome(check, after=value, after_read=True,
                     failure=why or check.fails(None, value))
        for check, (value, why) in zip(checks, values, strict=True)
    ]
    records = [outcome.record() for outcome in outcomes]
    failed = [o for o in outcomes if o.failure]
    if failed:
        count = f"{len(failed)} of {len(outcomes)} checks failed"
        raise StateCheckFailed(f"{count}: {failures_said(failed)}", checks=records)
    return records


def _check_audit_params(params: Mapping[str, Any]) -> None:
    checks_from(params.get("checks"), audit=True)
    if "timeout" in params:
        number("timeout", params["timeout"], above=0, unit="a number of seconds")


def _audited(task: Task, checks: object, timeout: float) -> tuple[Plan[Any], float]:
    number("timeout", timeout, above=0, unit="a number of seconds")
    found = resolved(task, checks_from(checks, audit=True))
    return _audit(found, task.host.platform), timeout


def _audit_result(task: Task, records: list[dict[str, Any]]) -> Result:
    result = Result(host=task.host, result=checks_text(records))
    result.checks = records  # type: ignore[attr-defined]
    return result


@read_only()
@needs(libraries=["netmiko", "nornir_netmiko", "jmespath"], connections=["netmiko"],
       install=DEVICES_EXTRA)
@check_params_with(_check_audit_params)
def check_state(task: Task, checks: list[dict[str, Any]], *, timeout: float = 60.0) -> Result:
    """Read each check on the network, through netmiko, and fail the host where one does not
    hold: a fleet audit ("every BGP session Established").

    Args:
        checks: the checks (see the module); ``present``, ``absent`` or ``equals`` each.
        timeout: seconds for each command.

    Returns:
        A ``Result`` whose ``result`` says each check's outcome in a line, and ``checks``
        holds them as data.

    Raises:
        StateCheckFailed: a check did not hold, or could not be read.
    """
    require_libraries(check_state)
    plan, timeout = _audited(task, checks, timeout)
    return _audit_result(task, drive(task, plan, timeout))


@read_only()
@needs(libraries=["scrapli", "asyncssh", "jmespath"], install=DEVICES_EXTRA)
@check_params_with(_check_audit_params)
async def acheck_state(
    task: Task, checks: list[dict[str, Any]], *, timeout: float = 60.0
) -> Result:
    """:func:`check_state` on scrapli's async driver, on the session ``asend_command`` keeps."""
    require_libraries(acheck_state)
    plan, timeout = _audited(task, checks, timeout)
    return _audit_result(task, await adrive(task, plan, timeout))
