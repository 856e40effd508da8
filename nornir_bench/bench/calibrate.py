"""What a runner costs beyond its hosts' own time, measured on this machine (or Dask cluster).

``advise`` predicts a job on each runner by simulating it; the runner's part of the simulation,
:class:`~nornir_bench.bench.costs.RunnerCosts`, is measured here rather than copied from a
document: runs of a task that does nothing (``asim_rtt`` / ``sim_rtt`` with ``rtt`` 0) on
synthetic hosts, all of them in flight at once, so that what each run takes is the runner's own.
What it does with a runner it reads from the runner's traits
(:mod:`nornir_bench.core.runner_traits`), so any runner plugin that takes ``num_workers``
can be calibrated.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from time import perf_counter
from typing import TYPE_CHECKING, Any

from nornir_bench.bench.costs import RunnerCosts
from nornir_bench.core.checks import whole_number
from nornir_bench.core.hooks import NoOpProcessor
from nornir_bench.core.plugins import init_nornir
from nornir_bench.core.runner_traits import placement, runs_elsewhere
from nornir_bench.runners.registry import runner_class, takes_workers
from nornir_bench.tasks.synthetic.simulated import asim_rtt, sim_rtt

if TYPE_CHECKING:
    from nornir.core import Nornir
    from nornir.core.processor import Processor
    from nornir.core.task import Task

__all__ = [
    "MAX_CALIBRATION_HOSTS",
    "cluster_shape",
    "measure_costs",
    "replay_cpu",
]

PER_HOST_REPEATS = 3
"""Times ``per_host`` is measured: its median is the figure, each a simulated run may draw."""

MAX_CALIBRATION_HOSTS = 10_000
"""The most hosts a calibration runs: every one is in flight at once (a thread each on the
threadpool runner), and past it the figures grow no steadier."""


def measure_costs(
    runner: str,
    *,
    async_task: bool,
    hosts: int = 2000,
    address: str | None = None,
    options: Mapping[str, Any] | None = None,
    processors: Sequence[Processor] = (),
) -> RunnerCosts:
    """Measure what ``runner`` costs beyond its hosts' own time, on this machine.

    One fresh runner runs one host (its start), then one host and every host, timed; then it is
    closed, timed too, and whatever happens, Ctrl-C included. A runner of worker processes runs
    every host once before the timed runs: it starts the workers a run of one did not need,
    which import the task on their first host. ``processors`` (or a no-op one) are attached, so
    the runner pays for carrying the hooks to the parent as a job's run does.

    Args:
        runner: a runner plugin's name; it must take ``num_workers``.
        async_task: time ``asim_rtt`` (the job's task is ``async def``), else ``sim_rtt``.
        hosts: synthetic hosts in the timed run, 2 to :data:`MAX_CALIBRATION_HOSTS`: more
            steady ``per_host`` figures, a longer calibration.
        address: a cluster's, for a runner that takes one (``dask``): its hosts run there,
            and its workers and cores are read from it; ``None``: the runner's own.
        processors: the job's own (its records writer), attached to every run instead of
            a no-op one: what they cost a host in the parent is in ``per_host``.
        options: the runner's options as the job gives them (``num_procs``, ``security`` ...);
            ``num_workers`` is the calibration's own: every host in flight at once, shared
            out over the runner's processes.

    Returns:
        ``startup``: the fresh runner's run of one host plus its close (a process's first run
        also pays for the runner's imports, as a job's process does). ``per_host``: the
        parent's wall per host beyond one, ``(all - one) / (hosts - 1)``, on the runner once
        started, the median of :data:`PER_HOST_REPEATS` (each in ``per_host_measured``);
        measured on every runner, the caller decides where its sample holds it
        already. ``processes``, ``cores`` and ``processes_here``: the runner's placement
        (:func:`~nornir_bench.core.runner_traits.placement`; one and one in process).

    Raises:
        ValueError: an unknown runner or one without ``num_workers``, ``hosts`` out of range,
            or an option the runner refuses, in one line.
        RuntimeError: a host of the calibration failed (a worker died, say), in one line.
        DaskClusterError: the dask runner's cluster cannot be used, in one line.
    """
    cls = runner_class(runner)
    if not takes_workers(runner):
        raise ValueError(f"calibrate: runner {runner!r} takes no num_workers to calibrate")
    whole_number("calibrate: hosts", hosts, minimum=2, maximum=MAX_CALIBRATION_HOSTS)
    given = {**(options or {})}
    if address is not None:
        given["address"] = address
    # A runner built only to read where its hosts run: it starts nothing before a run.
    shape = placement(cls(**given))
    elsewhere = runs_elsewhere(cls)
    # Every host in flight at once (a scheduler with no worker fails the run, in one line).
    given["num_workers"] = math.ceil(hosts / max(1, shape.processes))
    nr = _synthetic(runner, hosts, given, processors)
    one = nr.filter(filter_func=lambda host: host.name == "dev0")
    task = asim_rtt if async_task else sim_rtt
    try:
        start = _wall(one, task)
        if elsewhere:  # start the workers a run of one did not need
            _wall(nr, task)
        per_host = []
        for _ in range(PER_HOST_REPEATS):
            alone, together = _wall(one, task), _wall(nr, task)
            per_host.append(max(0.0, together - alone) / (hosts - 1))
    except BaseException:
        with contextlib.suppress(Exception):  # what stopped the calibration is the error
            _close(nr.runner)
        raise
    closing = perf_counter()
    _close(nr.runner)
    closed = perf_counter() - closing
    return RunnerCosts(
        startup=start + closed,
        per_host=statistics.median(per_host),
        processes=shape.processes,
        cores=shape.cores,
        per_host_measured=tuple(per_host),
        processes_here=shape.processes if elsewhere and shape.this_machine else 0,
    )


def _wall(nr: Nornir, task: Callable[..., Any]) -> float:
    """The wall of one run of ``task`` with ``rtt`` 0 on ``nr``'s hosts.

    Raises:
        RuntimeError: a host failed: the figure would not be the runner's.
    """
    started = perf_counter()
    result = nr.run(task=task, rtt=0.0)
    wall = perf_counter() - started
    if result.failed:
        name, multi = next((name, multi) for name, multi in result.items() if multi.failed)
        raise RuntimeError(
            f"calibrate: {len(result.failed_hosts)} of {len(result)} hosts failed, {name} "
            f"first: {multi.exception!r:.300}"
        )
    return wall


def replay_cpu(
    runner: str, *, async_task: bool, latencies: Sequence[float],
    processors: Sequence[Processor] = (),
) -> float:
    """The CPU seconds per host ``runner`` itself takes for hosts that only wait
    ``latencies`` (one a host, all in flight at once): what a sample of those latencies cost
    the client beyond its task.

    Hosts that end apart from one another each wake the client up, and a wake-up costs more
    CPU than a host ending among many (a full run's hosts end close together). A sample's CPU
    per host less this is its task's own; the runner's cost with hosts ending together is
    :func:`measure_costs`'s ``per_host``. For the in-process runners (``asyncio``,
    ``threadpool``), whose CPU is this process's; bounded by the sample's hosts and latencies.
    ``processors``: the sample's own (a job's records writer), so that theirs is told apart
    from the task's too.

    Raises:
        ValueError: an unknown runner or one whose hosts run elsewhere, or fewer than two
            latencies.
    """
    if runs_elsewhere(runner_class(runner)):
        raise ValueError(f"calibrate: replay_cpu measures an in-process runner, got {runner!r}")
    if len(latencies) < 2:
        raise ValueError("calibrate: replay_cpu needs two latencies or more")
    delays = {f"dev{index}": max(0.0, latency) for index, latency in enumerate(latencies)}
    nr = _synthetic(runner, len(delays), {"num_workers": len(delays)}, processors)
    task = _await_delay if async_task else _sleep_delay
    one = nr.filter(filter_func=lambda host: host.name == "dev0")
    try:
        one.run(task=task, delays=delays)  # a warm-up
        before = time.process_time()
        one.run(task=task, delays=delays)
        alone = time.process_time() - before
        before = time.process_time()
        nr.run(task=task, delays=delays)
        together = time.process_time() - before
    finally:
        _close(nr.runner)
    return max(0.0, together - alone) / (len(delays) - 1)


async def _await_delay(task: Task, delays: Mapping[str, float]) -> None:
    await asyncio.sleep(delays[task.host.name])


def _sleep_delay(task: Task, delays: Mapping[str, float]) -> None:
    time.sleep(delays[task.host.name])


def _synthetic(
    runner: str, hosts: int, options: Mapping[str, Any], processors: Sequence[Processor]
) -> Nornir:
    """``hosts`` synthetic hosts (``dev0`` ...) on ``runner``, ``processors`` (or a no-op one)
    attached: nothing of the network, no logging."""
    return init_nornir(
        inventory={"plugin": "synthetic", "options": {"hosts": hosts}},
        runner={"plugin": runner, "options": dict(options)},
        logging={"enabled": False},
        connections=(),
    ).with_processors(list(processors) or [NoOpProcessor()])


def _close(plugin: object) -> None:
    """Close what the runner keeps after its runs (processes, a cluster, an event loop)."""
    close = getattr(plugin, "close", None)
    if callable(close):
        close()


def cluster_shape(address: str, options: Mapping[str, Any] | None = None) -> tuple[int, int]:
    """The workers of the Dask scheduler at ``address``, and their threads in all, as the
    scheduler reports them; nothing runs there.

    Args:
        address: the scheduler's (``tls://host:8786``).
        options: the dask runner's options (``security``, ``connect_timeout`` ...), checked
            as the runner checks them.

    Raises:
        ValueError: an option the dask runner refuses, in one line.
        DaskClusterError: the scheduler cannot be reached in time, in one line.
    """
    from nornir_bench.runners.dask import DaskRunner

    shape = DaskRunner(**{**(options or {}), "address": address}).placement()
    return shape.processes, shape.cores
