"""``run --check`` (a dry run of every step) and ``run --rerun-failed RECORDS`` (only the hosts
that failed or never started in an earlier run of the same job), checked before anything runs.

``--rerun-failed`` works as Ansible's retry files do, from the records file itself: every
record names its job (``job``, the job file's path). A host is run again unless each of its
records in the file says it did not fail; a host of the job with no record at all (the run
was interrupted, or a limit stopped it) is run again too.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nornir_bench.core.task_traits import traits_of
from nornir_bench.jobs._job_file import JobError
from nornir_bench.processors.records_file import RecordsFileError, RecordsRead, each_record
from nornir_bench.tasks import is_read_only

if TYPE_CHECKING:
    from nornir_bench.jobs.load import Job

__all__ = ["check_dry_run", "checking", "hosts_to_rerun", "supports_dry_run"]


def supports_dry_run(task: object, params: dict[str, object]) -> bool:
    """Whether ``task`` honours nornir's ``dry_run`` (its ``honours_dry_run`` trait), or
    changes nothing with ``params`` anyway (it is read-only)."""
    return traits_of(task).honours_dry_run or is_read_only(task, params)  # type: ignore[arg-type]


def check_dry_run(job: Job) -> None:
    """For ``--check``: every step's task must be able to run as a dry run."""
    for step in job.steps:
        if not supports_dry_run(step.task, step.params):
            raise JobError(
                f"{job.path}: --check: task {step.task_name} (step {step.number}) cannot run "
                "as a dry run: it is neither read-only nor marked as honouring nornir's "
                "dry_run (decorate it with @with_traits(honours_dry_run=True) once it does)"
            )


def checking(task: object, params: dict[str, Any]) -> dict[str, Any]:
    """The parameters a step of ``task`` runs with under ``--check``: ``dry_run=True`` for a
    task that honours it; a read-only task's as they are."""
    return {**params, "dry_run": True} if traits_of(task).honours_dry_run else params


def hosts_to_rerun(records: Path, job: Job, hosts: Iterable[str]) -> list[str]:
    """Which of ``hosts`` (the job's) to run again, from the records file of an earlier run
    of ``job``: those that failed there or have no record in it."""
    ok: dict[str, bool] = {}
    read = RecordsRead(records)
    try:
        for record in each_record(records, strict=True, read=read):
            if record.job != str(job.path.resolve()):
                raise JobError(
                    f"--rerun-failed {records}: line {read.lines} is a record of job "
                    f"{record.job!r}, not of {job.path}: give a records file of this job"
                )
            ok[record.host] = ok.get(record.host, True) and not record.failed
    except RecordsFileError as exc:
        raise JobError(f"--rerun-failed {exc}") from None
    return [host for host in hosts if not ok.get(host, False)]
