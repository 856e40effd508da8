"""Changes checked against the network, on both drivers, against FRR behind OpenSSH
(``frr_lab``: r1 - r2 - r3, eBGP on each link; hosts h1, h2, h3 on them), as root: a change
FRR accepts and reads back that breaks a BGP session is caught by a check on the neighbour and
rolled back; a canary rollout stops there; a run SIGKILLed before confirming leaves its
changes to ``nornir-bench recover`` or the next run; parsed output.

Checks, journals and parsing are the task's: each runs with the blocking driver on threadpool
and the async one on asyncio (``DRIVERS``), as docs/testing.md's rule for the runner matrix
says; what the runners do is the conformance and policy suites'.

Each test leaves the routers as it found them (``frr_lab`` puts them back, tests/routers.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from nornir_bench.lab import RunningRouterLab
from nornir_bench.tasks import (
    ConfigChangeFailed,
    asend_command,
    asend_config,
    send_command,
    send_config,
)
from nornir_bench.tasks.changes.journal import PENDING, REVERTED, read_journal
from tests.routers import lab_pids, wait_for
from tests.runners.test_config_routers import (
    lab_job,
    records,
    run_cli,
    run_cli_command,
    running,
)
from tests.runners.test_conformance import ASYNC, Runner
from tests.runners.test_routers import closed, failures, own_kind, runners

yaml = YAML(typ="safe")
ESTABLISHED = "length(peers.* | [?state=='Established'])"
SUMMARY = "show bgp ipv4 unicast summary json"


def own_change(runner: Runner) -> list[tuple[str, tuple[Any]]]:
    """The runner's own kind of change task: asend_config where it awaits async tasks, else
    send_config."""
    task: Any = asend_config if ASYNC in runner.kinds else send_config
    return [(task.__name__, (task,))]


DRIVERS = runners(cases=own_change, only=("threadpool", "asyncio"))
# The same for the read-only tasks: send_command on threadpool, asend_command on asyncio.
READERS = runners(cases=own_kind, only=("threadpool", "asyncio"))


def peer_of_r1(lab: RunningRouterLab) -> str:
    """r1's address on its link to r2 as r2 peers with it, and r2's as r1 does."""
    (peer, address), = lab.plan.neighbours(0)
    return address


def breaks_bgp(lab: RunningRouterLab) -> list[str]:
    """A mistyped AS for r1's neighbour r2: FRR takes it, reads it back, and drops the session."""
    return [f"router bgp {lab.asn('r1')}", f" neighbor {peer_of_r1(lab)} remote-as 65099"]


def established(lab: RunningRouterLab, router: str) -> int:
    return sum(state == "Established" for state in lab.bgp_peers(router).values())


def run_on_h1(lab: RunningRouterLab, runner: Runner, task: Any, folder: Path,
              **params: Any) -> Any:
    sessions = set(lab_pids(lab.name, "vtysh"))
    whole = lab.nornir(runner.name, **runner.options)
    nr = whole.filter(name="h1")
    try:
        return nr.run(task=task, backup_dir=str(folder / "backups"), **params)
    finally:
        closed(nr, lab, sessions)
        closed(whole, lab, sessions)


@pytest.mark.parametrize(("runner", "task"), DRIVERS)
def test_a_change_that_breaks_bgp_is_caught_on_the_neighbour_and_rolled_back(
    frr_lab: RunningRouterLab, restored: dict[str, str], runner: Runner, task: Any,
    tmp_path: Path,
) -> None:
    assert established(frr_lab, "r2") == 2
    neighbour = frr_lab.nornir().inventory.hosts["h2"]  # a host the run itself does not have
    check = {"name": "r2 sessions", "host": neighbour, "command": SUMMARY,
             "path": ESTABLISHED, "expect": "no_fewer"}
    result = run_on_h1(frr_lab, runner, task, tmp_path, lines=breaks_bgp(frr_lab),
                       checks=[check], confirm={"within": 3},
                       journal_file=str(tmp_path / "run.journal"))
    error = result["h1"].exception
    assert isinstance(error, ConfigChangeFailed), failures(result)
    assert error.state == "rolled back"
    assert "check 'r2 sessions' (no_fewer) on h2: was 2, now 1: fewer" in str(error)
    (record,) = error.checks
    assert (record["before"], record["after"], record["held"]) == (2, 1, False)
    assert running(frr_lab, "r1") == restored["r1"]  # byte-identical: the neighbour came back
    assert not wait_for(lambda: established(frr_lab, "r2") != 2)
    journal = read_journal(tmp_path / "run.journal")
    assert journal.hosts["h1"]["state"] == REVERTED and not journal.pending()


