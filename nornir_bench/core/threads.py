"""A call made in a daemon thread of its own, waited for, as if made here."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

__all__ = ["in_a_daemon_thread"]

_T = TypeVar("_T")


def in_a_daemon_thread(call: Callable[[], _T], name: str) -> _T:
    """``call()`` in a daemon thread named ``name``, waited for: what it returns, or what it
    raised, raised here.

    The threads the call starts are daemons too (a thread inherits it), so none of them keeps
    the process from exiting; and the call runs where no event loop is running (``asyncio.run``
    may be called even if this thread runs one).
    """
    returned: list[_T] = []
    raised: list[BaseException] = []

    def run() -> None:
        try:
            returned.append(call())
        except BaseException as exc:  # noqa: BLE001 - raised in the caller's thread below
            raised.append(exc)

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    thread.join()
    if raised:
        raise raised[0]
    return returned[0]
