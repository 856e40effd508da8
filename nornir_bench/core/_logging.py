"""Keeping log records that nobody asked for off the user's terminal, and nornir's logging
configured without taking that for the user's own."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nornir.core.configuration import LoggingConfig

__all__ = ["configure_nornir_logging", "no_last_resort_logging"]


class _NoLastResort(logging.NullHandler):
    """The root handler :func:`no_last_resort_logging` adds: nobody's logging configuration."""


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
        root.addHandler(_NoLastResort())


def configure_nornir_logging(config: LoggingConfig) -> None:
    """nornir's ``LoggingConfig.configure()``, with the root handler of
    :func:`no_last_resort_logging` out of its sight meanwhile.

    nornir warns (``Native Python logging configuration has been detected``) when the root
    logger has any handler: the user's logging and nornir's would both write. Ours writes
    nothing, and an earlier run in the process (or the run a recovery starts in) added it.
    """
    root = logging.getLogger()
    ours = [handler for handler in root.handlers if isinstance(handler, _NoLastResort)]
    for handler in ours:
        root.removeHandler(handler)
    try:
        config.configure()
    finally:
        for handler in ours:
            root.addHandler(handler)
