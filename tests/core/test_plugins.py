"""init_nornir: InitNornir's Nornir, importing only the plugins the run names."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from nornir import InitNornir
from nornir.core.exceptions import PluginNotRegistered
from nornir.core.inventory import Host
from nornir.core.plugins.inventory import TransformFunctionRegister
from nornir.core.plugins.runners import RunnersPluginRegister
from nornir.plugins.runners import SerialRunner

from nornir_bench import ThreadPoolRunner
from nornir_bench.core.plugins import init_nornir

ROOT = Path(__file__).resolve().parents[2]
SETTINGS: dict[str, Any] = {
    "inventory": {"plugin": "synthetic", "options": {"hosts": 30, "groups": 3}},
    "runner": {"plugin": "threadpool", "options": {"num_workers": 7}},
    "logging": {"enabled": False},
    "user_defined": {"site": "lab"},
}


def in_fresh_interpreter(code: str) -> str:
    """What ``code`` prints, run in a new interpreter: the plugin registers are per process."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_nornir_is_the_one_init_nornir_builds() -> None:
    ours, nornirs = init_nornir(dry_run=True, **SETTINGS), InitNornir(dry_run=True, **SETTINGS)
    assert ours.config.dict() == nornirs.config.dict()
    assert ours.data.dry_run is nornirs.data.dry_run is True
    assert list(ours.inventory.hosts) == list(nornirs.inventory.hosts)
    assert ours.inventory.dict() == nornirs.inventory.dict()
    assert isinstance(ours.runner, ThreadPoolRunner) and ours.runner.num_workers == 7


def test_a_config_file_is_read_as_init_nornir_reads_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    nr = init_nornir(config_file="inventory/synthetic.yaml", connections=())
    assert len(nr.inventory.hosts) == 10_000
    assert isinstance(nr.runner, ThreadPoolRunner) and nr.runner.num_workers == 1000


def test_only_the_plugins_named_are_imported() -> None:
    registered = in_fresh_interpreter(
        "from nornir.core.plugins.register import PluginRegister\n"
        "from nornir_bench.core.plugins import init_nornir\n"
        "init_nornir(inventory={'plugin': 'synthetic', 'options': {'hosts': 2}},\n"
        "            runner={'plugin': 'serial'}, logging={'enabled': False}, connections=())\n"
        "import sys\n"
        "print(sorted(PluginRegister.available), 'nornir_netmiko' in sys.modules)"
    )
    assert registered == "['serial', 'synthetic'] False"


def test_the_connections_named_are_registered_and_none_means_every_one() -> None:
    code = (
        "from nornir.core.plugins.connections import ConnectionPluginRegister as R\n"
        "from nornir_bench.core.plugins import init_nornir\n"
        "init_nornir(inventory={'plugin': 'synthetic', 'options': {'hosts': 2}},\n"
        "            logging={'enabled': False}, connections=CONNECTIONS)\n"
        "print(sorted(name for name in R.available if name == 'netmiko'))"
    )
    for connections in ("['netmiko']", "None"):
        assert in_fresh_interpreter(code.replace("CONNECTIONS", connections)) == "['netmiko']"


def test_an_unknown_plugin_is_nornirs_own_error() -> None:
    with pytest.raises(PluginNotRegistered, match="plugin 'warp' is not registered"):
        init_nornir(**{**SETTINGS, "runner": {"plugin": "warp"}})
    with pytest.raises(PluginNotRegistered, match="plugin 'telnetlib' is not registered"):
        init_nornir(**SETTINGS, connections=["telnetlib"])


@pytest.fixture
def registered_in_code() -> Iterator[None]:
    RunnersPluginRegister.register("one-at-a-time", SerialRunner)
    TransformFunctionRegister.register("tag", _tag)
    yield
    RunnersPluginRegister.deregister("one-at-a-time")
    TransformFunctionRegister.deregister("tag")


def _tag(host: Host, label: str) -> None:
    host.data["label"] = label


def test_plugins_registered_in_code_are_found(registered_in_code: None) -> None:
    nr = init_nornir(
        inventory={**SETTINGS["inventory"], "transform_function": "tag",
                   "transform_function_options": {"label": "x"}},
        runner={"plugin": "one-at-a-time"},
        logging={"enabled": False},
        connections=(),
    )
    assert isinstance(nr.runner, SerialRunner)
    assert {host.data["label"] for host in nr.inventory.hosts.values()} == {"x"}
