"""Each entry point imports only what it uses, checked in a fresh interpreter's ``sys.modules``.

Start-up is timed by ``scripts/bench_startup.py``; these tests only keep the heavy imports out
of the paths that do not need them: the asyncio runner and ssl (asyncio's), cloudpickle (the
process pool's), the job loader, the lab, the sweep, and the device libraries.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

import nornir_bench
import nornir_bench.cli
import nornir_bench.tasks
from tests.conftest import modules_after

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
    "scrapli": "scrapli",
}


def heavy_in(modules: set[str]) -> list[str]:
    return [what for name, what in HEAVY.items() if name in modules]


def test_importing_the_package_imports_none_of_it() -> None:
    modules = modules_after("import nornir_bench")
    assert heavy_in(modules) == []
    assert "nornir" not in modules  # not even nornir, until a name is used


def test_the_benchmark_scripts_imports_are_the_benchmarks_alone() -> None:
    modules = modules_after("from nornir_bench.cli import script_entry")
    assert heavy_in(modules) == []
    assert "nornir_bench.tasks.checks.commands" not in modules  # device tasks: not the benchmark's


def test_a_threadpool_benchmark_run_imports_none_of_it_either() -> None:
    """Run, not only imported: nornir loads the runner and nothing else (no connection plugin,
    no other runner), and a blocking run needs no event loop."""
    modules = modules_after(
        "from nornir_bench.bench.benchmark import run_benchmark\n"
        "assert run_benchmark(2, 0, hosts=3).summary.ok == 3"
    )
    assert heavy_in(modules) == []


def test_a_change_job_that_restores_nothing_imports_no_git_library(tmp_path: Path) -> None:
    """pygit2 is a restore's (``from_history``) and a backup's, not every change's."""
    job = tmp_path / "job.yaml"
    job.write_text("inventory: {plugin: SimpleInventory, options: {host_file: hosts.yaml}}\n"
                   "task: {name: send_config, params: {lines: [hostname r1]}}\n"
                   "logging: {enabled: false}\n")
    (tmp_path / "hosts.yaml").write_text("r1: {hostname: 127.0.0.1}\n")
    modules = modules_after(
        "from nornir_bench.jobs.load import load_job\n"
        f"load_job({str(job)!r}).nornir()"
    )
    assert "nornir_bench.tasks.changes.config" in modules
    assert "pygit2" not in modules


def test_nornir_bench_help_imports_no_command() -> None:
    modules = modules_after(
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


def test_an_exported_name_stays_itself_once_a_module_of_the_same_name_is_imported() -> None:
    """Once, ``from nornir_bench.cli import main`` gave the module ``cli/main.py`` once it had
    been imported: importing a module sets its package's attribute of that name."""
    modules_after(
        "import importlib, importlib.util, types\n"
        "for package in ('nornir_bench', 'nornir_bench.cli', 'nornir_bench.tasks',\n"
        "                'nornir_bench.runners'):\n"
        "    exported = importlib.import_module(package)\n"
        "    for name in exported.__all__:\n"
        "        if importlib.util.find_spec(f'{package}.{name}') is not None:\n"
        "            importlib.import_module(f'{package}.{name}')\n"
        "        value = getattr(exported, name)\n"
        "        assert not isinstance(value, types.ModuleType), (package, name)\n"
    )


def test_the_documented_imports_work() -> None:
    from nornir_bench.cli import main, script_entry  # docs/benchmarks.md
    from nornir_bench.runners.processpool import ProcessPoolRunner  # the entry point's path

    assert callable(main) and callable(script_entry)
    assert ProcessPoolRunner.__module__ == "nornir_bench.runners.processpool.runner"


# What a plain ``script.py WORKERS RTT`` run imports beyond the interpreter's own start-up, by
# module: the runner named, its core, nornir (and its ruamel.yaml), nothing else. A module new
# here costs every run of the study its import: add it only if the run uses it.
SCRIPT_RUN_MODULES = {
    "nornir_bench": {
        "", "._lazy", ".bench", ".bench.benchmark", ".bench.record", ".bench.summary",
        ".bench.usage", ".cli", ".cli._common", ".cli.main", ".cli.script", ".core",
        ".core._gc", ".core._logging", ".core._pickling", ".core.attempts", ".core.changes",
        ".core.cpus",
        ".core.checks", ".core.closing", ".core.deadlines", ".core.exceptions",
        ".core.execution", ".core.failures", ".core.hooks", ".core.host_task",
        ".core.library_warnings", ".core.liveness", ".core.one_host", ".core.open_files",
        ".core.plugins",
        ".core.policies", ".core.policies.exception_types", ".core.policies.hosts",
        ".core.policies.groups", ".core.policies.logins", ".core.policies.options",
        ".core.policies.plan",
        ".core.policies.retry", ".core.read_only", ".core.runner_traits", ".core.ctrl_c",
        ".core.stoppable",
        ".core.task_traits",
        ".core.wording",
        ".inventory", ".inventory.synthetic", ".processors", ".processors.timing", ".runners",
        ".runners._core", ".runners._core.lifecycle", ".runners._core.limiter",
        ".runners._core.queue", ".runners._core.results", ".runners._core.scheduler",
        ".runners.registry", ".tasks",
        ".tasks._needs", ".tasks._params", ".tasks.synthetic", ".tasks.synthetic.simulated",
    },
    "threadpool": {
        ".core._switching", ".runners._core.blocking", ".runners.threadpool",
    },
    "asyncio": {
        ".core.connections", ".core.loops", ".core.offload", ".core.session", ".core.subtasks",
        ".runners._core.async_scheduler", ".runners._keeper", ".runners._kept_loop",
        ".runners.asyncio_runner",
    },
}
# Other packages than the standard library's, by top-level name.
SCRIPT_RUN_PACKAGES = {
    "threadpool": {"nornir", "nornir_bench", "ruamel"},
    # uvloop where it is installed: the runner's loop is uvloop's then (``loop: auto``).
    "asyncio": {"nornir", "nornir_bench", "ruamel"}
    | ({"uvloop"} if importlib.util.find_spec("uvloop") else set()),
}


@pytest.mark.parametrize("runner", ["threadpool", "asyncio"])
def test_a_plain_script_run_imports_exactly_its_runner_core_and_nornir(runner: str) -> None:
    """``script.py 3 0 --runner R``, run to its end: every module it imports is listed above.
    Compared with what the interpreter had imported before the script, so that the
    environment's own start-up (``.pth`` files, ``sitecustomize``) is left out."""
    done = subprocess.run(
        [sys.executable, "-c",
         "import sys\n"
         "before = set(sys.modules)\n"
         "from nornir_bench.cli.script import script_main\n"
         f"assert script_main(['3', '0', '--hosts', '3', '--runner', {runner!r}]) == 0\n"
         "print('MODULES', *sorted(set(sys.modules) - before))"],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    imported = set(done.stdout.split("MODULES", 1)[1].split())
    ours = {name for name in imported if name.split(".")[0] == "nornir_bench"}
    expected = {
        "nornir_bench" + suffix
        for suffix in SCRIPT_RUN_MODULES["nornir_bench"] | SCRIPT_RUN_MODULES[runner]
    }
    assert sorted(ours - expected) == [], "imported, not listed: does the run need them?"
    assert sorted(expected - ours) == [], "listed, no longer imported: take them off the list"
    others = {
        name.split(".")[0] for name in imported
        if name.split(".")[0] not in sys.stdlib_module_names and not name.startswith("_")
        and name != "cython_runtime"
    }
    assert others == SCRIPT_RUN_PACKAGES[runner]
