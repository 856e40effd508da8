"""Changes a run left pending confirmation, reverted: ``nornir-bench recover [JOURNAL]``, and
the start of every ``nornir-bench run`` on the same records folder.

A job whose change steps take ``confirm`` writes a journal beside its records
(:mod:`nornir_bench.tasks.changes.journal`), held (a shared ``flock``) while it runs. A journal that
no run holds and that still has changes ``pending`` (or whose revert failed) belongs to a run
that died before confirming them: each such router is taken back to its backup
(``restore_config`` / ``arestore_config``, on the job's inventory, loaded again from the job
file the journal names), and the journal and the run's records say what became of it. A
change the device reverts itself (a NETCONF confirmed commit: ``device_reverts_at``) gets
nothing sent: it is journaled reverted, by the device.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from nornir_bench.core.changes import change_of
from nornir_bench.core.files import locked_at_once, records_folder
from nornir_bench.core.secrets import Redactor
from nornir_bench.jobs._job_file import JobError, one_line
from nornir_bench.jobs._signatures import parameters_of
from nornir_bench.processors.records import encoded, host_record
from nornir_bench.tasks.changes.journal import (
    JOURNAL_SUFFIX,
    PENDING,
    REVERT_FAILED,
    REVERTED,
    UNKNOWN,
    Journal,
    JournalError,
    append_entry,
    read_journal,
    start_journal,
)

if TYPE_CHECKING:
    from nornir_bench.jobs.load import Job

__all__ = [
    "Recovered",
    "held_journal",
    "journal_beside",
    "recover_folder",
    "recover_journal",
    "with_journal",
]


@dataclass
class Recovered:
    """What recovering did: the hosts reverted and those that could not be, with why, and the
    journals left alone (held by a live run)."""

    reverted: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    busy: list[Path] = field(default_factory=list)


def journal_beside(records: Path) -> Path:
    """The journal of the run writing ``records``: ``NAME.journal`` beside it (in the state
    folder's records folder when the records go to no file: a pipe, a terminal)."""
    try:
        regular = stat.S_ISREG(os.stat(records).st_mode)
    except OSError:
        regular = False
    folder = Path(os.path.abspath(records)).parent if regular else records_folder()
    return folder / (Path(records).stem + JOURNAL_SUFFIX)


def with_journal(job: Job, records: Path) -> tuple[Job, Path | None]:
    """``job`` with ``journal_file`` set in each step that gives ``confirm`` and names no
    journal, and the journal they share (``None``: no step confirms)."""
    path = journal_beside(records)
    steps, used = [], False
    for step in job.steps:
        taken = parameters_of(step.task, skip=1)
        if step.params.get("confirm") is not None and taken is not None \
                and "journal_file" in taken.names and "journal_file" not in step.params:
            step = replace(step, params={**step.params, "journal_file": str(path)})
            used = True
        steps.append(step)
    return replace(job, steps=tuple(steps)), path if used else None


@contextlib.contextmanager
def held_journal(path: Path | None, job: Job, records: Path) -> Iterator[None]:
    """The run's journal started (its header) and held by this run while the block runs."""
    if path is None:
        yield
        return
    if path.exists():  # an earlier run's, whose records this run replaces (-o)
        try:
            left = read_journal(path).pending()
        except (JournalError, UnicodeDecodeError):
            left = {}
        if left:
            raise JobError(
                f"{path}: changes still pending on {', '.join(sorted(left))}, not reverted "
                f"(see above): run nornir-bench recover {path}, or give this run another "
                "--output"
            )
        path.unlink()
    start_journal(path, job=os.path.abspath(job.path), records=str(os.path.abspath(records)))
    descriptor = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_SH)
        yield
    finally:
        os.close(descriptor)


def recover_folder(folder: Path, say: Callable[[str], None]) -> Recovered:
    """Every journal in ``folder`` that no run holds and that has changes pending, recovered
    (:func:`recover_journal`); journals that are not one are left, said in a line."""
    done = Recovered()
    with contextlib.suppress(OSError):
        for path in sorted(folder.glob("*" + JOURNAL_SUFFIX)):
            try:
                found = recover_journal(path, say)
            except (JournalError, JobError, OSError, UnicodeDecodeError) as exc:
                say(f"recover: {path}: not recovered: {one_line(exc)}")
                continue
            done.reverted += found.reverted
            done.failed.update(found.failed)
            done.busy += found.busy
    return done


def recover_journal(path: Path, say: Callable[[str], None]) -> Recovered:
    """Revert each change ``path`` has pending, unless a live run holds it.

    Raises:
        JournalError: not a journal, or one of another records folder.
        JobError: its job cannot be loaded.
    """
    path = Path(os.path.abspath(path))
    _trusted(path)
    journal = read_journal(path)
    folder = journal.header.get("folder")
    if folder != str(path.parent):
        raise JournalError(
            f"{path}: a journal of the records folder {folder}, not of {path.parent} where it "
            "is: recover it there (a copy would revert its routers twice)"
        )
    done = Recovered()
    descriptor = os.open(path, os.O_RDONLY)
    try:
        if not locked_at_once(descriptor):
            if journal.pending():
                say(f"recover: {path}: held by a run still going (pid "
                    f"{journal.header.get('pid')}): left to it")
                done.busy.append(path)
            return done
        journal = read_journal(path)  # as it is now that nobody writes it
        _reverted_by_device(journal, done, say)
        if journal.pending():
            _revert(journal, done, say)
    finally:
        os.close(descriptor)
    return done


