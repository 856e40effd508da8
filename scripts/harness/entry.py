"""A benchmark script's entry point: its options, its warnings, Ctrl-C and SIGTERM, its records.

Every script of scripts/ is::

    PARSER = harness.parser(__doc__)
    PARSER.add_argument(...)

    def main(bench: harness.Bench) -> int: ...

    if __name__ == "__main__":
        harness.run_script(main, PARSER, interrupted="every run it started is stopped")

``harness.parser`` adds what every script takes: ``--quick`` (the smallest input that
exercises the script's code: a test runs it) and ``--record PATH`` (its figures as records,
:mod:`.records`). :func:`run_script` installs the warning filters (a library's deprecations of
its own code, scrapli's enable warning: here and in every process the script starts), makes
SIGTERM stop the script as Ctrl-C does (every ``with`` block ending what it started), and
exits 130 on Ctrl-C, 143 on SIGTERM, 2 on bad usage (one line).
"""

from __future__ import annotations

import argparse
import functools
import os
import signal
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn

from harness.records import Records, load_text, machine, measured_commit

__all__ = ["Bench", "Parser", "Terminated", "number", "parser", "run_script", "whole"]

# scrapli warns, once a process, that it may send enable without a password (auth_secondary):
# the labs' devices have none, and vtysh logs in privileged.
QUIET_SCRAPLI = "ignore::UserWarning:scrapli.helper"


class Parser(argparse.ArgumentParser):
    """Errors in one line: what was wrong and what is allowed."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


class Terminated(KeyboardInterrupt):
    """SIGTERM: the script stops as on Ctrl-C, with exit status 143."""


def whole(low: int = 1) -> Callable[[str], int]:
    """An option's type: a whole number of at least ``low``."""

    def parse(text: str) -> int:
        if not text.isdigit() or int(text) < low:
            raise argparse.ArgumentTypeError(f"must be a whole number >= {low}, got {text!r}")
        return int(text)

    return parse


def number(low: float = 0.0) -> Callable[[str], float]:
    """An option's type: a number (seconds, a rate) of at least ``low``."""

    def parse(text: str) -> float:
        try:
            found = float(text)
        except ValueError:
            found = float("nan")
        if not found >= low:  # nan included
            raise argparse.ArgumentTypeError(f"must be a number >= {low:g}, got {text!r}")
        return found

    return parse


def parser(doc: str | None, *, quick: str = "the smallest run that exercises this script, "
           "for a test") -> Parser:
    """The parser of a script whose docstring is ``doc``, with ``--quick`` and ``--record``."""
    found = Parser(prog=Path(sys.argv[0]).name,
                   description=(doc or "").split("\n\n")[0],
                   formatter_class=argparse.RawDescriptionHelpFormatter)
    found.add_argument("--quick", action="store_true", help=quick)
    found.add_argument("--record", type=Path, metavar="PATH",
                       help="append each row's figures to PATH, a JSON object a line")
    return found


@dataclass
class Bench:
    """One invocation of a script: its options, and where its records go."""

    script: str
    args: Any
    records: Records

    @property
    def quick(self) -> bool:
        return bool(self.args.quick)

    def record(self, figures: dict[str, Any], **parameters: Any) -> None:
        """One row's figures (and the parameters it was measured with) as a record."""
        self.records.write(figures, **parameters)

    def heading(self, what: str) -> None:
        """The first line: what runs, on which code and machine."""
        cpus = machine()["cpu_count"]
        print(f"{self.script}: {what}; nornir_bench of commit {measured_commit()}; {cpus} CPUs;"
              f" load {load_text()}", flush=True)


def run_script(main: Callable[[Bench], int | None], options: Parser, *,
               interrupted: str = "every process this script started is stopped",
               argv: list[str] | None = None) -> NoReturn:
    """Parse the options, run ``main`` and exit with its status (``None``: 0)."""
    quiet_warnings()
    args = options.parse_args(argv)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # also when started in background
    signal.signal(signal.SIGTERM, functools.partial(_terminate, os.getpid()))
    bench = Bench(Path(options.prog).stem, args, Records(Path(options.prog).stem, args.record))
    try:
        status = main(bench)
    except Terminated:
        print(f"stopped by SIGTERM: {interrupted}", file=sys.stderr)
        sys.exit(143)
    except KeyboardInterrupt:
        print(f"interrupted: {interrupted}", file=sys.stderr)
        sys.exit(130)
    sys.exit(status or 0)


def quiet_warnings() -> None:
    """The warnings a benchmark does not show: a library's deprecations of its own code, and
    scrapli's enable warning, here and in every process started from here."""
    try:  # a checkout measured side by side may be older than the filter
        from nornir_bench.core.library_warnings import quiet_library_deprecations
    except ImportError:
        pass
    else:
        quiet_library_deprecations()
    warnings.filterwarnings("ignore", category=UserWarning, module="scrapli.helper")
    said = os.environ.get("PYTHONWARNINGS", "")
    if QUIET_SCRAPLI not in said.split(","):
        os.environ["PYTHONWARNINGS"] = ",".join(filter(None, [said, QUIET_SCRAPLI]))


def _terminate(owner: int, signum: int, frame: FrameType | None) -> None:
    """SIGTERM: the script stops as on Ctrl-C. A process forked from it (a multiprocessing
    pool's worker) ends as SIGTERM ends a process: the handler is the script's, not its."""
    if os.getpid() == owner:
        raise Terminated
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)
