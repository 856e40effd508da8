"""One run of scripts/bench_faults.py --dask-connections, in this fresh process: 40 synthetic
hosts on the dask runner (``num_workers: 10``, its embedded cluster), a connection plugin
registered at run time (``counting``: its ``open()`` appends a line to the file
``$FAULTS_LOGINS_FILE``), an async task opening it, three ``nr.run`` in a row, then
``nr.close_connections()`` and the runner closed. Printed: each run's wall, failures by type;
exit 1 if a host failed."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections import Counter
from typing import Any

from harness.entry import quiet_warnings
from harness.fleets import close, synthetic

HOSTS, LOGINS_FILE = 40, "FAULTS_LOGINS_FILE"


class Counting:
    """A connection plugin registered at run time: each open() is a login, a line in a file."""

    connection: bool | None = None

    def open(self, hostname: str | None, username: str | None, password: str | None,
             port: int | None, platform: str | None, extras: dict[str, Any] | None = None,
             configuration: Any = None) -> None:
        with open(os.environ[LOGINS_FILE], "a") as logins:
            logins.write(f"{hostname}\n")
        self.connection = True

    def close(self) -> None:
        self.connection = None


async def opens_counting(task: Any) -> str:
    task.host.get_connection("counting", task.nornir.config)
    await asyncio.sleep(0)
    return str(task.host.name)


def three_runs() -> int:
    from nornir.core.plugins.connections import ConnectionPluginRegister

    ConnectionPluginRegister.register("counting", Counting)
    nr = synthetic("dask", HOSTS, num_workers=10)
    walls, failed = [], Counter[str]()
    try:
        for _ in range(3):
            began = time.perf_counter()
            result = nr.run(task=opens_counting)
            walls.append(round(time.perf_counter() - began, 3))
            failed.update(type(m.exception).__name__ for m in result.values() if m.failed)
        nr.close_connections()
    finally:
        close(nr)
    print(json.dumps({"walls": walls, "failed": failed}), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    quiet_warnings()
    sys.exit(three_runs())
