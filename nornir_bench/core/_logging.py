"""Keeping log records that nobody asked for off the user's terminal."""

from __future__ import annotations

import logging

__all__ = ["no_last_resort_logging"]


def no_last_resort_logging() -> None:
    """Keep log records off the terminal when no logging is configured at all.

    With no handler anywhere, logging prints WARNING and above on standard error: each failed
    host's traceback (logged on nornir's logger, as nornir's own ``Task.start`` logs it), a
    device library's session errors, printed across the progress bar and the one-line summary.
    A job's ``logging`` section puts them in nornir's log file instead. Only when the root
    logger has no handler: an application's own logging is left alone.
    """
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(logging.NullHandler())
