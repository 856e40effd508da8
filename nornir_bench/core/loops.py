"""Which event loop a run uses: uvloop when installed (``"auto"``), or plain asyncio.

One factory for every loop nornir-bench starts (the asyncio runner's, each processpool
worker's, the RTT server's), so a loop choice means the same everywhere; and
:func:`close_loop`, a loop closed as ``asyncio.run`` closes its own.
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Coroutine
from typing import Any

__all__ = ["LOOPS", "close_loop", "new_event_loop", "resolve_loop"]

LOOPS = ("auto", "asyncio", "uvloop")


def resolve_loop(loop: object, *, what: str) -> str:
    """The implementation ``loop`` names (``"asyncio"`` or ``"uvloop"``); ``"auto"`` is uvloop
    when it is installed.

    Raises:
        ValueError: ``loop`` is not one of :data:`LOOPS`, or names uvloop where it is not
            installed; the message starts with ``what`` (e.g. ``"asyncio runner"``).
    """
    if loop not in LOOPS:
        raise ValueError(f"{what}: loop must be one of {', '.join(LOOPS)}; got {loop!r}")
    has_uvloop = importlib.util.find_spec("uvloop") is not None
    if loop == "uvloop" and not has_uvloop:
        raise ValueError(
            f"{what}: loop 'uvloop' needs the uvloop package "
            "(pip install 'nornir-bench[speed]'), or use loop 'auto' or 'asyncio'"
        )
    if loop == "auto":
        return "uvloop" if has_uvloop else "asyncio"
    return str(loop)


def new_event_loop(implementation: str = "auto") -> asyncio.AbstractEventLoop:
    """A new event loop of ``implementation`` (``"auto"``, ``"asyncio"`` or ``"uvloop"``).

    Runners pass the implementation they resolved when built, so a run does not look uvloop
    up again; ``"auto"`` is resolved here.
    """
    if implementation not in ("asyncio", "uvloop"):
        implementation = resolve_loop(implementation, what="event loop")
    if implementation == "uvloop":
        import uvloop

        return uvloop.new_event_loop()
    return asyncio.new_event_loop()


def close_loop(loop: asyncio.AbstractEventLoop, *, wait_for_threads: bool = True) -> None:
    """Close ``loop`` as ``asyncio.run`` does: no task, async generator or thread left behind.

    Without ``wait_for_threads`` (a run abandoned by a second Ctrl-C), the default executor is
    not waited for: a thread of it may be waiting for a blocking call that never returns.
    """
    try:
        leftover = asyncio.all_tasks(loop)
        for task in leftover:
            task.cancel()
        if leftover:
            gathered: Coroutine[Any, Any, Any] = _gather_quietly(leftover)
            loop.run_until_complete(gathered)
        loop.run_until_complete(loop.shutdown_asyncgens())
        if wait_for_threads:
            loop.run_until_complete(loop.shutdown_default_executor())
    finally:
        asyncio.set_event_loop(None)
        loop.close()


async def _gather_quietly(tasks: set[asyncio.Task[Any]]) -> None:
    await asyncio.gather(*tasks, return_exceptions=True)
