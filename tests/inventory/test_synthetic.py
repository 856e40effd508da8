"""The synthetic inventory: names, groups, platforms, data, validation, nornir integration."""

from __future__ import annotations

import pytest
from nornir import InitNornir
from nornir.core.filter import F

from nornir_bench import SyntheticInventory


def test_default_is_the_studys_ten_thousand_hosts() -> None:
    inventory = SyntheticInventory().load()
    assert len(inventory.hosts) == 10_000
    assert list(inventory.hosts)[:3] == ["dev0", "dev1", "dev2"]
    assert "dev9999" in inventory.hosts and "dev10000" not in inventory.hosts


def test_groups_round_robin_and_inheritance() -> None:
    inventory = SyntheticInventory(hosts=7, groups=3, data={"site": "lab"}).load()
    assert list(inventory.groups) == ["group0", "group1", "group2"]
    assert [h.groups[0].name for h in inventory.hosts.values()] == [
        "group0", "group1", "group2", "group0", "group1", "group2", "group0",
    ]
    assert inventory.hosts["dev4"].groups[0] is inventory.groups["group1"]
    assert inventory.hosts["dev4"]["site"] == "lab"


def test_each_host_owns_its_data() -> None:
    inventory = SyntheticInventory(hosts=3, data={"role": "edge"}).load()
    inventory.hosts["dev0"].data["role"] = "core"
    assert inventory.hosts["dev1"].data["role"] == "edge"


def test_single_platform_and_credentials_come_from_defaults() -> None:
    inventory = SyntheticInventory(
        hosts=2, platform="cisco_ios", username="admin", password="secret", port=2222
    ).load()
    host = inventory.hosts["dev1"]
    assert (host.platform, host.username, host.password, host.port) == (
        "cisco_ios", "admin", "secret", 2222,
    )


def test_platform_list_round_robin_or_seeded() -> None:
    platforms = ["cisco_ios", "arista_eos", "juniper_junos"]
    plain = SyntheticInventory(hosts=6, platform=platforms).load()
    assert [h.platform for h in plain.hosts.values()] == platforms * 2

    def seeded(seed: int) -> list[str | None]:
        inv = SyntheticInventory(hosts=200, platform=platforms, seed=seed).load()
        return [h.platform for h in inv.hosts.values()]

    assert seeded(7) == seeded(7)
    assert seeded(7) != seeded(8)
    assert set(seeded(7)) == set(platforms)


def test_hostname_template() -> None:
    inventory = SyntheticInventory(hosts=3, hostname="{name}.lab.example").load()
    assert inventory.hosts["dev2"].hostname == "dev2.lab.example"
    assert SyntheticInventory(hosts=1).load().hosts["dev0"].hostname is None


def test_zero_hosts_is_an_empty_inventory() -> None:
    assert len(SyntheticInventory(hosts=0).load().hosts) == 0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"hosts": -1}, "hosts must be a whole number >= 0, got -1"),
        ({"hosts": "10"}, "hosts must be a whole number >= 0, got '10'"),
        ({"hosts": True}, "hosts must be a whole number >= 0, got True"),
        ({"groups": -2}, "groups must be a whole number >= 0"),
        ({"platform": []}, "platform must be a name or a non-empty list of names"),
        ({"platform": ["ios", 3]}, "platform must be a name or a non-empty list of names"),
        ({"data": ["x"]}, "data must be a mapping"),
        ({"seed": "abc"}, "seed must be a whole number, got 'abc'"),
        ({"port": "ssh"}, "port must be a whole number >= 0"),
        ({"hostname": 5}, "hostname must be a string"),
    ],
)
def test_bad_options_say_what_is_allowed(options: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match="^synthetic inventory: " + message.replace("[", r"\[")):
        SyntheticInventory(**options)  # type: ignore[arg-type]


def test_loads_through_nornirs_entry_point_and_filters() -> None:
    nr = InitNornir(
        inventory={"plugin": "synthetic", "options": {"hosts": 12, "groups": 4}},
        runner={"plugin": "serial"},
        logging={"enabled": False},
    )
    assert len(nr.inventory.hosts) == 12
    assert sorted(nr.filter(F(groups__contains="group1")).inventory.hosts) == [
        "dev1", "dev5", "dev9",
    ]
