"""The configuration text logic without a device, on hier_config with FRR's driver: a change
merged, a replace's target, the remediation and the diff, on FRR's own ``show
running-config``."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from nornir_bench.tasks.dialects.config_text import (
    change_lines,
    config_diff,
    ignoring,
    in_scope,
    merged,
    parse_config,
    remediation,
    replaced,
    same,
    save_refusal,
)
from nornir_bench.tasks.dialects.dialects import FRRDriver, driver_for

RUNNING = """\
Building configuration...

Current configuration:
!
frr version 8.4.4
frr defaults datacenter
hostname r1
no ip forwarding
!
interface lo
 description loopback
 ip address 198.19.0.1/32
exit
!
router bgp 65001
 bgp router-id 198.19.0.1
 neighbor 198.18.0.2 remote-as 65002
 neighbor 198.18.0.2 description r2
 !
 address-family ipv4 unicast
  redistribute connected
  neighbor 198.18.0.2 route-map IN in
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


def frr(text: str | list[str]) -> object:
    return parse_config(text, FRRDriver())


def test_a_configuration_is_a_tree_by_indentation_without_its_framing() -> None:
    assert list(frr(RUNNING).lines()) == [  # type: ignore[attr-defined]
        "hostname r1", "no ip forwarding", "interface lo", " description loopback",
        " ip address 198.19.0.1/32", "router bgp 65001", " bgp router-id 198.19.0.1",
        " neighbor 198.18.0.2 remote-as 65002", " neighbor 198.18.0.2 description r2",
        " address-family ipv4 unicast", "  redistribute connected",
        "  neighbor 198.18.0.2 route-map IN in",
    ]  # FRR's version and defaults profile are not configuration: neither sent nor compared


def test_the_diff_shows_exactly_the_lines_the_change_adds_under_their_sections() -> None:
    before = frr(RUNNING)
    diff = config_diff(before, merged(before, frr(CHANGE)))  # type: ignore[arg-type]
    assert [line for line in diff.splitlines() if line[:1] in "+-"] == [
        "--- running-config (now)", "+++ running-config (after the change)",
        "+  network 203.0.113.0/24", "+ip route 203.0.113.0/24 Null0",
    ]
    assert " router bgp 65001" in diff.splitlines()


def test_a_change_merged_twice_changes_nothing_the_second_time() -> None:
    once = merged(frr(RUNNING), frr(CHANGE))  # type: ignore[arg-type]
    assert same(merged(once, frr(CHANGE)), once)  # type: ignore[arg-type]
    assert remediation(once, merged(once, frr(CHANGE))) == []  # type: ignore[arg-type]


def test_order_within_a_section_is_the_devices() -> None:
    shuffled = RUNNING.replace(
        " neighbor 198.18.0.2 remote-as 65002\n neighbor 198.18.0.2 description r2",
        " neighbor 198.18.0.2 description r2\n neighbor 198.18.0.2 remote-as 65002",
    )
    assert same(frr(RUNNING), frr(shuffled))  # type: ignore[arg-type]


def test_no_removes_the_line_and_the_lines_that_begin_with_it() -> None:
    running = frr(RUNNING)
    removed = merged(running, frr(["router bgp 65001", " no neighbor 198.18.0.2"]))  # type: ignore[arg-type]
    assert [line.strip() for line in removed.lines() if "198.18.0.2 " in line] == [
        "neighbor 198.18.0.2 route-map IN in"]  # the address family's line is its own
    nothing = merged(running, frr(["no ip route 198.51.100.0/24 Null0"]))  # type: ignore[arg-type]
    assert same(nothing, running)  # type: ignore[arg-type]  # nothing to remove: no change
    on = merged(running, frr(["ip forwarding"]))  # type: ignore[arg-type]
    assert "no ip forwarding" not in list(on.lines())


def test_a_removal_half_made_sends_only_the_removals_left() -> None:
    routes = [f"ip route 198.51.100.{k}/32 Null0" for k in range(4)]
    half = frr("\n".join([RUNNING, *routes[2:]]))
    change = frr([f"no {route}" for route in routes])
    assert remediation(half, merged(half, change)) == [  # type: ignore[arg-type]
        f"no {route}" for route in routes[2:]]


def test_a_setting_takes_its_new_value_in_place() -> None:
    running = frr(RUNNING)
    target = merged(running, frr(["router bgp 65001", " neighbor 198.18.0.2 description R2",
                                  "hostname core1"]))  # type: ignore[arg-type]
    assert remediation(running, target) == [  # type: ignore[arg-type]
        "router bgp 65001", " neighbor 198.18.0.2 description R2", " exit", "hostname core1"]


def test_a_neighbour_removed_whole_is_one_line_as_frr_takes_it() -> None:
    running = frr(RUNNING)
    intended = frr(RUNNING.replace(" neighbor 198.18.0.2 remote-as 65002\n", "")
                   .replace(" neighbor 198.18.0.2 description r2\n", "")
                   .replace("  neighbor 198.18.0.2 route-map IN in\n", ""))
    assert remediation(running, intended) == [  # type: ignore[arg-type]
        "router bgp 65001", " no neighbor 198.18.0.2", " exit"]


