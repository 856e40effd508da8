"""nornir-bench: fast, safe nornir runners and the "how many workers are enough?" benchmark."""

from typing import TYPE_CHECKING

from nornir_bench._lazy import lazy_exports

if TYPE_CHECKING:
    from nornir_bench.bench.benchmark import BenchmarkRun, run_benchmark
    from nornir_bench.bench.summary import RunSummary, summarize
    from nornir_bench.bench.sweep import SweepGrid, run_sweep
    from nornir_bench.bench.usage import ProcessUsage, process_usage
    from nornir_bench.core.deadlines import bounded, time_left
    from nornir_bench.core.exceptions import (
        HostSkipped,
        LoginRefused,
        NornirBenchError,
        NoSSHBanner,
        NoWorkerForSite,
        RemoteException,
        RunAborted,
        RunInterrupted,
        RunTimeout,
        SessionClosed,
        SimulatedFailure,
        TaskTimeout,
        WorkerCrashed,
        WorkerUnavailable,
    )
    from nornir_bench.core.execution import arun_host, run_host
    from nornir_bench.core.plugins import init_nornir
    from nornir_bench.core.subtasks import arun_subtask
    from nornir_bench.inventory import SyntheticInventory
    from nornir_bench.jobs.load import Job, JobError, load_job
    from nornir_bench.jobs.run import JobRun, run_job
    from nornir_bench.lab import DeviceLab, LabError, RttServer, run_lab, run_rtt_server
    from nornir_bench.processors.progress import ProgressBar
    from nornir_bench.processors.records import JsonLinesWriter
    from nornir_bench.processors.timing import HostTimer
    from nornir_bench.runners import (
        AsyncioRunner,
        DaskRunner,
        ProcessPoolRunner,
        ThreadPoolRunner,
        arun,
    )
    from nornir_bench.runners.registry import available_runners
    from nornir_bench.tasks import (
        BUILTIN_TASKS,
        ScrapliSession,
        asend_command,
        asim_rtt,
        atcp_ping,
        send_command,
        sim_rtt,
        tcp_ping,
    )

# Every name is imported on first use (PEP 562): ``import nornir_bench`` costs next to nothing,
# and each command imports only what it runs (the benchmark neither the job loader, nor the
# asyncio runner, nor cloudpickle; ``nornir-bench --help`` not even nornir).
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "nornir_bench.bench.benchmark": ("BenchmarkRun", "run_benchmark"),
        "nornir_bench.bench.summary": ("RunSummary", "summarize"),
        "nornir_bench.bench.sweep": ("SweepGrid", "run_sweep"),
        "nornir_bench.bench.usage": ("ProcessUsage", "process_usage"),
        "nornir_bench.core.exceptions": (
            "NornirBenchError",
            "HostSkipped",
            "RemoteException",
            "LoginRefused",
            "NoSSHBanner",
            "NoWorkerForSite",
            "RunAborted",
            "RunInterrupted",
            "RunTimeout",
            "SessionClosed",
            "SimulatedFailure",
            "TaskTimeout",
            "WorkerCrashed",
            "WorkerUnavailable",
        ),
        "nornir_bench.core.deadlines": ("bounded", "time_left"),
        "nornir_bench.core.execution": ("arun_host", "run_host"),
        "nornir_bench.core.plugins": ("init_nornir",),
        "nornir_bench.core.subtasks": ("arun_subtask",),
        "nornir_bench.inventory": ("SyntheticInventory",),
        "nornir_bench.jobs.load": ("Job", "JobError", "load_job"),
        "nornir_bench.jobs.run": ("JobRun", "run_job"),
        "nornir_bench.lab": ("DeviceLab", "LabError", "RttServer", "run_lab", "run_rtt_server"),
        "nornir_bench.processors.progress": ("ProgressBar",),
        "nornir_bench.processors.records": ("JsonLinesWriter",),
        "nornir_bench.processors.timing": ("HostTimer",),
        "nornir_bench.runners": (
            "AsyncioRunner",
            "DaskRunner",
            "ProcessPoolRunner",
            "ThreadPoolRunner",
            "arun",
        ),
        "nornir_bench.runners.registry": ("available_runners",),
        "nornir_bench.tasks": (
            "BUILTIN_TASKS",
            "ScrapliSession",
            "asend_command",
            "asim_rtt",
            "atcp_ping",
            "send_command",
            "sim_rtt",
            "tcp_ping",
        ),
    },
)

__version__ = "0.1.0"

__all__ = [
    "AsyncioRunner",
    "BUILTIN_TASKS",
    "BenchmarkRun",
    "DaskRunner",
    "DeviceLab",
    "HostSkipped",
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
    "LoginRefused",
    "NoSSHBanner",
    "NoWorkerForSite",
    "RemoteException",
    "RttServer",
    "RunAborted",
    "RunInterrupted",
    "RunSummary",
    "RunTimeout",
    "ScrapliSession",
    "SessionClosed",
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
    "bounded",
    "init_nornir",
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
    "time_left",
]
