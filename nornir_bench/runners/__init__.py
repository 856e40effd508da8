"""Runner plugins of nornir-bench, registered in nornir's ``nornir.plugins.runners`` group.

- :mod:`~nornir_bench.runners.threadpool`: :class:`ThreadPoolRunner` (``threadpool``);
- :mod:`~nornir_bench.runners.asyncio_runner`: :class:`AsyncioRunner` (``asyncio``) and
  :func:`arun`;
- :mod:`~nornir_bench.runners.processpool`: :class:`ProcessPoolRunner` (``processpool``);
- :mod:`~nornir_bench.runners.dask`: :class:`DaskRunner` (``dask``; the extra ``dask``);
- :mod:`~nornir_bench.runners.registry`: which runners are installed and what each can do.
"""

from typing import TYPE_CHECKING

from nornir_bench._lazy import lazy_exports

if TYPE_CHECKING:
    from nornir_bench.runners.asyncio_runner import AsyncioRunner, arun
    from nornir_bench.runners.dask import DaskRunner
    from nornir_bench.runners.processpool.runner import ProcessPoolRunner
    from nornir_bench.runners.threadpool import ThreadPoolRunner

__all__ = ["AsyncioRunner", "DaskRunner", "ProcessPoolRunner", "ThreadPoolRunner", "arun"]

# Loaded on first use (PEP 562): nornir loads a runner by its entry point, and the registry
# (asked by job files and the command line) needs none of them; importing one runner, or the
# package, must not cost the imports of all three (the process pool's are the most).
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "nornir_bench.runners.asyncio_runner": ("AsyncioRunner", "arun"),
        "nornir_bench.runners.dask": ("DaskRunner",),
        "nornir_bench.runners.processpool.runner": ("ProcessPoolRunner",),
        "nornir_bench.runners.threadpool": ("ThreadPoolRunner",),
    },
)