def _trusted(path: Path) -> None:
    """Refuse a journal someone else could have written: it names a job to load and backups to
    send to devices."""
    info = os.stat(path)
    if info.st_uid != os.geteuid() or info.st_mode & 0o022:
        raise JournalError(
            f"{path}: not recovered: a journal must be yours and writable by you alone (it "
            "names the job and the backups sent to the devices)"
        )


def _reverted_by_device(journal: Journal, done: Recovered, say: Callable[[str], None]) -> None:
    """The changes the device itself reverts (a NETCONF confirmed commit, not confirmed):
    nothing to send; journaled reverted, by the device, and taken out of ``journal``."""
    for name, entry in sorted(journal.pending().items()):
        at = entry.get("device_reverts_at")
        if entry["state"] != PENDING or not isinstance(at, (int, float)):
            continue
        del journal.hosts[name]
        if entry.get("confirming"):
            append_entry(journal.path, name, UNKNOWN, backup=entry.get("backup"), by="recover")
            done.failed[name] = (
                "state unknown: the run died sending the commit that confirms the change: the "
                "device holds the change (confirmed) or the configuration before it (reverted by "
                f"itself); read it to know (backup at {entry.get('backup')}, journal "
                f"{journal.path})"
            )
            say(f"recover: {name}: {done.failed[name]}")
            continue
        append_entry(journal.path, name, REVERTED, backup=entry.get("backup"), by="device")
        done.reverted.append(name)
        when = datetime.fromtimestamp(at, timezone.utc).isoformat(timespec="seconds")
        say(f"recover: {name}: nothing to send: the device reverts its confirmed commit itself "
            f"(when the run's session ended, or at {when} at the latest; backup at "
            f"{entry.get('backup')}, journal {journal.path})")


def _revert(journal: Journal, done: Recovered, say: Callable[[str], None]) -> None:
    from nornir.core.task import AggregatedResult

    from nornir_bench.jobs.load import load_job
    from nornir_bench.runners.asyncio_runner import AsyncioRunner
    from nornir_bench.runners.threadpool import ThreadPoolRunner
    from nornir_bench.tasks.changes.restore import arestore_config, restore_config

    pending = journal.pending()
    job_file = journal.header.get("job")
    if not isinstance(job_file, str):
        raise JournalError(f"{journal.path}: written by a run from Python, not a job: its "
                           "changes are reverted with restore_config in that program")
    job = load_job(job_file)
    nr, secrets = job.nornir()
    redact = Redactor(secrets)
    inventory = nr.inventory.hosts
    missing = sorted(set(pending) - set(inventory))
    for name in missing:
        _ended(journal, name, pending[name], f"not in the job's hosts any more ({job_file})",
               done, say)
    records = _records(journal)
    try:
        for sync in (True, False):  # send_config's through netmiko, asend_config's scrapli
            names = {h for h, e in pending.items()
                     if h in inventory and (e.get("task") != "asend_config") == sync}
            if not names:
                continue
            backups = {name: str(pending[name].get("backup")) for name in names}
            subset = nr.filter(filter_func=lambda host, names=names: host.name in names)
            result: AggregatedResult = subset.with_runner(
                ThreadPoolRunner() if sync else AsyncioRunner()
            ).run(task=restore_config if sync else arestore_config, backups=backups,
                  name="recover", raise_on_error=False)
            for name, multi in result.items():
                _write_record(records, redact, name, multi)
                failure = None if not multi.failed else str(multi[0].exception)
                _ended(journal, name, pending[name], failure, done, say, change_of(multi))
    finally:
        with contextlib.suppress(OSError):
            nr.close_connections()
        if records is not None:
            records.close()


def _ended(journal: Journal, name: str, entry: dict[str, Any], failure: str | None,
           done: Recovered, say: Callable[[str], None], change: Any = None) -> None:
    backup = entry.get("backup")
    if failure is None:
        append_entry(journal.path, name, REVERTED, backup=backup, by="recover")
        done.reverted.append(name)
        say(f"recover: {name}: reverted to its backup at {backup} (journal {journal.path})")
        return
    append_entry(journal.path, name, REVERT_FAILED, backup=backup, by="recover")
    done.failed[name] = failure
    text = failure if "ROLLBACK FAILED" in failure else f"ROLLBACK FAILED: {failure}"
    say(f"recover: {name}: {text.strip().splitlines()[0]} (journal {journal.path})")


def _records(journal: Journal) -> IO[str] | None:
    path = journal.header.get("records")
    if not isinstance(path, str) or not Path(path).is_file():
        return None
    return open(path, "a", encoding="utf-8")


def _write_record(file: IO[str] | None, redact: Redactor, name: str, multi: Any) -> None:
    if file is None:
        return
    file.write(encoded(host_record(name, multi, task="recover"), redact) + "\n")
    file.flush()