@pytest.mark.parametrize(("runner", "task"), DRIVERS)
def test_a_check_that_no_longer_holds_after_the_change_rolls_it_back_without_confirm(
    frr_lab: RunningRouterLab, restored: dict[str, str], runner: Runner, task: Any,
    tmp_path: Path,
) -> None:
    """On the router itself, read once after the change: a peer added where none may be."""
    check = {"command": SUMMARY, "path": "peerCount", "expect": "same"}
    lines = [f"router bgp {frr_lab.asn('r1')}", " neighbor 198.18.250.1 remote-as 65100"]
    result = run_on_h1(frr_lab, runner, task, tmp_path, lines=lines, checks=[check])
    error = result["h1"].exception
    assert isinstance(error, ConfigChangeFailed), failures(result)
    assert error.state == "rolled back"
    assert f"check '{SUMMARY} | peerCount' (same): was 1, now 2" in str(error)
    assert running(frr_lab, "r1") == restored["r1"]


@pytest.mark.parametrize(("runner", "task"), DRIVERS)
def test_checks_that_hold_confirm_the_change_and_a_dry_run_reads_them_before_only(
    frr_lab: RunningRouterLab, restored: dict[str, str], runner: Runner, task: Any,
    tmp_path: Path,
) -> None:
    route = "203.0.113.77/32"
    checks = [{"name": "sessions", "command": SUMMARY, "path": ESTABLISHED, "expect": "same"},
              {"name": "route", "command": "show ip route json", "path": f'"{route}"',
               "expect": "absent"}]
    lines = [f"ip route {route} Null0"]
    dry = run_on_h1(frr_lab, runner, task, tmp_path, lines=lines, checks=checks[:1],
                    dry_run=True)
    assert not dry.failed, failures(dry)
    assert dry["h1"][-1].checks[0]["before"] == 1 and dry["h1"][-1].checks[0]["held"] is None
    assert "to hold after the change" in dry["h1"][-1].result
    assert running(frr_lab, "r1") == restored["r1"]
    done = run_on_h1(frr_lab, runner, task, tmp_path, lines=lines, checks=checks[:1],
                     confirm={"within": 30}, journal_file=str(tmp_path / "run.journal"))
    assert not done.failed, failures(done)
    assert done["h1"][-1].checks[0]["held"] is True
    assert read_journal(tmp_path / "run.journal").hosts["h1"]["state"] == "confirmed"
    assert f"ip route {route} Null0" in running(frr_lab, "r1")


@pytest.mark.parametrize(("runner", "task"), READERS)
def test_parsed_json_keeps_the_text_as_raw(
    frr_lab: RunningRouterLab, runner: Runner, task: Any
) -> None:
    sessions = set(lab_pids(frr_lab.name, "vtysh"))
    nr = frr_lab.nornir(runner.name, **runner.options)
    try:
        result = nr.run(task=task, command=SUMMARY, parse="json")
    finally:
        closed(nr, frr_lab, sessions)
    assert not result.failed, failures(result)
    for host, router in frr_lab.hosts().items():
        data = result[host][-1].result
        assert data["as"] == frr_lab.asn(router), host
        assert set(data["peers"]) == set(frr_lab.bgp_peers(router))
        assert json.loads(result[host][-1].raw) == data


VERSION_FSM = "Value Required VERSION (\\S+)\n\nStart\n  ^Cisco IOS Software.*Version ${VERSION}\n"
PASSWORD_TTP = "<group name=\"secrets\">\n neighbor {{ peer }} password {{ password }}\n</group>\n"


@pytest.mark.parametrize(("runner", "task"), READERS)
def test_a_template_that_matches_nothing_fails_its_host_and_secrets_stay_masked(
    frr_lab: RunningRouterLab, restored: dict[str, str], runner: Runner, task: Any,
    tmp_path: Path,
) -> None:
    fsm = tmp_path / "version.textfsm"
    fsm.write_text(VERSION_FSM)
    ttp = tmp_path / "secrets.ttp"
    ttp.write_text(PASSWORD_TTP)
    secret = "n0t-for-records"
    frr_lab.vtysh("r1", f"configure terminal\nrouter bgp {frr_lab.asn('r1')}\n"
                  f"neighbor 198.18.250.1 remote-as 65100\n"
                  f"neighbor 198.18.250.1 password {secret}")
    assert secret in running(frr_lab, "r1")
    sessions = set(lab_pids(frr_lab.name, "vtysh"))
    nr = frr_lab.nornir(runner.name, **runner.options).filter(name="h1")
    try:
        version = nr.run(task=task, command="show version", parse="textfsm", template_file=fsm)
        parsed = nr.run(task=task, command="show running-config", parse="ttp",
                        template_file=ttp, on_failed=True)
    finally:
        closed(nr, frr_lab, sessions)
    error = version["h1"].exception
    assert type(error).__name__ == "OutputNotParsed", failures(version)
    assert f"textfsm template {fsm} matched nothing in the output of 'show version'" in str(error)
    assert not parsed.failed, failures(parsed)
    assert parsed["h1"][-1].result == {"secrets": {"peer": "198.18.250.1", "password": "********"}}
    assert secret not in json.dumps(parsed["h1"][-1].result)


