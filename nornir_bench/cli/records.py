"""``nornir-bench diff OLD.jsonl NEW.jsonl`` (two runs compared) and ``nornir-bench report
RECORDS...`` (a page of what runs did), from the records files ``run`` writes, or with ``--repo
DIR`` commits of a backup repository as sides; ``nornir-bench recover [JOURNAL]``: the changes
a dead run left pending confirmation, reverted."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from nornir_bench.cli._common import EXIT_FAILED_HOSTS, EXIT_OK

DIFF_HELP = ("compare two runs from their records files, or commits of a backup repository: "
             "what failed, was fixed, or changed")
REPORT_HELP = "a page of what runs did, from their records files: one HTML file, offline"
RECOVER_HELP = ("revert the changes a run that died left pending confirmation (confirm), "
                "from its journal")


def add_diff_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = ("Exit status: 0 the runs are the same (hosts still failing for the same "
                     "cause included), 1 they differ, 2 bad input (a file that is not a records "
                     "file; with --repo, a revision it does not have, a side both a file and a "
                     "revision or neither, a repository that cannot be read), as diff's.")
    parser.add_argument("old", metavar="OLD", help="the earlier run's records file (with "
                        "--repo: or a revision, e.g. HEAD~1)")
    parser.add_argument("new", metavar="NEW", help="the later run's records file (with "
                        "--repo: or a revision, e.g. HEAD)")
    parser.add_argument("--repo", metavar="DIR", type=Path,
                        help="a repository nornir-bench backup writes: OLD and NEW may be its "
                        "revisions (a hash, a branch, a tag, HEAD~1); ./NAME is a file")
    parser.add_argument("--json", action="store_true",
                        help="print the comparison as one JSON document, for programs")
    parser.add_argument("--no-diffs", action="store_true",
                        help="leave out the diffs of outputs that changed")


def diff_command(args: argparse.Namespace, **_: object) -> int:
    from nornir_bench.report.compare import compare_sides
    from nornir_bench.report.sides import sides_of

    comparison = compare_sides(*sides_of(args.old, args.new, repo=args.repo))
    if args.json:
        json.dump(comparison.as_json(), sys.stdout, ensure_ascii=False)
        print()
    else:
        for line in comparison.lines(diffs=not args.no_diffs):
            print(line)
    return EXIT_FAILED_HOSTS if comparison.differ else EXIT_OK


def add_report_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = ("Exit status: 0 the page is written, 2 bad input (a file that is not a "
                     "records file, an output that cannot be written; with --repo, a revision "
                     "it does not have, a side both a file and a revision or neither, a "
                     "repository that cannot be read).")
    parser.add_argument("records", metavar="RECORDS.jsonl", nargs="+",
                        help="records files of runs (each a section of the page); with --repo "
                        "and --compare, the first may be a revision (compared, no section)")
    parser.add_argument("-o", "--output", metavar="PAGE.html", type=Path,
                        default=Path("report.html"), help="the page (default: report.html)")
    parser.add_argument("--compare", metavar="OLD",
                        help="also compare the (first) run with this earlier one (with --repo: "
                        "or a revision, e.g. HEAD~1)")
    parser.add_argument("--repo", metavar="DIR", type=Path,
                        help="a repository nornir-bench backup writes: --compare's sides may "
                        "be its revisions")


def report_command(args: argparse.Namespace, **_: object) -> int:
    from nornir_bench.report.page import write_report
    from nornir_bench.report.sides import report_sides

    records, compared = report_sides(args.records, args.compare, repo=args.repo)
    written = write_report(records, args.output, compared=compared)
    hosts = f"{written.hosts:,} host{'s' * (written.hosts != 1)}"
    print(f"report: {written.path} ({hosts}, {written.size / 1e6:.1f} MB)")
    for note in written.notes:
        print(note, file=sys.stderr)
    return EXIT_OK


def add_recover_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("journal", metavar="JOURNAL", type=Path, nargs="?",
                        help="a run's journal (RECORDS.journal, beside its records); default: "
                        "every journal in the records folder ($XDG_STATE_HOME/nornir-bench/"
                        "records) that no run holds")


def recover_command(args: argparse.Namespace, **_: object) -> int:
    from nornir_bench.core.files import records_folder
    from nornir_bench.jobs.recover import recover_folder, recover_journal

    def say(line: str) -> None:
        print(line, flush=True)

    if args.journal is None:
        done = recover_folder(records_folder(), say)
    else:
        if not args.journal.is_file():
            from nornir_bench.tasks.changes.journal import JournalError

            raise JournalError(f"{args.journal}: no such journal file")
        done = recover_journal(args.journal, say)
    if not done.reverted and not done.failed and not done.busy:
        print("recover: no change pending")
    return EXIT_FAILED_HOSTS if done.failed or done.busy else EXIT_OK
