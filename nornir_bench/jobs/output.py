"""A job run's records file: where it goes by default, and opened so that no two runs share one;
and where its configuration backups go by default, next to it.

Each run writes its own records file, and never one that another run is writing: by default a
new one in the user's state folder (:func:`records_folder`), named after the job and the time
(:func:`default_output`); a path given is locked while the run writes it (:func:`open_records`).
A run refused before its first record (bad input found once the run began: exit 2) leaves no
file, or the one it found as it was (:class:`RecordsFile`).
A change task's backups go to ``backups/`` beside the records file unless the job names a
``backup_dir`` (:func:`with_default_backups`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import io
import os
import stat
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from nornir_bench.core.exceptions import NornirBenchError
from nornir_bench.core.files import make_private_folder, records_folder, why_not_written
from nornir_bench.jobs._signatures import parameters_of

if TYPE_CHECKING:
    from nornir_bench.jobs.load import Job

__all__ = [
    "RecordsError",
    "RecordsFile",
    "backups_folder",
    "default_output",
    "open_records",
    "records_folder",
    "with_default_backups",
]


class RecordsError(NornirBenchError, OSError):
    """The records file cannot be created or written: which file, and why in words."""

    def __init__(self, path: Path, error: OSError) -> None:
        super().__init__(f"cannot write the results to {path}: {why_not_written(error, path)}")
        self.path = path

# Runs started in the same second get -2, -3 ... after the default name; past this many, the
# folder is taken to be unwritable in a way that retrying cannot fix.
_MAX_SAME_NAME = 1000


def default_output(job: Job) -> Path:
    """``<job name>-<date>T<time>.jsonl`` in :func:`records_folder`: each run keeps its own."""
    return records_folder() / f"{job.path.stem}-{datetime.now():%Y%m%dT%H%M%S}.jsonl"


class RecordsFile(io.TextIOWrapper):
    """One run's records file, open for writing and locked. What an earlier run left in it is
    removed by this run's first line, or when it is closed with none; a run that stops on an
    error before its first line closes it with :meth:`close_on_error`: the file is as the run
    found it, or gone if the run made it."""

    def __init__(self, fd: int, path: Path, *, created: bool, regular: bool) -> None:
        super().__init__(io.BufferedWriter(io.FileIO(fd, "w")), encoding="utf-8")
        self.path, self.created = path, created
        self._earlier = regular and not created  # an earlier run's lines, still in the file
        self._written = False
        self._pid = os.getpid()  # a forked child finalizing its copy must not empty the file

    def write(self, text: str) -> int:
        if self._earlier:
            self._remove_earlier()
        self._written = True
        return super().write(text)

    def close(self) -> None:
        if self._earlier and not self.closed and os.getpid() == self._pid:
            self._remove_earlier()
        super().close()

    def close_on_error(self) -> None:
        """Close it after the run stopped on an error: with no line of this run in it, as the
        run found it (removed, while still locked, if the run made it)."""
        if self.closed:
            return
        self._earlier = False
        with contextlib.suppress(OSError):
            if self.created and not self._written:
                os.unlink(self.path)
            super().close()

    def _remove_earlier(self) -> None:
        self._earlier = False
        self.truncate(0)


def open_records(path: Path | None, job: Job) -> tuple[Path, RecordsFile]:
    """The records file of one run, opened for writing, never shared with another run.

    With no ``path``, a new file (:func:`default_output`, then ``-2``, ``-3`` ... when runs
    start in the same second), created exclusively, in :func:`records_folder`, which is made
    (readable by the user alone, as the XDG specification asks) if missing. A ``path`` given
    is emptied only once this run holds it and writes its first line (or ends): if another
    run is writing it, that is an error.

    Raises:
        RecordsError: when the file cannot be created or is being written by another run.
    """
    try:
        return _open_records(path, job)
    except OSError as exc:
        raise RecordsError(path or default_output(job), exc) from None


def _open_records(path: Path | None, job: Job) -> tuple[Path, RecordsFile]:
    created = True
    if path is None:
        base = default_output(job)
        make_private_folder(base.parent)
        for number in range(1, _MAX_SAME_NAME + 1):
            path = base if number == 1 else base.with_name(f"{base.stem}-{number}{base.suffix}")
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                break
            except FileExistsError:
                continue
        else:
            raise FileExistsError(errno.EEXIST, f"{_MAX_SAME_NAME} records files named", str(base))
    else:
        if path.parent != Path():
            path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            fd, created = os.open(path, os.O_WRONLY), False
    try:
        regular = stat.S_ISREG(os.fstat(fd).st_mode)  # not a pipe, a terminal, /dev/stdout
        if regular:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released when it is closed
            except BlockingIOError:
                raise OSError(
                    errno.EBUSY,
                    "another run is writing it: give this run another --output (or output.path)",
                    str(path),
                ) from None
        return path, RecordsFile(fd, path, created=created, regular=regular)  # the caller closes it
    except BaseException:
        os.close(fd)
        raise


def backups_folder(records: Path) -> Path:
    """Where a run writing ``records`` keeps its configuration backups by default: ``backups/``
    next to it (in the state folder when the records go to no folder: a pipe, a terminal)."""
    try:
        regular = stat.S_ISREG(os.stat(records).st_mode)
    except OSError:
        regular = False
    return (Path(os.path.abspath(records)).parent if regular else records_folder()) / "backups"


def with_default_backups(job: Job, records: Path) -> Job:
    """``job`` with ``backup_dir`` set to :func:`backups_folder` in each step whose task takes
    it and that names none: a change's backups go next to the records that name them."""
    steps = []
    for step in job.steps:
        taken = parameters_of(step.task, skip=1)
        if taken is not None and "backup_dir" in taken.names and "backup_dir" not in step.params:
            step = replace(step, params={**step.params, "backup_dir": str(backups_folder(records))})
        steps.append(step)
    return replace(job, steps=tuple(steps))
