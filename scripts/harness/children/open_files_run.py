"""Hosts in flight under an open-file limit, one run in this fresh process importing the
``nornir_bench`` of the checkout under measure (scripts/bench_open_files.py).

The spec ``{"runner", "case", "port", "hosts"}``: the soft ``RLIMIT_NOFILE`` set to 256 (and
the hard one too when ``case`` is ``hard``), then ``hosts`` hosts in flight running the
package's blocking ``tcp_ping`` with a probe line against the loopback server at ``port``.
Printed: the run's wall, hosts ok, failures by kind; or ``missing`` for a runner the checkout
does not have. Warnings go to stderr, where the parent reads them.
"""

from __future__ import annotations

import json
import logging
import os
import resource
import sys
import time
import warnings
from typing import Any

from harness.fleets import noop, synthetic


def register_runners() -> None:
    """The installed entry points may name a runner the measured checkout does not have:
    register those it has, and only those."""
    from importlib.metadata import entry_points

    from nornir.core.plugins.runners import RunnersPluginRegister

    for entry in entry_points(group="nornir.plugins.runners"):
        try:
            RunnersPluginRegister.register(entry.name, entry.load())
        except Exception:  # noqa: BLE001 - a runner this checkout does not have
            pass
    RunnersPluginRegister.auto_register = lambda: None  # type: ignore[method-assign]


def run(spec: dict[str, Any]) -> dict[str, Any]:
    runner, case, port, hosts = spec["runner"], spec["case"], spec["port"], spec["hosts"]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256 if case == "hard" else hard))
    logging.basicConfig(level=logging.WARNING, format="%(message)s", stream=sys.stderr)
    logging.getLogger("nornir.core.task").setLevel(logging.CRITICAL)  # each host's traceback
    warnings.simplefilter("always")
    from nornir_bench.tasks import tcp_ping

    register_runners()
    half = max(1, hosts // 2)
    options = {
        "threadpool": {"num_workers": hosts},
        "asyncio": {"num_workers": hosts},
        "processpool": {"num_workers": half, "num_procs": 2},
        "dask": {"num_workers": half, "num_procs": 2},
    }[runner]
    try:
        nr = synthetic(runner, hosts, inventory={"hostname": "127.0.0.1", "port": port},
                       **options)
    except Exception as exc:  # noqa: BLE001 - a runner the checkout does not have
        return {"missing": f"{type(exc).__name__}: {exc}"}
    nr.run(task=noop)  # the workers (or the cluster) start: not part of the measure
    started = time.perf_counter()
    result = nr.run(task=tcp_ping, timeout=30, probe="show clock")
    wall = time.perf_counter() - started
    errors: dict[str, int] = {}
    for multi in result.values():
        if multi.failed:
            text = str(multi[0].exception)
            key = type(multi[0].exception).__name__
            if "Too many open files" in text:
                key = "Too many open files"
            errors[key] = errors.get(key, 0) + 1
    return {"wall": wall, "ok": sum(1 for m in result.values() if not m.failed),
            "errors": errors}


if __name__ == "__main__":
    # Not child_main: its warning filters would hide what this run must show; and the runner
    # is not closed, as the run under a limit leaves it: the process ends at once.
    print(json.dumps(run(json.loads(sys.argv[1]))), flush=True)
    os._exit(0)
