"""Keeping FakeNOS's and paramiko's per-session chatter off the lab's terminal, counted instead.

A lab's clients often end sessions early (a TCP ping, a failed login, ``wait-lab``'s probes):
FakeNOS then logs socket errors and ends the session's thread with a traceback. None is a lab
failure; the lab's stop line says how many there were, and why, in words.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["QuietEmulator", "quiet_emulator"]


# How FakeNOS's session threads end when a client does not complete a session, in words. The
# keys are fragments of the errors they end with (paramiko's, or FakeNOS's own: it calls
# ``channel.makefile`` on the ``None`` that ``Transport.accept`` returns when the client left
# before opening a shell).
_EARLY_ENDS = (
    ("SSH protocol banner", "without speaking SSH (TCP pings, port probes, wait-lab)"),
    ("'makefile'", "before opening a shell (failed logins, or clients that gave up)"),
)


class QuietEmulator:
    """What :func:`quiet_emulator` kept off the terminal: device sessions that ended early."""

    def __init__(self) -> None:
        self.ended: dict[str, int] = {}  # what it means -> how many

    @property
    def sessions_ended(self) -> int:
        return sum(self.ended.values())

    def count(self, detail: str) -> None:
        meaning = next(
            (words for fragment, words in _EARLY_ENDS if fragment in detail),
            f"with an error ({detail})",
        )
        self.ended[meaning] = self.ended.get(meaning, 0) + 1

    def describe(self) -> str:
        """``"3 connections ended early: 2 without speaking SSH (...), 1 before ..."``"""
        total = self.sessions_ended
        parts = [f"{n} {meaning}" for meaning, n in self.ended.items()]
        return f"{total} connection{'s' * (total != 1)} ended early: {', '.join(parts)}"


@contextmanager
def quiet_emulator() -> Iterator[QuietEmulator]:
    """Keep FakeNOS's and paramiko's per-session chatter off the lab's terminal.

    A client that only opens a TCP connection (a ping), fails to log in or disconnects makes
    FakeNOS log socket errors and end that session's thread with a traceback; none is a lab
    failure, so they are counted (the stop line reports them) instead of printed. An error in
    any other thread is printed, in one line.
    """
    loggers = [logging.getLogger(name) for name in ("fakenos", "paramiko")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL)
    previous_hook = threading.excepthook
    quiet = QuietEmulator()

    def one_line(args: threading.ExceptHookArgs) -> None:
        if args.exc_type is SystemExit:
            return
        detail = f"{args.exc_type.__name__}: {' '.join(str(args.exc_value).split())}"
        name = args.thread.name if args.thread is not None else "?"
        if "connection_function" in name:  # a FakeNOS SSH session thread
            quiet.count(detail)
            return
        print(f"lab: thread {name} failed: {detail}", file=sys.stderr, flush=True)

    threading.excepthook = one_line
    try:
        yield quiet
    finally:
        threading.excepthook = previous_hook
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)
