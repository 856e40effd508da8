"""A change run that keeps its history: with a repository named (``nornir-bench run JOB.yaml
--repo DIR``, or the job's ``output: {repo: DIR}``), the configurations the change read are
committed to the repository a backup writes (:mod:`~nornir_bench.jobs.backup`).

The repository is opened and its lock taken before any device is touched: one that is not a
repository, is corrupt, or is held by another run (with ``wait`` false) stops the run there.
The change tasks are asked to keep what they read (``keep_configs``: the running
configuration before the first line is sent, and the one read back last, after the change or
its rollback), so no device is read twice. After the run, two commits at most:

1. **before**: each host's configuration as its change read it first, where the repository's
   last file differs from it (a drift since the last backup, or a host new to it);
2. **after**: each host's configuration as read back last. A host whose change said nothing
   of what it left (it failed before reading, or was stopped in flight) keeps its file.

Neither is made when nothing differs. The files are masked as a backup's are, unless
``keep_secrets``. A commit refused after the run (a full disk) does not undo the change: the
run is returned with why (:attr:`ChangeHistory.refused`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from nornir_bench.core.changes import ROLLED_BACK, change_of, configs_of
from nornir_bench.core.failures import failure_of
from nornir_bench.core.wording import hosts_text
from nornir_bench.history.lock import holding
from nornir_bench.history.repository import ConfigRepository, RepositoryError, Written
from nornir_bench.jobs._job_file import JobError
from nornir_bench.jobs._signatures import parameters_of
from nornir_bench.jobs.backup import NAMES_SHOWN, names_text, owner_only
from nornir_bench.jobs.load import Job
from nornir_bench.jobs.outcome import JobRun
from nornir_bench.jobs.run import run_job
from nornir_bench.jobs.show import why_failed

__all__ = ["KEEP_CONFIGS", "ChangeHistory", "change_with_history", "keeps_configs"]

KEEP_CONFIGS = "keep_configs"
"""The parameter a change task takes to keep the configurations it read on its result."""


@dataclass(frozen=True)
class ChangeHistory:
    """What a change run committed.

    Attributes:
        before: the commit of the configurations before the change (``commit`` ``None``:
            none differed from the repository's); ``None`` when it was refused.
        after: the commit of the configurations after it; ``None`` when it was not made.
        refused: why a commit was refused (one line), if one was: the change stands.
    """

    before: Written | None
    after: Written | None
    refused: str | None = None


def keeps_configs(job: Job) -> bool:
    """Whether a step of ``job`` changes configurations and can keep what it read
    (``send_config``, ``asend_config``)."""
    return any(_keeping(step.task) for step in job.steps)


def _keeping(task: Callable[..., Any]) -> bool:
    taken = parameters_of(task, skip=1)
    return taken is not None and KEEP_CONFIGS in taken.names


def change_with_history(
    job: Job,
    repo: Path,
    *,
    keep_secrets: bool = False,
    wait: bool = True,
    on_wait: Callable[[str], None] | None = None,
    **run: Any,
) -> tuple[JobRun, ChangeHistory]:
    """Run ``job`` (``run``: :func:`~nornir_bench.jobs.run.run_job`'s options) holding the
    repository at ``repo``, then commit the configurations its changes read.

    Raises:
        JobError: no step of the job changes a configuration (before anything).
        RepositoryError: the repository is not one, is corrupt, or (not ``wait``) another
            run holds it: before any device is touched.
    """
    if not keeps_configs(job):
        raise JobError(
            f"--repo {repo}: job {job.path} changes no configuration (no send_config or "
            "asend_config step): nornir-bench backup commits a job's configurations"
        )
    repository = ConfigRepository(repo)
    with holding(repo, repository.git_dir, wait=wait, on_wait=on_wait):
        done = run_job(_kept(job), **run)
        history = _commit(job, done, repository, keep_secrets)
    return done, history


def _kept(job: Job) -> Job:
    """``job`` with ``keep_configs`` set in each step whose task takes it."""
    steps = tuple(
        replace(step, params={**step.params, KEEP_CONFIGS: True}) if _keeping(step.task)
        else step
        for step in job.steps
    )
    return replace(job, steps=steps)


def _commit(
    job: Job, run: JobRun, repository: ConfigRepository, keep_secrets: bool
) -> ChangeHistory:
    """The before and after commits; a refusal (after the change: it stands) said, with the
    before commit if it was made."""
    read = _Read.of(run, keep_secrets)
    name = job.path.name

    def before_message(written: Written) -> str:
        return run.redact(
            f"before change: {hosts_text(len(written.changed))} differed from the last backup "
            f"(job {name})\n\ndiffered: {names_text(written.changed)}\n"
        )

    def after_message(written: Written) -> str:
        return run.redact(after_commit_message(name, written, read.rolled_back, read.failed))

    drift = None
    try:
        if keep_secrets:
            owner_only(repository)
        drift = repository.commit_run(read.before, before_message)
        made = repository.commit_run(read.after, after_message)
        if keep_secrets:
            owner_only(repository)
    except RepositoryError as exc:
        return ChangeHistory(drift, None, run.redact(str(exc)))
    return ChangeHistory(drift, made)


@dataclass(frozen=True)
class _Read:
    """What a run's changes read, by host (masked unless secrets are kept), and the hosts
    whose change was rolled back or failed otherwise, with why."""

    before: dict[str, str]
    after: dict[str, str]
    rolled_back: dict[str, str]
    failed: dict[str, str]

    @classmethod
    def of(cls, run: JobRun, keep_secrets: bool) -> _Read:
        read = cls({}, {}, {}, {})
        for name, multi in run.result.items():
            for text, kept in zip(configs_of(multi), (read.before, read.after), strict=True):
                if text is not None:
                    kept[name] = text if keep_secrets else run.redact(text)
            if multi.failed:
                change = change_of(multi)
                rolled = change is not None and change[0]["state"] == ROLLED_BACK
                why = why_failed(run.redact, failure_of(multi))
                (read.rolled_back if rolled else read.failed)[name] = why
        return read


def after_commit_message(
    job: str, written: Written, rolled_back: dict[str, str], failed: dict[str, str]
) -> str:
    """The after commit's message: a summary line (how many hosts' files changed, how many
    changes were rolled back, how many failed), then the hosts of each kind, with why."""
    lines = [f"change: {hosts_text(len(written.changed))} changed, {len(rolled_back):,} rolled "
             f"back, {len(failed):,} failed (job {job})", ""]
    if written.changed:
        lines.append(f"changed: {names_text(written.changed)}")
    for title, hosts in (("rolled back:", rolled_back),
                         ("failed (a host not read again keeps its last file):", failed)):
        if not hosts:
            continue
        lines.append(title)
        shown = sorted(hosts)[:NAMES_SHOWN]
        lines += [f"  {host}: {hosts[host]}" for host in shown]
        if len(hosts) > len(shown):
            lines.append(f"  ... and {len(hosts) - len(shown):,} more")
    return "\n".join(lines).rstrip() + "\n"
