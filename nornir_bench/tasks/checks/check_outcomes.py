"""State checks read on the devices and judged: their hosts found (:func:`resolved`), their
values read (:func:`read_checks`, a plan either driver runs:
:mod:`nornir_bench.tasks.sessions._plan`), and what came of them around a change or in an
audit (:class:`CheckOutcome`, in records and in words).

What a check is, and how a job's mapping becomes one, is
:mod:`nornir_bench.tasks.checks.state_checks`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from nornir_bench.tasks.checks.output_parsers import parse_output
from nornir_bench.tasks.checks.state_checks import RELATIVE, StateCheck, shown_value
from nornir_bench.tasks.dialects.netconf_xml import parse_data
from nornir_bench.tasks.sessions._netconf_requests import Get
from nornir_bench.tasks.sessions._plan import Command, PastDeadline, Plan

if TYPE_CHECKING:
    from nornir.core.task import Task

__all__ = ["CheckOutcome", "checks_text", "failures_said", "read_checks", "resolved"]


def resolved(task: Task, checks: tuple[StateCheck, ...]) -> tuple[StateCheck, ...]:
    """``checks`` with each ``host`` named by a name given as the inventory's ``Host``.

    Raises:
        ValueError: a host the run's inventory does not have (a job checks this as it loads;
            a worker elsewhere has no inventory, and the job gives it the hosts themselves).
    """
    hosts = getattr(getattr(task.nornir, "inventory", None), "hosts", {})
    found = []
    for check in checks:
        if check.host_from is not None:
            name = task.host.get(check.host_from)
            if not isinstance(name, str):
                raise ValueError(f"{check.said()}: host {task.host.name} has no data "
                                 f"{check.host_from!r} naming the host to check on")
            check = replace(check, host=name, host_from=None)
        if isinstance(check.host, str):
            # The hosts a job gave the check first: a worker's inventory is empty.
            host = (check.hosts or {}).get(check.host) or hosts.get(check.host)
            if host is None:
                raise ValueError(f"{check.said()}: no host {check.host!r} in the inventory")
            check = replace(check, host=host)
        found.append(check)
    return tuple(found)


def read_checks(
    checks: tuple[StateCheck, ...], platform: str | None
) -> Plan[list[tuple[Any, str | None]]]:
    """Each check's value, read from its host, or why it could not be (``platform``: the
    host's own, for ntc-templates)."""
    values: list[tuple[Any, str | None]] = []
    for check in checks:
        try:
            get_filter = check.get_filter
            if get_filter is not None:
                data = parse_data((yield Get(get_filter, check.host)), check.force_list)
                values.append((check.take(data), None))
                continue
            text = yield Command(check.command, check.host)
            data = parse_output(
                text, check.parse, command=check.command, template_file=check.template_file,
                platform=platform if check.host is None else getattr(check.host, "platform", None),
            )
            values.append((check.take(data), None))
        except PastDeadline:
            raise
        except Exception as exc:  # noqa: BLE001 - what a check could not read fails it
            values.append((None, f"not read: {type(exc).__name__}: {exc}"))
    return values


@dataclass(frozen=True)
class CheckOutcome:
    """A check's values around a change (``before`` is ``None`` in an audit), and why it
    failed (``None``: it held, or was not read after yet: ``after_read`` false; one that could
    not be read before the change says so, and was never read after)."""

    check: StateCheck
    before: Any = None
    after: Any = None
    after_read: bool = False
    failure: str | None = None

    def record(self) -> dict[str, Any]:
        """The outcome as records keep it."""
        check = self.check
        return {
            "name": check.name, "host": check.host_name, "command": check.command,
            **({"xpath": check.xpath} if check.xpath is not None else {}),
            **({"filter": check.subtree} if check.subtree is not None else {}),
            "path": check.path, "expect": check.expect,
            **({"value": check.value} if check.expect == "equals" else {}),
            "before": self.before, "after": self.after if self.after_read else None,
            "held": None if not self.after_read else self.failure is None,
            "failure": self.failure,
        }


def checks_text(records: Sequence[Mapping[str, Any]]) -> str:
    """The checks' outcomes (:meth:`CheckOutcome.record`) in lines, values shortened:
    ``check 'peers' (no_fewer) on h2: before 2, after 1: FAILED: was 2, now 1: fewer``."""
    lines = []
    for record in records:
        what = (f"equals {shown_value(record.get('value'))}" if record["expect"] == "equals"
                else record["expect"])
        on = f" on {record['host']}" if record["host"] else ""
        if record["held"] is None and record.get("failure"):  # not read before the change
            lines.append(f"check {record['name']!r} ({what}){on}: {record['failure']}")
            continue
        values = []
        if record["expect"] in RELATIVE or record["before"] is not None:
            values.append(f"before {shown_value(record['before'])}")
        if record["held"] is not None:
            values.append(f"after {shown_value(record['after'])}" if values
                          else shown_value(record["after"]))
        held = {True: "held", False: f"FAILED: {record['failure']}",
                None: "to hold after the change"}[record["held"]]
        lines.append(f"check {record['name']!r} ({what}){on}: {', '.join(values)}: {held}")
    return "\n".join(lines)


def failures_said(outcomes: Sequence[CheckOutcome]) -> str:
    """The checks that failed, in one line: ``check 'peers' (no_fewer) on h2: was 2, now 1``."""
    return "; ".join(f"{o.check.said()}: {o.failure}" for o in outcomes if o.failure)
