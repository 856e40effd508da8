"""The report page's compliance table (report/compliance.py), from records as a replace's
``--check`` writes them: one line of drift is drift, shown with its one line."""

from __future__ import annotations

from typing import Any

from nornir_bench.processors.host_record import HostRecord
from nornir_bench.report.compliance import ComplianceTable, compliance_section


def checked(host: str, state: str, remediation: list[str] | None = None) -> HostRecord:
    change: dict[str, Any] = {"state": state, "backup": None}
    if remediation is not None:
        change["remediation"] = remediation
    return HostRecord.from_json({
        "host": host, "step": 1, "task": "send_config", "failed": False, "elapsed": 0.1,
        "result": state, "exception": None, "message": None, "changed": state == "drifted",
        "change": change, "diff": None,
    })


def test_one_line_of_drift_is_a_drifted_row_with_its_one_line() -> None:
    table = ComplianceTable()
    table.add(checked("r1", "compliant"))
    table.add(checked("r2", "drifted", ["no ip route 192.0.2.0/24 Null0"]))
    table.add(checked("r3", "drifted", ["ip route 198.51.100.2/32 Null0", "no ip route x"]))
    assert [(host, verdict) for host, verdict, _ in table.rows()] == [
        ("r2", "drifted"), ("r3", "drifted"), ("r1", "compliant")]
    page = compliance_section(table)
    assert "data-compliant='1' data-drifted='2'" in page
    assert ("<tr data-host='r2' data-state='drifted'><td>r2</td><td>drifted</td><td><details>"
            "<summary>1 line</summary><pre>no ip route 192.0.2.0/24 Null0</pre>") in page
    assert "<summary>2 lines</summary>" in page
    assert "<tr data-host='r1' data-state='compliant'><td>r1</td><td>compliant</td><td></td>" \
        in page
