"""ruff's rules and the import contracts (pyproject.toml) hold: run as the README's test command
runs everything, next to mypy (tests/test_typing.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# lint-imports as a module: the folder pip puts console scripts in need not be on PATH.
LINT_IMPORTS = [
    sys.executable,
    "-c",
    "import sys; from importlinter.cli import lint_imports_command; "
    "sys.exit(lint_imports_command())",
    "--no-cache",
]


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """lint-imports on the package under ``root``, with ``root``'s contracts."""
    env = {**os.environ, "PYTHONPATH": str(root)}  # that package, not the one installed
    return subprocess.run(
        LINT_IMPORTS, cwd=root, env=env, capture_output=True, text=True, timeout=300
    )


def test_ruff_passes() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "."],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_no_package_imports_upward_and_no_runner_knows_another() -> None:
    done = lint_imports(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        (  # as core/stopping.py once took NoOpProcessor from processors
            "core/stopping.py",
            "from nornir_bench.processors.timing import HostTimer",
            "nornir_bench.core is not allowed to import nornir_bench.processors",
        ),
        (  # packages sharing a layer are independent
            "lab/devices.py",
            "from nornir_bench.jobs.secrets import resolve_inventory",
            "nornir_bench.lab is not allowed to import nornir_bench.jobs",
        ),
        (
            "runners/threadpool.py",
            "from nornir_bench.runners._kept_loop import LoopKeeper",
            "",  # a shared helper of the runners' own: allowed
        ),
        (
            "runners/threadpool.py",
            "from nornir_bench.runners.asyncio_runner import AsyncioRunner",
            "the runners: none knows another BROKEN",
        ),
    ],
)
def test_the_contracts_catch_an_import_that_breaks_them(
    tmp_path: Path, module: str, line: str, broken: str
) -> None:
    """The contracts are not vacuous: a copy of the package with one such import fails them."""
    shutil.copytree(ROOT / "nornir_bench", tmp_path / "nornir_bench",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    with (tmp_path / "nornir_bench" / module).open("a") as source:
        source.write(f"\n{line}\n")
    done = lint_imports(tmp_path)
    if not broken:
        assert done.returncode == 0, done.stdout + done.stderr
        return
    assert done.returncode != 0
    assert broken in done.stdout, done.stdout + done.stderr
