"""Awaiting with a deadline, telling our deadline apart from a ``TimeoutError`` of the call's own.

A task that raises ``TimeoutError`` itself (a device library's own timeout) must keep its
error; only when *our* deadline passed does the caller's own exception replace it.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from typing import TypeVar

__all__ = ["within"]

T = TypeVar("T")

if sys.version_info >= (3, 11):

    async def within(
        call: Awaitable[T], seconds: float, timed_out: Callable[[], BaseException]
    ) -> T:
        """Await ``call`` for at most ``seconds``; past them it is cancelled and
        ``timed_out()`` is raised in its place (the deadline's own ``TimeoutError`` says
        nothing more, so it is not chained)."""
        try:
            async with asyncio.timeout(seconds) as deadline:
                return await call
        except TimeoutError:
            if deadline.expired():  # ours; a TimeoutError the call raised itself passes on
                raise timed_out() from None
            raise

else:  # Python 3.10: no asyncio.timeout

    async def within(
        call: Awaitable[T], seconds: float, timed_out: Callable[[], BaseException]
    ) -> T:
        """Await ``call`` for at most ``seconds``; past them it is cancelled and
        ``timed_out()`` is raised in its place (the deadline's own ``TimeoutError`` says
        nothing more, so it is not chained)."""
        try:
            return await asyncio.wait_for(call, seconds)
        except asyncio.TimeoutError as exc:
            if isinstance(exc.__cause__, asyncio.CancelledError):  # wait_for's own deadline
                raise timed_out() from None
            raise
