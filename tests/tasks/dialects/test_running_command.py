"""Which command prints a host's running configuration: the inventory's, else its dialect's."""

from __future__ import annotations

import pytest
from nornir.core.inventory import Defaults, Group, Host, ParentGroups

from nornir_bench.tasks.dialects.dialects import running_config_command


def host(platform: str | None, data: dict[str, object] | None = None,
         group_data: dict[str, object] | None = None) -> Host:
    group = Group("site", data=group_data or {})
    return Host("h1", platform=platform, data=data or {}, groups=ParentGroups([group]),
                defaults=Defaults())


@pytest.mark.parametrize(("platform", "command"), [
    ("cisco_ios", "show running-config"),
    ("arista_eos", "show running-config"),
    (None, "show running-config"),
    ("hp_comware", "display current-configuration"),
    ("huawei", "display current-configuration"),
    ("juniper_junos", "show configuration"),
])
def test_a_hosts_dialect_says_the_command(platform: str | None, command: str) -> None:
    assert running_config_command(host(platform)) == command


def test_the_inventory_names_the_command_on_a_host_or_its_group() -> None:
    assert running_config_command(
        host("cisco_ios", {"running_config_command": "show running-config all"})
    ) == "show running-config all"
    assert running_config_command(
        host("cisco_ios", group_data={"running_config_command": "show startup-config"})
    ) == "show startup-config"
    # config_platform is the dialect: an FRR host logging in as cisco_ios
    assert running_config_command(host("huawei", {"config_platform": "frr"})) == (
        "show running-config")
