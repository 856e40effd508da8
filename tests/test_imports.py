"""Each entry point imports only what it uses, checked in a fresh interpreter's ``sys.modules``.

Start-up is timed by ``scripts/bench_startup.py``; these tests only keep the heavy imports out
of the paths that do not need them: the asyncio runner and ssl (asyncio's), cloudpickle (the
process pool's), the job loader, the lab, the sweep, and the device libraries.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

import nornir_bench
import nornir_bench.cli
import nornir_bench.tasks

# Module -> what it is, for the assertion messages.
HEAVY = {
    "asyncio": "asyncio",
    "ssl": "ssl (asyncio imports it)",
    "cloudpickle": "cloudpickle (the processpool runner's)",
    "nornir_bench.runners.asyncio_runner": "the asyncio runner",
    "nornir_bench.runners.processpool": "the processpool runner",
    "nornir_bench.jobs.load": "the job loader",
    "nornir_bench.lab": "the lab",
    "nornir_bench.bench.sweep": "the sweep",
    "tqdm": "tqdm (the progress bars')",
    "nornir_netmiko": "nornir-netmiko",
    "netmiko": "netmiko",
    "paramiko": "paramiko",
    "asyncssh": "asyncssh",
}


MARK = "-- modules --"


def loaded_by(code: str) -> set[str]:
    """The modules in ``sys.modules`` once ``code`` has run in a fresh interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\nprint('{MARK}', *sys.modules, sep='\\n')"],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split(MARK)[-1].split())


def heavy_in(modules: set[str]) -> list[str]:
    return [what for name, what in HEAVY.items() if name in modules]


def test_importing_the_package_imports_none_of_it() -> None:
    modules = loaded_by("import nornir_bench")
    assert heavy_in(modules) == []
    assert "nornir" not in modules  # not even nornir, until a name is used


def test_the_benchmark_scripts_imports_are_the_benchmarks_alone() -> None:
    modules = loaded_by("from nornir_bench.cli import script_entry")
    assert heavy_in(modules) == []
    assert "nornir_bench.tasks.commands" not in modules  # device tasks: not the benchmark's


def test_a_benchmark_run_imports_no_device_library_nor_other_commands() -> None:
    modules = loaded_by(
        "from nornir_bench.bench.benchmark import run_benchmark\n"
        "assert run_benchmark(2, 0, hosts=3).summary.ok == 3"
    )
    devices = ["nornir_netmiko", "netmiko", "paramiko", "asyncssh"]
    others = ["nornir_bench.jobs.load", "nornir_bench.lab", "nornir_bench.bench.sweep", "tqdm"]
    assert [name for name in devices + others if name in modules] == []


def test_nornir_bench_help_imports_no_command() -> None:
    modules = loaded_by(
        "import sys\n"
        "sys.argv = ['nornir-bench', '--help']\n"
        "from nornir_bench.cli import entry\n"
        "try:\n"
        "    entry()\n"
        "except SystemExit:\n"
        "    pass"
    )
    assert heavy_in(modules) == []
    assert "nornir" not in modules  # --help prints text: it needs no nornir


@pytest.mark.parametrize("package", [nornir_bench, nornir_bench.cli, nornir_bench.tasks],
                         ids=lambda package: package.__name__)
def test_every_exported_name_is_there_when_asked_for(package: object) -> None:
    names: list[str] = package.__all__  # type: ignore[attr-defined]
    everything: dict[str, object] = {}
    exec(f"from {package.__name__} import *", everything)  # type: ignore[attr-defined]
    assert sorted(set(everything) - {"__builtins__"}) == sorted(names)
    assert set(names) <= set(dir(package))
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        package.no_such_name  # type: ignore[attr-defined]  # noqa: B018
