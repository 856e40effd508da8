"""The ``nornir-bench`` command: its sub-commands, each a module of this package.

Each command module declares ``add_arguments(parser)`` and ``command(args) -> int`` (the lab's
three commands share :mod:`~nornir_bench.cli.lab`); this module only assembles them, so a new
command is a new module and one line in :data:`_COMMANDS`.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import threading
from collections.abc import Callable, Sequence
from typing import NoReturn

from nornir_bench.cli._common import EXIT_USAGE, Parser, exit_with
from nornir_bench.core.exceptions import NornirBenchError

__all__ = ["entry", "main"]

# name -> (module, help attribute, add_arguments function, command function, epilog).
# Modules are imported when the parser is built, not when this module is: script.py, timed as a
# whole process, imports the cli package and needs none of them. A command module imports its
# layer (the job loader, the lab, the sweep) only when its options are declared or it runs,
# and only the command named on the command line declares its options: ``--help`` needs no
# more than each command's help line.
_COMMANDS: dict[str, tuple[str, str, str, str, str | None]] = {
    "run": ("nornir_bench.cli.run", "HELP", "add_arguments", "command", None),
    "lab": ("nornir_bench.cli.lab", "LAB_HELP", "add_lab_arguments", "lab_command", None),
    "wait-lab": (
        "nornir_bench.cli.lab", "WAIT_LAB_HELP", "add_wait_lab_arguments", "wait_lab_command",
        "Exit status: 0 every device accepts connections, 1 not within --timeout, 2 bad usage.",
    ),
    "rtt-server": (
        "nornir_bench.cli.lab", "RTT_SERVER_HELP", "add_rtt_server_arguments",
        "rtt_server_command", None,
    ),
    "backup": ("nornir_bench.cli.backup", "HELP", "add_arguments", "command", None),
    "history": ("nornir_bench.cli.history", "HELP", "add_arguments", "command", None),
    "sweep": ("nornir_bench.cli.sweep", "HELP", "add_arguments", "command", None),
    "advise": ("nornir_bench.cli.advise", "HELP", "add_arguments", "command", None),
    "report": (
        "nornir_bench.cli.records", "REPORT_HELP", "add_report_arguments", "report_command",
        None,
    ),
    "diff": ("nornir_bench.cli.records", "DIFF_HELP", "add_diff_arguments", "diff_command", None),
    "recover": (
        "nornir_bench.cli.records", "RECOVER_HELP", "add_recover_arguments", "recover_command",
        "Exit status: 0 every pending change reverted (or none pending), 1 a revert failed or "
        "a journal is held by a run still going, 2 bad input (a file that is not a journal, a "
        "journal of another records folder, a job that cannot load).",
    ),
}


def _main_parser(argv: Sequence[str]) -> Parser:
    """The parser of ``nornir-bench``, with the options of the command ``argv`` names."""
    parser = Parser(
        prog="nornir-bench",
        description="Fast, safe nornir runners: run jobs on devices, or try them on a local lab.",
        epilog="Exit status: 0 all hosts ok, 1 some host failed, 2 bad usage or job, 130 Ctrl-C, "
        "143 SIGTERM (what finished is reported).",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands",
                                     parser_class=Parser)
    # The main parser has no option that takes a value: its first other argument is the command.
    named = next((arg for arg in argv if not arg.startswith("-")), None)
    for name, (module_name, help_name, add_name, command_name, epilog) in _COMMANDS.items():
        module = importlib.import_module(module_name)
        help_text = getattr(module, help_name)
        sub = commands.add_parser(name, help=help_text, description=help_text, epilog=epilog)
        if name == named:
            add_arguments: Callable[[argparse.ArgumentParser], None] = getattr(module, add_name)
            add_arguments(sub)
            sub.set_defaults(handler=getattr(module, command_name))
    return parser


def main(argv: Sequence[str] | None = None, *, terminated: threading.Event | None = None) -> int:
    """The ``nornir-bench`` command; returns the exit status.

    ``terminated`` is set when SIGTERM stopped the run (see :func:`sigterm_as_ctrl_c`).
    """
    if argv is None:
        argv = sys.argv[1:]
    parser = _main_parser(argv)
    args = parser.parse_args(argv)
    if args.command is None:  # the commands, rather than one line saying one is required
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    args.terminated = terminated
    try:
        return int(args.handler(args))
    except NornirBenchError as exc:
        print(f"nornir-bench: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


def entry() -> NoReturn:
    """``sys.exit`` wrapper for the ``nornir-bench`` console script."""
    exit_with(main)
