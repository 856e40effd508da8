"""``nornir-bench`` run in the test's process: its ``main()``, what it prints, its status.

A command's tests whose subject is not the process's own (its exit path, signals, Ctrl-C, a
traceback a real process would print) call :func:`nornir_bench_here` instead of starting
``python -m nornir_bench``: an interpreter and its imports cost 0.3-0.5 s of CPU a test. What
the command leaves in the process is put back after it (the current folder, the environment,
the import path and the modules it imported from there, the loggers it configured); a job's
warning is the test's error, as any warning of ours is (a warning's line on the terminal is a
process's test: ``exit_with`` formats it).
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from nornir_bench.cli.main import main

__all__ = ["nornir_bench_here"]


def nornir_bench_here(
    *args: str, cwd: Path, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``nornir-bench ARGS`` in ``cwd`` by its ``main()``, with ``env`` added to the
    environment: its status (an argument ``SystemExit`` too), standard output and error, as
    ``subprocess.run(..., capture_output=True, text=True)`` gives them for a process."""
    with _put_back(), _environment(env or {}), _in(cwd), _captured() as out:
        try:
            status: Any = main(list(args))
        except SystemExit as exc:  # argparse's usage errors and --help
            status = exc.code
    return subprocess.CompletedProcess(
        ["nornir-bench", *args], _status(status), out["stdout"], out["stderr"]
    )


def _status(code: Any) -> int:
    if code is None:
        return 0
    return code if isinstance(code, int) else 1


@contextlib.contextmanager
def _in(folder: Path) -> Iterator[None]:
    """The current folder ``folder`` meanwhile (``contextlib.chdir`` is 3.11's)."""
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


@contextlib.contextmanager
def _environment(env: Mapping[str, str]) -> Iterator[None]:
    before = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextlib.contextmanager
def _captured() -> Iterator[dict[str, str]]:
    """Standard output and error, the file descriptors (what worker processes and
    ``/dev/stdout`` write) and ``sys.stdout``/``sys.stderr`` alike, into files read after."""
    out: dict[str, str] = {}
    sys.stdout.flush()
    sys.stderr.flush()
    with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        saved = {fd: os.dup(fd) for fd in (1, 2)}
        streams = sys.stdout, sys.stderr
        try:
            os.dup2(stdout.fileno(), 1)
            os.dup2(stderr.fileno(), 2)
            sys.stdout = io.TextIOWrapper(open(1, "wb", closefd=False), "utf-8",
                                          line_buffering=True)
            sys.stderr = io.TextIOWrapper(open(2, "wb", closefd=False), "utf-8",
                                          line_buffering=True)
            yield out
        finally:
            for stream in (sys.stdout, sys.stderr):
                stream.close()  # flushed; the descriptors stay (closefd=False)
            sys.stdout, sys.stderr = streams
            for fd, copy in saved.items():
                os.dup2(copy, fd)
                os.close(copy)
            for name, file in (("stdout", stdout), ("stderr", stderr)):
                file.seek(0)
                out[name] = file.read().decode("utf-8")


@contextlib.contextmanager
def _put_back() -> Iterator[None]:
    """The import path, the modules imported from the folders a job added to it, and the
    loggers, as they were; the root logger without the test's handlers meanwhile (nornir
    warns when a job configures its logging beside another's, and a process has none)."""
    path = list(sys.path)
    modules = set(sys.modules)
    root = logging.getLogger()
    root_state = list(root.handlers), root.level
    loggers = {
        name: (list(logger.handlers), logger.level, logger.propagate, logger.disabled)
        for name, logger in logging.root.manager.loggerDict.items()
        if isinstance(logger, logging.Logger)
    }
    root.handlers.clear()
    root.setLevel(logging.WARNING)
    try:
        yield
    finally:
        for name, logger in list(logging.root.manager.loggerDict.items()):
            if not isinstance(logger, logging.Logger):
                continue
            handlers, level, propagate, disabled = loggers.get(name, ([], logging.NOTSET,
                                                                       True, False))
            for handler in set(logger.handlers) - set(handlers):
                handler.close()
            logger.handlers[:] = handlers
            logger.setLevel(level)
            logger.propagate, logger.disabled = propagate, disabled
        for handler in set(root.handlers) - set(root_state[0]):
            handler.close()
        root.handlers[:] = root_state[0]
        root.setLevel(root_state[1])
        added = [os.path.join(folder, "") for folder in set(sys.path) - set(path) if folder]
        sys.path[:] = path
        for name in set(sys.modules) - modules:  # a job's task modules: the next may differ
            file = getattr(sys.modules[name], "__file__", None) or ""
            if file.startswith(tuple(added)):
                del sys.modules[name]
