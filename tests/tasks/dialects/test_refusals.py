"""Each dialect's refusal rule (tasks/dialects/refusals.py) on what devices answer: FRR's real
answers (tests/tasks/dialects/frr_refusals.yaml, captured on the lab's FRR 8.4), the other
platforms' documented wordings, and FakeNOS's IOS and EOS answers to a command they do not
know."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from nornir_bench.tasks import send_command
from nornir_bench.tasks.dialects.refusals import FRR, PERCENT, answer_in, refusal, rule_for
from tests.devices import LabProcess

TABLE: dict[str, list[dict[str, Any]]] = YAML(typ="safe").load(
    Path(__file__).with_name("frr_refusals.yaml")
)
REFUSED, ACCEPTED = TABLE["refused"], TABLE["accepted"]


def said(row: dict[str, Any]) -> str:
    """The words a row's refusal is named by."""
    return str(row.get("says", row["output"]))


def netmiko_reply(line: str, output: str, prompt: str = "r3(config)# ") -> str:
    """netmiko's send_config_set text for ``line`` as it read FRR's: the echo after the
    prompt's space, the output, the prompt."""
    return f" {line.strip()}\n{output}\n{prompt}" if output else f" {line.strip()}\n{prompt}"


def test_the_table_has_eight_different_refusals_and_one_without_a_percent() -> None:
    assert len({row["line"] for row in REFUSED}) >= 8
    assert any(not row["output"].startswith("%") for row in REFUSED)


@pytest.mark.parametrize("row", REFUSED, ids=[row["name"] for row in REFUSED])
def test_each_answer_frr_gave_to_a_line_it_refused_is_a_refusal_in_its_words(
    row: dict[str, Any],
) -> None:
    assert refusal(row["output"], "frr") == said(row)
    reply = netmiko_reply(row["line"], row["output"])
    assert refusal(answer_in(reply, row["line"], "r3"), "frr") == said(row)


@pytest.mark.parametrize("row", ACCEPTED, ids=[row["name"] for row in ACCEPTED])
def test_each_answer_frr_gave_to_a_line_it_took_is_not_a_refusal(row: dict[str, Any]) -> None:
    assert refusal(row["output"], "frr") is None
    assert refusal(answer_in(netmiko_reply(row["line"], row["output"]), row["line"], "r3"),
                   "frr") is None


def test_the_issues_refusal_without_a_percent_is_one_for_frr_and_was_not_for_the_percent_rule(
) -> None:
    answer = "BGP is already running; AS is 65003"
    assert refusal(answer, "frr") == answer
    assert PERCENT.refusal(answer) is None  # the one rule every platform had before


def test_frr_takes_a_line_it_answers_with_nothing_but_notes_and_names_what_follows_them(
) -> None:
    assert refusal("", "frr") is None
    assert refusal("\n\n", "frr") is None
    notes = (" Warning: Reset BGP session for tcp-mss value to take effect\n"
             "The route-map 'X' does not exist.\n% New range will be taken into account at restart")
    assert refusal(notes, "frr") is None
    assert refusal(f"{notes}\nbgpd is not running", "frr") == "bgpd is not running"
    assert rule_for("frr") is FRR


@pytest.mark.parametrize(
    ("reply", "line", "answer"),
    [
        (" router bgp 65077\nBGP is already running; AS is 65003\nr3(config)# ",
         "router bgp 65077", "BGP is already running; AS is 65003"),
        (" router bgp 65003\nr3(config-router)# ", "router bgp 65003", ""),
        # IOS: the echo after the prompt, the caret line kept with the refusal
        ("r1(config)#ip route 1.1.1.0/24 Nul0\n                              ^\n"
         "% Invalid input detected at '^' marker.\n\nr1(config)#",
         "ip route 1.1.1.0/24 Nul0",
         "                              ^\n% Invalid input detected at '^' marker."),
        # what came before the echo is not the answer to the line (a login's leftover)
        ("% Unknown command: terminal width 511\nr3(config)# hostname r3\nr3(config)# ",
         "hostname r3", ""),
        # no echo: the answer, though it repeats the line, is not taken for one
        ("% Unknown command: ip routx 1.1.1.0/24\nr3(config)# ", "ip routx 1.1.1.0/24",
         "% Unknown command: ip routx 1.1.1.0/24"),
        # a prompt changed by the line is still the prompt
        (" router ospf\nospfd is not running\nr3(config-router)# ", "router ospf",
         "ospfd is not running"),
    ],
    ids=["frr-refused", "frr-taken", "ios-caret", "leftover-before-echo", "no-echo",
         "new-prompt"],
)
def test_netmikos_reply_without_the_echo_and_the_prompt_is_the_devices_answer(
    reply: str, line: str, answer: str
) -> None:
    prompt = "r1" if reply.startswith("r1") else "r3"
    assert answer_in(reply, line, prompt) == answer


