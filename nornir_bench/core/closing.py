"""nornir's ``close_connections`` task, told apart from a run's own task (no asyncio here:
blocking runners ask too)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["is_close_connections_task"]

_NORNIR_CLOSE_TASK = "Nornir.close_connections.<locals>.close_connections_task"


def is_close_connections_task(func: Callable[..., Any]) -> bool:
    """Whether ``func`` is the task ``nr.close_connections()`` runs on every host."""
    return getattr(func, "__qualname__", "") == _NORNIR_CLOSE_TASK and getattr(
        func, "__module__", ""
    ).startswith("nornir.")
