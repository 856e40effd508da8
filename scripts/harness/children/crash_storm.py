"""processpool under a crash storm, one run in this fresh process (scripts/bench_crashes.py).

The spec: ``{"hosts", "rate", "seed", "how", "at_end", "rtt", "blocking", "limit"}``: a
``rate`` of the hosts, drawn with ``seed``, kill their worker (``how``: exit, kill, segfault,
mixed, or clean for none) at the start of their task or, ``at_end``, after their wait of
``rtt`` seconds. Printed: whether the run ended within ``limit`` seconds, its wall, the hosts
present, finished, failed (crashers and innocent ones), run more than once, the process's peak
RSS, the longest result text.
"""

from __future__ import annotations

import asyncio
import ctypes
import json
import logging
import os
import random
import resource
import signal
import time
from types import FrameType
from typing import Any

from nornir.core.task import AggregatedResult

from harness.child import child_main
from harness.fleets import synthetic
from nornir_bench.core.hooks import NoOpProcessor


def crash(way: str) -> None:
    if way == "exit":
        os._exit(1)
    if way == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    ctypes.string_at(0)


class Done(NoOpProcessor):
    """Counts the hosts that finished (in this process: the results back from the workers)."""

    count = 0

    def task_instance_completed(self, task: Any, host: Any, result: Any) -> None:
        Done.count += 1


def storm(spec: dict[str, Any]) -> None:
    hosts, how, rtt, at_end = spec["hosts"], spec["how"], spec["rtt"], spec["at_end"]
    drawn = ([] if how == "clean"
             else random.Random(spec["seed"]).sample(range(hosts), round(hosts * spec["rate"])))
    ways = {i: ("exit", "kill", "segfault")[n % 3] if how == "mixed" else how
            for n, i in enumerate(sorted(drawn))}

    async def crashes_async(task: Any) -> int:
        way = ways.get(int(task.host.name[3:]))
        if way and not at_end:
            crash(way)
        await asyncio.sleep(rtt)
        if way:
            crash(way)
        return 0

    def crashes_blocking(task: Any) -> int:
        way = ways.get(int(task.host.name[3:]))
        if way and not at_end:
            crash(way)
        time.sleep(rtt)
        if way:
            crash(way)
        return 0

    logging.getLogger().addHandler(logging.NullHandler())
    nr = synthetic("processpool", hosts)
    start = time.perf_counter()

    def report(result: AggregatedResult | None, ended: bool) -> None:
        failed = set(result.failed_hosts) if result is not None else set()
        crashers = {f"dev{i}" for i in ways}
        multis = list((result or {}).values())
        runs = [getattr(m[0], "attempts", 1) for m in multis]
        print(json.dumps({
            "ended": ended, "wall": time.perf_counter() - start,
            "present": len(multis), "finished": Done.count,
            "failed_crashers": len(failed & crashers), "failed_others": len(failed - crashers),
            "crashers": len(crashers), "twice": sum(1 for r in runs if r > 1),
            "most_runs": max(runs, default=0),
            "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "longest_result": max((len(str(m[0].result)) for m in multis), default=0),
        }), flush=True)

    def out_of_time(signum: int, frame: FrameType | None) -> None:
        report(None, False)
        os._exit(3)

    signal.signal(signal.SIGALRM, out_of_time)
    signal.alarm(spec["limit"])
    result = nr.with_processors([Done()]).run(
        task=crashes_blocking if spec["blocking"] else crashes_async)
    signal.alarm(0)
    report(result, True)


if __name__ == "__main__":
    child_main(storm)