# The documented wordings (sources in tasks/dialects/refusals.py), the answer as a driver reads it.
REFUSALS = [
    # vtysh's own (vtysh/vtysh.c, vtysh_execute_func), besides the table's
    ("frr", "% Command incomplete: ip route", "% Command incomplete: ip route"),
    ("frr", '% Ambiguous command: ip ro', '% Ambiguous command: ip ro'),
    ("cisco_ios", "                              ^\n% Invalid input detected at '^' marker.\n",
     "% Invalid input detected at '^' marker."),
    ("cisco_ios", "% Incomplete command.\n\n", "% Incomplete command."),
    ("ios", '% Ambiguous command:  "ip ro"\n', '% Ambiguous command:  "ip ro"'),
    ("cisco_iosxe", "%Error opening tftp://198.51.100.1/x (Timed out)",
     "%Error opening tftp://198.51.100.1/x (Timed out)"),
    ("cisco_nxos", "                 ^\n% Invalid command at '^' marker.",
     "% Invalid command at '^' marker."),
    ("nxos", "% Invalid parameter detected at '^' marker.",
     "% Invalid parameter detected at '^' marker."),
    ("cisco_nxos", "ERROR: Invalid number, range is (1-4094)",
     "ERROR: Invalid number, range is (1-4094)"),
    ("cisco_xr", "% Invalid input detected at '^' marker.",
     "% Invalid input detected at '^' marker."),
    ("iosxr", "% This command is not authorized", "% This command is not authorized"),
    ("arista_eos", "% Invalid input", "% Invalid input"),
    ("eos", "% Incomplete command", "% Incomplete command"),
    ("arista_eos", "% Duplicate sequence number", "% Duplicate sequence number"),
    ("aruba_aoscx", "Invalid input: vlann", "Invalid input: vlann"),
    ("aruba_aoscx", "% Command incomplete.", "% Command incomplete."),
    ("aruba_aoscx", "VLAN 4000 doesn't exist.", "VLAN 4000 doesn't exist."),
    ("hp_procurve", "Invalid input: vlann", "Invalid input: vlann"),
    ("hp_procurve", "Error: the VLAN is not configured", "Error: the VLAN is not configured"),
    ("hp_comware", "                ^\n % Unrecognized command found at '^' position.",
     None),  # indented: not Comware's answer at a line's start
    ("hp_comware", "% Unrecognized command found at '^' position.",
     "% Unrecognized command found at '^' position."),
    ("hp_comware", "% Too many parameters found at '^' position.",
     "% Too many parameters found at '^' position."),
    ("vyos", "\n  Configuration path: [interfaces ethernet eth9] is not valid\n  Set failed\n",
     "Set failed"),
    ("vyos", "Invalid command: set interfacez", "Invalid command: set interfacez"),
    ("vyos", "  Delete failed", "Delete failed"),
]
# Lines those CLIs print for a line they took, and lines of no dialect's refusal.
TAKEN = [
    ("cisco_ios", ""),
    ("cisco_ios", "r1(config-if)#description 100% of the uplink\n"),  # a % within a line
    ("cisco_ios", "  % indented, not the CLI's answer\n"),
    ("cisco_ios", "%SYS-5-CONFIG_I: Configured from console by admin on vty0\n"),  # IOS's log
    ("cisco_nxos", "Warning: Enable double-quoted string to be saved in the config"),
    ("cisco_xr", ""),
    ("arista_eos", "! Access VLAN does not exist. Creating vlan 10"),
    ("aruba_aoscx", ""),
    ("hp_procurve", ""),
    ("hp_comware", "%Jan  1 00:00:10:000 2013 H3C SHELL/5/SHELL_LOGIN: admin logged in."),
    ("vyos", "[edit]"),
]


@pytest.mark.parametrize(("dialect", "answer", "words"), REFUSALS)
def test_each_platforms_rule_reads_its_documented_refusals(
    dialect: str, answer: str, words: str | None
) -> None:
    assert refusal(answer, dialect) == words


@pytest.mark.parametrize(("dialect", "answer"), TAKEN)
def test_each_platforms_rule_takes_the_lines_it_prints_for_a_line_taken(
    dialect: str, answer: str
) -> None:
    assert refusal(answer, dialect) is None


@pytest.mark.parametrize("dialect", [None, "juniper_junos", "linux"])
def test_a_dialect_with_no_rule_keeps_the_percent_rule(dialect: str | None) -> None:
    assert rule_for(dialect) is PERCENT
    assert refusal("% Unknown command: x\n", dialect) == "% Unknown command: x"
    assert refusal("BGP is already running; AS is 65003", dialect) is None
    assert refusal("%SYS-5-CONFIG_I: Configured from console\n  % indented", dialect) is None


def test_fakenos_devices_answer_a_command_they_do_not_know_as_their_dialect_refuses(
    fakenos_lab: LabProcess,
) -> None:
    """FakeNOS's cisco_ios and arista_eos (which have no configuration mode there) answer an
    unknown command in their CLI's words; each platform's rule reads it as a refusal, and
    reads a command's output as none."""
    nr = fakenos_lab.nornir("threadpool", num_workers=4)
    try:
        unknown = nr.run(task=send_command, command="show nothing at all", enable=True)
        known = nr.run(task=send_command, command="show version", enable=True)
    finally:
        nr.close_connections()
    assert not unknown.failed and not known.failed, (unknown.failed_hosts, known.failed_hosts)
    words = {"cisco_ios": "% Invalid input detected at '^' marker.",
             "arista_eos": "% Invalid input"}
    for device in fakenos_lab.devices:
        answer = unknown[device.name].result
        assert answer.strip() == words[device.platform], (device.name, answer)
        assert refusal(answer, device.platform) == words[device.platform]
        assert refusal(known[device.name].result, device.platform) is None
