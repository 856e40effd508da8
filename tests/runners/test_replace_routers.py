"""``mode: replace`` and compliance on real routers (``frr_lab``: r1 - r2 - r3; hosts h1 on
r1, h2 on r2, h3 on r3), as root, through ``nornir-bench run``: a fleet's drift found by
``--check`` (exit 1, a compliance table on the report page), then brought back by the same
job run for real, leaving every router compliant (exit 0)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from nornir_bench.lab import RunningRouterLab
from tests.report.test_page import CHROMIUM, in_browser
from tests.runners.test_config_routers import (
    lab_job,
    records,
    run_cli,
    run_cli_command,
    running,
)

# Each router's intended static routes: its own two prefixes, nothing else.
INTENDED = """\
ip route 198.51.100.{{ host.name[1:] }}/32 Null0
ip route 203.0.113.{{ host.name[1:] }}/32 Null0
"""


def add_route(lab: RunningRouterLab, router: str, route: str) -> None:
    subprocess.run(["vtysh", "-N", f"nb-{lab.name}-{router}", "-c", "configure terminal",
                    "-c", route], check=True, capture_output=True, timeout=30)


@pytest.mark.parametrize("runner", ["threadpool", "asyncio"])
def test_a_fleets_drift_is_found_reported_and_brought_back(
    frr_lab: RunningRouterLab, restored: dict[str, str], runner: str,
    tmp_path: Path,
) -> None:
    (tmp_path / "intended.j2").write_text(INTENDED)
    job = lab_job(frr_lab, tmp_path, runner,
                  "    template_file: intended.j2\n    mode: replace\n    scope: [ip route]\n"
                  f"    backup_dir: {tmp_path / 'backups'}\n")
    made = run_cli(job, "-o", "made.jsonl")  # every router made as intended
    assert made.returncode == 0, made.stdout + made.stderr
    assert "config: 3 hosts changed" in made.stdout
    # r2 drifts: a route added by hand, one of its own removed
    add_route(frr_lab, "r2", "ip route 192.0.2.0/24 Null0")
    add_route(frr_lab, "r2", "no ip route 198.51.100.2/32 Null0")

    check = run_cli(job, "--check", "-o", "check.jsonl")
    assert check.returncode == 1, check.stdout + check.stderr  # for cron and CI
    assert "config: 1 host drifted, 2 hosts compliant" in check.stdout
    rows = records(tmp_path / "check.jsonl")
    assert {h: r["change"]["state"] for h, r in rows.items()} == {
        "h1": "compliant", "h2": "drifted", "h3": "compliant"}
    assert rows["h2"]["change"]["remediation"] == [
        "no ip route 192.0.2.0/24 Null0", "ip route 198.51.100.2/32 Null0"]
    assert "ip route 192.0.2.0/24 Null0" in running(frr_lab, "r2")  # a check changes nothing
    page = run_cli_command("report", "check.jsonl", "-o", "check.html", cwd=tmp_path)
    assert page.returncode == 0, page.stderr
    html = (tmp_path / "check.html").read_text()
    assert "data-compliant='2' data-drifted='1'" in html
    if CHROMIUM is not None:  # .ci/run installs it; the page's own tests say when it lacks
        dom, _ = in_browser(tmp_path / "check.html", tmp_path)
        assert 'data-ready="1"' in dom and "data-errors" not in dom
        assert '<tr data-host="h2" data-state="drifted">' in dom

    fixed = run_cli(job, "-o", "fixed.jsonl")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "config: 1 host changed, 2 hosts with nothing to change" in fixed.stdout
    again = run_cli(job, "--check", "-o", "again.jsonl")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "config: 3 hosts compliant" in again.stdout
    text = running(frr_lab, "r2")
    assert "ip route 192.0.2.0/24" not in text and "ip route 198.51.100.2/32 Null0" in text
    assert "router bgp 65002" in text  # outside the scope: left as it was


def test_a_replace_with_a_line_the_router_refuses_names_it_and_rolls_back(
    frr_lab: RunningRouterLab, restored: dict[str, str], tmp_path: Path,
) -> None:
    from nornir_bench.tasks import ConfigChangeFailed, send_config

    nr = frr_lab.nornir().filter(name="h2")
    try:
        result = nr.run(task=send_config, lines=["ip route 198.51.100.9/32 Null0",
                                                 "ip route bogus"],
                        mode="replace", scope=["ip route"], backup_dir=str(tmp_path))
    finally:
        nr.close_connections()
    error = result["h2"][0].exception
    assert isinstance(error, ConfigChangeFailed), result["h2"][0].result
    assert str(error).startswith("line 2 of 2 refused: 'ip route bogus': % Unknown command: "
                                 "ip route bogus; rolled back to the backup at "), str(error)
    assert running(frr_lab, "r2") == restored["r2"]  # byte for byte
