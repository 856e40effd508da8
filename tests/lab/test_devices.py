"""Which devices a lab emulates: read from a nornir inventory (with inheritance) or generated."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from nornir_bench.lab import (
    DEFAULT_PLATFORMS,
    LabDevice,
    LabError,
    fakenos_platforms,
    generate_lab_devices,
    load_lab_devices,
    render_inventory,
    run_lab,
    write_inventory,
)
from nornir_bench.lab.inventory_files import fakenos_host_key
from tests.devices import ROOT

SHIPPED = ROOT / "inventory" / "lab"


def write(folder: Path, hosts: str, groups: str = "", defaults: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "hosts.yaml").write_text(hosts, encoding="utf-8")
    if groups:
        (folder / "groups.yaml").write_text(groups, encoding="utf-8")
    if defaults:
        (folder / "defaults.yaml").write_text(defaults, encoding="utf-8")
    return folder


def test_shipped_lab_inventory_loads_as_is() -> None:
    devices = load_lab_devices(SHIPPED)
    assert [(d.name, d.address, d.port, d.platform) for d in devices] == [
        ("rtr1", "127.0.0.1", 6001, "cisco_ios"),
        ("rtr2", "127.0.0.1", 6002, "cisco_ios"),
        ("sw1", "127.0.0.1", 6003, "arista_eos"),
        ("sw2", "127.0.0.1", 6004, "arista_eos"),
    ]
    defaults = YAML(typ="safe").load(SHIPPED / "defaults.yaml")
    assert {(d.username, d.password) for d in devices} == {
        (defaults["username"], defaults["password"])
    }
    assert load_lab_devices(SHIPPED / "hosts.yaml") == devices  # a hosts file works too


def test_groups_and_defaults_inherit_as_in_nornir(tmp_path: Path) -> None:
    folder = write(
        tmp_path,
        "a: {hostname: localhost, port: 7001, groups: [core]}\n"
        "b: {hostname: 127.0.0.9, port: 7002, groups: [core], platform: arista_eos, username: b}\n",
        groups="core: {platform: juniper_junos, password: from-group}\n",
        defaults="username: admin\npassword: from-defaults\nplatform: cisco_ios\n",
    )
    a, b = load_lab_devices(folder)
    assert a == LabDevice("a", "127.0.0.1", 7001, "juniper_junos", "admin", "from-group")
    assert b == LabDevice("b", "127.0.0.9", 7002, "arista_eos", "b", "from-group")


def test_password_is_read_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LAB_TEST_PASSWORD", "s3cret-from-env")
    folder = write(
        tmp_path,
        "r1: {hostname: 127.0.0.1, port: 7001, platform: cisco_ios}\n",
        defaults="username: u\npassword: ${LAB_TEST_PASSWORD}\n",
    )
    assert load_lab_devices(folder)[0].password == "s3cret-from-env"
    assert "s3cret" not in repr(load_lab_devices(folder)[0])


def test_unset_password_variable_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LAB_TEST_UNSET", raising=False)
    folder = write(
        tmp_path,
        "r1: {hostname: 127.0.0.1, port: 7001, platform: cisco_ios,"
        " password: '${LAB_TEST_UNSET}'}\n",
        defaults="username: u\n",
    )
    with pytest.raises(LabError, match=r"'r1'.*LAB_TEST_UNSET is not set"):
        load_lab_devices(folder)


@pytest.mark.parametrize(
    ("host", "message"),
    [
        ("hostname: 10.0.0.1, port: 7001", r"host 'r1': hostname '10.0.0.1' is not a loopback"),
        ("hostname: router.example.com, port: 7001", r"is not a loopback address"),
        ("hostname: '::1', port: 7001", r"FakeNOS listens on IPv4 only: use 127.0.0.1"),
        ("port: 7001", r"host 'r1': a lab device needs a hostname"),
        ("hostname: 127.0.0.1", r"host 'r1': port must be a whole number from 1 to 65535"),
        ("hostname: 127.0.0.1, port: 70000", r"port must be a whole number .* got 70000"),
        ("hostname: 127.0.0.1, port: 7001, platform: ios", r"platform 'ios' is not one FakeNOS"),
    ],
)
def test_unusable_host_is_refused_in_one_line(tmp_path: Path, host: str, message: str) -> None:
    platform = "" if "platform" in host else ", platform: cisco_ios"
    folder = write(tmp_path, f"r1: {{{host}{platform}}}\n", defaults="username: u\npassword: p\n")
    with pytest.raises(LabError, match=message) as caught:
        load_lab_devices(folder)
    assert "\n" not in str(caught.value)


def test_bad_platform_error_lists_the_valid_ones(tmp_path: Path) -> None:
    folder = write(
        tmp_path,
        "r1: {hostname: 127.0.0.1, port: 7001, platform: nope}\n",
        defaults="username: u\npassword: p\n",
    )
    with pytest.raises(LabError) as caught:
        load_lab_devices(folder)
    assert all(name in str(caught.value) for name in ("cisco_ios", "arista_eos", "juniper_junos"))


def test_missing_credentials_and_shared_ports_are_refused(tmp_path: Path) -> None:
    no_password = write(
        tmp_path / "a",
        "r1: {hostname: 127.0.0.1, port: 7001, platform: cisco_ios}\n",
        defaults="username: u\n",
    )
    with pytest.raises(LabError, match="host 'r1': a lab device needs a password"):
        load_lab_devices(no_password)
    shared = write(
        tmp_path / "b",
        "r1: {hostname: 127.0.0.1, port: 7001}\nr2: {hostname: 127.0.0.2, port: 7001}\n",
        defaults="username: u\npassword: p\nplatform: cisco_ios\n",
    )
    with pytest.raises(LabError, match="'r1' and 'r2' both use port 7001"):
        load_lab_devices(shared)


def test_unreadable_inventories_are_refused(tmp_path: Path) -> None:
    with pytest.raises(LabError, match="no inventory at .*expected a directory holding hosts.yaml"):
        load_lab_devices(tmp_path / "missing")
    broken = write(tmp_path / "broken", "r1: [unclosed\n")
    with pytest.raises(LabError, match="cannot load the inventory at") as caught:
        load_lab_devices(broken)
    assert "\n" not in str(caught.value)
    with pytest.raises(LabError, match="has no hosts"):
        load_lab_devices(write(tmp_path / "empty", "# nothing\n"))


def test_generated_devices_cycle_platforms_over_consecutive_ports() -> None:
    devices = generate_lab_devices(
        5, platforms=["cisco_ios", "arista_eos", "juniper_junos"], port=9000
    )
    assert [(d.name, d.port, d.platform) for d in devices] == [
        ("dev1", 9000, "cisco_ios"),
        ("dev2", 9001, "arista_eos"),
        ("dev3", 9002, "juniper_junos"),
        ("dev4", 9003, "cisco_ios"),
        ("dev5", 9004, "arista_eos"),
    ]
    logins = {(d.address, d.username, d.password) for d in devices}
    assert logins == {("127.0.0.1", "user", "fakenos-lab")}
    assert [d.platform for d in generate_lab_devices(2)] == list(DEFAULT_PLATFORMS)
    assert set(DEFAULT_PLATFORMS) <= set(fakenos_platforms())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"count": 0}, "count must be a whole number >= 1, got 0"),
        ({"count": True}, "count must be a whole number >= 1, got True"),
        ({"count": 2, "platforms": []}, "platforms must be a non-empty list"),
        ({"count": 2, "platforms": "cisco_ios"}, "platforms must be a non-empty list"),
        ({"count": 2, "platforms": ["cisco_ios", "vax"]}, "platform 'vax' is not one FakeNOS"),
        ({"count": 10, "port": 65530}, "10 devices from port 65530 need ports up to 65539"),
        ({"count": 1, "port": 0}, "port must be a whole number from 1 to 65535"),
        ({"count": 1, "address": "192.0.2.1"}, "is not a loopback address"),
    ],
)
def test_generation_options_are_checked(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(LabError, match=message):
        generate_lab_devices(**kwargs)  # type: ignore[arg-type]


def test_rendered_inventory_loads_back_to_the_same_devices(tmp_path: Path) -> None:
    devices = generate_lab_devices(3, port=9100)
    devices.append(LabDevice("odd", "127.0.0.2", 9200, "juniper_junos", "admin", "other"))
    files = write_inventory(devices, tmp_path / "new" / "inventory")
    assert [f.name for f in files] == ["hosts.yaml", "groups.yaml", "defaults.yaml", "known_hosts"]
    assert load_lab_devices(tmp_path / "new" / "inventory") == devices
    # each device's key, as FakeNOS shows it, where the defaults say (checked by default)
    known = (tmp_path / "new" / "inventory" / "known_hosts").read_text().splitlines()
    assert known == [f"[{d.address}]:{d.port} {fakenos_host_key()}" for d in devices]
    defaults = YAML(typ="safe").load(files[2].read_text())
    assert defaults["data"] == {"known_hosts": str(files[3].absolute())}
    text = render_inventory(devices)
    assert "groups: [cisco_ios]" in text["hosts.yaml"]
    assert "cisco_ios:\n  platform: cisco_ios\n" in text["groups.yaml"]
    assert "username: user\npassword: fakenos-lab\n" in text["defaults.yaml"]


def test_missing_fakenos_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "fakenos.core.nos", None)  # import fails as if not installed
    hint = r"needs FakeNOS, which is not installed: pip install 'nornir-bench\[lab\]'"
    with pytest.raises(LabError, match=hint):
        run_lab(count=1, stop=threading.Event())
    with pytest.raises(LabError, match=hint):
        load_lab_devices(SHIPPED)