def change_job(lab: RunningRouterLab, folder: Path, runner: str, *, lines: str, checks: str,
               confirm: float, options: str = "") -> Path:
    (folder / "change.j2").write_text(lines)
    return lab_job(lab, folder, runner, "    template_file: change.j2\n"
                   f"    checks: {checks}\n    confirm: {{within: {confirm}}}\n",
                   options=options)


BREAK_ON_H1 = """{% if host.name == 'h1' %}router bgp {{ asn }}
 neighbor {{ peer }} remote-as 65099
{% else %}ip route 203.0.113.{{ host.name[1:] }}/32 Null0
{% endif %}"""


@pytest.mark.parametrize("runner", ["threadpool", "asyncio"])
def test_a_canary_rollout_stops_at_the_router_whose_change_broke_bgp(
    frr_lab: RunningRouterLab, restored: dict[str, str], runner: str, tmp_path: Path,
) -> None:
    """Each router's check is on its own neighbour, named in its host data (host_from)."""
    template = BREAK_ON_H1.replace("{{ asn }}", str(frr_lab.asn("r1"))).replace(
        "{{ peer }}", peer_of_r1(frr_lab))
    checks = (f"[{{name: neighbour sessions, host_from: neighbour, command: {SUMMARY}, "
              f"path: \"{ESTABLISHED}\", expect: no_fewer}}]")
    job = change_job(frr_lab, tmp_path, runner, lines=template, checks=checks, confirm=3,
                     options=", batches: [1, 1, 1], max_fail_percentage: 0")
    hosts = yaml.load((frr_lab.inventory / "hosts.yaml").read_text())
    for host, neighbour in (("h1", "h2"), ("h2", "h1"), ("h3", "h2")):
        hosts[host]["data"] = {"neighbour": neighbour}
    with (tmp_path / "hosts.yaml").open("w") as file:
        yaml.dump(hosts, file)
    job.write_text(job.read_text().replace(str(frr_lab.inventory / "hosts.yaml"),
                                           str(tmp_path / "hosts.yaml")))
    done = run_cli(job, "-o", "rollout.jsonl")
    assert done.returncode == 1, done.stdout + done.stderr
    rows = records(tmp_path / "rollout.jsonl")
    assert rows["h1"]["change"]["state"] == "rolled back"
    (check,) = rows["h1"]["checks"]
    assert (check["host"], check["before"], check["after"]) == ("h2", 2, 1)
    assert rows["h2"]["exception"] == "RunAborted" and rows["h3"]["exception"] == "RunAborted"
    for router, text in restored.items():
        assert running(frr_lab, router) == text, router  # r1 reverted, r2 and r3 untouched
    assert not wait_for(lambda: established(frr_lab, "r2") != 2)
    assert not read_journal(tmp_path / "rollout.journal").pending()


NEVER = f"[{{name: never, command: {SUMMARY}, path: as, expect: {{equals: -1}}}}]"


def killed_while_pending(lab: RunningRouterLab, folder: Path, runner: str) -> Path:
    """A change on every router, its run SIGKILLed once all three are pending confirmation
    (their checks cannot hold); the journal it left."""
    job = change_job(lab, folder, runner, lines="ip route 203.0.113.{{ host.name[1:] }}/32 "
                     "Null0\n", checks=NEVER, confirm=300)
    process = subprocess.Popen(
        [sys.executable, "-m", "nornir_bench", "run", str(job), "-q", "-o", "run.jsonl"],
        cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    journal = folder / "run.journal"

    def not_all_pending() -> bool:  # in the journal before the lines are sent, then sent
        if process.poll() is not None:
            return False
        try:
            if len(read_journal(journal).pending()) < 3:
                return True
        except (OSError, ValueError):
            return True
        return not all(f"ip route 203.0.113.{k}/32 Null0" in running(lab, f"r{k}")
                       for k in (1, 2, 3))

    try:
        assert not wait_for(not_all_pending)
        assert process.poll() is None, "the run ended before it was killed"
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=60)
    assert sorted(read_journal(journal).pending()) == ["h1", "h2", "h3"]
    for k in (1, 2, 3):
        assert f"ip route 203.0.113.{k}/32 Null0" in running(lab, f"r{k}")
    return journal


