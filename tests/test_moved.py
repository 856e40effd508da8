"""Modules that moved when the package was grouped into layers still import by their old names."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from nornir_bench._moved import MOVED


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_module_name_gives_the_module_at_its_new_place_with_a_warning(old: str) -> None:
    new = importlib.import_module(MOVED[old])
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"^{old} moved to {MOVED[old]};"):
        module = importlib.import_module(old)
    assert module is new


def test_a_submodule_of_a_moved_package_is_the_same_module_not_a_copy() -> None:
    done = subprocess.run(
        [sys.executable, "-W", "ignore::DeprecationWarning", "-c",
         "from nornir_bench.sweep.grid import SweepGrid\n"
         "from nornir_bench import SweepGrid as New\n"
         "assert SweepGrid is New, (SweepGrid, New)\n"
         "from nornir_bench.job import JobError\n"
         "from nornir_bench import NornirBenchError\n"
         "assert issubclass(JobError, NornirBenchError)\n"],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr


def test_the_documented_imports_work() -> None:
    from nornir_bench.cli import main, script_entry  # docs/benchmarks.md
    from nornir_bench.runners.processpool import ProcessPoolRunner  # the entry point's path

    assert callable(main) and callable(script_entry)
    assert ProcessPoolRunner.__module__ == "nornir_bench.runners.processpool.runner"
