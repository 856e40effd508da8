"""nornir-bench: fast, safe nornir runners and the "how many workers are enough?" benchmark."""

from nornir_bench.benchmark import BenchmarkRun, available_runners, run_benchmark
from nornir_bench.exceptions import (
    RemoteException,
    RunInterrupted,
    SimulatedFailure,
    TaskTimeout,
    WorkerCrashed,
)
from nornir_bench.execution import arun_host, arun_subtask, run_host
from nornir_bench.inventory import SyntheticInventory
from nornir_bench.runners import AsyncioRunner, ProcessPoolRunner, ThreadPoolRunner, arun
from nornir_bench.summary import RunSummary, summarize
from nornir_bench.tasks import asim_rtt, sim_rtt
from nornir_bench.timing import HostTimer
from nornir_bench.usage import ProcessUsage, process_usage

__version__ = "0.1.0"

__all__ = [
    "AsyncioRunner",
    "BenchmarkRun",
    "HostTimer",
    "ProcessPoolRunner",
    "ProcessUsage",
    "RemoteException",
    "RunInterrupted",
    "RunSummary",
    "SimulatedFailure",
    "SyntheticInventory",
    "TaskTimeout",
    "ThreadPoolRunner",
    "WorkerCrashed",
    "__version__",
    "arun",
    "arun_host",
    "arun_subtask",
    "asim_rtt",
    "available_runners",
    "process_usage",
    "run_benchmark",
    "run_host",
    "sim_rtt",
    "summarize",
]
