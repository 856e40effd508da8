"""What every command shares: exit statuses, one-line errors, option types, SIGTERM as Ctrl-C.

Exit status, for all: 0 every host ok, 1 some host failed, 2 bad usage or a bad job (one-line
error, no traceback), 130 interrupted by Ctrl-C, 143 stopped by SIGTERM (as by Ctrl-C: the
hosts that finished are still reported), 141 the reader of the output went away.
"""

from __future__ import annotations

import argparse
import gc
import logging
import math
import os
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn, TextIO, TypeVar

from nornir_bench.core.library_warnings import quiet_library_deprecations
from nornir_bench.tasks.synthetic.simulated import MAX_RTT

EXIT_OK = 0
EXIT_FAILED_HOSTS = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143  # 128 + SIGTERM, as shells report a process SIGTERM ended
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: the reader of the output went away (``| head``)


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line: what was wrong and what is allowed."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text!r}")
    return value


def _float_argument(allowed: str, accept: Callable[[float], bool]) -> Callable[[str], float]:
    """An argparse type: a float that ``accept`` approves, else an error naming ``allowed``."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not accept(value):  # NaN fails every comparison, so it is rejected too
            raise argparse.ArgumentTypeError(f"must be {allowed}, got {text!r}")
        return value

    return parse


# Round trips and jitter: past MAX_RTT a run would sleep for ever, or overflow.
seconds = _float_argument(
    f"a number of seconds from 0 to {MAX_RTT:g} (an hour: longer than any device takes to answer)",
    lambda v: 0 <= v <= MAX_RTT,
)
probability = _float_argument("a probability from 0 to 1", lambda v: 0 <= v <= 1)

_Item = TypeVar("_Item")


def _comma_list(item: Callable[[str], _Item], allowed: str) -> Callable[[str], list[_Item]]:
    """An argparse type: comma-separated ``item``s, at least one.

    An empty list or item is an error naming ``allowed``; a bad item, the item's own error.
    """

    def parse(text: str) -> list[_Item]:
        parts = [part.strip() for part in text.split(",")]
        if not all(parts):
            raise argparse.ArgumentTypeError(f"must be {allowed}, got {text!r}")
        return [item(part) for part in parts]

    return parse


def known_runner(name: str) -> str:
    from nornir_bench.runners.registry import available_runners

    runners = available_runners()
    if name not in runners:
        raise argparse.ArgumentTypeError(
            f"unknown runner {name!r}; available: {', '.join(runners)}"
        )
    return name


runner_list = _comma_list(known_runner, "comma-separated runner names")
workers_list = _comma_list(positive_int, "comma-separated whole numbers >= 1 (e.g. 100,1000)")
seconds_list = _comma_list(
    seconds, f"comma-separated seconds from 0 to {MAX_RTT:g} (e.g. 0.05,0.1)"
)


def limit_patterns(text: str) -> str:
    """``--limit``: patterns of the right form (what they match is checked with the hosts)."""
    from nornir_bench.jobs.overrides import check_limit

    try:
        check_limit(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix(f"--limit {text!r}: ")) from None
    return text


def add_repository_options(parser: argparse.ArgumentParser, *, repo_help: str) -> None:
    """The options naming the backup repository a command commits to (``--repo``, what it
    does there in ``repo_help``), keeping its secrets, and not waiting for its lock: backup's
    and run's alike."""
    parser.add_argument("--repo", metavar="DIR", type=Path,
                        help=f"{repo_help}; default: the job's output.repo (this option wins "
                        "over it)")
    parser.add_argument("--keep-secrets", action="store_true",
                        help="keep passwords and keys in the repository's files (masked by "
                        "default); it is then made readable by its owner alone")
    parser.add_argument("--no-wait", action="store_true",
                        help="when another backup or change is writing the repository, say "
                        "who and exit 2 before any device is touched, rather than wait for it")


