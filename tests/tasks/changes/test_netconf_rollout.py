"""The shipped NETCONF example job (tasks/netconf_change.yaml) run as shipped on the NETCONF
lab: a canary rollout, one server first, no failure allowed, each change confirmed by the
server itself once its check holds."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from nornir_bench.core.changes import CHANGED, NOT_TOUCHED
from nornir_bench.lab import RunningNetconfLab
from tests.cli.test_run import nornir_bench_here
from tests.tasks.changes.test_netconf_change import other_session

ROOT = Path(__file__).resolve().parents[3]


def example(lab: RunningNetconfLab, tmp_path: Path) -> Path:
    """The shipped job and its template, with the lab's inventory where the job reads it
    (``inventory/nc``, as ``nornir-bench lab --netconf N --write inventory/nc`` puts it)."""
    assert lab.inventory is not None
    shutil.copytree(ROOT / "tasks", tmp_path / "tasks")
    shutil.copytree(lab.inventory, tmp_path / "inventory" / "nc")
    return tmp_path / "tasks" / "netconf_change.yaml"


def rows(path: Path) -> dict[str, dict[str, Any]]:
    return {row["host"]: row for row in map(json.loads, path.read_text().splitlines())}


def test_the_example_rolls_out_one_server_first_and_stops_there_on_a_failure(
    netconf_lab: RunningNetconfLab, tmp_path: Path
) -> None:
    """nc1 (the canary batch) has its lock held by another session: it fails, nothing sent,
    and nc2 is never started. Once nc1's lock is free, --rerun-failed changes both, each
    confirmed (journaled pending, confirming, confirmed a host)."""
    job = example(netconf_lab, tmp_path)
    before = netconf_lab.data("nc2")
    with other_session(netconf_lab, "nc1") as holder:
        holder.lock("candidate")
        first = nornir_bench_here("run", str(job), "-e", "purpose=canary", "-q", "-o",
                                  "first.jsonl", cwd=tmp_path)
    assert first.returncode == 1, first.stdout + first.stderr
    stopped = rows(tmp_path / "first.jsonl")
    assert stopped["nc1"]["change"] == {"state": NOT_TOUCHED, "backup": None}
    assert "<lock> refused: lock-denied" in stopped["nc1"]["message"]
    assert stopped["nc2"]["failed"] and stopped["nc2"]["change"] is None  # never started
    assert netconf_lab.data("nc2") == before
    again = nornir_bench_here("run", str(job), "-e", "purpose=canary", "--rerun-failed",
                              "first.jsonl", "-q", "-o", "again.jsonl", cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    changed = rows(tmp_path / "again.jsonl")
    assert {host: row["change"]["state"] for host, row in changed.items()} == {
        "nc1": CHANGED, "nc2": CHANGED}
    for server in ("nc1", "nc2"):
        assert f"<description>spare of {server}, canary</description>" in netconf_lab.config(
            server)
    journal = [json.loads(line) for line in
               (tmp_path / "again.journal").read_text().splitlines()[1:]]
    for server in ("nc1", "nc2"):
        assert [(entry["state"], entry.get("confirming", False)) for entry in journal
                if entry["host"] == server] == [
            ("pending", False), ("pending", True), ("confirmed", False)]
