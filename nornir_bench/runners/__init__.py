"""Runner plugins of nornir-bench, registered in nornir's ``nornir.plugins.runners`` group."""

from nornir_bench.runners.asyncio_runner import AsyncioRunner, arun
from nornir_bench.runners.processpool import ProcessPoolRunner
from nornir_bench.runners.threadpool import ThreadPoolRunner

__all__ = ["AsyncioRunner", "ProcessPoolRunner", "ThreadPoolRunner", "arun"]
