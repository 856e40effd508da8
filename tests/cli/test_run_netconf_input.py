"""A NETCONF change's input refused in one line, exit 2, before any device is touched: XML
that is not well-formed (given, in a file), checks that read by command, xpath checks on a
CLI change, a check's subtree filter not well-formed or given with an xpath, a check's
force_list that is not a list of names or is given to a command. The inventory's servers do
not exist: nothing may try to reach them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_run import nornir_bench_here
from tests.cli.test_run_checks import job

INTERFACE = ("<interfaces xmlns='urn:ietf:params:xml:ns:yang:ietf-interfaces'><interface>"
             "<name>eth9</name></interface></interfaces>")


@pytest.mark.parametrize(
    ("task", "error"),
    [
        ("task: {name: netconf_edit_config, params: {config: \"<interfaces><interface>"
         "</interfaces>\"}}\n",
         "config: not well-formed XML: line 1, column 37: Opening and ending tag mismatch: "
         "interface line 1 and interfaces"),
        ("task: {name: anetconf_edit_config, params: {config: \"just words\"}}\n",
         "config: not well-formed XML: line 1, column 1: Start tag expected, '<' not found"),
        ("task: {name: netconf_edit_config, params: {config_file: bad.xml}}\n",
         "bad.xml: not well-formed XML: line 2, column 1: Premature end of data in tag a"),
        (f"task: {{name: netconf_edit_config, params: {{config: \"{INTERFACE}\", "
         "checks: [{command: show interfaces}]}}\n",
         "checks[1].command: a NETCONF change's check reads its data with <get> and an xpath"),
        ("task: {name: send_config, params: {lines: [hostname r1], checks: [{xpath: "
         "/interfaces}]}}\n",
         "checks[1].xpath: a check by xpath reads over NETCONF, around netconf_edit_config"),
        (f"task: {{name: netconf_edit_config, params: {{config: \"{INTERFACE}\", "
         "checks: [{xpath: /interfaces, force_list: interface}]}}\n",
         "checks[1].force_list must be a list of element names, e.g. [interface], got "
         "'interface'"),
        (f"task: {{name: netconf_edit_config, params: {{config: \"{INTERFACE}\", "
         "checks: [{filter: \"<interfaces><interface></interfaces>\"}]}}\n",
         "checks[1].filter is not well-formed XML: mismatched tag (line 1)"),
        (f"task: {{name: netconf_edit_config, params: {{config: \"{INTERFACE}\", "
         "checks: [{xpath: /interfaces, filter: \"<interfaces/>\"}]}}\n",
         "checks[1]: give xpath or filter (a subtree), not both"),
        ("task: {name: send_config, params: {lines: [hostname r1], checks: [{command: "
         "show version, force_list: [interface]}]}}\n",
         "checks[1].force_list: element names made lists in a NETCONF reply's data, for a "
         "check by xpath or filter; a command's output is read by its parse"),
        (f"task: {{name: netconf_edit_config, params: {{config: \"{INTERFACE}\", "
         "config_file: bad.xml}}\n",
         "give the XML as exactly one of config, config_file, template_file, not config "
         "and config_file"),
        (f"task: {{name: netconf_edit_config, params: {{config: \"{INTERFACE}\", "
         "confirm: {within: 5, new_login: yes please}}}\n",
         "confirm.new_login must be true or false, got 'yes please'"),
        ("task: {name: send_config, params: {lines: [hostname r1], confirm: {within: 5, "
         "new_login: true}}}\n",
         "confirm must be {within: SECONDS}, got "),
        (f"task: {{name: netconf_edit_config, params: {{config: \"{INTERFACE}\", "
         "lock_wait: -1}}\n",
         "lock_wait must be a number of seconds from 0 to 3600, got -1"),
    ],
)
def test_a_mistake_in_a_netconf_change_is_one_line_and_exit_2(
    tmp_path: Path, task: str, error: str
) -> None:
    (tmp_path / "bad.xml").write_text("<a>\n")
    done = nornir_bench_here("run", str(job(tmp_path, task)), "-q", "-o", "out.jsonl", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert error in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert not (tmp_path / "out.jsonl").exists() or not (tmp_path / "out.jsonl").read_text()


def test_a_template_rendering_xml_that_is_not_well_formed_stops_the_job_first(
    tmp_path: Path,
) -> None:
    """Found per host, as its template renders, before the step touches any device (whose
    port nothing listens on): the host fails with its record."""
    path = job(tmp_path, "task: {name: netconf_edit_config, params: {template_file: i.j2}}\n")
    (tmp_path / "i.j2").write_text("<interfaces><name>{{ host.name }}</interfaces>\n")
    done = nornir_bench_here("run", str(path), "-q", "-o", "out.jsonl", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    records = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert {record["host"]: record["message"] for record in records} == {
        name: f"template {tmp_path / 'i.j2'} for {name}: not well-formed XML: line 1, column "
              f"34: Opening and ending tag mismatch: name line 1 and interfaces"
        for name in ("r1", "r2")
    }
