"""Modules that moved when the package was grouped into layers still import by their old names.

``from nornir_bench.job import load_job`` (as docs before 0.2 showed) gives the module now at
``nornir_bench.jobs.load`` — the same module object, so classes and ``isinstance`` agree — with
a :class:`DeprecationWarning` naming the new place. Sub-modules of a moved package follow it.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType

MOVED = {
    "nornir_bench.attempts": "nornir_bench.core.attempts",
    "nornir_bench.benchmark": "nornir_bench.bench.benchmark",
    "nornir_bench.connections": "nornir_bench.core.connections",
    "nornir_bench.exceptions": "nornir_bench.core.exceptions",
    "nornir_bench.execution": "nornir_bench.core.execution",
    "nornir_bench.job": "nornir_bench.jobs.load",
    "nornir_bench.jobrun": "nornir_bench.jobs.run",
    "nornir_bench.lab.commands": "nornir_bench.cli.lab",
    "nornir_bench.progress": "nornir_bench.processors.progress",
    "nornir_bench.records": "nornir_bench.processors.records",
    "nornir_bench.secrets": "nornir_bench.jobs.secrets",
    "nornir_bench.stopping": "nornir_bench.core.stopping",
    "nornir_bench.summary": "nornir_bench.bench.summary",
    "nornir_bench.sweep": "nornir_bench.bench.sweep",
    "nornir_bench.timing": "nornir_bench.processors.timing",
    "nornir_bench.usage": "nornir_bench.bench.usage",
}


def new_name(name: str) -> str | None:
    """Where the module ``name`` lives now, or None if it did not move."""
    for old, new in MOVED.items():
        if name == old or name.startswith(old + "."):
            return new + name[len(old):]
    return None


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if new_name(fullname) is None:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        new = new_name(spec.name)
        assert new is not None
        warnings.warn(
            f"{spec.name} moved to {new}; import it from there (or from nornir_bench)",
            DeprecationWarning,
            stacklevel=2,
        )
        return importlib.import_module(new)

    def exec_module(self, module: ModuleType) -> None:
        """The module is the one at its new name, already run."""


def install() -> None:
    """Put the old names on the import path (once)."""
    if not any(isinstance(finder, _MovedModules) for finder in sys.meta_path):
        sys.meta_path.insert(0, _MovedModules())
