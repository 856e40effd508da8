"""Hosts counted and named the same way in every message."""

from __future__ import annotations

from nornir_bench.core.wording import hosts_named, hosts_text


def test_one_host_is_one_host() -> None:
    assert [hosts_text(n) for n in (0, 1, 2)] == ["0 hosts", "1 host", "2 hosts"]


def test_past_the_names_shown_the_rest_are_counted() -> None:
    names = [f"dev{n}" for n in range(7)]
    assert hosts_named(names) == "7 hosts (dev0, dev1, dev2, dev3, dev4, ... (+2))"
    assert hosts_named(names[:1]) == "1 host (dev0)"
    assert hosts_named(names[:3], shown=3) == "3 hosts (dev0, dev1, dev2)"
