"""A lab's inventory: many hosts spread over its routers, and a Nornir on what it wrote."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nornir_bench.lab.devices import LabDevice

if TYPE_CHECKING:
    from nornir.core import Nornir

__all__ = ["nornir_on", "router_hosts"]


def router_hosts(devices: list[LabDevice], count: int) -> list[LabDevice]:
    """``count`` inventory hosts spread over the routers' ports in turn (``h001`` on r1,
    ``h002`` on r2 ...): many hosts behind one SSH server, as in a fleet behind one jump
    host, or a benchmark of logins."""
    width = len(str(count))
    return [
        dataclasses.replace(d, name=f"h{k + 1:0{width}d}")
        for k in range(count)
        for d in [devices[k % len(devices)]]
    ]


def nornir_on(
    inventory: str | os.PathLike[str],
    runner: str = "threadpool",
    *,
    user_defined: dict[str, Any] | None = None,
    **options: Any,
) -> Nornir:
    """A Nornir on the SimpleInventory in the folder ``inventory`` (``hosts.yaml``,
    ``groups.yaml``, ``defaults.yaml``), with the runner plugin ``runner`` and its
    ``options``; nornir's logging off."""
    from nornir import InitNornir

    folder = Path(inventory)
    return InitNornir(
        user_defined=user_defined or {},
        runner={"plugin": runner, "options": options},
        inventory={
            "plugin": "SimpleInventory",
            "options": {
                "host_file": str(folder / "hosts.yaml"),
                "group_file": str(folder / "groups.yaml"),
                "defaults_file": str(folder / "defaults.yaml"),
            },
        },
        logging={"enabled": False},
    )
