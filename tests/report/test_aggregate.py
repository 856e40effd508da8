"""The report page's numbers (:mod:`nornir_bench.report.aggregate`), from records files written
by hand: what the page's tables are drawn from, checked without a browser."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nornir_bench.report.aggregate import load_run


def failed(host: str, exception: str, message: str) -> dict[str, Any]:
    return {"host": host, "step": 1, "task": "sim_rtt", "failed": True, "elapsed": 0.1,
            "exception": exception, "message": message}


def test_failures_are_grouped_by_cause_each_counting_and_naming_its_hosts(tmp_path: Path) -> None:
    """Hosts refused by different addresses share a cause; another exception is another."""
    rows = [
        failed("r1", "ConnectionRefused", "login to r1 refused by 10.0.0.1 after 3 s"),
        {"host": "r2", "step": 1, "task": "sim_rtt", "failed": False, "elapsed": 0.1},
        failed("r3", "ConnectionRefused", "login to r3 refused by 10.0.0.3 after 5 s"),
        failed("r4", "TaskTimeout", "timed out after 30 s"),
        failed("r5", "ConnectionRefused", "login to r5 refused by 10.0.0.5 after 3 s"),
    ]
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    (step,) = load_run(path).steps.values()
    assert (step.hosts, step.ok, step.failed) == (5, 1, 4)
    causes = {(c.exception, c.folded): c for c in step.causes.values()}
    refused = causes[("ConnectionRefused", "login to <host> refused by <address> after <n> s")]
    assert (refused.count, refused.hosts) == (3, ["r1", "r3", "r5"])
    assert refused.example == "login to r1 refused by 10.0.0.1 after 3 s"
    timeout = causes[("TaskTimeout", "timed out after <n> s")]
    assert (timeout.count, timeout.hosts) == (1, ["r4"])
    assert sum(cause.count for cause in causes.values()) == step.failed


def test_a_cause_counts_every_host_and_names_the_first_twenty(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text("".join(
        json.dumps(failed(f"dev{i}", "TaskTimeout", f"timed out after {i} s")) + "\n"
        for i in range(25)))
    (step,) = load_run(path).steps.values()
    (cause,) = step.causes.values()
    assert cause.count == 25 == step.failed
    assert cause.hosts == [f"dev{i}" for i in range(20)]
