"""What a runner costs beyond its hosts' own time, as the simulation of ``advise`` takes it.

Measured on this machine (or the Dask cluster) by :mod:`nornir_bench.bench.calibrate`, or given
by a notebook; the simulation (:mod:`nornir_bench.bench.simulate`) is a pure function of them.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RunnerCosts"]


@dataclass(frozen=True)
class RunnerCosts:
    """A runner's own costs, seconds, and where its hosts run.

    Attributes:
        startup: from ``run()`` to its first host's start (a fork server, a cluster started or
            reached), plus closing after the last host's end.
        per_host: the parent's one core, per host, hosts ending together: sending the host,
            taking its result back, the processor hooks; for an in-process runner (one
            process), the runner's own CPU per host, on the hosts' one core.
        per_host_measured: each measurement of ``per_host``, when it was measured more than
            once: each simulated run draws one, so the range holds their spread.
        processes: processes running hosts, ``num_workers`` hosts in flight in each: 1 for
            threadpool and asyncio, the pool's for processpool, the cluster's workers for dask.
        cores: cores the hosts' own CPU can use at once: 1 under one GIL, else the processes'
            cores.
        processes_here: worker processes of the runner's own on this machine, each with
            memory and descriptors of its own: 0 in process and on a cluster elsewhere.
    """

    startup: float = 0.0
    per_host: float = 0.0
    processes: int = 1
    cores: int = 1
    per_host_measured: tuple[float, ...] = ()
    processes_here: int = 0
