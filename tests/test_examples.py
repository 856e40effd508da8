"""The example configuration files under inventory/ load as shipped."""

from __future__ import annotations

from pathlib import Path

import pytest
from nornir import InitNornir

from nornir_bench import ThreadPoolRunner

ROOT = Path(__file__).resolve().parents[1]


def test_synthetic_config_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    nr = InitNornir(config_file="inventory/synthetic.yaml")
    assert len(nr.inventory.hosts) == 10_000
    assert isinstance(nr.runner, ThreadPoolRunner) and nr.runner.num_workers == 1000
    assert {h.platform for h in nr.inventory.hosts.values()} == {"cisco_ios", "arista_eos"}


def test_lab_config_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    nr = InitNornir(config_file="inventory/lab/config.yaml")
    assert sorted(nr.inventory.hosts) == ["rtr1", "rtr2", "sw1", "sw2"]
    assert nr.inventory.hosts["sw1"].platform == "arista_eos"
    assert all(h.hostname == "127.0.0.1" for h in nr.inventory.hosts.values())
