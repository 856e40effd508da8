"""Child programs: modules of :mod:`harness.children` run as ``python -m``, a JSON spec in, JSON
lines out.

A measurement that needs a process of its own (its peak memory its own, another checkout's
package imported, a crash that must not take the script down) is a module, which ruff and mypy
read, never program text in a string. Its ``main`` is :func:`child_main`: the spec is its first
argument, each JSON line it prints a result. The parent runs it with :func:`run_child` (its last
line) or :func:`run_child_lines` (every line); ``tree`` puts another checkout's
``nornir_bench`` first on the child's import path, this ``scripts/`` folder after it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Container, Mapping
from contextlib import suppress
from pathlib import Path
from typing import Any

__all__ = [
    "SCRIPTS",
    "STOP_SECONDS",
    "ChildFailed",
    "child_command",
    "child_env",
    "child_main",
    "run_child",
    "run_child_lines",
]

SCRIPTS = Path(__file__).resolve().parents[1]
"""The scripts/ folder: where ``harness`` is imported from."""
ROOT = SCRIPTS.parent
STOP_SECONDS = 15.0  # for a child stopped as by Ctrl-C to end, before it is killed


class ChildFailed(Exception):
    """A child program that ended without its result: its exit and its last words."""


def child_env(tree: Path | None = None, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """A child's environment: ``env`` (default this process's), its import path starting with
    ``tree`` (a checkout whose ``nornir_bench`` it imports; default whatever this process
    imports), then scripts/ (for ``harness``)."""
    base = dict(os.environ if env is None else env)
    path = [str(tree)] if tree is not None else []
    path += [str(SCRIPTS), *filter(None, base.get("PYTHONPATH", "").split(os.pathsep))]
    base["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(path))
    return base


def child_command(module: str, *args: str) -> list[str]:
    """``python -m module args`` with this interpreter."""
    return [sys.executable, "-m", module, *args]


def run_child_lines(module: str, spec: Any, *, timeout: float, tree: Path | None = None,
                    env: Mapping[str, str] | None = None, cwd: Path | None = None,
                    exits: Container[int] = (0,)) -> list[Any]:
    """Every JSON line the child program ``module`` printed for ``spec``, once it exited with
    a status of ``exits``.

    Raises:
        ChildFailed: it exited otherwise, or ran past ``timeout`` seconds (then it is stopped
            as by Ctrl-C, and its session killed), naming its last line on stderr.
    """
    process = subprocess.Popen(
        child_command(module, json.dumps(spec)), cwd=cwd, env=child_env(tree, env),
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,  # a terminal's Ctrl-C is the parent's to handle; killed whole
    )
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(process)
        raise ChildFailed(f"{module}: not done within {timeout:g} s: stopped") from None
    except BaseException:
        _kill(process)
        raise
    finally:
        with suppress(ProcessLookupError):  # what it started and left, with its session
            os.killpg(process.pid, signal.SIGKILL)
    if process.returncode not in exits:
        said = (err.strip().splitlines() or out.strip().splitlines() or ["nothing"])[-1]
        raise ChildFailed(f"{module}: exit {process.returncode}: {said[:300]}")
    return [json.loads(line) for line in out.splitlines() if line.startswith(("{", "["))]


def run_child(module: str, spec: Any, *, timeout: float, tree: Path | None = None,
              env: Mapping[str, str] | None = None, cwd: Path | None = None,
              exits: Container[int] = (0,)) -> Any:
    """The last JSON line the child program ``module`` printed for ``spec``."""
    lines = run_child_lines(module, spec, timeout=timeout, tree=tree, env=env, cwd=cwd,
                            exits=exits)
    if not lines:
        raise ChildFailed(f"{module}: ended without a result")
    return lines[-1]


def child_main(work: Callable[[Any], Any]) -> None:
    """A child program's ``__main__``: ``work`` on the spec (its first argument, JSON), its
    result printed as a JSON line (``None``: nothing more printed)."""
    from harness.entry import quiet_warnings

    quiet_warnings()
    result = work(json.loads(sys.argv[1]) if len(sys.argv) > 1 else None)
    if result is not None:
        print(json.dumps(result), flush=True)


def _kill(process: subprocess.Popen[str]) -> None:
    """As Ctrl-C first (its runners close their workers and clusters), then SIGKILL of its
    session after :data:`STOP_SECONDS`."""
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGINT)
    try:
        process.communicate(timeout=STOP_SECONDS)
    except subprocess.TimeoutExpired:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
