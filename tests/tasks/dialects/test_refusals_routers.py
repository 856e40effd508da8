"""FRR's refusals (tests/tasks/dialects/frr_refusals.yaml) met by a change on a real router: each
change names the line FRR refused, in FRR's words, and is rolled back; through netmiko
(``send_config``, on the threadpool runner) and scrapli (``asend_config``, on asyncio).

The table was captured on r3 of the lab (AS 65003), so the changes go to h3, on r3; the router
is put back to its configuration after each test (as root, through vtysh) and checked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from nornir.core.exceptions import NornirSubTaskError
from nornir.core.task import Task

from nornir_bench import arun_subtask
from nornir_bench.lab import RunningRouterLab
from nornir_bench.tasks import ConfigChangeFailed, asend_config, send_config
from tests.routers import lab_pids
from tests.runners.test_routers import closed, failures
from tests.tasks.dialects.test_refusals import ACCEPTED, REFUSED, said

HOST, ROUTER = "h3", "r3"
# Lines r3 takes, around each line of the table: the refused line is the one named.
BEFORE, AFTER = "ip route 203.0.113.31/32 Null0", "ip route 203.0.113.32/32 Null0"
SENT = [row for row in REFUSED if row.get("sent", True)]
NOTED = [row for row in ACCEPTED if row["output"]]  # taken, with a note FRR printed
DRIVERS = [pytest.param("threadpool", send_config, id="netmiko"),
           pytest.param("asyncio", asend_config, id="scrapli")]


def change_of(row: dict[str, Any]) -> list[str]:
    """A change of a good line, the row's line (in its section), a good line."""
    return [BEFORE, *row.get("section", []), row["line"], AFTER]


@pytest.fixture
def r3_restored(frr_lab: RunningRouterLab) -> str:
    """r3's running configuration before the test (``frr_lab`` puts it back after)."""
    return frr_lab.configs()[ROUTER]


def change_each(task: Task, config_task: Any, changes: list[list[str]], folder: str) -> list[Any]:
    """Each change in turn on the host's one session: what each ended in (its error, or
    its result)."""
    ended = []
    for lines in changes:
        try:
            ended.append(task.run(task=config_task, lines=lines, backup_dir=folder)[0].change)
        except NornirSubTaskError as exc:
            ended.append(exc.result[0].exception)
    return ended


async def achange_each(
    task: Task, config_task: Any, changes: list[list[str]], folder: str
) -> list[Any]:
    ended = []
    for lines in changes:
        try:
            done = await arun_subtask(task, config_task, lines=lines, backup_dir=folder)
            ended.append(done[0].change)
        except NornirSubTaskError as exc:
            ended.append(exc.result[0].exception)
    return ended


def run_changes(lab: RunningRouterLab, runner: str, config_task: Any,
                changes: list[list[str]], folder: Path) -> list[Any]:
    """``changes`` one after the other on h3 (one session), the connections closed after."""
    sessions = set(lab_pids(lab.name, "vtysh"))
    nr = lab.nornir(runner).filter(name=HOST)
    try:
        result = nr.run(task=achange_each if config_task is asend_config else change_each,
                        config_task=config_task, changes=changes, folder=str(folder))
    finally:
        closed(nr, lab, sessions)
    assert result[HOST][0].exception is None, failures(result)
    ended: list[Any] = result[HOST][0].result
    return ended


@pytest.mark.parametrize(("runner", "config_task"), DRIVERS)
def test_each_refusal_of_the_table_names_its_own_line_in_frrs_words_and_is_rolled_back(
    frr_lab: RunningRouterLab, r3_restored: str, runner: str, config_task: Any,
    tmp_path: Path,
) -> None:
    """The table's refused lines, each in a change of three lines or more; then its lines FRR
    takes with a note, each a change made."""
    ended = run_changes(frr_lab, runner, config_task,
                        [change_of(row) for row in SENT + NOTED], tmp_path)
    for row, end in zip(SENT, ended, strict=False):
        lines = change_of(row)
        assert isinstance(end, ConfigChangeFailed), (row["name"], end)
        assert str(end).startswith(
            f"line {lines.index(row['line']) + 1} of {len(lines)} refused: "
            f"{row['line'].strip()!r}: {said(row)}; rolled back to the backup at "
        ), (row["name"], str(end))
        assert end.state == "rolled back", (row["name"], str(end))
    for row, end in zip(NOTED, ended[len(SENT):], strict=True):
        assert isinstance(end, dict) and end["state"] == "changed", (row["name"], end)
        assert row["line"].strip() in frr_lab.vtysh(ROUTER, "show running-config")


@pytest.mark.parametrize(("runner", "config_task"), DRIVERS)
def test_a_refusal_without_a_percent_names_its_line_not_the_next_one(
    frr_lab: RunningRouterLab, r3_restored: str, runner: str, config_task: Any,
    tmp_path: Path,
) -> None:
    """The issue's case, on r3 (AS 65003): FRR answers line 2 without ``%``; the line named
    was line 3, the first whose answer had one."""
    lines = ["ip route 198.51.100.0/24 Null0", "router bgp 65077",
             " neighbor 192.0.2.77 remote-as 65100"]
    (end,) = run_changes(frr_lab, runner, config_task, [lines], tmp_path)
    assert isinstance(end, ConfigChangeFailed), end
    assert str(end).startswith(
        "line 2 of 3 refused: 'router bgp 65077': BGP is already running; AS is 65003; "
        "rolled back to the backup at "
    ), str(end)
    assert end.state == "rolled back"
    assert "198.51.100.0/24" not in frr_lab.vtysh(ROUTER, "show running-config")
