"""The CPU-bound parsing task: a realistic output, parsed by the real TextFSM template."""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any

from nornir_bench.tasks import parse_interfaces, show_interfaces_output


def _task(host: str) -> Any:
    """Only ``task.host.name`` is read; the rest of nornir's Task is not the subject here."""
    return SimpleNamespace(host=SimpleNamespace(name=host))


def test_output_is_the_same_for_the_same_host() -> None:
    assert show_interfaces_output("dev1") == show_interfaces_output("dev1")
    assert show_interfaces_output("dev1") != show_interfaces_output("dev2")


def test_textfsm_reads_every_interface() -> None:
    records = parse_interfaces(_task("dev7"), interfaces=5)
    output = show_interfaces_output("dev7", interfaces=5)
    assert [r["interface"] for r in records] == [f"GigabitEthernet0/{n}" for n in range(5)]
    first = records[0]
    assert first["description"] == "uplink to dev7-peer0"
    # dev7's output is fixed (its second octet is crc32("dev7") % 250): written out, not read
    # back from what was parsed.
    assert [(r["ip_address"], r["prefix_length"]) for r in records] == [
        (f"10.154.{n}.1", "24") for n in range(5)
    ]
    states = re.findall(r"^GigabitEthernet0/\d is (\w+), line protocol is (\w+)$", output, re.M)
    assert [(r["link_status"], r["protocol_status"]) for r in records] == states
    assert first["mtu"] == "1500"
