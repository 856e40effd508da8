"""Compliance in records files: the hosts a replace's dry run (``nornir-bench run JOB
--check`` with ``mode: replace``) found ``compliant`` or ``drifted``, as a table of the
report page, the drifted first, each with the remediation that would bring it back.

Records come from devices, and may be written by hand: every key is read as it may be.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field

from nornir_bench.core.changes import COMPLIANT, DRIFTED
from nornir_bench.processors.host_record import HostRecord

__all__ = ["MAX_COMPLIANCE_SHOWN", "ComplianceTable", "compliance_section"]

MAX_COMPLIANCE_SHOWN = 2_000
"""Hosts the page's compliance table holds at most, the drifted first (the others counted)."""

_REMEDIATION_SHOWN = 200  # lines of a host's remediation on the page; the records hold all


@dataclass
class ComplianceTable:
    """The compliance of one step's records: counted, and the first
    :data:`MAX_COMPLIANCE_SHOWN` hosts kept as rows (the drifted first)."""

    compliant: int = 0
    drifted: int = 0
    _drifted_rows: list[tuple[str, list[str]]] = field(default_factory=list, repr=False)
    _compliant_rows: list[tuple[str, list[str]]] = field(default_factory=list, repr=False)

    def add(self, record: HostRecord) -> None:
        state = record.change_state
        if record.change is None or state not in (COMPLIANT, DRIFTED):
            return
        fix = record.change.get("remediation")
        lines = [str(line) for line in fix] if isinstance(fix, list) else []
        if state == DRIFTED:
            self.drifted += 1
            rows = self._drifted_rows
        else:
            self.compliant += 1
            rows = self._compliant_rows
        if len(rows) < MAX_COMPLIANCE_SHOWN:
            rows.append((record.host, lines))

    def rows(self) -> list[tuple[str, str, list[str]]]:
        """The rows shown: (host, verdict, remediation), the drifted first."""
        rows = [(host, DRIFTED, fix) for host, fix in self._drifted_rows]
        rows += [(host, COMPLIANT, fix) for host, fix in self._compliant_rows]
        return rows[:MAX_COMPLIANCE_SHOWN]


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def compliance_section(table: ComplianceTable) -> str:
    """The compliance table of a step, for the report page ("" when its records hold none)."""
    total = table.compliant + table.drifted
    if not total:
        return ""
    rows = []
    for host, verdict, fix in table.rows():
        shown = fix[:_REMEDIATION_SHOWN] + (["... cut"] if len(fix) > _REMEDIATION_SHOWN else [])
        count = f"{len(fix):,} line{'s' * (len(fix) != 1)}"
        remediation = (f"<details><summary>{count}</summary><pre>"
                       f"{_e(chr(10).join(shown))}</pre></details>" if fix else "")
        rows.append(f"<tr data-host='{_e(host)}' data-state='{verdict}'><td>{_e(host)}</td>"
                    f"<td>{verdict}</td><td>{remediation}</td></tr>")
    more = (f"<p>showing the first {len(rows):,} of {total:,}: the records hold every one</p>"
            if total > len(rows) else "")
    return (f"<h4>Compliance</h4><p class='compliance' data-compliant='{table.compliant}' "
            f"data-drifted='{table.drifted}'>compliant: <b>{table.compliant:,}</b>, drifted: "
            f"<b>{table.drifted:,}</b></p><table class='compliance'><tr><th>host</th>"
            "<th>verdict</th><th>remediation</th></tr>" + "".join(rows) + "</table>" + more)
