"""What ``nornir-bench lab`` does with a lab of any kind behind OpenSSH (routers, NETCONF
servers): make it, print what it made and then ``lab ready:``, keep it until SIGINT or SIGTERM,
and remove it all (also on an error)."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol, TextIO

from nornir_bench.lab._errors import LabError

__all__ = ["CommandLab", "Interrupted", "check_hosts", "run_until_signal", "signals_interrupt"]


class _Inventories(Protocol):
    def write_inventory(self, folder: str | os.PathLike[str],
                        hosts: int | None = None) -> list[Path]: ...


class CommandLab(Protocol):
    """What the command drives of a lab, whatever its kind."""

    @property
    def made(self) -> bool: ...

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def wait_ready(self, timeout: float = 60.0) -> None: ...

    def running(self, inventory: str | os.PathLike[str] | None = None) -> _Inventories: ...


class Interrupted(BaseException):
    """SIGINT or SIGTERM reached the lab: it stops."""


@contextmanager
def signals_interrupt() -> Iterator[None]:
    """SIGINT and SIGTERM raise :class:`Interrupted` inside: a lab command stops."""
    def interrupt(signum: int, frame: object) -> None:
        raise Interrupted

    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def check_hosts(hosts: int | None) -> None:
    """A LabError unless ``hosts`` (``--hosts``) is unset or from 1 to 100000."""
    if hosts is not None and not 1 <= hosts <= 100_000:
        raise LabError(f"--hosts must be a whole number from 1 to 100000, got {hosts!r}")


def run_until_signal(
    lab: CommandLab,
    *,
    made_lines: Callable[[], Iterable[str]],
    ready_line: Callable[[float], str],
    write: str | os.PathLike[str] | None = None,
    hosts: int | None = None,
    timeout: float = 60.0,
    out: TextIO | None = None,
) -> None:
    """Start ``lab``, print ``made_lines()`` (what it made), write its inventory into
    ``write`` (``hosts`` hosts over its devices), wait ``timeout`` for it to be ready, print
    ``ready_line(seconds it took)``, and keep it until SIGINT or SIGTERM; then remove it
    (printing ``lab stopped:`` if anything was made)."""
    def say(text: str) -> None:
        print(text, file=out or sys.stdout, flush=True)

    with signals_interrupt():
        try:
            started = time.monotonic()
            lab.start()
            for line in made_lines():
                say(line)
            if write is not None:
                files = lab.running().write_inventory(write, hosts)
                say(f"inventory written: {', '.join(os.fspath(f) for f in files)}")
            lab.wait_ready(timeout)
            say(ready_line(time.monotonic() - started))
            while True:
                signal.pause()
        except Interrupted:
            pass
        finally:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C: the guard finishes
            ended = time.monotonic()
            lab.stop()
            if lab.made:  # a refusal (a name running, a port held) made nothing to remove
                say(f"lab stopped: everything removed in {time.monotonic() - ended:.1f} s")
