"""The configuration text logic without a device: sections, order, idempotence, the diff and
the lines that undo a change, on FRR's own ``show running-config``."""

from __future__ import annotations

from pathlib import Path

import pytest

from nornir_bench.tasks.config_text import (
    applied,
    change_lines,
    changing_lines,
    config_diff,
    parse_config,
    render,
    restoring_lines,
    same,
    save_refusal,
)

RUNNING = """\
Building configuration...

Current configuration:
!
frr version 8.4.4
frr defaults datacenter
hostname r1
no ip forwarding
!
router bgp 65001
 bgp router-id 198.19.0.1
 neighbor 198.18.0.2 remote-as 65002
 neighbor 198.18.0.2 description r2
 !
 address-family ipv4 unicast
  redistribute connected
 exit-address-family
exit
!
end
"""

CHANGE = [
    "ip route 203.0.113.0/24 Null0",
    "router bgp 65001",
    " address-family ipv4 unicast",
    "  network 203.0.113.0/24",
]


def test_a_configuration_is_a_tree_by_indentation_without_its_framing() -> None:
    assert render(parse_config(RUNNING)) == [
        "frr version 8.4.4",
        "frr defaults datacenter",
        "hostname r1",
        "no ip forwarding",
        "router bgp 65001",
        " bgp router-id 198.19.0.1",
        " neighbor 198.18.0.2 remote-as 65002",
        " neighbor 198.18.0.2 description r2",
        " address-family ipv4 unicast",
        "  redistribute connected",
    ]


def test_the_diff_shows_exactly_the_lines_the_change_adds_under_their_sections() -> None:
    running = parse_config(RUNNING)
    diff = config_diff(running, applied(running, parse_config(CHANGE)))
    changed = [line for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in
               ("+++", "---")]
    assert changed == ["+  network 203.0.113.0/24", "+ip route 203.0.113.0/24 Null0"]
    assert " router bgp 65001" not in diff or " address-family ipv4 unicast" in diff


def test_a_change_applied_twice_changes_nothing_the_second_time() -> None:
    once = applied(parse_config(RUNNING), parse_config(CHANGE))
    twice = applied(once, parse_config(CHANGE))
    assert same(once, twice) and config_diff(once, twice) == ""
    assert not same(parse_config(RUNNING), once)


def test_order_within_a_section_is_the_devices() -> None:
    device_order = RUNNING.replace(
        " neighbor 198.18.0.2 remote-as 65002\n neighbor 198.18.0.2 description r2\n",
        " neighbor 198.18.0.2 description r2\n neighbor 198.18.0.2 remote-as 65002\n",
    )
    assert same(parse_config(RUNNING), parse_config(device_order))
    assert config_diff(parse_config(RUNNING), parse_config(device_order)) == ""


def test_no_removes_the_line_its_section_and_lines_that_begin_with_it() -> None:
    running = parse_config(RUNNING)
    removed = applied(running, parse_config(["router bgp 65001", " no neighbor 198.18.0.2"]))
    assert render(removed.lines["router bgp 65001"]) == [
        "bgp router-id 198.19.0.1", "address-family ipv4 unicast", " redistribute connected",
    ]
    gone = applied(running, parse_config(["no router bgp 65001"]))
    assert "router bgp 65001" not in gone.lines
    nothing = applied(running, parse_config(["no ip route 198.51.100.0/24 Null0"]))
    assert same(nothing, running)  # nothing to remove: no change
    on = applied(running, parse_config(["ip forwarding"]))
    assert "ip forwarding" in on.lines and "no ip forwarding" not in on.lines


def sent(config: str, lines: list[str]) -> list[str]:
    return [lines[k] for k in changing_lines(parse_config(config), lines)]


def test_only_the_lines_that_change_something_are_sent_with_the_lines_of_their_sections() -> None:
    change = [
        "no ip forwarding",  # there already
        "router bgp 65001",
        " neighbor 198.18.0.2 description r2",  # there already
        " address-family ipv4 unicast",
        "  redistribute connected",  # there already
        "  network 203.0.113.0/24",
        " exit-address-family",
        "exit",
        "no ip route 198.51.100.0/24 Null0",  # nothing to remove
        "ip route 203.0.113.0/24 Null0",
    ]
    assert sent(RUNNING, change) == [
        "router bgp 65001", " address-family ipv4 unicast", "  network 203.0.113.0/24",
        " exit-address-family", "exit", "ip route 203.0.113.0/24 Null0",
    ]
    done = "\n".join(render(applied(parse_config(RUNNING), parse_config(change))))
    assert sent(done, change) == []  # all made: nothing to send


