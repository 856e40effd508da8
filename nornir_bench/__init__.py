"""nornir-bench: fast, safe nornir runners and the "how many workers are enough?" benchmark."""

import importlib
from typing import TYPE_CHECKING, Any

from nornir_bench import _moved
from nornir_bench.bench.summary import RunSummary, summarize
from nornir_bench.bench.usage import ProcessUsage, process_usage
from nornir_bench.core.exceptions import (
    NornirBenchError,
    RemoteException,
    RunInterrupted,
    SimulatedFailure,
    TaskTimeout,
    WorkerCrashed,
    WorkerUnavailable,
)
from nornir_bench.core.execution import arun_host, arun_subtask, run_host
from nornir_bench.inventory import SyntheticInventory
from nornir_bench.processors.timing import HostTimer
from nornir_bench.runners.registry import available_runners
from nornir_bench.tasks import (
    BUILTIN_TASKS,
    AsyncSSHSession,
    asend_command,
    asim_rtt,
    atcp_ping,
    send_command,
    sim_rtt,
    tcp_ping,
)

if TYPE_CHECKING:
    from nornir_bench.bench.benchmark import BenchmarkRun, run_benchmark
    from nornir_bench.bench.sweep import SweepGrid, run_sweep
    from nornir_bench.jobs.load import Job, JobError, load_job
    from nornir_bench.jobs.run import JobRun, run_job
    from nornir_bench.lab import DeviceLab, LabError, RttServer, run_lab, run_rtt_server
    from nornir_bench.processors.progress import ProgressBar
    from nornir_bench.processors.records import JsonLinesWriter
    from nornir_bench.runners import AsyncioRunner, ProcessPoolRunner, ThreadPoolRunner, arun

# Loaded on first use (PEP 562): job files, the lab and the progress bar cost ~25 ms of imports
# that the benchmark script, timed as a whole process, never needs; the runners and the
# benchmark are not needed to load a job (nornir loads the job's runner by its entry point).
_LAZY = {
    "AsyncioRunner": "nornir_bench.runners",
    "ProcessPoolRunner": "nornir_bench.runners",
    "ThreadPoolRunner": "nornir_bench.runners",
    "arun": "nornir_bench.runners",
    "BenchmarkRun": "nornir_bench.bench.benchmark",
    "run_benchmark": "nornir_bench.bench.benchmark",
    "Job": "nornir_bench.jobs.load",
    "JobError": "nornir_bench.jobs.load",
    "load_job": "nornir_bench.jobs.load",
    "JobRun": "nornir_bench.jobs.run",
    "run_job": "nornir_bench.jobs.run",
    "DeviceLab": "nornir_bench.lab",
    "LabError": "nornir_bench.lab",
    "RttServer": "nornir_bench.lab",
    "run_lab": "nornir_bench.lab",
    "run_rtt_server": "nornir_bench.lab",
    "ProgressBar": "nornir_bench.processors.progress",
    "JsonLinesWriter": "nornir_bench.processors.records",
    "SweepGrid": "nornir_bench.bench.sweep",
    "run_sweep": "nornir_bench.bench.sweep",
}


_moved.install()


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'nornir_bench' has no attribute {name!r}")


__version__ = "0.1.0"

__all__ = [
    "AsyncSSHSession",
    "AsyncioRunner",
    "BUILTIN_TASKS",
    "BenchmarkRun",
    "DeviceLab",
    "HostTimer",
    "Job",
    "JobError",
    "JobRun",
    "JsonLinesWriter",
    "LabError",
    "NornirBenchError",
    "ProcessPoolRunner",
    "ProcessUsage",
    "ProgressBar",
    "RemoteException",
    "RttServer",
    "RunInterrupted",
    "RunSummary",
    "SimulatedFailure",
    "SweepGrid",
    "SyntheticInventory",
    "TaskTimeout",
    "ThreadPoolRunner",
    "WorkerCrashed",
    "WorkerUnavailable",
    "__version__",
    "arun",
    "arun_host",
    "arun_subtask",
    "asend_command",
    "asim_rtt",
    "atcp_ping",
    "available_runners",
    "load_job",
    "process_usage",
    "run_benchmark",
    "run_host",
    "run_job",
    "run_lab",
    "run_rtt_server",
    "run_sweep",
    "send_command",
    "sim_rtt",
    "summarize",
    "tcp_ping",
]
