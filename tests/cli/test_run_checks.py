"""Checks, parsers and confirm refused in one line, exit 2, before any device is touched; and
``nornir-bench recover`` on files that are not a journal of its folder. The inventory's
devices do not exist: nothing may try to reach them (their address is a port nothing listens
on, and the tests see no connection error, only the job's own line)."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

from nornir_bench.tasks.changes.journal import PENDING, append_entry, start_journal
from tests.cli.test_run import nornir_bench_here
from tests.devices import free_port_range


def job(tmp_path: Path, task: str) -> Path:
    port = free_port_range(1)
    (tmp_path / "hosts.yaml").write_text(
        f"r1: {{hostname: 127.0.0.1, port: {port}, platform: cisco_ios}}\n"
        f"r2: {{hostname: 127.0.0.1, port: {port}, platform: cisco_ios}}\n"
    )
    path = tmp_path / "job.yaml"
    path.write_text("inventory: {plugin: SimpleInventory, options: {host_file: hosts.yaml}}\n"
                    "logging: {enabled: false}\n" + textwrap.dedent(task))
    return path


CHANGE = """\
task:
  name: send_config
  params:
    lines: [ip route 203.0.113.1/32 Null0]
"""


@pytest.mark.parametrize(
    ("task", "error"),
    [
        ("task: {name: send_command, params: {command: show x, parse: xml}}\n",
         "job.yaml:3:28: task send_command: parse must be one of json, textfsm, ttp, got 'xml'"),
        ("task: {name: asend_command, params: {command: show x, parse: textfsm, "
         "template_file: gone.textfsm}}\n", "parse: template_file: no such file: "),
        (CHANGE + "    checks: [{command: show bgp summary json, path: 'peers.[?x=='}]\n",
         "checks[1].path: JMESPath syntax error in 'peers.[?x=='"),
        (CHANGE + "    checks: [{command: show bgp summary json, host: r9}]\n",
         "step 1 send_config: checks[1].host: no host 'r9' in the inventory"),
        (CHANGE + "    checks: [{command: show bgp summary json, host_from: peer}]\n",
         "checks[1].host_from: host r1 has no data 'peer' naming the host to check on"),
        ("task: {name: send_command, params: {command: show x, confirm: {within: 10}}}\n",
         "task send_command cannot revert a change, so it takes no confirm"),
        (CHANGE + "    rollback: false\n    confirm: {within: 10}\n",
         "confirm reverts a change that is not confirmed, and rollback: false says not to"),
        (CHANGE + "    confirm: {within: 0}\n", "confirm.within must be a number of seconds"),
        ("task: {name: check_state, params: {checks: [{command: show x, expect: same}]}}\n",
         "this step changes nothing: use present, absent or {equals: VALUE}"),
        (CHANGE + "    mode: swap\n", "mode must be one of merge, replace, got 'swap'"),
        (CHANGE + "    mode: replace\n    scope: [route-map]\n",
         "scope 'route-map' matches no section of the intended configuration"),
        (CHANGE + "    scope: [ip route]\n", "scope names what a replace replaces: give mode: "
         "replace with it"),
        (CHANGE + "    mode: replace\n    ignore: ['^frr version', '(']\n",
         "ignore pattern 2 '(' does not compile: missing ), unterminated subpattern"),
    ],
)
def test_a_mistake_in_checks_parsers_or_confirm_is_one_line_and_exit_2(
    tmp_path: Path, task: str, error: str
) -> None:
    done = nornir_bench_here("run", str(job(tmp_path, task)), "-q", "-o", "out.jsonl", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert error in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert not (tmp_path / "out.jsonl").exists() or not (tmp_path / "out.jsonl").read_text()
    assert not (tmp_path / "backups").exists()


def test_a_replace_a_host_cannot_take_stops_the_job_before_any_device_is_touched(
    tmp_path: Path,
) -> None:
    """Found per host, as its template renders: a platform without a configuration driver,
    an intended configuration its scope misses."""
    path = job(tmp_path, "task: {name: send_config, params: {template_file: intended.j2, "
                         "mode: replace, scope: [ip route]}}\n")
    (tmp_path / "intended.j2").write_text(
        "{% if host.name == 'r1' %}ip route 203.0.113.1/32 Null0{% else %}"
        "route-map RM permit 10{% endif %}\n")
    done = nornir_bench_here("run", str(path), "-q", "-o", "out.jsonl", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr == ("nornir-bench: error: scope 'ip route' matches no section of the "
                           "intended configuration of r2: a scope names the first words of "
                           "sections it holds, such as 'router bgp' or 'ip route'\n")
    hosts = (tmp_path / "hosts.yaml").read_text()
    (tmp_path / "hosts.yaml").write_text(hosts.replace("r2: {", "r2: {data: {config_platform: "
                                                                 "fakeos}, "))
    (tmp_path / "intended.j2").write_text("ip route 203.0.113.1/32 Null0\n")
    done = nornir_bench_here("run", str(path), "-q", "-o", "out.jsonl", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith("nornir-bench: error: r2: mode: replace has no configuration "
                                  "driver for platform 'fakeos': give the host's "
                                  "config_platform, one of frr, ")
    assert len(done.stderr.splitlines()) == 1
    assert not (tmp_path / "backups").exists()


def test_recover_refuses_a_file_that_is_not_a_journal(tmp_path: Path) -> None:
    garbage = tmp_path / "x.journal"
    garbage.write_bytes(b"\x00\x01not a journal")
    done = nornir_bench_here("recover", str(garbage), cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith(f"nornir-bench: error: {garbage}: not a nornir-bench journal")
    assert len(done.stderr.splitlines()) == 1
    missing = nornir_bench_here("recover", str(tmp_path / "none.journal"), cwd=tmp_path)
    assert missing.returncode == 2 and "no such journal file" in missing.stderr


def test_recover_refuses_a_journal_moved_from_another_records_folder(tmp_path: Path) -> None:
    """A copy would revert its routers a second time, maybe over a later change."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    journal = tmp_path / "a" / "run.journal"
    start_journal(journal, job=str(job(tmp_path, CHANGE)), records=None)
    append_entry(journal, "r1", PENDING, backup=str(tmp_path / "r1.cfg"), task="send_config")
    moved = tmp_path / "b" / "run.journal"
    shutil.copy(journal, moved)
    done = nornir_bench_here("recover", str(moved), cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"a journal of the records folder {tmp_path / 'a'}, not of {tmp_path / 'b'}" \
        in done.stderr
    assert json.loads(moved.read_text().splitlines()[-1])["state"] == PENDING  # untouched


def test_recover_with_nothing_pending_says_so(tmp_path: Path) -> None:
    journal = tmp_path / "run.journal"
    start_journal(journal, job=None, records=None)
    done = nornir_bench_here("recover", str(journal), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == "recover: no change pending\n"


def test_recover_refuses_a_journal_others_could_have_written(tmp_path: Path) -> None:
    """It names a job to load and backups to send to devices."""
    journal = tmp_path / "run.journal"
    start_journal(journal, job=str(job(tmp_path, CHANGE)), records=None)
    append_entry(journal, "r1", PENDING, backup=str(tmp_path / "r1.cfg"), task="send_config")
    journal.chmod(0o622)
    done = nornir_bench_here("recover", str(journal), cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "a journal must be yours and writable by you alone" in done.stderr
