"""``synthetic``: an inventory of N fake hosts, built in memory, for benchmarks at scale.

The hosts are named ``dev0`` ... ``devN-1`` as in the "how many threads" study. They are plain
nornir ``Host`` objects, so filters, inheritance and every task work on them as on hosts loaded
from YAML; only the YAML parsing is skipped, which is what makes 10,000 hosts load faster than
``SimpleInventory`` loads 1,000.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from nornir.core.inventory import (
    Defaults,
    Group,
    Groups,
    Host,
    Hosts,
    Inventory,
    ParentGroups,
)

from nornir_bench.core._gc import collector_paused
from nornir_bench.core.checks import whole_number

__all__ = ["SyntheticInventory"]


class SyntheticInventory:
    """Builds ``hosts`` fake hosts.

    Args:
        hosts: how many hosts (>= 0); they are named ``dev0`` ... ``devN-1``.
        groups: spread the hosts round-robin into this many groups, ``group0`` ...; ``None``
            or 0 puts them in none.
        platform: one platform for every host, or a list to pick from per host (round-robin,
            or at random with ``seed``), for a mixed-vendor inventory.
        data: a mapping copied into each host's ``data`` (each host gets its own copy, so a
            task changing one host's data leaves the others alone).
        seed: makes the per-host random choices reproducible; ``None`` means no randomness.
        hostname: a template for each host's ``hostname``, formatted with ``name`` and ``i``
            (e.g. ``"{name}.lab"``); ``None`` leaves it unset.
        port, username, password: connection defaults shared by all hosts.

    Raises:
        ValueError: for an option of the wrong type or out of range, naming what is allowed.
    """

    def __init__(
        self,
        hosts: int = 10_000,
        groups: int | None = None,
        platform: str | Sequence[str] | None = None,
        data: Mapping[str, Any] | None = None,
        seed: int | None = None,
        hostname: str | None = None,
        port: int | None = None,
        username: str | None = None,
        password: str | None = None,
    ) -> None:
        self.hosts = _whole_number("hosts", hosts, minimum=0)
        self.groups = 0 if groups is None else _whole_number("groups", groups, minimum=0)
        self.platforms = _platforms(platform)
        if data is not None and not isinstance(data, Mapping):
            raise ValueError(f"synthetic inventory: data must be a mapping, got {data!r}")
        self.data = dict(data or {})
        if seed is not None:
            _whole_number("seed", seed, minimum=None)
        self.seed = seed
        if hostname is not None and not isinstance(hostname, str):
            raise ValueError(f"synthetic inventory: hostname must be a string, got {hostname!r}")
        self.hostname = hostname
        self.defaults = Defaults(
            port=None if port is None else _whole_number("port", port, minimum=0),
            username=username,
            password=password,
            platform=self.platforms[0] if len(self.platforms) == 1 else None,
        )

    def load(self) -> Inventory:
        """Build the inventory: ``Host`` objects sharing one ``Defaults`` object."""
        with collector_paused():  # every object built here is kept: nothing to collect
            return self._build()

    def _build(self) -> Inventory:
        defaults = self.defaults
        groups = Groups(
            (name, Group(name=name, defaults=defaults))
            for name in (f"group{g}" for g in range(self.groups))
        )
        group_list = list(groups.values())
        platform_of = self._platform_picker()
        data = self.data
        template = self.hostname
        hosts = Hosts()
        for i in range(self.hosts):
            name = f"dev{i}"
            hosts[name] = Host(
                name=name,
                hostname=None if template is None else template.format(name=name, i=i),
                platform=platform_of(i),
                groups=ParentGroups((group_list[i % len(group_list)],)) if group_list else None,
                data=data.copy(),
                defaults=defaults,
            )
        return Inventory(hosts=hosts, groups=groups, defaults=defaults)

    def _platform_picker(self) -> Callable[[int], str | None]:
        """A function of the host index giving its own platform (``None``: inherit the default)."""
        platforms = self.platforms
        if len(platforms) <= 1:
            return lambda i: None
        if self.seed is None:
            return lambda i: platforms[i % len(platforms)]
        rng = random.Random(self.seed)
        return lambda i: rng.choice(platforms)


def _whole_number(option: str, value: object, *, minimum: int | None) -> int:
    return whole_number(f"synthetic inventory: {option}", value, minimum=minimum)


def _platforms(platform: str | Sequence[str] | None) -> list[str]:
    if platform is None:
        return []
    if isinstance(platform, str):
        return [platform]
    if (
        isinstance(platform, Sequence)
        and platform
        and all(isinstance(p, str) and p for p in platform)
    ):
        return list(platform)
    raise ValueError(
        "synthetic inventory: platform must be a name or a non-empty list of names, "
        f"got {platform!r}"
    )
