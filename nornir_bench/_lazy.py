"""Names a package exports, imported from their modules on first use (PEP 562).

A command pays only for what it uses: ``scripts/script.py``, timed as a whole process, needs
neither the job loader nor the asyncio runner, and ``nornir-bench --help`` needs no runner at
all; yet ``from nornir_bench import load_job`` and ``from nornir_bench import *`` work as if
every name were imported up front. Type checkers see the names through the package's
``if TYPE_CHECKING:`` imports.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, exports: Mapping[str, Sequence[str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module ``__getattr__`` and ``__dir__`` for ``package`` (its ``__name__``).

    Args:
        package: the package's name; it must be being imported (in ``sys.modules``).
        exports: module name -> the names it gives the package. No name may be that of one
            of the package's modules: importing the module would make the package's attribute
            of that name the module (import it eagerly instead).

    Returns:
        ``(__getattr__, __dir__)``, to assign at the package's top level. A name is imported
        the first time it is asked for, then kept in the package like any other attribute.
    """
    where = {name: module for module, names in exports.items() for name in names}
    namespace = vars(sys.modules[package])

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value  # next time, found without this function
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *where})

    return __getattr__, __dir__