def test_an_interface_left_out_is_emptied_not_removed() -> None:
    running = frr(RUNNING)
    scope = ["interface"]
    intended = frr("interface lo\n ip address 198.19.0.1/32\n")
    assert remediation(running, replaced(running, intended, scope)) == [  # type: ignore[arg-type]
        "interface lo", " no description", " exit"]
    target = replaced(running, frr("hostname r1\n"), [])  # type: ignore[arg-type]
    fix = remediation(running, target)  # type: ignore[arg-type]
    assert "no interface lo" not in fix and " no ip address 198.19.0.1/32" in fix


def test_an_address_family_left_out_is_emptied_and_a_gone_neighbours_lines_go_with_it() -> None:
    running = frr(RUNNING)
    intended = frr("router bgp 65001\n bgp router-id 198.19.0.1\n")
    assert remediation(running, replaced(running, intended, ["router bgp"])) == [  # type: ignore[arg-type]
        "router bgp 65001", " no neighbor 198.18.0.2", " address-family ipv4 unicast",
        "  no redistribute connected", "  exit-address-family", " exit"]


def test_a_replace_within_its_scope_leaves_the_rest() -> None:
    running = frr(RUNNING + "ip route 198.51.100.0/24 Null0\n")
    intended = frr("ip route 203.0.113.0/24 Null0\nhostname other\n")
    target = replaced(running, intended, ["ip route"])  # type: ignore[arg-type]
    assert remediation(running, target) == [  # type: ignore[arg-type]
        "no ip route 198.51.100.0/24 Null0", "ip route 203.0.113.0/24 Null0"]
    assert list(in_scope(target, ["ip route"]).lines()) == ["ip route 203.0.113.0/24 Null0"]
    assert list(in_scope(running, ["ip rout"]).lines()) == []  # a scope is whole words


def test_ignored_lines_are_left_out_of_both_sides() -> None:
    patterns = ignoring([r"^description "])
    running = parse_config(RUNNING, FRRDriver(), patterns)
    intended = parse_config(RUNNING.replace("description loopback", "description other"),
                            FRRDriver(), patterns)
    assert same(running, intended) and remediation(running, intended) == []
    with pytest.raises(ValueError, match=re.escape(
            "ignore pattern 2 '(unclosed' does not compile: missing ), unterminated subpattern")):
        ignoring(["ok", "(unclosed"])


def test_a_replace_needs_a_driver_a_merge_does_not() -> None:
    assert isinstance(driver_for("frr", replace=True), FRRDriver)
    assert type(driver_for("cisco_ios", replace=True)).__name__ == "HConfigDriverCiscoIOS"
    assert type(driver_for("fakeos", replace=False)).__name__ == "HConfigDriverGeneric"
    with pytest.raises(ValueError, match="mode: replace has no configuration driver for "
                                         "platform 'fakeos': give the host's config_platform"):
        driver_for("fakeos", replace=True)


def test_the_rollback_takes_the_changed_configuration_back() -> None:
    before = frr(RUNNING)
    after = merged(before, frr([*CHANGE, "no router bgp 65001", "router bgp 65009",
                                " bgp router-id 198.19.0.9"]))  # type: ignore[arg-type]
    undo = remediation(after, before)  # type: ignore[arg-type]
    assert same(merged(after, frr(undo)), before)  # type: ignore[arg-type]
    assert "no router bgp 65009" in undo and "no ip route 203.0.113.0/24 Null0" in undo
    assert remediation(before, before) == []  # type: ignore[arg-type]


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

    from nornir_bench.tasks.changes.config_input import MAX_CONFIG_BYTES, config_lines

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


def test_a_template_is_compiled_once_and_again_when_its_file_changes(tmp_path: Path) -> None:
    from nornir.core.inventory import Host

    from nornir_bench.tasks.changes.config_input import _environment, config_lines

    template = tmp_path / "route.j2"
    template.write_text("ip route 203.0.113.{{ host.data.k }}/32 Null0\n")
    for k in (1, 2):
        assert config_lines(Host(f"r{k}", data={"k": k}), template_file=template) == [
            f"ip route 203.0.113.{k}/32 Null0"]
    environment = _environment(str(tmp_path))
    assert environment.cache is not None and len(environment.cache) == 1  # compiled once
    template.write_text("ip route 198.51.100.0/24 Null0\n")
    os.utime(template, ns=(template.stat().st_atime_ns, template.stat().st_mtime_ns + 10**9))
    assert config_lines(Host("r1"), template_file=template) == ["ip route 198.51.100.0/24 Null0"]


def test_a_secret_with_quotes_and_backslashes_is_masked_in_the_remediation_and_diff() -> None:
    from nornir_bench.core.secrets import mask_config_secrets
    from nornir_bench.tasks.changes._change_flow import _masked

    secret = "s3\"c\\r'et"
    running = frr("router bgp 65001\n neighbor 192.0.2.1 remote-as 65002\n")
    intended = frr(f"router bgp 65001\n neighbor 192.0.2.1 remote-as 65002\n"
                   f" neighbor 192.0.2.1 password {secret}\n")
    target = replaced(running, intended, ["router bgp"])  # type: ignore[arg-type]
    fix = _masked(remediation(running, target))  # type: ignore[arg-type]
    diff = mask_config_secrets(config_diff(running, target))  # type: ignore[arg-type]
    assert " neighbor 192.0.2.1 password ********" in fix
    assert "+ neighbor 192.0.2.1 password ********" in diff.splitlines()
    assert "s3" not in "\n".join(fix) + diff  # no part of it left
