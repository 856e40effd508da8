"""Runner plugins of nornir-bench, registered in nornir's ``nornir.plugins.runners`` group.

- :mod:`~nornir_bench.runners.threadpool`: :class:`ThreadPoolRunner` (``threadpool``);
- :mod:`~nornir_bench.runners.asyncio_runner`: :class:`AsyncioRunner` (``asyncio``) and
  :func:`arun`;
- :mod:`~nornir_bench.runners.processpool`: :class:`ProcessPoolRunner` (``processpool``);
- :mod:`~nornir_bench.runners.registry`: which runners are installed and what each can do.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nornir_bench.runners.asyncio_runner import AsyncioRunner, arun
    from nornir_bench.runners.processpool.runner import ProcessPoolRunner
    from nornir_bench.runners.threadpool import ThreadPoolRunner

__all__ = ["AsyncioRunner", "ProcessPoolRunner", "ThreadPoolRunner", "arun"]

# Loaded on first use (PEP 562): nornir loads a runner by its entry point, and the registry
# (asked by job files and the command line) needs none of them; importing one runner, or the
# package, must not cost the imports of all three (the process pool's are the most).
_LAZY = {
    "AsyncioRunner": "nornir_bench.runners.asyncio_runner",
    "arun": "nornir_bench.runners.asyncio_runner",
    "ProcessPoolRunner": "nornir_bench.runners.processpool.runner",
    "ThreadPoolRunner": "nornir_bench.runners.threadpool",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'nornir_bench.runners' has no attribute {name!r}")
