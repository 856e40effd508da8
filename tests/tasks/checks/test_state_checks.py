"""State checks as data: read from a job's mappings (every mistake one line naming its place),
and judged before and after a change. Reading them on devices is in
tests/runners/test_checks_routers.py."""

from __future__ import annotations

from typing import Any

import pytest

from nornir_bench.tasks.checks.check_outcomes import CheckOutcome
from nornir_bench.tasks.checks.state_checks import StateCheck, checks_from

SUMMARY = {"peers": {"a": {"state": "Established"}, "b": {"state": "Idle"}}}
ESTABLISHED = "length(peers.* | [?state=='Established'])"


def one(**given: Any) -> StateCheck:
    (check,) = checks_from([{"command": "show bgp summary json", **given}])
    return check


def test_a_check_takes_its_value_with_jmespath() -> None:
    assert one(path=ESTABLISHED).take(SUMMARY) == 1
    assert one().take(SUMMARY) == SUMMARY  # no path: the whole output
    assert one(path="peers.c.state").take(SUMMARY) is None


@pytest.mark.parametrize(
    ("expect", "before", "after", "failure"),
    [
        ("same", 2, 2, None),
        ("same", 2, 1, "was 2, now 1"),
        ("no_fewer", 2, 3, None),
        ("no_fewer", 2, 1, "was 2, now 1: fewer"),
        ("no_fewer", ["a", "b"], ["a"], "was 2, now 1: fewer"),
        ("no_fewer", "x", "y", "no_fewer needs a number, list or mapping"),
        ("present", None, "10.0.0.0/8", None),
        ("present", "x", [], "absent"),
        ("absent", "x", None, None),
        ("absent", None, "10.0.0.0/8", "present: '10.0.0.0/8'"),
        ({"equals": "Established"}, None, "Established", None),
        ({"equals": "Established"}, None, "Idle", "'Idle', not 'Established'"),
    ],
)
def test_what_must_hold_after_a_change(
    expect: Any, before: Any, after: Any, failure: str | None
) -> None:
    said = one(expect=expect).fails(before, after)
    assert said == failure if failure is None else said is not None and said.startswith(failure)


def test_an_outcome_keeps_the_values_and_whether_the_check_held() -> None:
    check = one(name="peers up", host="r2", path=ESTABLISHED, expect="no_fewer")
    record = CheckOutcome(check, before=2, after=1, after_read=True,
                          failure=check.fails(2, 1)).record()
    assert record == {"name": "peers up", "host": "r2", "command": "show bgp summary json",
                      "path": ESTABLISHED, "expect": "no_fewer", "before": 2, "after": 1,
                      "held": False, "failure": "was 2, now 1: fewer"}
    assert CheckOutcome(check, before=2).record()["held"] is None  # not read after: a dry run
    assert one(expect={"equals": 3}).said() == "check 'show bgp summary json' (equals 3)"


@pytest.mark.parametrize(
    ("given", "error"),
    [
        ("show x", "checks must be a list of 1 to 50 checks"),
        ([], "checks must be a list of 1 to 50 checks"),
        ([{"command": "show x"}] * 51, "at most 50 checks"),
        (["show x"], r"checks\[1\] must be a mapping with a command"),
        ([{"cmd": "show x"}], r"checks\[1\]: unknown key 'cmd'; a check takes name, host"),
        ([{"command": "show x\nshow y"}], r"checks\[1\].command must be one line"),
        ([{"command": "clear bgp *"}], r"checks\[1\].command: a check reads, and 'clear bgp "
         r"\*' may not: it must start with show, display, ping, traceroute"),
        ([{"command": "show x", "parse": "yaml"}], r"checks\[1\].parse must be one of json"),
        ([{"command": "show x", "parse": "textfsm", "template_file": "/nonexistent/x"}],
         "template_file: no such file"),
        ([{"command": "show x"}, {"command": "show x", "path": "peers.[?state=="}],
         r"checks\[2\].path: JMESPath syntax error in 'peers.\[\?state==': "),
        ([{"command": "show x", "expect": "more"}], r"checks\[1\].expect must be same, no_fewer"),
        ([{"command": "show x", "expect": {"equals": 1, "or": 2}}], r"checks\[1\].expect must be"),
        ([{"command": "show x", "host": 3}], r"checks\[1\].host must be an inventory host's name"),
        ([{"command": "show x", "host": "r2", "host_from": "peer"}],
         r"checks\[1\]: give host or host_from, not both"),
        ([{"command": "show x", "host_from": ""}], r"checks\[1\].host_from must be the name"),
    ],
)
def test_a_check_that_is_not_one_is_refused_naming_its_place(given: Any, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        checks_from(given)


def test_an_audit_refuses_checks_that_compare_with_a_before_it_does_not_have() -> None:
    with pytest.raises(ValueError, match="same compares with the state before a change, and "
                       "this step changes nothing: use present, absent or"):
        checks_from([{"command": "show x"}], audit=True)
    assert checks_from([{"command": "show x", "expect": "present"}], audit=True)