def test_a_removal_half_made_sends_the_removals_left_and_later_lines_see_earlier_ones() -> None:
    routes = [f"ip route 198.51.100.{k}/32 Null0" for k in range(4)]
    half = "\n".join([RUNNING, *routes[2:]])
    change = [f"no {route}" for route in routes]
    assert sent(half, change) == change[2:]
    # one after another: a line added, then taken away, then added again all change it
    again = [routes[0], f"no {routes[0]}", routes[0]]
    assert sent(RUNNING, again) == again
    # lines under a "no" line go with it
    assert sent(RUNNING, ["no router bgp 65001", " bgp router-id 198.19.0.1"]) == [
        "no router bgp 65001", " bgp router-id 198.19.0.1",
    ]
    assert sent(RUNNING, ["no router bgp 65009", " bgp router-id 198.19.0.9"]) == []


def test_a_save_is_refused_by_an_error_not_by_a_warning() -> None:
    frr = "Note: this version of vtysh never writes vtysh.conf\n\nBuilding Configuration...\n"
    assert save_refusal(
        frr + "% Warning: can't chown configuration file /etc/frr/frr.conf: Operation not "
        "permitted\nIntegrated configuration saved to /etc/frr/frr.conf\n"
    ) is None
    assert save_refusal(
        frr + "Error renaming /etc/frr/frr.conf to /etc/frr/frr.conf.sav: Permission denied\n"
        "% Error: failed to open configuration file /etc/frr/frr.conf: Permission denied\n"
    ) == "% Error: failed to open configuration file /etc/frr/frr.conf: Permission denied"
    assert save_refusal("Building configuration...\n[OK]\n") is None
    assert save_refusal("%Error opening nvram:/startup-config (No space left on device)") == (
        "%Error opening nvram:/startup-config (No space left on device)"
    )


def test_the_restoring_lines_take_the_changed_configuration_back() -> None:
    before = parse_config(RUNNING)
    change = parse_config([*CHANGE, "no router bgp 65001", "router bgp 65009",
                           " bgp router-id 198.19.0.9"])
    after = applied(before, change)
    undo = restoring_lines(before, after)
    assert same(applied(after, parse_config(undo)), before)
    assert undo[0] == "no router bgp 65009"  # the last added first
    assert "no ip route 203.0.113.0/24 Null0" in undo
    assert undo.index("router bgp 65001") < undo.index(" neighbor 198.18.0.2 remote-as 65002")
    assert restoring_lines(before, before) == []


def test_a_default_turned_back_on_is_turned_off_again() -> None:
    """``no X`` lines are the device's: the lines say it, the device keeps the line."""
    before = parse_config(RUNNING)
    after = applied(before, parse_config(["ip forwarding"]))
    assert restoring_lines(before, after) == ["no ip forwarding"]


@pytest.mark.parametrize(
    ("lines", "says"),
    [
        ([], "the config is empty: give at least one line to send"),
        (["", "  "], "the config is empty: give at least one line to send"),
        (["ip route 1.1.1.0/24 Null0\nreload"], "config line 1 holds a line break: give one "
         "line per list item, got 'ip route 1.1.1.0/24 Null0\\nreload'"),
        (["hostname r1", 7], "config line 2 must be text, got 7"),
    ],
    ids=["empty", "blank", "line-break", "not-text"],
)
def test_bad_change_lines_say_which_and_why(lines: list[object], says: str) -> None:
    with pytest.raises(ValueError) as caught:
        change_lines(lines)
    assert str(caught.value) == says


def test_a_template_is_sandboxed_and_bounded(tmp_path: Path) -> None:
    from nornir.core.inventory import Host

    from nornir_bench.tasks.config import MAX_CONFIG_BYTES, config_lines

    host = Host("r1", data={"asn": 65001})
    (tmp_path / "ok.j2").write_text("router bgp {{ host.data.asn }}\n")
    assert config_lines(host, template_file=tmp_path / "ok.j2") == ["router bgp 65001"]
    (tmp_path / "escape.j2").write_text("{{ host.open_connection.__globals__ }}\n")
    with pytest.raises(ValueError, match="SecurityError"):
        config_lines(host, template_file=tmp_path / "escape.j2")
    (tmp_path / "endless.j2").write_text(
        "{% for i in range(10**5) %}{% for j in range(10**5) %}ip route x\n{% endfor %}"
        "{% endfor %}"
    )
    with pytest.raises(ValueError, match=f"renders past {MAX_CONFIG_BYTES:,} characters for r1"):
        config_lines(host, template_file=tmp_path / "endless.j2")
    (tmp_path / "huge.j2").write_text("{% for i in range(10**9) %}x{% endfor %}")
    with pytest.raises(ValueError, match="OverflowError: Range too big"):
        config_lines(host, template_file=tmp_path / "huge.j2")
