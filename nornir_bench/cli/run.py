"""``nornir-bench run JOB.yaml``: a job file's task (or steps) on its inventory, with a progress
bar, per-host JSON Lines records, a summary (a line per step, in a job of steps) and one line
per failed host; with ``--show``, each host's result too."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from nornir_bench.cli._common import (
    EXIT_FAILED_HOSTS,
    EXIT_OK,
    EXIT_USAGE,
    add_job_overrides,
    add_repository_options,
    by_signal,
    interrupted_status,
    variable,
)
from nornir_bench.core.wording import hosts_text
from nornir_bench.jobs.show import MAX_CHARS, MAX_LINES

if TYPE_CHECKING:
    from nornir_bench.jobs.change_history import ChangeHistory

HELP = "run a YAML job file's task on its inventory"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``run``."""
    parser.description = (
        "Run the task, or the steps, of a YAML job file (a nornir configuration plus task or "
        "steps, filter, output) on its hosts. Per-host records go to a JSON Lines file as "
        "hosts finish."
    )
    parser.add_argument("job", metavar="JOB.yaml", type=Path, help="the job file")
    parser.add_argument("--output", "-o", metavar="PATH", type=Path,
                        help="JSON Lines file for per-host records (default: the job's "
                        "output.path, else JOBNAME-DATE.jsonl in "
                        "$XDG_STATE_HOME/nornir-bench/records, ~/.local/state/nornir-bench/"
                        "records when XDG_STATE_HOME is not set)")
    parser.add_argument("--quiet", "-q", action="store_true",
                        help="no progress bar (there is none either when stderr is not a "
                        "terminal)")
    parser.add_argument("--check", action="store_true",
                        help="a dry run: each step's task shows what it would change (a "
                        "diff, with --show) and changes nothing; a task that cannot dry-run "
                        "is refused before anything runs")
    parser.add_argument("--rerun-failed", metavar="RECORDS", type=Path,
                        help="run only the hosts that failed or never started in RECORDS, the "
                        "records file of an earlier run of this job")
    parser.add_argument("--session-logs", action="store_true", default=None,
                        help="write each device's CLI session, masked, next to the records "
                        "(RECORDS/sessions/HOST.log), as the job's output: {session_logs: "
                        "true} does")
    add_repository_options(
        parser, repo_help="commit the configurations a change (send_config, asend_config) "
        "read to this git repository (a backup's): before it, where the repository's last "
        "file differs, and after it; with --check, nothing changes and nothing is committed")
    add_job_overrides(parser)
    parser.add_argument("-e", "--extra-var", metavar="KEY=VALUE", type=variable, action="append",
                        dest="variables", default=[],
                        help="a template variable (a string), over the job's variables, for "
                        "each step whose task takes variables (send_config, asend_config and "
                        "the NETCONF edits); repeatable")
    parser.add_argument("--show", action="store_true",
                        help="after the run, print each host's result (device output), "
                        f"masked, at most {MAX_LINES} lines and {MAX_CHARS:,} characters a "
                        "host")


def command(args: argparse.Namespace) -> int:
    from nornir_bench.jobs.change_history import change_with_history, keeps_configs
    from nornir_bench.jobs.load import Overrides, load_job
    from nornir_bench.jobs.run import run_job
    from nornir_bench.jobs.show import failure_lines, interruption, result_lines, step_lines

    overrides = Overrides(limit=args.limit, runner=args.runner, workers=args.workers,
                          variables=dict(args.variables))
    job = load_job(args.job, overrides)
    # A records file that cannot be written is a RecordsError: one line naming it, exit 2.
    options = dict(output=args.output, progress=False if args.quiet else None,
                   on_stopping=_say_stopping, check=args.check,
                   rerun_failed=args.rerun_failed, session_logs=args.session_logs)
    # The job's repository is a backup's too: only a change commits to it (never --check).
    repo = args.repo or (job.repo if keeps_configs(job) else None)
    history = None
    if repo is None or args.check:
        run = run_job(job, **options)
    else:
        run, history = change_with_history(
            job, repo, keep_secrets=args.keep_secrets, wait=not args.no_wait, on_wait=_said,
            **options,
        )
    what = f"{len(job.steps)} steps" if job.stepped else f"task {job.task_name}"
    how = (", a dry run (--check): nothing changed" if args.check else "") + (
        f", only the hosts that failed or never started in {args.rerun_failed}"
        if args.rerun_failed else ""
    ) + (f"; from the command line: {run.redact(overrides.text())}" if overrides.text() else "")
    print(f"job {job.path}: {what} on {hosts_text(run.hosts)}, runner {job.runner_plugin}{how}")
    if args.show:
        for line in result_lines(run):
            print(line)
    if run.stepped:
        print("\n".join(step_lines(run)))
    for line in run.summary.lines():
        print(run.redact(line))
    failures = failure_lines(run)
    if failures:
        print("failed hosts:")
        print("\n".join(failures))
    if run.interrupted:
        print(
            f"interrupted{by_signal(args.terminated)}: {interruption(run)}"
            + (" (hosts in flight abandoned: their devices may not have finished)"
               if run.abandoned else "")
        )
    if history is not None:
        _say_history(history, repo, args.keep_secrets)
    print(f"per-host records: {run.output}")
    if history is not None and history.refused is not None:
        print(f"nornir-bench: error: {history.refused}; the change was made (its outcome "
              f"above, its records in {run.output}): not committed", file=sys.stderr)
        return EXIT_USAGE
    if run.interrupted:
        return interrupted_status(args.terminated)
    from nornir_bench.core.changes import DRIFTED

    # A compliance check (--check of a replace) fails as a failed host does when any drifted.
    drifted = run.summary.changes.get(DRIFTED)
    return EXIT_FAILED_HOSTS if run.summary.failed or drifted else EXIT_OK


def _say_history(history: ChangeHistory, repo: Path | None, keep_secrets: bool) -> None:
    if keep_secrets:
        print(f"secrets kept (--keep-secrets): {repo} is readable by its owner alone; whoever "
              "can read a copy of it reads the devices' passwords and keys")
    for written, what in ((history.before, "before the change"),
                          (history.after, "after the change")):
        if written is None:
            continue
        if written.commit is None:
            print(f"{repo}: no commit {what}: no host's configuration differed from its last "
                  "file")
        else:
            print(f"{repo}: commit {written.commit[:12]} {what}: "
                  f"{hosts_text(len(written.changed))} differed from the last file")


def _said(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _say_stopping() -> None:
    print(
        "\nstopping: no new host starts; waiting for the hosts in flight "
        "(Ctrl-C again to abandon them)",
        file=sys.stderr,
        flush=True,
    )
