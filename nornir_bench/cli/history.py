"""``nornir-bench history HOST --repo DIR``: the commits of a backup repository that changed a
host's configuration, newest first, each with its diff."""

from __future__ import annotations

import argparse
from pathlib import Path

from nornir_bench.cli._common import EXIT_FAILED_HOSTS, EXIT_OK, positive_int

HELP = "the commits of a backup repository that changed a host's configuration, with diffs"
EPILOG = ("Exit status: 0 the host's changes shown, 1 no commit of the repository holds the "
          "host, 2 bad usage or a repository that cannot be read (not one, corrupt).")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``history``."""
    parser.epilog = EPILOG
    parser.add_argument("host", metavar="HOST", help="the host, as the inventory names it")
    parser.add_argument("--repo", metavar="DIR", type=Path, required=True,
                        help="the repository nornir-bench backup writes")
    parser.add_argument("--last", metavar="N", type=positive_int,
                        help="only the N newest changes")


def command(args: argparse.Namespace) -> int:
    from nornir_bench.history.log import host_history
    from nornir_bench.history.repository import file_name

    shown = 0
    for change in host_history(args.repo, args.host):
        if args.last is not None and shown == args.last:
            break
        print(f"commit {change.commit[:12]}  {change.when:%Y-%m-%d %H:%M:%S} UTC  "
              f"{change.summary}")
        print(change.diff, end="" if change.diff.endswith("\n") else "\n")
        shown += 1
    if not shown:
        print(f"{args.host}: no commit of {args.repo} holds it (its file would be "
              f"{file_name(args.host)})")
        return EXIT_FAILED_HOSTS
    return EXIT_OK

