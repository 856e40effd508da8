"""A backup run: a job's hosts' running configurations committed to a git repository, one
file per host (what ``nornir-bench backup JOB.yaml --repo DIR`` does, without the printing).

The job gives the inventory, the runner, the filter and the driver: its task is
``backup_config`` (netmiko) or ``abackup_config`` (scrapli). It runs as ``nornir-bench run``
runs it (records, progress bar, Ctrl-C), while the repository's lock is held, so two backups
into one repository follow each other. Then one commit, whose message says how many hosts
changed, how many were unchanged, which failed and why; an unchanged fleet makes none. A host
that failed, or that a Ctrl-C left unread, keeps its last good file. Hosts no longer among the
job's are removed only when asked (``prune``), and never after an interrupted run.

Secrets are masked in the files as everywhere else (:class:`~nornir_bench.core.secrets.Redactor`:
the job's passwords, and configuration secrets), unless ``keep_secrets``: then the repository
is made readable by its owner alone. The commit message is masked always.

With a remote to push to, the branch is pushed once the commit is made (or when none was: an
earlier push may have been refused); a refused push is said, and the commit stays.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from nornir_bench.core.failures import failure_of
from nornir_bench.core.wording import hosts_text
from nornir_bench.history.lock import holding
from nornir_bench.history.push import push as push_branch
from nornir_bench.history.repository import ConfigRepository, RepositoryError, Written
from nornir_bench.jobs._job_file import JobError
from nornir_bench.jobs.load import Job
from nornir_bench.jobs.outcome import JobRun
from nornir_bench.jobs.run import run_job
from nornir_bench.jobs.show import why_failed
from nornir_bench.tasks.checks.running_config import BACKUP_TASKS

__all__ = [
    "BackupRun",
    "backup_job",
    "check_backup_job",
    "commit_message",
    "names_text",
    "owner_only",
]

NAMES_SHOWN = 100  # hosts a commit message names in each list, then how many more


@dataclass(frozen=True)
class BackupRun:
    """What a backup did.

    Attributes:
        run: the job's run (its records, its summary, its failed hosts).
        written: what the commit holds (``commit`` ``None``: nothing changed, no commit).
        failed: each failed host and why, masked, one line.
        unread: the hosts a Ctrl-C left unread (their files kept).
        push_refused: why the push (``push``) was refused, if it was (the commit stays).
    """

    run: JobRun
    written: Written
    failed: dict[str, str]
    unread: int
    push_refused: str | None = None


def check_backup_job(job: Job) -> None:
    """Refuse a job whose task is not a backup task (one line, naming what it takes)."""
    if job.stepped or job.task_name not in BACKUP_TASKS:
        given = f"{len(job.steps)} steps" if job.stepped else f"task {job.task_name}"
        raise JobError(
            f"{job.path}: a backup runs a job of one task, {' or '.join(BACKUP_TASKS)} "
            f"(netmiko or scrapli), got {given}"
        )


def backup_job(
    job: Job,
    repo: Path,
    *,
    prune: bool = False,
    keep_secrets: bool = False,
    wait: bool = True,
    on_wait: Callable[[str], None] | None = None,
    output: Path | None = None,
    progress: bool | None = None,
    on_stopping: Callable[[], None] | None = None,
    push: str | None = None,
) -> BackupRun:
    """Back ``job``'s hosts up into the repository at ``repo`` (made if new or empty), then,
    with ``push`` (a remote's name, a URL or a path), push its branch there, still holding
    the repository.

    Raises:
        JobError: the job is not a backup job (before the repository is touched).
        RepositoryError: the repository is not one, is corrupt, cannot be written, or (not
            ``wait``) another backup holds it: before any device, or, for a write, with the
            repository as it was.
    """
    check_backup_job(job)
    repository = ConfigRepository(repo)
    with holding(repo, repository.git_dir, wait=wait, on_wait=on_wait):
        done = _backup(job, repository, prune, keep_secrets, output, progress, on_stopping)
        if push is None:
            return done
        refused = push_branch(repository, push)
        return replace(done, push_refused=None if refused is None else done.run.redact(refused))


def _backup(
    job: Job,
    repository: ConfigRepository,
    prune: bool,
    keep_secrets: bool,
    output: Path | None,
    progress: bool | None,
    on_stopping: Callable[[], None] | None,
) -> BackupRun:
    if keep_secrets:
        owner_only(repository)
    run = run_job(job, output=output, progress=progress, on_stopping=on_stopping)
    configs: dict[str, str] = {}
    failed: dict[str, str] = {}
    for name, multi in run.result.items():
        if multi.failed:
            failed[name] = why_failed(run.redact, failure_of(multi))
        else:
            text = str(multi[0].result)
            configs[name] = text if keep_secrets else run.redact(text)
    unread = run.hosts - len(run.result)
    remove = repository.hosts() - set(run.result) if prune and not run.interrupted else set()

    def message(written: Written) -> str:
        return run.redact(commit_message(job.path.name, written, failed, unread))

    written = repository.commit_run(configs, message, remove=remove)
    if keep_secrets:
        owner_only(repository)
    return BackupRun(run, written, failed, unread)


def commit_message(job: str, written: Written, failed: dict[str, str], unread: int) -> str:
    """The commit's message: a summary line (how many hosts changed, were unchanged, failed),
    then the hosts of each kind, the failed ones with why."""
    counts = [f"{hosts_text(len(written.changed))} changed",
              f"{len(written.unchanged):,} unchanged", f"{len(failed):,} failed"]
    if written.removed:
        counts.append(f"{len(written.removed):,} removed")
    if unread:
        counts.append(f"{unread:,} not read (interrupted)")
    lines = [f"backup: {', '.join(counts)} (job {job})", ""]
    if written.changed:
        lines.append(f"changed: {names_text(written.changed)}")
    if written.removed:
        lines.append(f"removed (--prune): {names_text(written.removed)}")
    if failed:
        lines.append("failed (their last good file kept):")
        shown = sorted(failed)[:NAMES_SHOWN]
        lines += [f"  {name}: {failed[name]}" for name in shown]
        if len(failed) > len(shown):
            lines.append(f"  ... and {len(failed) - len(shown):,} more")
    return "\n".join(lines).rstrip() + "\n"


def names_text(hosts: Sequence[str]) -> str:
    """The first :data:`NAMES_SHOWN` of ``hosts``, then how many more."""
    shown = ", ".join(hosts[:NAMES_SHOWN])
    return shown + (f" ... and {len(hosts) - NAMES_SHOWN:,} more" if len(hosts) > NAMES_SHOWN
                    else "")


def owner_only(repository: ConfigRepository) -> None:
    """The repository readable by its owner alone: it holds the devices' secrets."""
    try:
        os.chmod(repository.path, 0o700)
        for path in repository.path.glob("*.cfg"):
            os.chmod(path, 0o600)
    except OSError as exc:
        raise RepositoryError(f"--repo {repository.path}: cannot make it private: "
                              f"{exc.strerror}") from None
