"""What a benchmark measured, in one format: a JSON object a row, written as JSON Lines.

Every record says which script measured it, on which code (the commit of the ``nornir_bench``
this interpreter imports), on which machine, with which parameters, and the figures::

    {"script": "bench_runners", "at": "2026-12-08T10:00:00", "commit": "1a2b3c4",
     "machine": {"cpus": 2, "load": [0.3, 0.4, 0.5], "python": "3.11.2", ...},
     "parameters": {"runner": "threadpool", "hosts": 10000}, "figures": {"wall": 0.31}}
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["Records", "load_text", "machine", "measured_commit"]


@cache
def measured_commit() -> str:
    """The last commit changing the ``nornir_bench`` this interpreter imports (PYTHONPATH's
    checkout): the code measured, whatever commits to scripts/ came after it."""
    import nornir_bench

    root = Path(nornir_bench.__file__).resolve().parents[1]
    done = subprocess.run(["git", "log", "-1", "--format=%h", "--", "nornir_bench"], cwd=root,
                          capture_output=True, text=True, timeout=30, check=False)
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "nornir_bench"], cwd=root,
                           capture_output=True, text=True, timeout=30, check=False)
    commit = done.stdout.strip() or "unknown"
    return commit + (" (+ uncommitted changes)" if dirty.stdout.strip() else "")


def load_text() -> str:
    """The load averages (1, 5, 15 minutes), as ``uptime`` says them."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def machine() -> dict[str, Any]:
    """The machine a figure was measured on, as far as it matters to the figure."""
    return {
        "cpus": len(os.sched_getaffinity(0)),
        "cpu_count": os.cpu_count(),
        "load": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
        "executable": sys.executable,
        "system": platform.platform(),
    }


class Records:
    """The records of one script's invocation, appended to ``path`` (none kept without one)."""

    def __init__(self, script: str, path: Path | None) -> None:
        self.script = script
        self.path = path
        self.written = 0

    def write(self, figures: dict[str, Any], **parameters: Any) -> None:
        """One row: ``figures`` measured with ``parameters``."""
        if self.path is None:
            return
        record = {
            "script": self.script,
            "at": datetime.now().isoformat(timespec="seconds"),
            "commit": measured_commit(),
            "machine": machine(),
            "parameters": parameters,
            "figures": figures,
        }
        with self.path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(record, default=str) + "\n")
        self.written += 1
