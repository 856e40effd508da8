"""A CLI killed in the middle of a change, one run in this fresh process (scripts/bench_routers.py
--dead-cli): the change (``lines`` static routes) on r1 in a thread, r1's session vtysh killed
(SIGKILL) once r1 holds part of it. The spec ``{"driver": "netmiko" | "scrapli", "runner",
"options", "inventory", "lab", "sshd", "backups", "timeout", "lines"}``; printed: the seconds
from the kill to the end of the run, and what the host failed with."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

from harness.child import child_main
from harness.failures import short
from harness.fleets import close, simple
from harness.processes import children_of, command_line
from nornir_bench.lab.vtysh import vtysh
from nornir_bench.tasks import asend_config, send_config

PREFIX = "ip route 198.18.101."


def session_clis(sshd: int, namespace: str) -> list[int]:
    """The vtysh processes of the SSH server ``sshd``'s sessions on router ``namespace``."""
    return [pid for pid in children_of(sshd)
            if (words := command_line(pid)) and words[0].endswith("vtysh")
            and namespace in words]


def dead_cli(spec: dict[str, Any]) -> dict[str, Any]:
    count = spec["lines"]
    lines = [f"{PREFIX}{k}/32 Null0" for k in range(count)]

    def held() -> int:
        text = vtysh(spec["lab"], "r1", "show running-config")
        return sum(line.startswith(PREFIX) for line in text.splitlines())

    nr = simple(Path(spec["inventory"]), spec["runner"], **spec["options"])
    task = send_config if spec["driver"] == "netmiko" else asend_config
    ended: dict[str, Any] = {}

    def change() -> None:
        ended["result"] = nr.run(task=task, lines=lines, timeout=spec["timeout"],
                                 backup_dir=spec["backups"])
        ended["at"] = time.perf_counter()

    worker = threading.Thread(target=change)
    worker.start()
    try:
        while worker.is_alive() and not 0 < held() < count:
            time.sleep(0.02)
        killed = time.perf_counter()
        for pid in session_clis(spec["sshd"], f"nb-{spec['lab']}-r1"):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        worker.join()
        multi = ended["result"]["r1"]
        error = multi.exception
        cause = getattr(error, "__cause__", None) or error  # a change's: what ended the session
        failure = "not failed" if not multi.failed else (
            f"{type(error).__name__} from {type(cause).__name__}: {short(str(cause), 50)}"
        )
        return {"seconds": ended["at"] - killed, "failure": failure}
    finally:
        worker.join()
        nr.close_connections(on_failed=True)
        close(nr)


if __name__ == "__main__":
    child_main(dead_cli)
