"""Job files and ``nornir-bench`` commands, as a user runs them: written, run in a process of
their own and timed from outside, their records read back."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.fleets import inventory_files

__all__ = ["JobRun", "nornir_bench", "read_records", "run_job", "write_job"]

RUN_SECONDS = 600.0  # one ``nornir-bench`` command at most


def nornir_bench(*args: str) -> list[str]:
    """The command line of ``nornir-bench ARGS`` with this interpreter."""
    return [sys.executable, "-m", "nornir_bench", *args]


def write_job(path: Path, *, runner: str, options: dict[str, Any] | None = None,
              task: str | None = None, params: dict[str, Any] | None = None,
              steps: list[dict[str, Any]] | None = None, inventory: Path | None = None,
              synthetic: dict[str, Any] | None = None, logging: bool = False) -> Path:
    """A job file at ``path``: the SimpleInventory in the folder ``inventory`` or synthetic
    hosts (``synthetic``: the plugin's options), ``runner`` with ``options``, and ``task``
    with ``params`` or ``steps``. JSON, which YAML reads."""
    job: dict[str, Any] = {
        "inventory": ({"plugin": "synthetic", "options": synthetic} if synthetic is not None
                      else {"plugin": "SimpleInventory",
                            "options": inventory_files(inventory or path.parent)}),
        "runner": {"plugin": runner, "options": options or {}},
    }
    if steps is not None:
        job["steps"] = steps
    else:
        job["task"] = {"name": task, "params": params or {}}
    if not logging:
        job["logging"] = {"enabled": False}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(job, indent=1))
    return path


def read_records(path: Path) -> list[dict[str, Any]]:
    """A records file's rows (none if it is not there)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@dataclass
class JobRun:
    """One ``nornir-bench`` command: its seconds from outside, exit status and output."""

    seconds: float
    status: int
    output: str

    def last_words(self, width: int = 300) -> str:
        return " ".join(self.output.split())[-width:]


def run_job(*args: str, timeout: float = RUN_SECONDS, cwd: Path | None = None) -> JobRun:
    """``nornir-bench ARGS`` (``run JOB -o RECORDS``, ``recover JOURNAL`` ...) in a process of
    its own, timed from its start to its exit."""
    began = time.perf_counter()
    done = subprocess.run(nornir_bench(*args), capture_output=True, text=True, timeout=timeout,
                          check=False, cwd=cwd)
    return JobRun(time.perf_counter() - began, done.returncode, done.stdout + done.stderr)
