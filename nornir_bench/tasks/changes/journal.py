"""The journal of changes pending confirmation: what must be reverted if the run dies.

A change with ``confirm`` (:mod:`nornir_bench.tasks.changes.config`) is written here as ``pending``
before its first line is sent, and as ``confirmed``, ``reverted`` or ``revert failed`` when it
ends. Each entry is one JSON line, appended and fsync'd before the change goes on: a run
SIGKILLed, or a machine that lost power, leaves every change it had not confirmed in the file.
A journal is the run's own (one per run, beside its records file, readable by its owner
alone); its first line says whose::

    {"journal": 1, "job": "/jobs/change.yaml", "records": "/state/records/change-....jsonl",
     "folder": "/state/records", "started": "2026-11-28T09:00:00+00:00", "pid": 4242}
    {"host": "r1", "state": "pending", "backup": ".../backups/r1-....cfg",
     "task": "asend_config", "until": 1795856460.0, "at": "..."}

A NETCONF change's entry adds ``device_reverts_at`` (a ``time.time()``): the device reverts
its confirmed commit itself, by then at the latest, and ``recover`` has nothing to send for it.
Just before the confirming ``<commit>`` is sent, the entry is marked ``confirming``: a run that
dies then leaves a change the device may hold (the commit confirmed) or have reverted, and
``recover`` says so (``unknown``) rather than that it was reverted.

A change still ``pending`` (or ``revert failed``) once no run holds the journal is reverted
by ``nornir-bench recover`` or by the next ``nornir-bench run`` on the same records folder
(:mod:`nornir_bench.jobs.recover`). A running run holds a shared ``flock`` on its journal;
whoever recovers takes it exclusively, so a live run's changes are never reverted under it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from nornir_bench.core.exceptions import NornirBenchError

__all__ = [
    "CONFIRMED",
    "JOURNAL_SUFFIX",
    "PENDING",
    "UNKNOWN",
    "REVERTED",
    "REVERT_FAILED",
    "Journal",
    "JournalError",
    "append_entry",
    "read_journal",
    "start_journal",
]

PENDING, CONFIRMED, REVERTED, REVERT_FAILED = "pending", "confirmed", "reverted", "revert failed"
UNKNOWN = "unknown"  # a run died confirming a change the device holds or reverted: not known
STATES = (PENDING, CONFIRMED, REVERTED, REVERT_FAILED, UNKNOWN)
JOURNAL_SUFFIX = ".journal"
MAX_JOURNAL_BYTES = 64 * 1024 * 1024


class JournalError(NornirBenchError, ValueError):
    """A file that is not a journal, or not one that may be used here: what is wrong."""


@dataclass(frozen=True)
class Journal:
    """A journal as read: its header and each host's last entry."""

    path: Path
    header: dict[str, Any]
    hosts: dict[str, dict[str, Any]]

    def pending(self) -> dict[str, dict[str, Any]]:
        """The hosts whose change is neither confirmed nor reverted: to revert."""
        return {h: e for h, e in self.hosts.items() if e["state"] in (PENDING, REVERT_FAILED)}


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


def _write(path: Path, entry: dict[str, Any], flags: int) -> None:
    line = (json.dumps(entry, sort_keys=False) + "\n").encode()
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | flags, 0o600)
    try:
        os.write(descriptor, line)  # one write, O_APPEND: whole lines from any process
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def start_journal(path: Path, *, job: str | None, records: str | None) -> None:
    """Create ``path`` with its header (mode 0600), and make its creation durable."""
    header = {"journal": 1, "job": job, "records": records, "folder": str(path.parent),
              "started": _now(), "pid": os.getpid()}
    _write(path, header, os.O_CREAT | os.O_EXCL)
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


def append_entry(path: str | os.PathLike[str], host: str, state: str, **fields: Any) -> None:
    """Append ``host``'s ``state`` (and ``fields``) to the journal at ``path``, fsync'd; a
    journal not yet there (a change run from Python) is started first, with no job."""
    path = Path(path)
    if not path.exists():
        try:
            start_journal(path, job=None, records=None)
        except FileExistsError:  # another host started it first
            pass
    _write(path, {"host": host, "state": state, **fields, "at": _now()}, 0)


def read_journal(path: str | os.PathLike[str]) -> Journal:
    """The journal at ``path``.

    Raises:
        JournalError: not a journal (no header, a line that is not an entry), or too large.
        OSError: it cannot be read.
    """
    path = Path(path)
    if path.stat().st_size > MAX_JOURNAL_BYTES:
        raise JournalError(f"{path}: larger than {MAX_JOURNAL_BYTES:,} bytes: not a journal")
    try:
        return _read(path)
    except UnicodeDecodeError as exc:
        raise JournalError(f"{path}: not a nornir-bench journal: not UTF-8 text ({exc.reason})")\
            from None


def _read(path: Path) -> Journal:
    lines = iter(_lines(path))
    header = next(lines, None)
    if not isinstance(header, dict) or header.get("journal") != 1:
        raise JournalError(
            f"{path}: not a nornir-bench journal (its first line must be a journal header, "
            "as a run with confirm writes it)"
        )
    hosts: dict[str, dict[str, Any]] = {}
    for number, entry in enumerate(lines, start=2):
        if (
            not isinstance(entry, dict)
            or not isinstance(entry.get("host"), str)
            or entry.get("state") not in STATES
        ):
            raise JournalError(f"{path}:{number}: not a journal entry (host and state)")
        hosts[entry["host"]] = {**hosts.get(entry["host"], {}), **entry}
    return Journal(path, header, hosts)


def _lines(path: Path) -> Iterator[Any]:
    with open(path, encoding="utf-8", errors="strict") as file:
        for number, line in enumerate(file, start=1):
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except ValueError:
                if number == 1:
                    yield None
                    return
                if line.endswith("\n"):
                    raise JournalError(f"{path}:{number}: not a journal entry") from None
                return  # a last line cut by the crash: what was fsync'd before it holds
