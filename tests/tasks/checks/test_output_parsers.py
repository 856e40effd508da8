"""A command's output as data: json, textfsm (ntc-templates or a template file), ttp; output
that parses to nothing is an error, and secrets in configuration text are masked first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nornir_bench.tasks import OutputNotParsed, parse_output, show_interfaces_output
from nornir_bench.tasks.checks.output_parsers import check_parser

FRR_SUMMARY = json.dumps({"as": 65001, "peers": {"198.18.0.2": {"state": "Established"}}})
PEERS_TTP = """<group name="peers">
 neighbor {{ peer }} remote-as {{ asn }}
</group>
"""
PASSWORD_TTP = """<group name="secrets">
 neighbor {{ peer }} password {{ password }}
</group>
"""
VERSION_FSM = """Value Required VERSION (\\S+)

Start
  ^Cisco IOS Software.*Version ${VERSION} -> Record
"""
RUNNING = """router bgp 65001
 neighbor 198.18.0.2 remote-as 65002
 neighbor 198.18.0.2 password s3cr3t-value
 neighbor 198.18.0.6 remote-as 65003
"""


def test_json_is_the_devices_own_data() -> None:
    data = parse_output(FRR_SUMMARY, "json", command="show bgp summary json")
    assert data["peers"]["198.18.0.2"]["state"] == "Established"


def test_output_that_is_not_json_names_the_command_and_its_first_line() -> None:
    with pytest.raises(OutputNotParsed, match=r"'show bgp x json' is not JSON .*% Unknown comm"):
        parse_output("% Unknown command: show bgp x json\n", "json", command="show bgp x json")


def test_textfsm_uses_ntc_templates_by_platform_and_command() -> None:
    text = show_interfaces_output("dev1", interfaces=3)
    rows = parse_output(text, "textfsm", command="show interfaces", platform="cisco_ios")
    assert [r["interface"] for r in rows] == [f"GigabitEthernet0/{n}" for n in range(3)]


def test_a_textfsm_template_that_matches_nothing_fails_rather_than_giving_an_empty_list(
    tmp_path: Path,
) -> None:
    template = tmp_path / "version.textfsm"
    template.write_text(VERSION_FSM)
    ok = parse_output("Cisco IOS Software, Version 15.2(4)M\n", "textfsm",
                      command="show version", template_file=template)
    assert ok == [{"version": "15.2(4)M"}]
    with pytest.raises(OutputNotParsed, match=r"matched nothing in the output of 'show "
                       r"version' \(2 lines\): 'FRRouting 8.4.4'"):
        parse_output("FRRouting 8.4.4\nCopyright\n", "textfsm", command="show version",
                     template_file=template)


def test_ntc_templates_without_a_template_for_the_command_says_to_give_one() -> None:
    with pytest.raises(OutputNotParsed, match="give the step a template_file"):
        parse_output("x\n", "textfsm", command="show nothing at all", platform="cisco_ios")


def test_ttp_reads_a_template_and_fails_on_no_match(tmp_path: Path) -> None:
    template = tmp_path / "peers.ttp"
    template.write_text(PEERS_TTP)
    data = parse_output(RUNNING, "ttp", command="show running-config", template_file=template)
    assert data == {"peers": [{"peer": "198.18.0.2", "asn": "65002"},
                              {"peer": "198.18.0.6", "asn": "65003"}]}
    with pytest.raises(OutputNotParsed, match="matched nothing"):
        parse_output("hostname r1\n", "ttp", command="show running-config",
                     template_file=template)


def test_secrets_in_the_output_are_masked_before_it_is_parsed(tmp_path: Path) -> None:
    template = tmp_path / "secrets.ttp"
    template.write_text(PASSWORD_TTP)
    data = parse_output(RUNNING, "ttp", command="show running-config", template_file=template)
    assert "s3cr3t-value" not in json.dumps(data)
    assert data == {"secrets": {"peer": "198.18.0.2", "password": "********"}}


@pytest.mark.parametrize(
    ("params", "error"),
    [
        ({"parse": "xml"}, "parse must be one of json, textfsm, ttp, got 'xml'"),
        ({"parse": "ttp"}, "parse: ttp needs a template_file"),
        ({"parse": "json", "template_file": "t"}, "parse: json takes no template_file"),
        ({"parse": "textfsm", "template_file": "/nonexistent/t.textfsm"},
         "template_file: no such file: /nonexistent/t.textfsm"),
        ({"template_file": "t"}, "template_file is for parse: textfsm or ttp"),
    ],
)
def test_a_parser_that_cannot_parse_is_refused_before_anything_runs(
    params: dict[str, str], error: str
) -> None:
    with pytest.raises(ValueError, match=error.replace("(", r"\(").replace(")", r"\)")):
        check_parser(params)


def test_a_file_that_is_not_a_textfsm_template_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "bad.textfsm"
    bad.write_text("Value X (\\S+)\n\nNoStart\n  ^x\n")
    with pytest.raises(ValueError, match="not a TextFSM template"):
        check_parser({"parse": "textfsm", "template_file": str(bad)})
