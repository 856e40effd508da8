"""Where a run's bytes go (scripts/bench_million.py --breakdown), in this fresh process:
``tracemalloc`` snapshots of the asyncio runner on ``hosts`` synthetic hosts (the spec
``{"hosts", "rtt"}``): per host loaded, per host in flight (when every host has started), per
host finished, by owner and by line; and nornir's own result objects alone."""

from __future__ import annotations

import tracemalloc

tracemalloc.start()  # before the imports: what they allocate is the process's, not the run's

import asyncio  # noqa: E402
import linecache  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

from nornir.core import Nornir  # noqa: E402
from nornir.core.task import MultiResult, Result  # noqa: E402

from harness.child import child_main  # noqa: E402
from harness.fleets import synthetic  # noqa: E402
from nornir_bench.core.hooks import NoOpProcessor  # noqa: E402
from nornir_bench.tasks import asim_rtt  # noqa: E402

OWNERS = (("nornir/core", "nornir"), ("asyncio", "asyncio"), ("uvloop", "asyncio"),
          ("nornir_bench", "nornir-bench"))


def owner(filename: str) -> str:
    return next((name for part, name in OWNERS if part in filename), "other")


def per_host(before: tracemalloc.Snapshot, after: tracemalloc.Snapshot,
             hosts: int) -> dict[str, Any]:
    diff = [d for d in after.compare_to(before, "lineno") if d.size_diff]
    owners: dict[str, float] = {}
    for d in diff:
        key = owner(d.traceback[0].filename)
        owners[key] = owners.get(key, 0) + d.size_diff / hosts
    lines = [(d.size_diff / hosts, d.traceback[0].filename.split("site-packages/")[-1]
              .split("nornir_bench/")[-1] + f":{d.traceback[0].lineno}",
              linecache.getline(d.traceback[0].filename, d.traceback[0].lineno).strip()[:70])
             for d in diff[:12]]
    return {"total": sum(owners.values()), "owners": owners, "lines": lines}


def build(count: int) -> Nornir:
    return synthetic("asyncio", count, num_workers=count, loop="asyncio")


class AllStarted(NoOpProcessor):
    """A snapshot once the last host's first step has run."""

    def __init__(self, hosts: int) -> None:
        self.hosts = hosts
        self.started = self.finished = self.finished_then = 0
        self.in_flight: tracemalloc.Snapshot | None = None

    def task_instance_started(self, task: Any, host: Any) -> None:
        self.started += 1
        if self.started == self.hosts:
            asyncio.get_running_loop().call_soon(self.snap)

    def snap(self) -> None:
        self.in_flight = tracemalloc.take_snapshot()
        self.finished_then = self.finished

    def task_instance_completed(self, task: Any, host: Any, result: Any) -> None:
        self.finished += 1


def breakdown(spec: dict[str, Any]) -> dict[str, Any]:
    hosts, rtt = spec["hosts"], spec["rtt"]
    build(1).run(task=asim_rtt, rtt=0)  # every import a run makes, before the first snapshot
    loaded_before = tracemalloc.take_snapshot()
    nr = build(hosts)
    loaded = tracemalloc.take_snapshot()
    watch = AllStarted(hosts)
    result = nr.with_processors([watch]).run(task=asim_rtt, rtt=rtt)
    if len(result) != hosts or result.failed or watch.in_flight is None:
        raise SystemExit("hosts missing or failed, or never all in flight")
    done = tracemalloc.take_snapshot()
    host = next(iter(nr.inventory.hosts.values()))

    def alone(make: Callable[[], object]) -> float:
        before = tracemalloc.take_snapshot()
        kept = [make() for _ in range(hosts)]
        total: float = per_host(before, tracemalloc.take_snapshot(), hosts)["total"]
        del kept
        return total - 8  # the list's slot

    def nornirs_result() -> MultiResult:
        multi = MultiResult("asim_rtt")
        item = Result(host=host, result=0.5)
        item.name = "asim_rtt"  # type: ignore[assignment]  # nornir types it None
        item.severity_level = 20
        multi.insert(0, item)
        return multi

    return {
        "loaded": per_host(loaded_before, loaded, hosts),
        "in_flight": per_host(loaded, watch.in_flight, hosts),
        "finished_when_all_started": watch.finished_then,
        "finished": per_host(loaded, done, hosts),
        "nornir_result_alone": alone(nornirs_result),
    }


if __name__ == "__main__":
    child_main(breakdown)