@pytest.mark.parametrize("runner", ["threadpool", "asyncio"])
def test_recover_reverts_every_change_a_sigkilled_run_left_pending_byte_for_byte(
    frr_lab: RunningRouterLab, restored: dict[str, str], runner: str, tmp_path: Path,
) -> None:
    journal = killed_while_pending(frr_lab, tmp_path, runner)
    done = run_cli_command("recover", str(journal), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    for host in ("h1", "h2", "h3"):
        assert f"recover: {host}: reverted to its backup at " in done.stdout
    for router, text in restored.items():
        assert running(frr_lab, router) == text, router
    said = read_journal(journal)
    assert not said.pending() and {e["state"] for e in said.hosts.values()} == {REVERTED}
    rows = [json.loads(line) for line in (tmp_path / "run.jsonl").read_text().splitlines()]
    recovered = {r["host"]: r for r in rows if r["task"] == "recover"}
    assert {h: r["change"]["state"] for h, r in recovered.items()} == dict.fromkeys(
        ("h1", "h2", "h3"), "rolled back")
    again = run_cli_command("recover", str(journal), cwd=tmp_path)
    assert again.returncode == 0 and again.stdout == "recover: no change pending\n"


def test_the_next_run_on_the_records_folder_reverts_what_a_dead_run_left_pending(
    frr_lab: RunningRouterLab, restored: dict[str, str], tmp_path: Path,
) -> None:
    journal = killed_while_pending(frr_lab, tmp_path, "asyncio")
    assert read_journal(journal).hosts["h1"]["state"] == PENDING
    audit = tmp_path / "audit.yaml"
    audit.write_text(
        (tmp_path / "change.yaml").read_text().split("task:")[0]
        + f"task:\n  name: acheck_state\n  params:\n    checks: [{{command: {SUMMARY}, "
        f"path: \"{ESTABLISHED}\", expect: {{equals: 99}}}}]\n"
    )
    done = run_cli(audit, "-o", "audit.jsonl")
    assert done.returncode == 1, done.stdout + done.stderr  # the audit: no router has 99
    for host in ("h1", "h2", "h3"):
        assert f"recover: {host}: reverted to its backup at " in done.stderr
    for router, text in restored.items():
        assert running(frr_lab, router) == text, router
    rows = records(tmp_path / "audit.jsonl")
    assert all(r["checks"][0]["held"] is False for r in rows.values())
    assert "StateCheckFailed" in done.stdout


@pytest.mark.parametrize(("runner", "task"), DRIVERS)
def test_a_change_after_which_the_device_takes_no_new_login_is_reverted_within_its_window(
    frr_lab: RunningRouterLab, restored: dict[str, str], runner: Runner, task: Any,
    tmp_path: Path,
) -> None:
    """The session in use outlives what the change did to the device's access: the lab's SSH
    server is stopped (SIGSTOP) once the run holds its session, so no new login is answered;
    the change is reverted over the session it has, at the end of its window."""
    command = asend_command if task is asend_config else send_command
    sessions = set(lab_pids(frr_lab.name, "vtysh"))
    nr = frr_lab.nornir(runner.name, **runner.options).filter(name="h1")
    sshd = frr_lab.state()["sshd_pid"]
    try:
        assert not nr.run(task=command, command="show version").failed  # the session kept
        os.kill(sshd, signal.SIGSTOP)
        try:
            result = nr.run(task=task, lines=["ip route 203.0.113.78/32 Null0"],
                            confirm={"within": 1}, timeout=2, backup_dir=str(tmp_path),
                            journal_file=str(tmp_path / "run.journal"))
        finally:
            os.kill(sshd, signal.SIGCONT)
    finally:
        closed(nr, frr_lab, sessions)
    error = result["h1"].exception
    assert isinstance(error, ConfigChangeFailed), failures(result)
    assert error.state == "rolled back"
    assert "after the change, no new login to the device (" in str(error)
    assert "(not confirmed within 1 s); rolled back to the backup at " in str(error)
    assert running(frr_lab, "r1") == restored["r1"]
    assert read_journal(tmp_path / "run.journal").hosts["h1"]["state"] == REVERTED
