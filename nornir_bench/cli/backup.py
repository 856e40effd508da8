"""``nornir-bench backup JOB.yaml --repo DIR``: each host's running configuration committed to a
git repository, one file per host, one commit per run that changed something."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from nornir_bench.cli._common import (
    EXIT_FAILED_HOSTS,
    EXIT_OK,
    EXIT_USAGE,
    add_job_overrides,
    add_repository_options,
    by_signal,
    interrupted_status,
)

HELP = "back up each host's running configuration into a git repository, a commit per run"
EPILOG = ("Exit status: 0 every host backed up, 1 some host failed (its last good file kept) "
          "or the push was refused (the commit kept here), "
          "2 bad usage, a job that is not a backup's, or a repository that cannot be used "
          "(not one, corrupt, a full disk, held by another backup with --no-wait), 130 Ctrl-C "
          "(the hosts read are committed), 143 SIGTERM.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``backup``."""
    parser.epilog = EPILOG
    parser.add_argument("job", metavar="JOB.yaml", type=Path,
                        help="a job file whose task is backup_config (netmiko) or "
                        "abackup_config (scrapli): its inventory, runner and filter")
    add_repository_options(parser, repo_help="the git repository (made if DIR is new or "
                           "empty)")
    parser.add_argument("--prune", action="store_true",
                        help="remove the files of hosts no longer among the job's")
    parser.add_argument("--push", metavar="REMOTE",
                        help="then push the branch to REMOTE (a remote of the repository, a "
                        "URL or a path); a refused push keeps the commit here")
    parser.add_argument("--output", "-o", metavar="PATH", type=Path,
                        help="the run's JSON Lines records (default: as nornir-bench run)")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    add_job_overrides(parser, limit_note="; not with --prune")


def command(args: argparse.Namespace) -> int:
    from nornir_bench.core.wording import hosts_text
    from nornir_bench.jobs.backup import backup_job
    from nornir_bench.jobs.load import Overrides, load_job
    from nornir_bench.jobs.show import failure_lines, interruption

    if args.prune and args.limit:
        print("nornir-bench: error: --prune with --limit would remove the hosts --limit leaves "
              "out: give one of them", file=sys.stderr)
        return EXIT_USAGE
    job = load_job(args.job, Overrides(limit=args.limit, runner=args.runner,
                                       workers=args.workers))
    repo = args.repo or job.repo
    if repo is None:
        print(f"nornir-bench: error: no repository to back up into: give --repo DIR, or "
              f"output: {{repo: DIR}} in {job.path}", file=sys.stderr)
        return EXIT_USAGE
    done = backup_job(
        job, repo, prune=args.prune, keep_secrets=args.keep_secrets,
        wait=not args.no_wait, on_wait=_said, output=args.output,
        progress=False if args.quiet else None, on_stopping=_say_stopping, push=args.push,
    )
    run, written = done.run, done.written
    print(f"backup of job {job.path}: task {job.task_name} on {run.hosts:,} hosts, runner "
          f"{job.runner_plugin}, repository {repo}")
    if args.keep_secrets:
        print(f"secrets kept (--keep-secrets): {repo} is readable by its owner alone; "
              "whoever can read a copy of it reads the devices' passwords and keys")
    counts = (f"{hosts_text(len(written.changed))} changed, {len(written.unchanged):,} unchanged, "
              f"{len(done.failed):,} failed" + (f", {len(written.removed):,} removed"
                                                 if written.removed else ""))
    if written.commit is None:
        print(f"no commit: nothing changed ({counts})")
    else:
        print(f"commit {written.commit[:12]}: {counts}")
    failures = failure_lines(run)
    if failures:
        print("failed hosts (their last good file kept):")
        print("\n".join(failures))
    if run.interrupted:
        print(f"interrupted{by_signal(args.terminated)}: {interruption(run)}; "
              f"{done.unread:,} hosts not read keep their last file")
    if args.push is not None and done.push_refused is None:
        print(f"pushed main to {args.push}")
    elif args.push is not None:
        print(f"push to {args.push} refused: {done.push_refused}; the commit stays in "
              f"{repo} (give --push again once the remote takes it)")
    print(f"per-host records: {run.output}")
    if run.interrupted:
        return interrupted_status(args.terminated)
    return EXIT_FAILED_HOSTS if done.failed or done.push_refused else EXIT_OK


def _said(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _say_stopping() -> None:
    print("\nstopping: no new host starts; waiting for the hosts in flight (Ctrl-C again to "
          "abandon them); the hosts read are committed", file=sys.stderr, flush=True)