def add_job_overrides(parser: argparse.ArgumentParser, *, limit_note: str = "") -> None:
    """The options that override a job file's hosts and runner (``run``, ``backup``):
    ``--limit``, ``--runner``, ``--workers``; ``limit_note`` ends ``--limit``'s help."""
    parser.add_argument("--limit", "-l", metavar="PATTERN", type=limit_patterns,
                        help="only the job's hosts (after its filter) that PATTERN matches, as "
                        "Ansible's --limit: host names or globs, group:NAME, comma-separated; "
                        "!PATTERN leaves hosts out, &PATTERN keeps only those also matched"
                        + limit_note)
    parser.add_argument("--runner", metavar="NAME", type=known_runner,
                        help="this runner instead of the job's (its other options must suit it)")
    parser.add_argument("--workers", metavar="N", type=positive_int,
                        help="the runner's worker count (num_workers) instead of the job's")


def variable(text: str) -> tuple[str, str]:
    """``-e KEY=VALUE``: the name and its value."""
    from nornir_bench.jobs.overrides import parse_variable

    try:
        return parse_variable(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix(f"-e {text!r}: ")) from None


def by_signal(terminated: threading.Event | None) -> str:
    """`` (SIGTERM)`` when SIGTERM stopped the run: say which signal it was."""
    return " (SIGTERM)" if terminated is not None and terminated.is_set() else ""


def interrupted_status(terminated: threading.Event | None) -> int:
    return EXIT_TERMINATED if terminated is not None and terminated.is_set() else EXIT_INTERRUPTED


@contextmanager
def sigterm_as_ctrl_c() -> Iterator[threading.Event]:
    """For the block, SIGTERM (what systemd, Kubernetes, CI and ``kill`` send) does what
    Ctrl-C does at that moment; the event is set once one came, so the exit status can say so.

    Only in the main thread; the previous handler is restored after. Every command runs
    inside it, ``--help`` included (:func:`exit_with`).
    """
    received = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def on_sigterm(signum: int, frame: Any) -> None:
        received.set()
        handler = signal.getsignal(signal.SIGINT)
        if callable(handler):
            handler(signal.SIGINT, frame)
        else:  # SIG_IGN or SIG_DFL set by someone: stop as Ctrl-C would by default
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield received
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def exit_with(command: Callable[..., int]) -> NoReturn:
    """Run ``command`` and exit with its status.

    SIGTERM does what Ctrl-C does (the status is then 143, not 130). Ctrl-C before a run
    started exits quietly. After a run whose hosts in flight were abandoned (Ctrl-C twice),
    threads that cannot be stopped may still be running a blocking call: the process exits
    without waiting for them, as Ctrl-C asked.
    """
    warnings.showwarning = _one_line_warning
    quiet_library_deprecations()
    with sigterm_as_ctrl_c() as terminated:
        try:
            status = command(terminated=terminated)
            sys.stdout.flush()
        except KeyboardInterrupt:
            # Runs report what finished themselves; this is Ctrl-C while starting up.
            print(f"interrupted{by_signal(terminated)} before any host ran", file=sys.stderr)
            status = interrupted_status(terminated)
        except BrokenPipeError:
            # What was left to print has nowhere to go; as a shell tool killed by SIGPIPE.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            status = EXIT_BROKEN_PIPE
    if status in (EXIT_INTERRUPTED, EXIT_TERMINATED) and _threads_left():
        sys.stderr.flush()
        logging.shutdown()
        os._exit(status)
    # The work is done and reported. The interpreter's last act would be a full collection
    # walking every object the run made (43 ms of a 0.4 s process at 10,000 hosts) only to
    # free them all at exit anyway; frozen objects are skipped. atexit handlers still run.
    gc.freeze()
    sys.exit(status)


def _one_line_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """Warnings as users of a command read them: one line, no source file or code."""
    print(f"nornir-bench: warning: {message}", file=file or sys.stderr)


def _threads_left() -> bool:
    """Whether threads the interpreter would wait for at exit are still running."""
    main_thread = threading.main_thread()
    return any(
        t is not main_thread and not t.daemon and t.is_alive() for t in threading.enumerate()
    )
